//! The silencing source's rules: which language family a file is (`lang`) and, per family,
//! the patterns that hide a problem (`rules`); which tables of a shared configuration file
//! configure a checker (`checker_section`). Pure data and matching; the source is the parent.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::{CAST_ANY, CONFIG_LOOSENED, SUPPRESSION, TEST_SKIPPED};

/// The language family of a file, as far as silencing goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lang {
    Python,
    Script,
    Rust,
    Go,
    C,
    /// A checker's configuration file.
    Config(ConfigKind),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ConfigKind {
    /// tsconfig/jsconfig, pyrightconfig, biome.
    Json,
    /// pyproject.toml, ruff.toml, Cargo.toml, clippy.toml.
    Toml,
    /// setup.cfg, mypy.ini.
    Ini,
    /// ESLint's configurations.
    Eslint,
    /// golangci-lint's, clang-tidy's.
    Yaml,
}

pub(super) fn lang(path: &Path) -> Option<Lang> {
    let name = path.file_name()?.to_str()?;
    let config = match name {
        "pyrightconfig.json" | "biome.json" | "jsconfig.json" => Some(ConfigKind::Json),
        n if n.starts_with("tsconfig") && n.ends_with(".json") => Some(ConfigKind::Json),
        "pyproject.toml" | "ruff.toml" | ".ruff.toml" | "Cargo.toml" | "clippy.toml"
        | ".clippy.toml" => Some(ConfigKind::Toml),
        "setup.cfg" | "mypy.ini" | ".mypy.ini" | ".flake8" | "tox.ini" => Some(ConfigKind::Ini),
        n if n.starts_with(".eslintrc") || n.starts_with("eslint.config.") => {
            Some(ConfigKind::Eslint)
        }
        ".golangci.yml" | ".golangci.yaml" | ".clang-tidy" => Some(ConfigKind::Yaml),
        _ => None,
    };
    if let Some(kind) = config {
        return Some(Lang::Config(kind));
    }
    let ext = path.extension()?.to_str()?;
    Some(match ext {
        "py" | "pyi" => Lang::Python,
        "ts" | "tsx" | "mts" | "cts" | "js" | "jsx" | "mjs" | "cjs" | "vue" | "svelte" => {
            Lang::Script
        }
        "rs" => Lang::Rust,
        "go" => Lang::Go,
        "c" | "h" | "cc" | "cpp" | "cxx" | "hh" | "hpp" | "hxx" | "m" | "mm" => Lang::C,
        _ => return None,
    })
}

/// Whether this source looks at `path`.
pub fn handles(path: &Path) -> bool {
    lang(path).is_some()
}

/// One pattern: what it finds and how it is named.
pub(super) struct Rule {
    pub(super) re: Regex,
    pub(super) code: &'static str,
    /// The message; `{}` is replaced by the matched line (trimmed, capped) for configuration
    /// rules, whose message must tell which setting.
    pub(super) message: &'static str,
}

/// A pattern of this file's (constants, each compiled by the tests below).
pub(super) fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("silencing pattern {pattern:?}: {e}"))
}

fn rule(pattern: &str, code: &'static str, message: &'static str) -> Rule {
    Rule {
        re: re(pattern),
        code,
        message,
    }
}

static PYTHON: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule(
            r"#\s*type:\s*ignore",
            SUPPRESSION,
            "`# type: ignore` added: it hides the type checker's error instead of fixing it",
        ),
        rule(
            r"#\s*(pyright|basedpyright):\s*ignore",
            SUPPRESSION,
            "`# pyright: ignore` added: it hides the type checker's error instead of fixing it",
        ),
        rule(
            r"#\s*(ruff:\s*)?noqa\b",
            SUPPRESSION,
            "`# noqa` added: it hides the linter's finding instead of fixing it",
        ),
        rule(
            r"#\s*(mypy:\s*ignore-errors|pylint:\s*disable|pyre-ignore|pyre-fixme|ty:\s*ignore)",
            SUPPRESSION,
            "a checker's suppression comment added: it hides a problem instead of fixing it",
        ),
        rule(
            r#"\bcast\(\s*(typing\.)?["']?Any\b"#,
            CAST_ANY,
            "`cast(Any, …)` added: it turns the type checker off for this value",
        ),
        rule(
            r"@(pytest\.mark\.(skip|skipif|xfail)|unittest\.(skip|skipIf|skipUnless|expectedFailure))\b|\bpytest\.(skip|xfail)\(|\.skipTest\(",
            TEST_SKIPPED,
            "a test skipped: the test no longer says whether the code works",
        ),
    ]
});

static SCRIPT: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule(
            r"@ts-(ignore|expect-error|nocheck)\b",
            SUPPRESSION,
            "`@ts-ignore`/`@ts-expect-error` added: it hides the type checker's error instead of fixing it",
        ),
        rule(
            r"eslint-disable|biome-ignore|oxlint-disable",
            SUPPRESSION,
            "a lint rule disabled in a comment: it hides the linter's finding instead of fixing it",
        ),
        rule(
            r"\bas\s+any\b",
            CAST_ANY,
            "`as any` added: it turns the type checker off for this value",
        ),
        rule(
            r"\b(it|test|describe|suite)\.skip(If)?\b|\bx(it|test|describe)\s*\(",
            TEST_SKIPPED,
            "a test skipped: the test no longer says whether the code works",
        ),
    ]
});

static RUST: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule(
            r"#!?\[\s*(allow|expect)\s*\(",
            SUPPRESSION,
            "`#[allow(…)]` added: it hides the compiler's or clippy's warning instead of fixing it",
        ),
        rule(
            r"#\[\s*ignore\s*(\]|=)",
            TEST_SKIPPED,
            "`#[ignore]` added: the test no longer runs",
        ),
    ]
});

static GO: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule(
            r"//\s*(nolint|lint:ignore)\b",
            SUPPRESSION,
            "`//nolint` added: it hides the linter's finding instead of fixing it",
        ),
        rule(
            r"\bt\.(Skip|SkipNow|Skipf)\(",
            TEST_SKIPPED,
            "`t.Skip` added: the test no longer says whether the code works",
        ),
    ]
});

static C: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule(
            r"\bNOLINT(NEXTLINE|BEGIN)?\b",
            SUPPRESSION,
            "`NOLINT` added: it hides clang-tidy's finding instead of fixing it",
        ),
        rule(
            r"#\s*pragma\s+(GCC|clang)\s+diagnostic\s+ignored",
            SUPPRESSION,
            "a compiler warning turned off with `#pragma … diagnostic ignored`",
        ),
    ]
});

const LOOSENED: &str = "a checker's configuration loosened: `{}`";

static CONFIG_JSON: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule(
            r#""(strict\w*|no[A-Z]\w*|checkJs|alwaysStrict|exactOptionalPropertyTypes)"\s*:\s*false"#,
            CONFIG_LOOSENED,
            LOOSENED,
        ),
        rule(
            r#""typeCheckingMode"\s*:\s*"(off|basic|standard)""#,
            CONFIG_LOOSENED,
            LOOSENED,
        ),
        rule(
            r#""report\w+"\s*:\s*(false|"none"|"information"|"hint"|"warning")"#,
            CONFIG_LOOSENED,
            LOOSENED,
        ),
        rule(r#""(level|\w+)"\s*:\s*"off""#, CONFIG_LOOSENED, LOOSENED),
    ]
});

static CONFIG_TOML: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule(
            r#"^\s*typeCheckingMode\s*=\s*["'](off|basic|standard)["']"#,
            CONFIG_LOOSENED,
            LOOSENED,
        ),
        rule(
            r#"^\s*report\w+\s*=\s*(false|["'](none|information|hint|warning)["'])"#,
            CONFIG_LOOSENED,
            LOOSENED,
        ),
        rule(
            r"^\s*(strict\w*|disallow_\w+|check_untyped_defs|warn_\w+)\s*=\s*false",
            CONFIG_LOOSENED,
            LOOSENED,
        ),
        rule(
            r"^\s*(ignore_errors|ignore_missing_imports)\s*=\s*true",
            CONFIG_LOOSENED,
            LOOSENED,
        ),
        rule(
            r"^\s*(extend-ignore|ignore|per-file-ignores|extend-per-file-ignores|unfixable|exclude|extend-exclude)\s*=",
            CONFIG_LOOSENED,
            LOOSENED,
        ),
        rule(
            r#"=\s*["']allow["']|level\s*=\s*["']allow["']"#,
            CONFIG_LOOSENED,
            LOOSENED,
        ),
    ]
});

static CONFIG_INI: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule(
            r"(?i)^\s*(strict\w*|disallow_\w+|check_untyped_defs|warn_\w+)\s*=\s*false",
            CONFIG_LOOSENED,
            LOOSENED,
        ),
        rule(
            r"(?i)^\s*(ignore_errors|ignore_missing_imports)\s*=\s*true",
            CONFIG_LOOSENED,
            LOOSENED,
        ),
        rule(
            r"^\s*(extend-ignore|ignore|per-file-ignores|exclude|extend-exclude)\s*=",
            CONFIG_LOOSENED,
            LOOSENED,
        ),
    ]
});

static CONFIG_ESLINT: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![rule(
        r#"["']?[\w@/-]+["']?\s*:\s*(["']off["']|0\b|\[\s*(["']off["']|0)\b)"#,
        CONFIG_LOOSENED,
        LOOSENED,
    )]
});

static CONFIG_YAML: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![rule(
        r"^\s*(disable(-all)?|exclude(-rules|-dirs|-files)?|skip-(dirs|files))\s*:|^\s*Checks\s*:.*-\w",
        CONFIG_LOOSENED,
        LOOSENED,
    )]
});

pub(super) fn rules(lang: Lang) -> &'static [Rule] {
    match lang {
        Lang::Python => &PYTHON,
        Lang::Script => &SCRIPT,
        Lang::Rust => &RUST,
        Lang::Go => &GO,
        Lang::C => &C,
        Lang::Config(ConfigKind::Json) => &CONFIG_JSON,
        Lang::Config(ConfigKind::Toml) => &CONFIG_TOML,
        Lang::Config(ConfigKind::Ini) => &CONFIG_INI,
        Lang::Config(ConfigKind::Eslint) => &CONFIG_ESLINT,
        Lang::Config(ConfigKind::Yaml) => &CONFIG_YAML,
    }
}

pub(super) static SECTION: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*\[\[?\s*([^\]]+?)\s*\]"));

/// Whether a line under `section` of a TOML or INI file configures a checker: in a shared
/// file (`pyproject.toml`, `Cargo.toml`, `setup.cfg`, `tox.ini`) only the checkers' own
/// tables count (so `exclude` of a packaging table is not named); a checker's own file counts
/// whole.
pub(super) fn checker_section(kind: ConfigKind, file: &str, section: Option<&str>) -> bool {
    let under = |prefixes: &[&str]| {
        section.is_some_and(|s| {
            prefixes.iter().any(|p| {
                s == *p || s.starts_with(&format!("{p}.")) || s.starts_with(&format!("{p}-"))
            })
        })
    };
    match (kind, file) {
        (ConfigKind::Toml, "pyproject.toml") => under(&[
            "tool.pyright",
            "tool.basedpyright",
            "tool.mypy",
            "tool.ruff",
            "tool.ty",
            "tool.pylint",
        ]),
        (ConfigKind::Toml, "Cargo.toml") => under(&["lints", "workspace.lints"]),
        (ConfigKind::Ini, "setup.cfg" | "tox.ini") => {
            under(&["mypy", "flake8", "pylint", "pycodestyle"])
                || section.is_some_and(|s| s.starts_with("mypy"))
        }
        _ => true,
    }
}
