//! taplo's own TOML language server (the WebAssembly build of npm's `@taplo/lsp`, run by
//! `plugins/lsp/taplo/server.js`) through the plugin, zero-config: on a broken `Cargo.toml`
//! and `pyproject.toml` its errors are those of taplo's own command line, `taplo lint
//! --no-schema` (line, column, message), a fix clears them; it downloads no schema and obeys
//! no `#:schema` directive and no `.taplo.toml`, in a trusted workspace or not.

use crate::support;
use openfiles_plugin_api::{Item, Severity};
use serde_json::json;
use support::{Env, Trap};

/// Syntax errors: a table header left open, a value that is no TOML value.
const CARGO: &str = "[package]
name = \"shop\"
version = \"0.1.0\"
edition = 2021-01

[dependencies
serde = \"1\"
";

const CARGO_FIXED: &str = "[package]
name = \"shop\"
version = \"0.1.0\"
edition = \"2021\"

[dependencies]
serde = \"1\"
";

/// Structure errors: a key given twice, a table defined twice.
const PYPROJECT: &str = "[project]
name = \"shop\"
version = \"0.1.0\"
name = \"shop2\"

[tool.ruff]
line-length = 100

[tool.ruff]
target-version = \"py312\"
";

/// (line, column, message) of the errors `taplo lint --no-schema --no-auto-config FILE`
/// reports: blocks of `error: TITLE`, `┌─ PATH:LINE:COL`, the source with its labels; the
/// message is the primary label (`^^^ duplicate key`) for a structure error and the title's
/// label for a syntax error, so the title is kept only to say which.
fn lint(env: &Env, rel: &str) -> Vec<(u32, u32)> {
    let out = std::process::Command::new("taplo")
        .args([
            "lint",
            "--no-schema",
            "--no-auto-config",
            "--colors",
            "never",
            rel,
        ])
        .current_dir(&env.ws)
        .env("RUST_LOG", "off")
        .output()
        .expect("taplo lint");
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::new();
    for l in text.lines() {
        let Some((_, at)) = l.split_once("┌─ ") else {
            continue;
        };
        let mut parts = at.trim().rsplitn(3, ':');
        let col: u32 = parts.next().unwrap().parse().unwrap();
        let line: u32 = parts.next().unwrap().parse().unwrap();
        v.push((line, col));
    }
    v.sort();
    v
}

fn ours(items: &[Item]) -> Vec<(u32, u32)> {
    let mut v: Vec<_> = items
        .iter()
        .filter(|i| i.severity == Severity::Error)
        .map(|i| (i.line, i.column))
        .collect();
    v.sort();
    v
}

#[test]
fn taplo_reports_what_taplo_lint_reports_on_a_broken_cargo_and_pyproject_toml() {
    let env = Env::new(json!({}));
    let cargo = env.write("Cargo.toml", CARGO);
    let items = env.check(&cargo, 120_000);
    let want = lint(&env, "Cargo.toml");
    assert!(!want.is_empty(), "taplo lint found nothing");
    assert_eq!(ours(&items), want, "{items:#?}");
    assert!(
        items.iter().all(|i| i.source == "Even Better TOML"),
        "{items:#?}"
    );

    let py = env.write("pyproject.toml", PYPROJECT);
    let items = env.check(&py, 120_000);
    let want = lint(&env, "pyproject.toml");
    assert_eq!(want.len(), 2, "a duplicate key and a table defined twice");
    assert_eq!(ours(&items), want, "{items:#?}");
    assert!(
        items
            .iter()
            .filter(|i| i.severity == Severity::Error)
            .all(|i| i.message == "conflicting keys"),
        "{items:#?}"
    );

    env.write("Cargo.toml", CARGO_FIXED);
    let items = env.check(&cargo, 120_000);
    assert!(lint(&env, "Cargo.toml").is_empty());
    assert!(ours(&items).is_empty(), "{items:#?}");
}

/// A schema a `#:schema` directive or a `.taplo.toml` names would make `version` an error:
/// neither is obeyed and nothing is downloaded, trusted or not (the server is given no file
/// and no network; schemas are off).
#[test]
fn taplo_obeys_no_schema_and_no_taplo_toml_and_downloads_nothing() {
    let env = Env::new(json!({}));
    let trap = Trap::new("schema.json");
    let schema = r#"{"type": "object", "properties": {"version": {"type": "integer"}}}"#;
    env.write("schema.json", schema);
    env.write(
        ".taplo.toml",
        "[schema]\npath = \"./schema.json\"\n[[rule]]\ninclude = [\"**/*.toml\"]\n[rule.schema]\npath = \"./schema.json\"\n",
    );
    let local = env.write(
        "local.toml",
        "#:schema ./schema.json\nname = \"a\"\nversion = \"not a number\"\n",
    );
    let remote = env.write(
        "remote.toml",
        &format!(
            "#:schema {}\nname = \"a\"\nversion = \"not a number\"\n",
            trap.url
        ),
    );
    // The reference: taplo's command line obeys the directive (so the schema would be an
    // error) unless told not to.
    let with_schema = std::process::Command::new("taplo")
        .args(["lint", "--no-auto-config", "local.toml"])
        .current_dir(&env.ws)
        .output()
        .expect("taplo lint");
    assert!(
        !with_schema.status.success(),
        "the schema applies: {with_schema:?}"
    );

    for trusted in [true, false] {
        for file in [&local, &remote] {
            let items = if trusted {
                env.check(file, 120_000)
            } else {
                env.check_untrusted(file, 120_000)
            };
            assert!(ours(&items).is_empty(), "trusted {trusted}: {items:#?}");
        }
    }
    assert_eq!(trap.connections(), 0);
}
