# Evaluates the three modules with typical settings, against whatever `lib`/`pkgs` it is
# given (the stub in nix/stub-nixpkgs for the offline tests, real nixpkgs in the flake's
# checks), and returns what they generate as plain data: the home-manager units rendered to
# INI exactly as home-manager writes them, the NixOS unit options, the LaunchAgent keys.
#   nix-instantiate --eval --strict --json nix/tests/eval.nix
{ lib ? import ../stub-nixpkgs/lib.nix
, pkgs ? import ../stub-nixpkgs/default.nix { inherit system; }
, darwinPkgs ? import ../stub-nixpkgs/default.nix { system = "aarch64-darwin"; }
, system ? "x86_64-linux"
  # The home-manager module to evaluate in place of nix/modules/home-manager.nix (a flake
  # output, so the tests can compare `homeModules` with `homeManagerModules`).
, hmModule ? null
}:

let
  lib' = lib // { hm = lib.hm or (import ../stub-nixpkgs/lib.nix).hm; };
  package = pkgs.callPackage ../package.nix { };
  darwinPackage = darwinPkgs.callPackage ../package.nix { };
  modules = p: {
    nixos = import ../modules/nixos.nix { defaultPackage = _: p; };
    hm = if hmModule != null then hmModule else import ../modules/home-manager.nix { defaultPackage = _: p; };
    darwin = import ../modules/darwin.nix { defaultPackage = _: p; };
  };

  # The options NixOS, home-manager and nix-darwin declare, loosely typed.
  host = { lib, pkgs, ... }:
    let
      any = lib.mkOption { type = lib.types.attrsOf lib.types.anything; default = { }; };
      list = lib.mkOption { type = lib.types.listOf lib.types.anything; default = [ ]; };
    in
    {
      options = {
        assertions = list;
        environment = { etc = any; systemPackages = list; variables = any; };
        systemd = {
          user = { services = any; sockets = any; };
          package = lib.mkOption { type = lib.types.package; default = pkgs.systemd; };
        };
        home = { packages = list; sessionVariables = any; activation = any; homeDirectory = lib.mkOption { type = lib.types.str; }; username = lib.mkOption { type = lib.types.str; }; };
        xdg.configFile = any;
        launchd = { agents = any; user.agents = any; };
        system = {
          activationScripts = any;
          userActivationScripts = any;
          primaryUser = lib.mkOption { type = lib.types.nullOr lib.types.str; default = null; };
        };
        users.users = any;
      };
    };

  eval = p: modules: (lib'.evalModules {
    modules = [ host ] ++ modules;
    specialArgs = { pkgs = p; lib = lib'; };
  }).config;

  settings = {
    hooks = { feedback = "errors"; timeout_ms = 6000; };
    service.log_level = "debug";
    plugins.disabled = [ "tsc" ];
  };
  changedSettings = settings // { hooks = settings.hooks // { feedback = "all"; }; };

  # home-manager's own rendering of systemd units (modules/systemd.nix, toSystemdIni).
  toSystemdIni = lib.generators.toINI {
    listsAsDuplicateKeys = true;
    mkKeyValue = key: value:
      let value' = if builtins.isBool value then lib.boolToString value else toString value;
      in "${key}=${value'}";
  };

  # NixOS's rendering of the user units the module declares (nixos/lib/systemd-lib.nix,
  # reduced to the attributes the module sets): `path` becomes the PATH environment entry.
  nixosSocketUnit = s: toSystemdIni {
    Unit.Description = s.description;
    Socket = { ListenStream = s.listenStreams; } // s.socketConfig;
    Install.WantedBy = s.wantedBy;
  };
  nixosServiceUnit = s:
    let
      env = (s.environment or { }) // lib.optionalAttrs ((s.path or [ ]) != [ ]) {
        PATH = "${lib.makeBinPath s.path}:${lib.makeSearchPath "sbin" s.path}";
      };
    in
    toSystemdIni {
      Unit = { Description = s.description; Requires = s.requires; After = s.after; };
      Service = s.serviceConfig // {
        Environment = lib.mapAttrsToList (n: v: builtins.toJSON "${n}=${v}") env;
      };
    };

  # The messages of the assertions that fail.
  failed = config: map (a: a.message) (builtins.filter (a: !a.assertion) config.assertions);

  # Activation phases (nix-darwin) with text, by name.
  phases = scripts: lib.filterAttrs (_: t: t != null) (builtins.mapAttrs (_: v: v.text or null) scripts);

  textOf = f: if f == null then null else f.passthru.text or null;

  nixos = eval pkgs [
    (modules package).nixos
    { services.openfiles = { enable = true; inherit settings; extraPackages = [ pkgs.ruff ]; }; }
  ];
  nixosOff = eval pkgs [ (modules package).nixos { services.openfiles.settings = settings; } ];

  hmLinux = eval pkgs [
    (modules package).hm
    { home.homeDirectory = "/home/alice"; services.openfiles = { enable = true; inherit settings; extraPackages = [ pkgs.ruff pkgs.pyright ]; }; }
  ];
  # The same with other settings: what `home-manager switch` compares.
  hmLinuxChanged = eval pkgs [
    (modules package).hm
    { home.homeDirectory = "/home/alice"; services.openfiles = { enable = true; settings = changedSettings; extraPackages = [ pkgs.ruff pkgs.pyright ]; }; }
  ];
  # No extraPackages: the service still gets the user's profiles on its PATH.
  hmLinuxBare = eval pkgs [
    (modules package).hm
    { home = { homeDirectory = "/home/alice"; username = "alice"; }; services.openfiles.enable = true; }
  ];
  hmDarwin = eval darwinPkgs [
    (modules darwinPackage).hm
    { home = { homeDirectory = "/Users/alice"; username = "alice"; }; services.openfiles.enable = true; }
  ];
  hmDarwinExtra = eval darwinPkgs [
    (modules darwinPackage).hm
    { home = { homeDirectory = "/Users/alice"; username = "alice"; }; services.openfiles = { enable = true; extraPackages = [ darwinPkgs.ruff ]; }; }
  ];
  darwin = eval darwinPkgs [
    (modules darwinPackage).darwin
    { users.users.alice.home = "/Users/alice"; services.openfiles = { enable = true; user = "alice"; inherit settings; extraPackages = [ darwinPkgs.ruff ]; }; }
  ];
  darwinChanged = eval darwinPkgs [
    (modules darwinPackage).darwin
    { users.users.alice.home = "/Users/alice"; services.openfiles = { enable = true; user = "alice"; settings = changedSettings; extraPackages = [ darwinPkgs.ruff ]; }; }
  ];
  nixosChanged = eval pkgs [
    (modules package).nixos
    { services.openfiles = { enable = true; settings = changedSettings; extraPackages = [ pkgs.ruff ]; }; }
  ];
  # nix-darwin variants: user from system.primaryUser; a different user; a declared user
  # without a home; neither set.
  darwinPrimary = eval darwinPkgs [
    (modules darwinPackage).darwin
    { system.primaryUser = "alice"; services.openfiles.enable = true; }
  ];
  darwinOther = eval darwinPkgs [
    (modules darwinPackage).darwin
    { system.primaryUser = "alice"; services.openfiles = { enable = true; user = "bob"; }; }
  ];
  darwinNoHome = eval darwinPkgs [
    (modules darwinPackage).darwin
    { system.primaryUser = "alice"; users.users.alice = { }; services.openfiles.enable = true; }
  ];
  darwinNobody = eval darwinPkgs [
    (modules darwinPackage).darwin
    { services.openfiles.enable = true; }
  ];
  hmDarwinSettings = eval darwinPkgs [
    (modules darwinPackage).hm
    { home = { homeDirectory = "/Users/alice"; username = "alice"; }; services.openfiles = { enable = true; inherit settings; }; }
  ];
  # With the overlay applied, the package option's default is pkgs.openfiles.
  overlaid = pkgs // { openfiles = pkgs.writeText "openfiles-from-overlay" ""; };
  nixosOverlaid = eval overlaid [ (modules package).nixos { services.openfiles.enable = true; } ];
  nixosBadPackages = eval pkgs [
    (modules package).nixos
    { services.openfiles = { enable = true; extraPackages = [ "/usr/bin/ruff" ]; }; }
  ];
in
{
  packageBin = lib.getExe package;
  packageSource = "${package.src}";
  packageCargoBuildFlags = package.cargoBuildFlags;
  packageMeta = { inherit (package.meta) description license mainProgram platforms; };
  packageOption = {
    overlay = toString nixosOverlaid.services.openfiles.package;
    expected = toString overlaid.openfiles;
    flake = toString nixos.services.openfiles.package;
  };
  darwinPackageBin = lib.getExe darwinPackage;
  settings = settings;

  nixos = {
    socket = nixos.systemd.user.sockets.openfiles;
    service = nixos.systemd.user.services.openfiles // { path = map toString nixos.systemd.user.services.openfiles.path; };
    socketUnit = nixosSocketUnit nixos.systemd.user.sockets.openfiles;
    serviceUnit = nixosServiceUnit nixos.systemd.user.services.openfiles;
    systemPackages = map toString nixos.environment.systemPackages;
    configText = textOf nixos.environment.etc."openfiles/config.toml".source;
    disabledHasUnits = nixosOff.systemd.user.services != { } || nixosOff.systemd.user.sockets != { };
    userActivation = nixos.system.userActivationScripts.openfiles;
    systemctl = "${pkgs.systemd}/bin/systemctl";
    disabledHasActivation = nixosOff.system.userActivationScripts != { };
    changed = {
      serviceUnit = nixosServiceUnit nixosChanged.systemd.user.services.openfiles;
      configText = textOf nixosChanged.environment.etc."openfiles/config.toml".source;
      userActivation = nixosChanged.system.userActivationScripts.openfiles;
    };
  };

  hmLinux = {
    socketUnit = toSystemdIni hmLinux.systemd.user.sockets.openfiles;
    serviceUnit = toSystemdIni hmLinux.systemd.user.services.openfiles;
    configText = textOf hmLinux.xdg.configFile."openfiles/config.toml".source;
    sessionVariables = hmLinux.home.sessionVariables;
    hasLaunchd = hmLinux.launchd.agents != { };
    bareServiceUnit = toSystemdIni hmLinuxBare.systemd.user.services.openfiles;
    configSource = toString hmLinux.xdg.configFile."openfiles/config.toml".source;
    hasOnChange = hmLinux.xdg.configFile."openfiles/config.toml" ? onChange;
    changed = {
      serviceUnit = toSystemdIni hmLinuxChanged.systemd.user.services.openfiles;
      configSource = toString hmLinuxChanged.xdg.configFile."openfiles/config.toml".source;
    };
  };

  hmDarwin = {
    agent = hmDarwin.launchd.agents.openfiles;
    sessionVariables = hmDarwin.home.sessionVariables;
    activation = hmDarwin.home.activation.openfilesSocketDir.data;
    activationOrder = { inherit (hmDarwin.home.activation.openfilesSocketDir) after before; };
    hasSystemd = hmDarwin.systemd.user.services != { };
    extraAgent = hmDarwinExtra.launchd.agents.openfiles.config;
  };

  assertions = {
    nixos = failed nixos;
    hmLinux = failed hmLinux;
    hmDarwin = failed hmDarwin;
    darwin = failed darwin;
    darwinPrimary = failed darwinPrimary;
    darwinOther = failed darwinOther;
    darwinNoHome = failed darwinNoHome;
    darwinNobody = failed darwinNobody;
    nixosBadPackages = failed nixosBadPackages;
  };

  darwinPrimary = {
    user = darwinPrimary.services.openfiles.user;
    socket = darwinPrimary.launchd.user.agents.openfiles.serviceConfig.Sockets.Listeners.SockPathName;
  };

  hmDarwinSettings = {
    config = hmDarwinSettings.launchd.agents.openfiles.config.EnvironmentVariables.OPENFILES_CONFIG;
    file = builtins.attrNames hmDarwinSettings.xdg.configFile;
    onChange = hmDarwinSettings.xdg.configFile."openfiles/config.toml".onChange;
    # Without settings there is no file, so nothing to watch.
    bareFiles = builtins.attrNames hmDarwin.xdg.configFile;
  };

  darwin = {
    agent = darwin.launchd.user.agents.openfiles.serviceConfig;
    variables = darwin.environment.variables;
    # The activation phases the module writes to, with their text.
    activation = phases darwin.system.activationScripts;
    configText = textOf darwin.environment.etc."openfiles/config.toml".source;
    changedConfigText = textOf darwinChanged.environment.etc."openfiles/config.toml".source;
    changedActivation = phases darwinChanged.system.activationScripts;
    # Without settings: no config file, nothing to compare.
    bareActivation = phases darwinPrimary.system.activationScripts;
  };
}
