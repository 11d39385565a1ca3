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

  # launchd has no ExecReload: a changed configuration reaches a running agent as SIGHUP, on
  # which the service re-reads it (terminals survive). `launchctl` is how the caller's
  # activation reaches it (nix-darwin's activation has /bin on PATH, home-manager's may not);
  # `domain` is a shell word such as gui/$UID. An agent that is not running (socket-activated,
  # nothing connected yet) or not loaded is fine: it reads the file when launchd next starts
  # it. Anything else is reported; activation goes on either way.
  signalAgent = { launchctl, domain }: ''
    if openfilesOut=$(${launchctl} kill SIGHUP "${domain}/${label}" 2>&1); then
      echo "openfiles: configuration changed, reloaded ${label}"
    else
      case $openfilesOut in
        *"No such process"* | *"Could not find"*) ;;
        *) echo "openfiles: could not signal ${domain}/${label}: $openfilesOut" >&2 ;;
      esac
    fi
    unset openfilesOut
  '';

  # The service's PATH, whether or not extraPackages are given: the extra packages, then
  # what the user installed with Nix (`nix profile`, home-manager, users.users.<u>.packages;
  # usually where their language servers are), then the system's profiles, the setuid
  # wrappers and the usual folders. Neither systemd's nor launchd's default PATH has the
  # user's profiles.
  profiles = home: user: [
    "${home}/.nix-profile"
    "/etc/profiles/per-user/${user}"
    "${home}/.local/state/nix/profile"
  ];
  systemProfiles = [ "/run/wrappers" "/run/current-system/sw" "/nix/var/nix/profiles/default" ];
  servicePath = { extraPackages, home, user }:
    lib.concatStringsSep ":" (
      lib.optional (extraPackages != [ ]) (lib.makeBinPath extraPackages)
      ++ map (p: "${p}/bin") (profiles home user ++ systemProfiles)
      ++ [ "/usr/local/bin" "/usr/bin" "/bin" "/usr/sbin" "/sbin" ]
    );
  # NixOS's `path` of a user service (strings are folders whose bin/ and sbin/ are added;
  # NixOS appends its default path and sets PATH from the whole list). systemd expands %h
  # and %u in Environment=.
  nixosPath = extraPackages: extraPackages ++ profiles "%h" "%u" ++ systemProfiles;

  # home-manager's INI-style units.
  # `reloadTriggers`: home-manager's switcher (sd-switch) reloads a running unit, rather than
  # stopping and starting it, when X-Reload-Triggers is all that changed in it.
  hmUnits = { pkgs, package, configFile, extraPackages, socket ? runtimeSocket, reloadTriggers ? [ ] }: {
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
      } // lib.optionalAttrs (reloadTriggers != [ ]) {
        X-Reload-Triggers = map toString reloadTriggers;
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
          [ "PATH=${servicePath { inherit extraPackages; home = "%h"; user = "%u"; }}" ]
          ++ lib.optional (configFile != null) "OPENFILES_CONFIG=${configFile}";
      };
      Install.Also = [ "openfiles.socket" ];
    };
  };

  # LaunchAgent keys (home-manager's launchd.agents.<n>.config, nix-darwin's serviceConfig).
  launchdConfig = { package, socket, log, configFile, extraPackages, home, user }: {
    Label = label;
    ProgramArguments = [ (lib.getExe package) "serve" ];
    Sockets.Listeners = {
      SockPathName = socket;
      SockPathMode = 384; # 0600
      SockType = "stream";
    };
    EnvironmentVariables = {
      OPENFILES_SOCKET = socket;
      # launchd expands nothing: the user's home and name spelled out.
      PATH = servicePath { inherit extraPackages home user; };
    } // lib.optionalAttrs (configFile != null) {
      OPENFILES_CONFIG = "${configFile}";
    };
    ProcessType = "Interactive";
    StandardErrorPath = log;
  };
}
