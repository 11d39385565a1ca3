//! Which checker each language gets, and how to install a missing one on this machine: the
//! table `openfiles doctor` reads to print, per language present in the workspace, the tool
//! that checks it or "none: install X" with the command for the user's package manager.
//!
//! The table follows the built-in servers of the lsp plugin (`plugins/lsp/src/config.rs`)
//! and the project-wide plugins (cargo-check, tsc, pyright, go, cc: the "project" roles,
//! which find what an edit broke in files nobody edited): a [`Role`] is one job (Python's type checking) that
//! any of its tools can do, the first found being the one used. Nothing here runs anything:
//! the package manager is read from `/etc/os-release` (or the platform, on macOS).

use std::path::Path;

/// One job for a language, done by the first of `tools` that is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Role {
    /// What the job is, shown when none of the tools is found ("types", "lint").
    pub name: &'static str,
    /// The executables that can do it, in the order the plugins prefer them.
    pub tools: &'static [&'static str],
    /// Only used when the user enables it (`[plugin.lsp] enable`): no warning when missing.
    pub opt_in: bool,
}

const fn role(name: &'static str, tools: &'static [&'static str]) -> Role {
    Role {
        name,
        tools,
        opt_in: false,
    }
}

const fn opt_in(name: &'static str, tools: &'static [&'static str]) -> Role {
    Role {
        name,
        tools,
        opt_in: true,
    }
}

/// Every language's roles, by its name in [`crate::setup::probe::Language::name`].
const TABLE: &[(&str, &[Role])] = &[
    (
        "Python",
        &[
            role("lint", &["ruff"]),
            role(
                "types",
                &["pyright-langserver", "basedpyright-langserver", "ty"],
            ),
            role("project", &["pyright", "basedpyright", "ty"]),
        ],
    ),
    (
        "TypeScript/JavaScript",
        &[
            role("editor", &["typescript-language-server", "tsgo"]),
            role("project", &["tsc", "tsgo"]),
        ],
    ),
    (
        "ESLint",
        &[role("lint", &["vscode-eslint-language-server"])],
    ),
    (
        "C/C++",
        &[
            role("compiler", &["clangd"]),
            role("project", &["clang", "gcc"]),
        ],
    ),
    (
        "Rust",
        &[
            role("project", &["cargo"]),
            role("editor", &["rust-analyzer"]),
        ],
    ),
    ("Go", &[role("types", &["gopls"]), role("project", &["go"])]),
    (
        "Shell",
        &[
            role("server", &["bash-language-server"]),
            role("lint", &["shellcheck"]),
        ],
    ),
    ("JSON", &[role("schema", &["vscode-json-language-server"])]),
    ("YAML", &[role("schema", &["yaml-language-server"])]),
    ("CSS", &[role("lint", &["vscode-css-language-server"])]),
    ("Dockerfile", &[role("lint", &["docker-langserver"])]),
    ("PHP", &[role("types", &["intelephense"])]),
    ("TOML", &[role("syntax", &["openfiles-taplo-lsp"])]),
    (
        "HTML",
        &[opt_in("embedded", &["vscode-html-language-server"])],
    ),
];

/// The roles of a language, by its name in [`crate::setup::probe::Language::name`].
pub fn roles(language: &str) -> &'static [Role] {
    TABLE
        .iter()
        .find(|(name, _)| *name == language)
        .map(|(_, r)| *r)
        .unwrap_or(&[])
}

/// The lsp plugin's name for the server a tool runs (what `[plugin.lsp] enable` takes).
pub fn server_name(tool: &str) -> &str {
    match tool {
        "vscode-html-language-server" => "html",
        other => other,
    }
}

/// The package managers an install command can be written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packages {
    Apt,
    Dnf,
    Pacman,
    Apk,
    Zypper,
    Nix,
    Brew,
    /// Unknown: the commands that work anywhere (npm, pipx, go, rustup) and the package name.
    Other,
}

impl Packages {
    /// This machine's: Homebrew on macOS, else from `/etc/os-release` (`ID`, `ID_LIKE`).
    pub fn detect() -> Packages {
        if cfg!(target_os = "macos") {
            return Packages::Brew;
        }
        let text = std::fs::read_to_string(Path::new("/etc/os-release")).unwrap_or_default();
        Packages::from_os_release(&text)
    }

    /// The package manager of the distribution an `os-release` file describes.
    pub fn from_os_release(text: &str) -> Packages {
        let field = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .map(|v| v.trim_matches('"').to_ascii_lowercase())
                .unwrap_or_default()
        };
        let ids = format!("{} {}", field("ID"), field("ID_LIKE"));
        let has = |id: &str| ids.split_whitespace().any(|x| x == id);
        if has("nixos") {
            Packages::Nix
        } else if has("debian") || has("ubuntu") {
            Packages::Apt
        } else if has("fedora") || has("rhel") || has("centos") {
            Packages::Dnf
        } else if has("arch") {
            Packages::Pacman
        } else if has("alpine") {
            Packages::Apk
        } else if has("suse") || has("opensuse") {
            Packages::Zypper
        } else {
            Packages::Other
        }
    }

    /// The command installing a system package (`clangd`, `shellcheck`) under this manager.
    fn system(self, apt: &str, dnf: &str, pacman: &str, brew: &str, nix: &str) -> String {
        match self {
            Packages::Apt => format!("sudo apt install {apt}"),
            Packages::Dnf => format!("sudo dnf install {dnf}"),
            Packages::Pacman => format!("sudo pacman -S {pacman}"),
            Packages::Apk => format!("sudo apk add {apt}"),
            Packages::Zypper => format!("sudo zypper install {dnf}"),
            Packages::Nix => format!("nix profile install nixpkgs#{nix}"),
            Packages::Brew => format!("brew install {brew}"),
            Packages::Other => format!("install {apt} with your package manager"),
        }
    }
}

/// The command that installs `tool` on a machine with `packages`.
pub fn install_command(tool: &str, packages: Packages) -> String {
    let npm = |p: &str| format!("npm install -g {p}");
    // Python tools: pipx everywhere (Homebrew and Nix have them too).
    let python = |p: &str| match packages {
        Packages::Brew => format!("brew install {p}"),
        Packages::Nix => format!("nix profile install nixpkgs#{p}"),
        _ => format!("pipx install {p}"),
    };
    match tool {
        "ruff" => python("ruff"),
        "ty" => python("ty"),
        "basedpyright-langserver" => python("basedpyright"),
        "pyright-langserver" | "pyright" => npm("pyright"),
        "basedpyright" => python("basedpyright"),
        "typescript-language-server" => npm("typescript typescript-language-server"),
        "tsc" => npm("typescript"),
        "tsgo" => npm("@typescript/native-preview"),
        "bash-language-server" => npm("bash-language-server"),
        "vscode-eslint-language-server"
        | "vscode-json-language-server"
        | "vscode-css-language-server"
        | "vscode-html-language-server" => npm("vscode-langservers-extracted"),
        "yaml-language-server" => npm("yaml-language-server"),
        "docker-langserver" => npm("dockerfile-language-server-nodejs"),
        "intelephense" => npm("intelephense"),
        "gopls" => match packages {
            Packages::Brew => "brew install gopls".into(),
            _ => "go install golang.org/x/tools/gopls@latest".into(),
        },
        "cargo" => "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh".into(),
        "rust-analyzer" => "rustup component add rust-analyzer".into(),
        // taplo's language server (npm @taplo/lsp) in our host, from an openfiles checkout.
        "openfiles-taplo-lsp" => {
            "npm install -g --install-links <openfiles checkout>/plugins/lsp/taplo".into()
        }
        "clangd" => packages.system(
            "clangd",
            "clang-tools-extra",
            "clang",
            "llvm",
            "clang-tools",
        ),
        "clang" => packages.system("clang", "clang", "clang", "llvm", "clang"),
        "gcc" => packages.system("gcc", "gcc", "gcc", "gcc", "gcc"),
        "go" => packages.system("golang-go", "golang", "go", "go", "go"),
        "shellcheck" => packages.system(
            "shellcheck",
            "ShellCheck",
            "shellcheck",
            "shellcheck",
            "shellcheck",
        ),
        other => format!("install {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_manager_comes_from_os_release() {
        let debian = "PRETTY_NAME=\"Debian GNU/Linux 12\"\nID=debian\n";
        assert_eq!(Packages::from_os_release(debian), Packages::Apt);
        let mint = "ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n";
        assert_eq!(Packages::from_os_release(mint), Packages::Apt);
        assert_eq!(
            Packages::from_os_release("ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n"),
            Packages::Dnf
        );
        assert_eq!(Packages::from_os_release("ID=arch\n"), Packages::Pacman);
        assert_eq!(Packages::from_os_release("ID=nixos\n"), Packages::Nix);
        assert_eq!(Packages::from_os_release(""), Packages::Other);
    }

    #[test]
    fn install_commands_follow_the_platform() {
        assert_eq!(
            install_command("clangd", Packages::Apt),
            "sudo apt install clangd"
        );
        assert_eq!(
            install_command("clangd", Packages::Dnf),
            "sudo dnf install clang-tools-extra"
        );
        assert_eq!(
            install_command("clangd", Packages::Brew),
            "brew install llvm"
        );
        assert_eq!(install_command("ruff", Packages::Apt), "pipx install ruff");
        assert_eq!(install_command("ruff", Packages::Brew), "brew install ruff");
        assert_eq!(
            install_command("yaml-language-server", Packages::Pacman),
            "npm install -g yaml-language-server"
        );
        assert_eq!(
            install_command("vscode-eslint-language-server", Packages::Other),
            "npm install -g vscode-langservers-extracted"
        );
    }

    #[test]
    fn every_language_doctor_finds_has_roles() {
        use crate::setup::probe::Language;
        for l in Language::ALL {
            assert!(!roles(l.name()).is_empty(), "{}", l.name());
            for r in roles(l.name()) {
                for t in r.tools {
                    // Every tool has a command of its own, not the bare fallback.
                    assert_ne!(install_command(t, Packages::Apt), format!("install {t}"));
                }
            }
        }
    }
}
