# The flake's `checks.<system>.modules`: evaluate the modules (nix/tests/eval.nix) with this
# nixpkgs and, on Linux, run `systemd-analyze verify` on the units home-manager would write;
# on macOS, evaluate the LaunchAgents of the home-manager and nix-darwin modules.
{ pkgs, lib }:

let
  isLinux = pkgs.stdenv.hostPlatform.isLinux;
  result = import ./eval.nix {
    inherit lib pkgs;
    darwinPkgs = pkgs;
    system = pkgs.stdenv.hostPlatform.system;
  };
  summary =
    if isLinux then { inherit (result.nixos) socket; }
    else { inherit (result.darwin) agent; hm = result.hmDarwin.agent; };
in
pkgs.runCommand "openfiles-module-checks"
  ({
    summary = builtins.toJSON summary;
  } // lib.optionalAttrs isLinux {
    nativeBuildInputs = [ pkgs.systemd ];
    socketUnit = result.hmLinux.socketUnit;
    serviceUnit = result.hmLinux.serviceUnit;
  })
  (lib.optionalString isLinux ''
    mkdir -p units
    printf '%s' "$socketUnit" > units/openfiles.socket
    printf '%s' "$serviceUnit" > units/openfiles.service
    export XDG_RUNTIME_DIR=$TMPDIR/run; mkdir -m 700 -p $XDG_RUNTIME_DIR
    out_text=$(systemd-analyze --user verify units/openfiles.socket units/openfiles.service 2>&1) || { echo "$out_text"; exit 1; }
    [ -z "$out_text" ] || { echo "$out_text"; exit 1; }
  '' + ''
    printf '%s\n' "$summary" > $out
  '')
