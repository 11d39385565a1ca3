# The openfiles package: the binary, the plugin libraries under lib/openfiles/plugins, the
# systemd user units (lib/systemd/user and share/systemd/user) and the LaunchAgent template
# with this build's path substituted, and shell completions.
{ lib, stdenv, rustPlatform, installShellFiles }:

let
  cargoToml = builtins.fromTOML (builtins.readFile ../Cargo.toml);
  libExt = stdenv.hostPlatform.extensions.sharedLibrary;
in
rustPlatform.buildRustPackage {
  pname = "openfiles";
  version = cargoToml.workspace.package.version;

  src = lib.cleanSourceWith {
    src = ../.;
    # Keep build outputs and editor litter out of the store path.
    filter = path: type:
      let base = baseNameOf (toString path); in
      !(type == "directory" && (base == "target" || base == ".git" || base == "result"));
  };
  cargoLock.lockFile = ../Cargo.lock;

  # The whole workspace: the binary and the plugin cdylibs.
  cargoBuildFlags = [ "--workspace" "--exclude" "openfiles-test-fixtures" ];
  # The integration tests need a systemd user manager, PTYs and language servers; CI runs them.
  doCheck = false;

  nativeBuildInputs = [ installShellFiles ];

  postInstall = ''
    mkdir -p $out/lib/openfiles/plugins
    for lib in $out/lib/libopenfiles_*${libExt}; do
      [ -e "$lib" ] && mv "$lib" $out/lib/openfiles/plugins/
    done

    install -Dm644 packaging/systemd/openfiles.socket $out/lib/systemd/user/openfiles.socket
    install -Dm644 packaging/systemd/openfiles.service $out/lib/systemd/user/openfiles.service
    substituteInPlace $out/lib/systemd/user/openfiles.service \
      --replace-fail /usr/bin/openfiles $out/bin/openfiles
    mkdir -p $out/share/systemd/user
    cp $out/lib/systemd/user/openfiles.socket $out/lib/systemd/user/openfiles.service $out/share/systemd/user/

    install -Dm644 packaging/launchd/org.openfiles.openfiles.plist \
      $out/share/openfiles/launchd/org.openfiles.openfiles.plist
    substituteInPlace $out/share/openfiles/launchd/org.openfiles.openfiles.plist \
      --replace-fail @OPENFILES@ $out/bin/openfiles
  '' + lib.optionalString (stdenv.buildPlatform.canExecute stdenv.hostPlatform) ''
    installShellCompletion --cmd openfiles \
      --bash <($out/bin/openfiles completions bash) \
      --zsh <($out/bin/openfiles completions zsh) \
      --fish <($out/bin/openfiles completions fish)
  '';

  meta = {
    description = "Headless OpenFiles + Claws: diagnostics for AI coding agents and terminals over a socket";
    license = with lib.licenses; [ mit asl20 ];
    mainProgram = "openfiles";
    platforms = lib.platforms.linux ++ lib.platforms.darwin;
  };
}
