# The openfiles package: the binary, the plugin libraries under lib/openfiles/plugins, the
# systemd user units (lib/systemd/user and share/systemd/user) and shell completions. There
# is no LaunchAgent plist: its socket and log paths live in the user's home, so
# `openfiles service install` (or the home-manager / nix-darwin module) writes it per user.
{ lib, stdenv, rustPlatform, installShellFiles, coreutils }:

let
  cargoToml = builtins.fromTOML (builtins.readFile ../Cargo.toml);
  libExt = stdenv.hostPlatform.extensions.sharedLibrary;
in
rustPlatform.buildRustPackage {
  pname = "openfiles";
  version = cargoToml.workspace.package.version;

  # What cargo reads to build the workspace, and nothing else: the manifests and lock file,
  # every member's sources, the files they `include_str!` (packaging/, contrib/), and
  # benches/, because cargo parses the root manifest's `[[bench]]` targets (and refuses a
  # missing file) before it compiles anything. An edit to docs/, nix/, tests/ or fuzz/ (or a
  # `result` symlink, `target/`) does not change the source and rebuilds nothing.
  src = lib.fileset.toSource {
    root = ../.;
    fileset = lib.fileset.unions [
      ../Cargo.toml
      ../Cargo.lock
      ../src
      ../crates
      ../plugins
      ../benches
      ../packaging
      ../contrib
    ];
  };
  cargoLock.lockFile = ../Cargo.lock;

  # The whole workspace: the binary and the plugin cdylibs.
  cargoBuildFlags = [ "--workspace" "--exclude" "openfiles-test-fixtures" ];
  # The integration tests need a systemd user manager, PTYs and language servers; CI runs them.
  doCheck = false;

  nativeBuildInputs = [ installShellFiles ];

  postInstall = ''
    mkdir -p $out/lib/openfiles/plugins
    # Plugin libraries are named libopenfiles_plugin_<name> (plugins/api/README.md).
    for lib in $out/lib/libopenfiles_plugin_*${libExt}; do
      [ -e "$lib" ] && mv "$lib" $out/lib/openfiles/plugins/
    done

    install -Dm644 packaging/systemd/openfiles.socket $out/lib/systemd/user/openfiles.socket
    install -Dm644 packaging/systemd/openfiles.service $out/lib/systemd/user/openfiles.service
    # Linked on NixOS too (`systemctl --user link`), which has no /bin/kill.
    substituteInPlace $out/lib/systemd/user/openfiles.service \
      --replace-fail /usr/bin/openfiles $out/bin/openfiles \
      --replace-fail /bin/kill ${coreutils}/bin/kill
    mkdir -p $out/share/systemd/user
    cp $out/lib/systemd/user/openfiles.socket $out/lib/systemd/user/openfiles.service $out/share/systemd/user/
  '' + lib.optionalString (stdenv.buildPlatform.canExecute stdenv.hostPlatform) ''
    installShellCompletion --cmd openfiles \
      --bash <($out/bin/openfiles completions bash) \
      --zsh <($out/bin/openfiles completions zsh) \
      --fish <($out/bin/openfiles completions fish)
  '';

  meta = {
    description = "Headless OpenFiles + Claws: diagnostics for AI coding agents and terminals over a socket";
    longDescription = ''
      A socket-activated user service that runs language servers and compilers on the files
      AI coding agents edit, hands the problems back through the agents' hooks, and serves
      Claws terminals, without an editor.
    '';
    license = with lib.licenses; [ mit asl20 ];
    mainProgram = "openfiles";
    platforms = lib.platforms.linux ++ lib.platforms.darwin;
  };
}
