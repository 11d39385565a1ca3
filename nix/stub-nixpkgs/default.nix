# The stub's package set: derivations that evaluate (so `nix flake check --no-build` and the
# module tests can instantiate them) but are not meant to be built. See lib.nix.
{ system ? "x86_64-linux" }:
let
  b = builtins;
  lib = import ./lib.nix;
  isDarwin = lib.hasSuffix "darwin" system;
  platform = {
    inherit system isDarwin;
    isLinux = !isDarwin;
    extensions.sharedLibrary = if isDarwin then ".dylib" else ".so";
  };
  stdenv = {
    hostPlatform = platform // { canExecute = p: p.system == system; };
    buildPlatform = platform // { canExecute = p: p.system == system; };
    inherit isDarwin;
    isLinux = !isDarwin;
  };
  # Keep what a derivation can hold; functions and attribute sets are dropped.
  drvAttrs = attrs: lib.filterAttrs (n: v: b.isString v || b.isPath v || b.isBool v || b.isInt v || b.isList v || lib.isDerivation v) attrs;
  stubDrv = name: attrs:
    (derivation (drvAttrs attrs // {
      inherit name system;
      builder = "/bin/sh";
      args = [ "-c" (attrs.buildCommand or "echo 'stub nixpkgs: ${name} is not buildable' >&2; exit 1") ];
    })) // { meta = attrs.meta or { }; passthru = attrs.passthru or { }; pname = attrs.pname or name; };
  tool = name: stubDrv name { meta.mainProgram = name; };

  toTOML = value:
    let
      isTable = v: b.isAttrs v;
      scalar = v:
        if b.isBool v then lib.boolToString v
        else if b.isInt v || b.isFloat v then toString v
        else if b.isList v then "[" + lib.concatMapStringsSep ", " scalar v + "]"
        else b.toJSON (toString v);
      key = k: if b.match "[A-Za-z0-9_-]+" k != null then k else b.toJSON k;
      section = path: attrs:
        let
          plain = lib.filterAttrs (n: v: !isTable v) attrs;
          tables = lib.filterAttrs (n: v: isTable v) attrs;
        in
        (if path != [ ] && (plain != { } || tables == { }) then "[${lib.concatMapStringsSep "." key path}]\n" else "")
        + lib.concatStringsSep "" (lib.mapAttrsToList (k: v: "${key k} = ${scalar v}\n") plain)
        + lib.concatStringsSep "" (lib.mapAttrsToList (k: v: "\n" + section (path ++ [ k ]) v) tables);
    in
    section [ ] value;

  pkgs = {
    inherit lib stdenv system toTOML;
    callPackage = f: args:
      let fn = if b.isFunction f then f else import f; in
      fn (b.intersectAttrs (b.functionArgs fn) pkgs // args);
    rustPlatform.buildRustPackage = attrs:
      stubDrv "${attrs.pname}-${attrs.version}" (attrs // {
        cargoLockHash = b.hashFile "sha256" attrs.cargoLock.lockFile;
      });
    mkShell = attrs: stubDrv (attrs.name or "nix-shell") attrs;
    runCommand = name: env: buildCommand: stubDrv name (env // { inherit buildCommand; });
    writeText = name: text: stubDrv name { inherit text; buildCommand = "printf %s \"$text\" > $out"; };
    formats.toml = { }: {
      type = lib.types.anything;
      generate = name: value: (pkgs.writeText name (toTOML value)) // { passthru.text = toTOML value; };
    };
    installShellFiles = tool "install-shell-files";
    systemd = tool "systemd";
    coreutils = tool "coreutils";
    python3 = tool "python3";
    cargo = tool "cargo";
    rustc = tool "rustc";
    clippy = tool "clippy";
    rustfmt = tool "rustfmt";
    rust-analyzer = tool "rust-analyzer";
    nix = tool "nix";
    clang-tools = tool "clang-tools";
    ruff = tool "ruff";
    pyright = tool "pyright";
    nodejs = tool "nodejs";
  };
in
pkgs
