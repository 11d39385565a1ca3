# nix-darwin module: openfiles as a LaunchAgent for one user, started by launchd on the
# first connection to its socket.
#   services.openfiles = { enable = true; user = "alice"; };
# The socket lives in the user's ~/Library/Caches/openfiles (created 0700 on activation) and
# OPENFILES_SOCKET points clients at it.
{ defaultPackage }:
{ config, lib, pkgs, ... }:

let
  common = import ./common.nix { inherit lib; };
  cfg = config.services.openfiles;
  home = config.users.users.${cfg.user}.home or "/Users/${cfg.user}";
  socket = if cfg.socketPath != null then cfg.socketPath else "${home}/Library/Caches/openfiles/openfiles.sock";
  configFile = common.configFile pkgs cfg.settings;
in
{
  options.services.openfiles = {
    enable = lib.mkEnableOption "openfiles, diagnostics and terminals for AI coding agents";
    user = lib.mkOption {
      type = lib.types.str;
      example = "alice";
      description = "The user whose agents openfiles serves (owns the socket folder).";
    };
    socketPath = lib.mkOption {
      type = lib.types.nullOr lib.types.str;
      default = null;
      description = "Control socket path [default: ~user/Library/Caches/openfiles/openfiles.sock].";
    };
  } // common.options { inherit pkgs defaultPackage; };

  config = lib.mkIf cfg.enable {
    environment.systemPackages = [ cfg.package ];
    environment.variables.OPENFILES_SOCKET = socket;
    environment.etc = lib.optionalAttrs (configFile != null) {
      "openfiles/config.toml".source = configFile;
    };

    system.activationScripts.postActivation.text = lib.mkAfter ''
      mkdir -p -m 700 ${lib.escapeShellArg (dirOf socket)}
      chown ${lib.escapeShellArg cfg.user} ${lib.escapeShellArg (dirOf socket)}
    '';

    launchd.user.agents.openfiles.serviceConfig = common.launchdConfig {
      inherit (cfg) package extraPackages;
      inherit socket;
      log = "${home}/Library/Logs/openfiles.log";
      configFile = if configFile != null then "/etc/openfiles/config.toml" else null;
    };
  };
}
