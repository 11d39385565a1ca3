{
  description = "openfiles: headless OpenFiles + Claws for AI coding agents, as a socket-activated user service";

  # The only input. There is no flake.lock in the repository yet: it was built where GitHub
  # is unreachable (see docs/INSTALL.md, "For maintainers"); `nix flake lock` creates it.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      lib = nixpkgs.lib;
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAllSystems = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
      defaultPackage = pkgs: self.packages.${pkgs.stdenv.hostPlatform.system}.default;
    in
    {
      packages = forAllSystems (pkgs: rec {
        openfiles = pkgs.callPackage ./nix/package.nix { };
        default = openfiles;
      });

      overlays.default = final: prev: {
        openfiles = final.callPackage ./nix/package.nix { };
      };

      nixosModules.default = import ./nix/modules/nixos.nix { inherit defaultPackage; };
      # home-manager's flake output name; homeManagerModules is the older one, kept as an alias.
      homeModules.default = import ./nix/modules/home-manager.nix { inherit defaultPackage; };
      homeManagerModules = self.homeModules;
      darwinModules.default = import ./nix/modules/darwin.nix { inherit defaultPackage; };

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          inputsFrom = [ self.packages.${pkgs.stdenv.hostPlatform.system}.default ];
          packages = with pkgs; [ cargo rustc clippy rustfmt rust-analyzer ];
        };
      });

      checks = forAllSystems (pkgs: {
        package = self.packages.${pkgs.stdenv.hostPlatform.system}.default;
        modules = import ./nix/tests/checks.nix { inherit pkgs; lib = pkgs.lib; };
      });
    };
}
