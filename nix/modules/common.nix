# What the NixOS, home-manager and nix-darwin modules share: the options every one of them
# has, and the unit / LaunchAgent contents, which mirror packaging/systemd and
# packaging/launchd (the tests compare them).
{ lib }:

let
  inherit (lib) mkOption types;
in
rec {
  label = "org.openfiles.openfiles";
  runtimeSocket = "%t/openfiles/openfiles.sock";

  options = { pkgs, defaultPackage }: {
    # The nixpkgs convention (`pkgs.openfiles`, set by this flake's overlay), falling back to
    # this flake's own build when the overlay is not applied.
    package = lib.mkPackageOption pkgs "openfiles" { } // {
      default = pkgs.openfiles or (defaultPackage pkgs);
      defaultText = lib.literalExpression "pkgs.openfiles (this flake's overlay), else openfiles.packages.\${system}.default";
    };
    settings = mkOption {
      type = (pkgs.formats.toml { }).type;
      default = { };
      example = lib.literalExpression ''{ hooks.feedback = "errors"; service.roots = [ "~/src" ]; }'';
      description = "openfiles configuration, written as config.toml (see the example config).";
    };
    extraPackages = mkOption {
      type = types.listOf types.package;
      default = [ ];
      example = lib.literalExpression "[ pkgs.ruff pkgs.pyright pkgs.clang-tools ]";
      description = "Language servers and compilers put on the service's PATH.";
    };
  };

  # Assertions every module makes about its own options.
  assertions = cfg: [
    {
      assertion = builtins.all lib.isDerivation cfg.extraPackages;
      message = "services.openfiles.extraPackages must be packages (e.g. [ pkgs.ruff ]), not paths or strings.";
    }
    {
      assertion = !((cfg.settings.service or { }) ? socket);
      message = "services.openfiles.settings.service.socket is not a setting: the socket is the module's socketPath option (or OPENFILES_SOCKET).";
    }
  ];

  configFile = pkgs: settings:
    if settings == { } then null else (pkgs.formats.toml { }).generate "openfiles-config.toml" settings;

  # `systemctl --user reload openfiles`: SIGHUP to the service alone. A store path, as NixOS
  # has no /bin/kill (packaging/systemd keeps /bin/kill for the distributions it targets).
  execReload = pkgs: "${pkgs.coreutils}/bin/kill -HUP $MAINPID";

  servicePath = extraPackages: lib.makeBinPath extraPackages;
  # extraPackages extend the service's PATH, never replace it: the user's own profile (where
  # their language servers usually are), the system's, and the setuid wrappers stay on it.
  userPath = lib.concatStringsSep ":" [
    "%h/.nix-profile/bin"
    "%h/.local/state/nix/profile/bin"
    "/etc/profiles/per-user/%u/bin"
    "/run/wrappers/bin"
    "/run/current-system/sw/bin"
    "/nix/var/nix/profiles/default/bin"
    "/usr/local/bin"
    "/usr/bin"
    "/bin"
  ];

  # home-manager's INI-style units.
  hmUnits = { pkgs, package, configFile, extraPackages, socket ? runtimeSocket }: {
    sockets.openfiles = {
      Unit = {
        Description = "openfiles control socket";
      };
      Socket = {
        ListenStream = socket;
        SocketMode = "0600";
        DirectoryMode = "0700";
        FileDescriptorName = "control";
        RemoveOnStop = true;
      };
      Install.WantedBy = [ "sockets.target" ];
    };
    services.openfiles = {
      Unit = {
        Description = "openfiles: diagnostics and terminals for AI coding agents";
        Requires = [ "openfiles.socket" ];
        After = [ "openfiles.socket" ];
      };
      Service = {
        Type = "notify";
        NotifyAccess = "main";
        ExecStart = "${lib.getExe package} serve";
        ExecReload = execReload pkgs;
        WatchdogSec = 30;
        Restart = "on-failure";
        RestartSec = 2;
        TimeoutStopSec = 20;
        Environment =
          lib.optional (extraPackages != [ ]) "PATH=${servicePath extraPackages}:${userPath}"
          ++ lib.optional (configFile != null) "OPENFILES_CONFIG=${configFile}";
      };
      Install.Also = [ "openfiles.socket" ];
    };
  };

  # LaunchAgent keys (home-manager's launchd.agents.<n>.config, nix-darwin's serviceConfig).
  launchdConfig = { package, socket, log, configFile, extraPackages }: {
    Label = label;
    ProgramArguments = [ (lib.getExe package) "serve" ];
    Sockets.Listeners = {
      SockPathName = socket;
      SockPathMode = 384; # 0600
      SockType = "stream";
    };
    EnvironmentVariables = {
      OPENFILES_SOCKET = socket;
    } // lib.optionalAttrs (extraPackages != [ ]) {
      # launchd expands no specifiers (no %h): the extra packages, then the system-wide
      # profiles and system folders.
      PATH = "${servicePath extraPackages}:/run/current-system/sw/bin:/nix/var/nix/profiles/default/bin:/usr/local/bin:/usr/bin:/bin";
    } // lib.optionalAttrs (configFile != null) {
      OPENFILES_CONFIG = "${configFile}";
    };
    ProcessType = "Interactive";
    StandardErrorPath = log;
  };
}
