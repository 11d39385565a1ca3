# nix-darwin module: openfiles as a LaunchAgent for one user, started by launchd on the
# first connection to its socket.
#   services.openfiles.enable = true;          # for system.primaryUser
# nix-darwin installs user agents for `system.primaryUser` only, so `user` defaults to it and
# must match it when both are set. The socket lives in the user's
# ~/Library/Caches/openfiles (created 0700 on activation), where the binary looks by default
# on macOS; OPENFILES_SOCKET points clients at it too.
{ defaultPackage }:
{ config, lib, pkgs, ... }:

let
  common = import ./common.nix { inherit lib; };
  cfg = config.services.openfiles;
  primaryUser = config.system.primaryUser or null;
  user = if cfg.user != null then cfg.user else "primary-user-unset";
  declared = config.users.users.${user} or null;
  declaredHome = if declared == null then null else declared.home or null;
  # A user nix-darwin does not manage lives in /Users; a declared one must say where.
  home = if declaredHome != null then declaredHome else "/Users/${user}";
  socket = if cfg.socketPath != null then cfg.socketPath else "${home}/Library/Caches/openfiles/openfiles.sock";
  configFile = common.configFile pkgs cfg.settings;
  dir = lib.escapeShellArg (dirOf socket);
in
{
  options.services.openfiles = {
    enable = lib.mkEnableOption "openfiles, diagnostics and terminals for AI coding agents";
    user = lib.mkOption {
      type = lib.types.nullOr lib.types.str;
      default = primaryUser;
      defaultText = lib.literalExpression "config.system.primaryUser";
      example = "alice";
      description = ''
        The user whose agents openfiles serves (owns the socket folder). nix-darwin runs user
        LaunchAgents for `system.primaryUser` only, so this defaults to it and must equal it.
      '';
    };
    socketPath = lib.mkOption {
      type = lib.types.nullOr lib.types.str;
      default = null;
      description = "Control socket path [default: ~user/Library/Caches/openfiles/openfiles.sock].";
    };
  } // common.options { inherit pkgs defaultPackage; };

  config = lib.mkIf cfg.enable {
    assertions = common.assertions cfg ++ [
      {
        assertion = cfg.user != null;
        message = "services.openfiles.user is not set and neither is system.primaryUser: set system.primaryUser (nix-darwin runs user LaunchAgents for that user).";
      }
      {
        assertion = cfg.user == null || primaryUser == null || cfg.user == primaryUser;
        message = "services.openfiles.user (${toString cfg.user}) differs from system.primaryUser (${toString primaryUser}): nix-darwin installs the LaunchAgent for ${toString primaryUser}, so openfiles would run as that user with ${toString cfg.user}'s socket. Leave services.openfiles.user unset, or make them equal.";
      }
      {
        assertion = declared == null || declaredHome != null;
        message = "services.openfiles: users.users.${user} is declared without `home`; set users.users.${user}.home (e.g. \"/Users/${user}\") so the socket and log can be placed in it.";
      }
      {
        assertion = cfg.socketPath == null || lib.hasPrefix "/" cfg.socketPath;
        message = "services.openfiles.socketPath must be an absolute path: launchd expands neither ~ nor variables.";
      }
    ];

    environment.systemPackages = [ cfg.package ];
    environment.variables.OPENFILES_SOCKET = socket;
    environment.etc = lib.optionalAttrs (configFile != null) {
      "openfiles/config.toml".source = configFile;
    };

    # nix-darwin's activate runs its phases in a fixed order (modules/system/activation-scripts.nix):
    # preActivation, checks, createRun, extraActivation, …, etc, …, userLaunchd, …,
    # postActivation. launchd binds the agent's socket when userLaunchd loads it, so the
    # folder is made before that: in extraActivation, which follows `checks` (they verify that
    # system.primaryUser, whom the folder is given to, exists).
    # (`mkdir -p -m` would fail nix-darwin's build: it runs shellcheck on `activate`, which
    # warns that -m applies to the last folder only.)
    system.activationScripts.extraActivation.text = ''
      # openfiles: the LaunchAgent's socket folder, before userLaunchd loads the agent
      mkdir -p ${dir}
      chmod 700 ${dir}
      chown ${lib.escapeShellArg user} ${dir}
    '';

    # A changed config.toml reaches the running agent as SIGHUP (launchd has no reload, and
    # the plist names /etc/openfiles/config.toml, so userLaunchd sees no change to act on).
    # In postActivation /etc holds the new file and /run/current-system is still the
    # previous generation.
    system.activationScripts.postActivation.text = lib.mkIf (configFile != null) (lib.mkAfter ''
      # openfiles: reload the agent when its configuration changed
      if ! cmp -s /run/current-system/etc/openfiles/config.toml "$systemConfig/etc/openfiles/config.toml"; then
        ${common.signalAgent { launchctl = "launchctl"; domain = "gui/$(id -u -- ${lib.escapeShellArg user})"; }}
      fi
    '');

    launchd.user.agents.openfiles.serviceConfig = common.launchdConfig {
      inherit (cfg) package extraPackages;
      inherit socket;
      log = "${home}/Library/Logs/openfiles.log";
      inherit home user;
      configFile = if configFile != null then "/etc/openfiles/config.toml" else null;
    };
  };
}
