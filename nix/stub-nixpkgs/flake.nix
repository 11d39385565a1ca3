{
  # A stand-in for nixpkgs so openfiles' flake evaluates offline:
  #   nix flake check --override-input nixpkgs path:./nix/stub-nixpkgs --no-build
  # It implements only the parts of `lib` and the package set that openfiles uses.
  description = "Stub nixpkgs for offline evaluation of the openfiles flake";

  outputs = { self }:
    let lib = import ./lib.nix; in
    {
      inherit lib;
      legacyPackages = lib.genAttrs lib.systems.flakeExposed (system: import ./default.nix { inherit system; });
    };
}
