//! Issue 34: the checkers' own fixes, end to end with the real tools. Mistakes are planted in
//! a Rust crate (rustc, through cargo-check) and a Python file (ruff, through the LSP
//! plugin); `openfiles check --fix` applies the safe fixes, and the tool's own CLI afterwards
//! (`cargo check`, `ruff check`) finds those problems gone and nothing new. The MCP tool
//! `openfiles_fix` applies a file's safe fixes only to the content they were made for.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::Env;
use serde_json::{json, Value};

/// Three mistakes rustc knows a machine-applicable fix for (two unused imports, a `mut`
/// too many: warnings) and a type error whose suggestion is a conversion.
const RUST: &str = "use std::fmt;\nuse std::collections::HashMap;\n\nfn take(n: u32) -> u32 {\n    n + 1\n}\n\nfn main() {\n    let mut count = 5;\n    let x: usize = 3;\n    println!(\"{} {}\", take(x), count);\n}\n";

/// Planted for ruff's default rules (and E711): two unused imports and an f-string without
/// placeholders (safe fixes), a comparison to `None` and an unused variable (unsafe fixes).
const PYTHON: &str = "import os\nimport sys\n\n\ndef f(x):\n    unused = 3\n    if x == None:\n        return f\"none\"\n    return x\n";

/// E711 (comparison to `None`) is not among ruff's default rules.
const RUFF_TOML: &str = "[lint]\nextend-select = [\"E711\"]\n";

/// Python files go to ruff alone (pyright, which would run beside it, has no fixes to test).
const ONLY_RUFF: &str = "[plugin.lsp]\ndisable = [\"pyright\", \"basedpyright\"]\n";

fn json_check(env: &Env, file: &Path) -> Value {
    let out = env
        .command(&["check", "--json", file.to_str().unwrap()])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

fn items(v: &Value) -> Vec<Value> {
    v["files"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|e| e["items"].as_array().unwrap().clone())
        .collect()
}

fn has_safe_fix(i: &Value) -> bool {
    i["fixes"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f["safe"] == true))
}

/// The tool's own CLI on `dir`: its output.
fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn check_fix_applies_rustc_suggestions_and_cargo_check_is_clean_after() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("cargo_check").into_os_string());
    let ws = env.workspace("crate");
    std::fs::write(
        ws.join("Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    let main = ws.join("src/main.rs");
    std::fs::write(&main, RUST).unwrap();
    let out = env
        .command(&["trust", ws.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());

    // The item carries rustc's suggestion as exact edits, for this content.
    let v = json_check(&env, &main);
    let found = items(&v);
    let e0308 = found
        .iter()
        .find(|i| i["code"] == "E0308")
        .unwrap_or_else(|| panic!("{v:#}"));
    let fix = &e0308["fixes"][0];
    assert_eq!(fix["safe"], true, "{e0308:#}");
    assert_eq!(fix["files"][0]["path"], main.to_str().unwrap());
    assert_eq!(
        fix["files"][0]["sha256"],
        openfiles_plugin_api::content_hash(RUST.as_bytes())
    );
    assert_eq!(
        fix["files"][0]["edits"][0]["newText"],
        ".try_into().unwrap()"
    );
    let imports: Vec<&Value> = found
        .iter()
        .filter(|i| i["code"] == "unused_imports")
        .collect();
    assert_eq!(imports.len(), 2, "{v:#}");
    assert!(imports.iter().all(|i| has_safe_fix(i)), "{v:#}");

    // --fix: every safe fix applied (the unused `mut`, reported once the type error is gone,
    // in a later round), then checked again: clean, and cargo itself agrees.
    let out = env
        .command(&["check", "--fix", main.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("0 error(s), 0 warning(s)"), "{stdout}");
    assert!(
        stderr.contains("fixed src/main.rs:11:28 E0308")
            || stderr.contains(&format!("fixed {}:11:28 E0308", main.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("openfiles: applied 4 fix(es) in 1 file(s)"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&main).unwrap();
    assert!(
        !text.contains("use std::fmt;") && !text.contains("let mut"),
        "{text}"
    );
    let cargo = run(&ws, "cargo", &["check", "--message-format", "short"]);
    assert!(
        !cargo.contains("warning") && !cargo.contains("error"),
        "{cargo}"
    );
}

#[test]
fn check_fix_applies_ruffs_safe_fixes_and_unsafe_ones_only_when_asked() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("lsp").into_os_string());
    std::fs::write(&env.config, ONLY_RUFF).unwrap();
    let ws = env.workspace("py");
    let file = ws.join("mod.py");
    std::fs::write(&file, PYTHON).unwrap();
    std::fs::write(ws.join("ruff.toml"), RUFF_TOML).unwrap();
    let cli = |args: &[&str]| {
        let mut all = vec!["check", "--output-format", "concise", "--no-cache"];
        all.extend_from_slice(args);
        all.push("mod.py");
        run(&ws, "ruff", &all)
    };
    let before = cli(&[]);
    for code in ["F401", "F541", "E711", "F841"] {
        assert!(before.contains(code), "{before}");
    }

    let v = json_check(&env, &file);
    let found: Vec<Value> = items(&v)
        .into_iter()
        .filter(|i| i["source"] == "Ruff")
        .collect();
    let safe: Vec<&str> = found
        .iter()
        .filter(|i| has_safe_fix(i))
        .map(|i| i["code"].as_str().unwrap())
        .collect();
    assert_eq!(safe, ["F401", "F401", "F541"], "{v:#}");
    let unsafe_only = found
        .iter()
        .filter(|i| !has_safe_fix(i) && i["fixes"].as_array().is_some_and(|f| !f.is_empty()))
        .count();
    assert_eq!(unsafe_only, 2, "E711 and F841 have unsafe fixes: {v:#}");

    let out = env
        .command(&["check", "--fix", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("applied 3 fix(es) in 1 file(s)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("2 problem(s) have only unsafe fixes"),
        "{stderr}"
    );
    // ruff agrees: the safe fixes' problems are gone, nothing new, the unsafe ones stay.
    let after = cli(&[]);
    assert!(
        !after.contains("F401") && !after.contains("F541"),
        "{after}"
    );
    assert!(after.contains("E711") && after.contains("F841"), "{after}");
    assert_eq!(after.matches("mod.py:").count(), 2, "{after}");

    let out = env
        .command(&["check", "--fix", "--unsafe", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("applied 2 fix(es)"), "{stderr}");
    let after = cli(&[]);
    assert!(after.contains("All checks passed"), "{after}\n{stderr}");
}

#[test]
fn mcp_fix_applies_safe_fixes_and_refuses_content_they_were_not_made_for() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("lsp").into_os_string());
    std::fs::write(
        &env.config,
        format!("[watch]\nenabled = false\n{ONLY_RUFF}"),
    )
    .unwrap();
    let ws = env.workspace("py");
    let file = ws.join("mod.py");
    std::fs::write(&file, PYTHON).unwrap();
    std::fs::write(ws.join("ruff.toml"), RUFF_TOML).unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let mut mcp = common::mcp::Mcp::start(&env, &ws);

    // The diagnostics tool: each safe fix compactly under its problem, then every fix in full.
    let (err, text) = mcp.tool("openfiles_diagnostics", json!({"paths": ["mod.py"]}));
    assert!(!err, "{text}");
    assert!(
        text.contains("- mod.py:1:8 warning F401 (Ruff)")
            && text.contains("  fix: delete `import os\\n` at 1:1"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "\"sha256\":\"{}\"",
            openfiles_plugin_api::content_hash(PYTHON.as_bytes())
        )),
        "{text}"
    );

    // The file changed behind the service's back: the fixes do not fit it, nothing is written.
    let changed = format!("# a comment\n{PYTHON}");
    std::fs::write(&file, &changed).unwrap();
    let (err, text) = mcp.tool("openfiles_fix", json!({"path": "mod.py"}));
    assert!(err, "{text}");
    assert!(
        text.contains("changed since its problems were found"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), changed);

    // Checked again: the fixes are for this content; applied, recorded as an edit, checked.
    let (err, text) = mcp.tool("openfiles_diagnostics", json!({"paths": ["mod.py"]}));
    assert!(!err && text.contains("mod.py:2:8"), "{text}");
    let (err, text) = mcp.tool("openfiles_fix", json!({"path": "mod.py"}));
    assert!(!err, "{text}");
    assert!(text.contains("Applied 3 fix(es) in 1 file(s):"), "{text}");
    let fixed = std::fs::read_to_string(&file).unwrap();
    assert!(
        !fixed.contains("import") && !fixed.contains("f\"none\""),
        "{fixed}"
    );
    // The answer is the file's problems now: the two with unsafe fixes.
    assert!(
        text.contains("E711") && text.contains("F841") && !text.contains("F401 (Ruff)"),
        "{text}"
    );
    // Naming one problem with `unsafe` applies its fix.
    let line = fixed.lines().position(|l| l.contains("== None")).unwrap() + 1;
    let (err, text) = mcp.tool(
        "openfiles_fix",
        json!({"path": "mod.py", "line": line, "unsafe": true}),
    );
    assert!(!err && text.contains("Applied 1 fix(es)"), "{text}");
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("x is None"));
}

/// Planted for clang (through clangd, whose fix-its come inline with its diagnostics): a
/// missing `;` and a misspelt name (safe fixes, the second found once the first is fixed),
/// an assignment used as a condition (two fixes, neither preferred: unsafe).
const C: &str = "#include <stdio.h>\n\nint main(void) {\n    int count = 3;\n    int total = 0\n    printf(\"%d %d\\n\", coutn, total);\n    if (total = 4) return 1;\n    return 0;\n}\n";

#[test]
fn check_fix_applies_clangs_fix_its_and_the_compilers_agree() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("lsp").into_os_string());
    let ws = env.workspace("c");
    std::fs::write(ws.join("compile_flags.txt"), "-xc\n-std=c11\n-Wall\n").unwrap();
    let file = ws.join("main.c");
    std::fs::write(&file, C).unwrap();

    let v = json_check(&env, &file);
    let found = items(&v);
    let semi = found
        .iter()
        .find(|i| i["code"] == "expected_semi_declaration")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(semi["fixes"][0]["title"], "insert ';'");
    assert!(has_safe_fix(semi));
    let parens = found
        .iter()
        .find(|i| i["code"] == "-Wparentheses")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(parens["fixes"].as_array().unwrap().len(), 2);
    assert!(!has_safe_fix(parens));

    let out = env
        .command(&["check", "--fix", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("applied 2 fix(es) in 1 file(s)"),
        "{stderr}"
    );
    assert!(stderr.contains("change 'coutn' to 'count'"), "{stderr}");
    // clangd's own check finds no error left; gcc only the warning whose fixes are unsafe.
    let clangd = run(&ws, "clangd", &["--check=main.c"]);
    assert!(
        clangd.contains("All checks completed, 0 errors"),
        "{clangd}"
    );
    let gcc = run(&ws, "gcc", &["-fsyntax-only", "-Wall", "main.c"]);
    assert_eq!(gcc.matches("warning:").count(), 1, "{gcc}");
    assert!(
        gcc.contains("-Wparentheses") && !gcc.contains("error"),
        "{gcc}"
    );
}

/// Planted for TypeScript (typescript-language-server, whose fixes are asked for after its
/// answer): two misspellings and a missing import, each with a preferred quick fix.
const TS: &str = "const count: number = 3;\nconsole.log(coutn);\nexport function f(a: string): number {\n  return a.lenght + helper();\n}\n";

#[test]
fn check_fix_applies_typescripts_quick_fixes_and_tsc_is_clean_after() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("lsp").into_os_string());
    let ws = env.workspace("web");
    std::fs::write(
        ws.join("tsconfig.json"),
        r#"{"compilerOptions":{"strict":true}}"#,
    )
    .unwrap();
    std::fs::write(
        ws.join("util.ts"),
        "export function helper(): number {\n  return 1;\n}\n",
    )
    .unwrap();
    let file = ws.join("main.ts");
    std::fs::write(&file, TS).unwrap();

    let out = env
        .command(&["check", "--fix", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("applied 3 fix(es) in 1 file(s)"),
        "{stdout}\n{stderr}"
    );
    assert!(stderr.contains("Add import from \"./util\""), "{stderr}");
    assert!(stdout.contains("0 error(s)"), "{stdout}");
    let after = run(&ws, "tsc", &["--noEmit", "-p", "."]);
    assert!(!after.contains("error"), "{after}");
}
