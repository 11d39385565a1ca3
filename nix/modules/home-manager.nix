# home-manager module: openfiles for one user.
#   services.openfiles = { enable = true; settings.hooks.feedback = "errors"; };
# Linux: a systemd user socket (enabled through sockets.target) and a Type=notify service
# started on first use. macOS: a LaunchAgent whose socket launchd holds; clients find it
# through OPENFILES_SOCKET, set in the session variables.
{ defaultPackage }:
{ config, lib, pkgs, ... }:

let
  common = import ./common.nix { inherit lib; };
  cfg = config.services.openfiles;
  isDarwin = pkgs.stdenv.hostPlatform.isDarwin;
  tomlFile = common.configFile pkgs cfg.settings;
  xdgConfigHome = config.xdg.configHome or "${config.home.homeDirectory}/.config";
  socket =
    if cfg.socketPath != null then cfg.socketPath
    else if isDarwin then "${config.home.homeDirectory}/Library/Caches/openfiles/openfiles.sock"
    else common.runtimeSocket;
in
{
  options.services.openfiles = {
    enable = lib.mkEnableOption "openfiles, diagnostics and terminals for AI coding agents";
    socketPath = lib.mkOption {
      type = lib.types.nullOr lib.types.str;
      default = null;
      description = ''
        Control socket path. Default: `%t/openfiles/openfiles.sock` on Linux (what clients
        look for without configuration), `~/Library/Caches/openfiles/openfiles.sock` on macOS
        (exported as OPENFILES_SOCKET).
      '';
    };
  } // common.options { inherit pkgs defaultPackage; };

  config = lib.mkIf cfg.enable (lib.mkMerge [
    {
      assertions = common.assertions cfg ++ [
        {
          # launchd expands nothing; systemd expands its specifiers (%t, %h).
          assertion = cfg.socketPath == null || lib.hasPrefix "/" cfg.socketPath || (!isDarwin && lib.hasPrefix "%" cfg.socketPath);
          message = "services.openfiles.socketPath must be an absolute path${lib.optionalString (!isDarwin) " (or start with a systemd specifier such as %t)"}.";
        }
      ];
      home.packages = [ cfg.package ];
      # The default location the binary reads, so no OPENFILES_CONFIG is needed.
      xdg.configFile = lib.optionalAttrs (tomlFile != null) {
        "openfiles/config.toml".source = tomlFile;
      };
    }

    # macOS: home-manager runs a file's `onChange` (its onFilesChange step, after the new
    # files are linked) when the file differs from the one in place; launchd has no reload,
    # so the running agent gets SIGHUP. (An agent whose plist changed is restarted by
    # setupLaunchAgents anyway.)
    (lib.mkIf (isDarwin && tomlFile != null) {
      xdg.configFile."openfiles/config.toml".onChange = common.signalAgent {
        # home-manager's own launchd code names it so: the activation PATH may lack /bin.
        launchctl = "/bin/launchctl";
        domain = "gui/$UID";
      };
    })

    (lib.mkIf (cfg.socketPath != null || isDarwin) {
      home.sessionVariables.OPENFILES_SOCKET = socket;
    })

    (lib.mkIf (!isDarwin) {
      systemd.user = common.hmUnits {
        inherit pkgs;
        inherit (cfg) package extraPackages;
        inherit socket;
        configFile = null;
        # A new config.toml: `home-manager switch` reloads the running service (SIGHUP;
        # terminals survive) instead of leaving it on the old settings.
        reloadTriggers = lib.optional (tomlFile != null) tomlFile;
      };
    })

    (lib.mkIf isDarwin {
      # The socket's folder must exist before setupLaunchAgents bootstraps the agent, as
      # launchd binds the socket then; after writeBoundary, where home-manager's file-system
      # changes belong.
      home.activation.openfilesSocketDir = lib.hm.dag.entryBetween [ "setupLaunchAgents" ] [ "writeBoundary" ] ''
        run mkdir -p ${lib.escapeShellArg (dirOf socket)}
        run chmod 700 ${lib.escapeShellArg (dirOf socket)}
      '';
      launchd.agents.openfiles = {
        enable = true;
        config = common.launchdConfig {
          inherit (cfg) package extraPackages;
          inherit socket;
          log = "${config.home.homeDirectory}/Library/Logs/openfiles.log";
          home = config.home.homeDirectory;
          user = config.home.username;
          # The file xdg.configFile writes, named explicitly: a LaunchAgent does not get the
          # session's XDG_CONFIG_HOME (the binary also reads ~/.config on macOS).
          configFile = if tomlFile != null then "${xdgConfigHome}/openfiles/config.toml" else null;
        };
      };
    })
  ]);
}
