//! Issue 15, the baseline: what the session's edits introduced, and the callers they broke in
//! files nobody edited, through a real `openfiles serve` with real tools (cargo, tsc, the
//! command lines of pyright, basedpyright and ty, the go and cc plugins, ruff's, the Python
//! type checkers', gopls's and clangd's language servers) and real git repositories. See
//! `docs/baseline.md` for the rule.

use crate::common;
use crate::common::git;

use std::path::Path;

use common::plugins::{path_list, plugin};
use common::typescript::install_test_deps;
use common::{diagnostics, signal, wait_until, Env};
use serde_json::{json, Value};

fn commit_all(dir: &Path) {
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "base"]);
}

/// Run the hook for an edit of `file` (Claude's payload); its feedback text, `None` when it
/// printed nothing. Fails if it fell back to the editor's queue.
fn hook(env: &Env, ws: &Path, file: &Path) -> Option<String> {
    let payload =
        json!({"cwd": ws, "tool_name": "Edit", "tool_input": {"file_path": file}}).to_string();
    let mut cmd = env.command(&["hook", "--agent", "claude", "--verbose"]);
    let out = common::hook::run_hook(&mut cmd, &payload);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("trying the editor's queue"),
        "hook fell back: {err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    if stdout.trim().is_empty() {
        return None;
    }
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    Some(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
}

fn env_with(plugins: &[&str], config: &str) -> Env {
    install_test_deps();
    let mut env = Env::new();
    let libs: Vec<_> = plugins.iter().map(|p| plugin(p)).collect();
    env.plugin_path = Some(path_list(&libs));
    std::fs::write(&env.config, config).unwrap();
    env
}

/// A committed crate whose binary calls the library's `add(a, b)`.
fn caller_crate(ws: &Path) {
    std::fs::write(
        ws.join("Cargo.toml"),
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(
        ws.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("src/main.rs"),
        "fn main() {\n    let n = calc::add(1, 2);\n    println!(\"{n}\");\n}\n",
    )
    .unwrap();
    std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
    commit_all(ws);
}

#[test]
fn a_caller_broken_by_the_first_edit_of_a_socket_activated_service_is_reported_and_clears() {
    // The hook waits for the project-wide run however loaded the machine is (what it names
    // is under test here, not how soon: that is the benchmarks').
    let env = env_with(
        &["cargo_check"],
        "[hooks]\ntimeout_ms = 240000\nknock_on_wait_ms = 240000\n",
    );
    let ws = env.workspace("calc");
    caller_crate(&ws);
    let mut activator = env.socket_activated(&ws);

    // The session's first edit, and the service is started by its hook.
    let lib = ws.join("src/lib.rs");
    std::fs::write(
        &lib,
        "pub fn add(a: i32, b: i32, c: i32) -> i32 {\n    a + b + c\n}\n",
    )
    .unwrap();
    let text = hook(&env, &ws, &lib).unwrap_or_else(|| {
        let log = std::fs::read_to_string(env.state.join("serve.log")).unwrap_or_default();
        panic!("no feedback; {:?}\nservice log:\n{log}", diagnostics(&ws))
    });
    assert!(
        text.starts_with("OpenFiles found no new problem in the files you edited, but your edits caused errors in files you did not edit:\n"),
        "{text}"
    );
    assert!(
        text.contains("\n- src/main.rs:2:13 error E0061 (rustc): this function takes 3 arguments but 2 arguments were supplied"),
        "{text}"
    );
    wait_until("main.rs is written as affected", || {
        diagnostics(&ws).is_some_and(|d| d.files.contains_key("src/main.rs"))
    });
    let d = diagnostics(&ws).unwrap();
    assert_eq!(
        d.files["src/main.rs"].affected_by,
        vec!["src/lib.rs".to_string()]
    );
    assert_eq!(d.files["src/lib.rs"].errors, 0);
    let b = d.baseline.unwrap();
    assert_eq!(b.from, "head");

    // The agent fixes the caller: no feedback, and the entry is an edited file now.
    let main = ws.join("src/main.rs");
    std::fs::write(
        &main,
        "fn main() {\n    let n = calc::add(1, 2, 3);\n    println!(\"{n}\");\n}\n",
    )
    .unwrap();
    assert_eq!(hook(&env, &ws, &main), None);
    wait_until("main.rs is written as edited", || {
        diagnostics(&ws).is_some_and(|d| d.files["src/main.rs"].affected_by.is_empty())
    });
    let d = diagnostics(&ws).unwrap();
    assert!(d.files["src/main.rs"].affected_by.is_empty());
    assert_eq!(d.files["src/main.rs"].errors, 0);

    signal(activator.id() as i32, libc::SIGTERM);
    assert!(activator.wait().unwrap().success());
}

/// A committed TypeScript project: `a.ts` exports `add`, `b.ts` calls it, `c.ts` has an
/// error of its own.
pub fn ts_callers(ws: &Path) {
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(
        ws.join("tsconfig.json"),
        r#"{ "compilerOptions": { "strict": true, "noEmit": true, "target": "es2020", "module": "commonjs" }, "include": ["src"] }
"#,
    )
    .unwrap();
    std::fs::write(
        ws.join("src/a.ts"),
        "export function add(a: number, b: number): number {\n  return a + b;\n}\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("src/b.ts"),
        "import { add } from \"./a\";\n\nexport const three = add(1, 2);\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("src/c.ts"),
        "export const legacy: number = \"not a number\";\n",
    )
    .unwrap();
    commit_all(ws);
}

fn entry_keys(ws: &Path) -> Vec<String> {
    diagnostics(ws)
        .map(|d| d.files.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn tsc_names_the_broken_caller_never_an_old_error_and_a_revert_clears_it() {
    // The hook waits for the project-wide run however loaded the machine is (what it names
    // is under test here, not how soon: that is the benchmarks').
    let env = env_with(
        &["tsc"],
        "[hooks]\ntimeout_ms = 240000\nknock_on_wait_ms = 240000\n",
    );
    let ws = env.workspace("ts");
    ts_callers(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let a = ws.join("src/a.ts");
    let committed = std::fs::read_to_string(&a).unwrap();
    std::fs::write(
        &a,
        "export function add(a: number, b: number, c: number): number {\n  return a + b + c;\n}\n",
    )
    .unwrap();
    let text = hook(&env, &ws, &a).unwrap_or_else(|| {
        let log: String = svc
            .log_text()
            .lines()
            .filter(|l| !l.contains("DEBUG glob") && !l.contains("fswatch"))
            .collect::<Vec<_>>()
            .join("\n");
        panic!(
            "no feedback naming b.ts; {:?}\nlog:\n{log}",
            diagnostics(&ws)
        )
    });
    assert!(text.contains("\n- src/b.ts:3:"), "{text}");
    assert!(
        text.contains(" error 2554 (ts): Expected 3 arguments, but got 2."),
        "{text}"
    );
    assert!(
        !text.contains("c.ts"),
        "an old error is never blamed on the edit: {text}"
    );
    wait_until("b.ts is written as affected", || {
        entry_keys(&ws).contains(&"src/b.ts".to_string())
    });
    assert!(!entry_keys(&ws).contains(&"src/c.ts".to_string()));

    // Revert: the affected entry leaves.
    std::fs::write(&a, committed).unwrap();
    assert_eq!(hook(&env, &ws, &a), None);
    wait_until("b.ts leaves diagnostics.json", || {
        !entry_keys(&ws).contains(&"src/b.ts".to_string())
    });
    assert!(!entry_keys(&ws).contains(&"src/c.ts".to_string()));
    svc.terminate();
}

/// A Python module with five unused imports, committed.
fn legacy_python(ws: &Path) -> std::path::PathBuf {
    let m = ws.join("legacy.py");
    std::fs::write(
        &m,
        "import os\nimport sys\nimport json\nimport re\nimport math\n\n\ndef f():\n    return 1\n",
    )
    .unwrap();
    // Pyflakes rules only (ruff's defaults may grow): the five unused imports are the problems.
    std::fs::write(ws.join("ruff.toml"), "[lint]\nselect = [\"F\"]\n").unwrap();
    commit_all(ws);
    m
}

#[test]
fn five_old_problems_and_one_new_name_only_the_new_one() {
    let env = env_with(
        &["lsp"],
        "[hooks]\ntimeout_ms = 120000\n[plugin.lsp]\ndisable = [\"pyright\", \"basedpyright\", \"ty\"]\n",
    );
    let ws = env.workspace("py");
    let m = legacy_python(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    // One new unused import above the old ones: every old one moves a line down.
    std::fs::write(
        &m,
        "import shutil\nimport os\nimport sys\nimport json\nimport re\nimport math\n\n\ndef f():\n    return 1\n",
    )
    .unwrap();
    let text = hook(&env, &ws, &m).expect("feedback naming the new import");
    assert!(text.starts_with("OpenFiles found 1 "), "{text}");
    assert!(text.contains("\n- legacy.py:1:8 "), "{text}");
    assert!(text.contains("`shutil` imported but unused"), "{text}");
    for old in ["os", "sys", "json", "re", "math"] {
        assert!(
            !text.contains(&format!("`{old}` imported")),
            "{old} was already there: {text}"
        );
    }
    assert!(
        text.contains("- and 5 problems that were already there before your edits"),
        "{text}"
    );
    wait_until("legacy.py is written", || {
        diagnostics(&ws)
            .is_some_and(|d| d.files.get("legacy.py").is_some_and(|e| e.checked_at != 0))
    });
    let d = diagnostics(&ws).unwrap();
    let marks: Vec<Option<bool>> = d.files["legacy.py"]
        .items
        .iter()
        .filter(|i| i.code.as_deref() == Some("F401"))
        .map(|i| i.introduced)
        .collect();
    assert_eq!(
        marks,
        vec![
            Some(true),
            Some(false),
            Some(false),
            Some(false),
            Some(false),
            Some(false)
        ]
    );
    svc.terminate();
}

#[test]
fn scope_all_lists_every_problem_and_without_git_the_feedback_says_so() {
    let env = env_with(
        &["lsp"],
        "[hooks]\ntimeout_ms = 120000\nfeedback_scope = \"all\"\n[plugin.lsp]\ndisable = [\"pyright\", \"basedpyright\", \"ty\"]\n",
    );
    let ws = env.workspace("py");
    let m = legacy_python(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    std::fs::write(
        &m,
        format!("import shutil\n{}", std::fs::read_to_string(&m).unwrap()),
    )
    .unwrap();
    let text = hook(&env, &ws, &m).unwrap();
    assert!(
        text.starts_with("OpenFiles found 6 warnings in files you edited:\n"),
        "{text}"
    );
    svc.terminate();

    // No repository: nothing is classified, and the feedback says why.
    let env = env_with(
        &["lsp"],
        "[hooks]\ntimeout_ms = 120000\n[plugin.lsp]\ndisable = [\"pyright\", \"basedpyright\", \"ty\"]\n",
    );
    let ws = env.workspace("plain");
    let m = ws.join("m.py");
    std::fs::write(&m, "import os\n").unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let text = hook(&env, &ws, &m).unwrap();
    assert!(text.contains("`os` imported but unused"), "{text}");
    assert!(
        text.contains("No baseline (not a git repository)"),
        "{text}"
    );
    wait_until("the baseline is written", || {
        diagnostics(&ws)
            .and_then(|d| d.baseline)
            .is_some_and(|b| b.from == "none")
    });
    svc.terminate();
}

/// A committed Python project: `m.py` defines `add`, `b.py` calls it, `c.py` calls it too
/// and already had an error of its own (and a wrong call that the edit happens to make right).
/// `config` (a file name and its text) says which type checker the project chose.
fn py_callers(ws: &Path, config: (&str, &str)) {
    std::fs::write(ws.join(config.0), config.1).unwrap();
    std::fs::write(
        ws.join("m.py"),
        "def add(a: int, b: int) -> int:\n    return a + b\n",
    )
    .unwrap();
    std::fs::write(ws.join("b.py"), "from m import add\n\nthree = add(1, 2)\n").unwrap();
    std::fs::write(
        ws.join("c.py"),
        "from m import add\n\nlegacy: int = \"not a number\"\nsix = add(1, 2, 3)\n",
    )
    .unwrap();
    // An import that never resolved: ty's message lists the folders it searched, which
    // differ between the baseline's snapshot and the workspace.
    std::fs::write(
        ws.join("d.py"),
        "import not_installed_anywhere
",
    )
    .unwrap();
    commit_all(ws);
}

/// What a Python type checker's knock-on is checked with: the project's config choosing it,
/// the language servers the lsp plugin may start, and the checker's words.
struct PyChecker {
    config: (&'static str, &'static str),
    lsp_disable: &'static str,
    /// The broken caller's line in the feedback.
    caller: &'static str,
    /// The edited file's own new error (`undefined_name`): its code and message.
    undefined: (&'static str, &'static str),
}

/// Issue 33: the command line of the project's Python type checker over the project names
/// the caller the edit broke in a file nobody edited, never the old error, lists a problem
/// that the checker's language server reports too only once, and a revert clears it.
fn python_knock_on(checker: PyChecker) {
    let env = env_with(
        &["lsp", "pyright"],
        // Partial answers at the default grace, but a project-wide source that was quick (or
        // never ran) is waited for first: the edit's own hook names the broken caller. (The
        // wait is long here only so that a loaded machine cannot make the checker "slow".)
        &format!(
            "[hooks]\ntimeout_ms = 240000\nknock_on_wait_ms = 240000\n[plugin.lsp]\ndisable = {}\n",
            checker.lsp_disable
        ),
    );
    let ws = env.workspace("py");
    py_callers(&ws, checker.config);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let m = ws.join("m.py");
    let committed = std::fs::read_to_string(&m).unwrap();
    std::fs::write(
        &m,
        "def add(a: int, b: int, c: int) -> int:\n    return a + b + c + undefined_name\n",
    )
    .unwrap();
    let text = hook(&env, &ws, &m).unwrap_or_else(|| {
        panic!(
            "no feedback naming b.py; {:?}\nlog:\n{}",
            diagnostics(&ws),
            svc.log_text()
        )
    });
    assert!(text.contains(checker.caller), "{text}");
    // The edited file's own new error: both the checker's language server and its command
    // line report it, and it is listed once.
    let (code, message) = checker.undefined;
    assert_eq!(text.matches(message).count(), 1, "{text}");
    assert!(
        !text.contains("c.py") && !text.contains("d.py"),
        "an old error is never blamed on the edit: {text}"
    );
    wait_until("b.py is written as affected", || {
        entry_keys(&ws).contains(&"b.py".to_string())
    });
    let d = diagnostics(&ws).unwrap();
    assert_eq!(d.files["b.py"].affected_by, vec!["m.py".to_string()]);
    assert!(
        !d.files.contains_key("c.py") && !d.files.contains_key("d.py"),
        "{:?}",
        d.files.keys()
    );
    let edited = &d.files["m.py"];
    assert!(
        ["lsp", "pyright"]
            .iter()
            .all(|s| edited.sources.get(*s).is_some_and(|st| st.answered_at != 0)),
        "both sources checked m.py: {:?}",
        edited.sources
    );
    let undefined = edited
        .items
        .iter()
        .filter(|i| i.code.as_deref() == Some(code))
        .count();
    assert_eq!(undefined, 1, "{:?}", edited.items);

    // Revert: no feedback, and the affected entry leaves.
    std::fs::write(&m, committed).unwrap();
    assert_eq!(hook(&env, &ws, &m), None);
    wait_until("b.py leaves diagnostics.json", || {
        !entry_keys(&ws).contains(&"b.py".to_string())
    });
    assert!(!entry_keys(&ws).contains(&"c.py".to_string()));
    svc.terminate();
}

#[test]
fn pyright_names_the_broken_python_caller_never_an_old_error_and_a_revert_clears_it() {
    python_knock_on(PyChecker {
        config: ("pyproject.toml", "[tool.pyright]\n"),
        lsp_disable: "[\"basedpyright\", \"ty\", \"ruff\"]",
        caller:
            "\n- b.py:3:9 error reportCallIssue (Pyright): Argument missing for parameter \"c\"",
        undefined: (
            "reportUndefinedVariable",
            "\"undefined_name\" is not defined",
        ),
    });
}

/// A project that chose basedpyright: its command line, and its language server (the lsp
/// plugin's choice by the same rule, with pyright and ty installed too).
#[test]
fn basedpyright_names_the_broken_python_caller_never_an_old_error_and_a_revert_clears_it() {
    python_knock_on(PyChecker {
        config: (
            "pyproject.toml",
            "[tool.basedpyright]\ntypeCheckingMode = \"standard\"\n",
        ),
        lsp_disable: "[\"ruff\"]",
        caller: "\n- b.py:3:9 error reportCallIssue (basedpyright): Argument missing for parameter \"c\"",
        undefined: ("reportUndefinedVariable", "\"undefined_name\" is not defined"),
    });
}

/// A project that chose ty (`ty.toml`): `ty check` and `ty server`.
#[test]
fn ty_names_the_broken_python_caller_never_an_old_error_and_a_revert_clears_it() {
    python_knock_on(PyChecker {
        config: ("ty.toml", ""),
        lsp_disable: "[\"ruff\"]",
        caller: "\n- b.py:3:9 error missing-argument (ty): No argument provided for required parameter `c` of function `add`",
        undefined: ("unresolved-reference", "Name `undefined_name` used when not defined"),
    });
}

/// A committed Go module of five packages: `money.Format(cents)` is called from `cart` and
/// from `report`, which imports `cart` too (so it must be checked although `cart` will not
/// compile after the edit); `legacy` already had an error and calls `Format` with the two
/// arguments the edit is about to make right; `cmd/shop` is the program.
fn go_shop(ws: &Path) {
    let files: &[(&str, &str)] = &[
        ("go.mod", "module example.com/shop\n\ngo 1.19\n"),
        (
            "money/money.go",
            "// Package money formats amounts.\npackage money\n\nimport \"fmt\"\n\n// Format shows cents as a decimal amount.\nfunc Format(cents int) string {\n\treturn fmt.Sprintf(\"%d.%02d\", cents/100, cents%100)\n}\n",
        ),
        (
            "cart/cart.go",
            "// Package cart holds what a customer buys.\npackage cart\n\nimport \"example.com/shop/money\"\n\n// Cart is a list of prices in cents.\ntype Cart struct{ Prices []int }\n\nfunc (c *Cart) sum() int {\n\tn := 0\n\tfor _, p := range c.Prices {\n\t\tn += p\n\t}\n\treturn n\n}\n\n// Total is the cart's total, formatted.\nfunc (c *Cart) Total() string {\n\treturn money.Format(c.sum())\n}\n",
        ),
        (
            "report/report.go",
            "// Package report prints carts.\npackage report\n\nimport (\n\t\"example.com/shop/cart\"\n\t\"example.com/shop/money\"\n)\n\n// Line is one report line.\nfunc Line(c *cart.Cart, fee int) string {\n\treturn \"total: \" + c.Total() + \" fee: \" + money.Format(fee)\n}\n",
        ),
        (
            "legacy/legacy.go",
            "// Package legacy is old code.\npackage legacy\n\nimport \"example.com/shop/money\"\n\n// Broken was always broken.\nvar Broken int = \"not a number\"\n\n// Old formats in euros.\nfunc Old() string { return money.Format(1, \"EUR\") }\n",
        ),
        (
            "cmd/shop/main.go",
            "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/shop/cart\"\n\t\"example.com/shop/report\"\n)\n\nfunc main() {\n\tfmt.Println(report.Line(&cart.Cart{Prices: []int{100, 250}}, 30))\n}\n",
        ),
    ];
    for (rel, text) in files {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    commit_all(ws);
}

/// Issue 33: the go plugin (its go/types checker over the module) names the callers an edit of
/// `money.Format`'s signature broke in packages nobody edited, never the old error, lists a
/// problem that gopls reports too only once, and a revert clears it.
#[test]
fn go_names_the_broken_callers_in_other_packages_never_an_old_error_and_a_revert_clears_it() {
    let env = env_with(
        &["lsp", "go"],
        // The hook waits for the go plugin too (not only gopls).
        "[hooks]\ntimeout_ms = 240000\npartial_after_ms = 240000\n",
    );
    let ws = env.workspace("goshop");
    go_shop(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let money = ws.join("money/money.go");
    let committed = std::fs::read_to_string(&money).unwrap();
    std::fs::write(
        &money,
        committed
            .replace("Format(cents int)", "Format(cents int, currency string)")
            .replace("cents%100)", "cents%100) + \" \" + currency"),
    )
    .unwrap();
    let text = hook(&env, &ws, &money).unwrap_or_else(|| {
        panic!(
            "no feedback naming cart.go; {:?}\nlog:\n{}",
            diagnostics(&ws),
            svc.log_text()
        )
    });
    let wrong = "error WrongArgCount (compiler): not enough arguments in call to money.Format have (int) want (int, string)";
    assert!(
        text.contains(&format!("\n- cart/cart.go:19:29 {wrong}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("\n- report/report.go:11:60 {wrong}")),
        "{text}"
    );
    assert!(
        !text.contains("legacy"),
        "an old error is never blamed on the edit: {text}"
    );
    wait_until("cart.go and report.go are written as affected", || {
        let keys = entry_keys(&ws);
        keys.contains(&"cart/cart.go".to_string()) && keys.contains(&"report/report.go".to_string())
    });
    let d = diagnostics(&ws).unwrap();
    for f in ["cart/cart.go", "report/report.go"] {
        assert_eq!(d.files[f].affected_by, vec!["money/money.go".to_string()]);
    }
    assert!(
        !d.files.contains_key("legacy/legacy.go"),
        "{:?}",
        d.files.keys()
    );

    // The caller's own new error, edited: gopls and the go plugin both report it, and it is
    // listed once.
    let cart = ws.join("cart/cart.go");
    let cart_committed = std::fs::read_to_string(&cart).unwrap();
    std::fs::write(
        &cart,
        cart_committed.replace(
            "\tn := 0\n",
            "\tn := 0\n\tvar label int = \"sum\"\n\t_ = label\n",
        ),
    )
    .unwrap();
    let text = hook(&env, &ws, &cart).unwrap_or_else(|| panic!("no feedback for cart.go"));
    let assign =
        "cannot use \"sum\" (untyped string constant) as int value in variable declaration";
    assert_eq!(text.matches(assign).count(), 1, "{text}");
    assert!(
        text.contains(&format!(
            "\n- cart/cart.go:11:18 error IncompatibleAssign (compiler): {assign}"
        )),
        "{text}"
    );
    wait_until("gopls and the go plugin both checked cart.go", || {
        diagnostics(&ws).is_some_and(|d| {
            d.files.get("cart/cart.go").is_some_and(|f| {
                ["lsp", "go"]
                    .iter()
                    .all(|s| f.sources.get(*s).is_some_and(|st| st.answered_at != 0))
            })
        })
    });
    let d = diagnostics(&ws).unwrap();
    let edited = &d.files["cart/cart.go"];
    let assigns = edited
        .items
        .iter()
        .filter(|i| i.code.as_deref() == Some("IncompatibleAssign"))
        .count();
    assert_eq!(assigns, 1, "{:?}", edited.items);
    let calls = edited
        .items
        .iter()
        .filter(|i| i.code.as_deref() == Some("WrongArgCount"))
        .count();
    assert_eq!(calls, 1, "{:?}", edited.items);

    // Revert both: no feedback, and the affected entry leaves.
    std::fs::write(&cart, cart_committed).unwrap();
    std::fs::write(&money, committed).unwrap();
    let _ = hook(&env, &ws, &cart);
    assert_eq!(hook(&env, &ws, &money), None);
    wait_until("report.go leaves diagnostics.json", || {
        !entry_keys(&ws).contains(&"report/report.go".to_string())
    });
    assert!(!entry_keys(&ws).contains(&"legacy/legacy.go".to_string()));
    svc.terminate();
}

/// A committed C project: `include/geom.h` declares `area` and `perimeter`, `src/geom.c`
/// defines them, `src/shapes.c` calls `area`, `src/report.c` calls `perimeter`, and
/// `src/legacy.c` (which includes the header too) already had an error of its own. The
/// compile database is written by the build, in the untracked `build/`, with absolute paths.
fn c_project(ws: &Path) {
    let w = |rel: &str, text: &str| {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w(".gitignore", "build/\n");
    w("include/geom.h", GEOM_H);
    w(
        "src/geom.c",
        "#include \"geom.h\"\n\nint area(int w, int h) { return w * h; }\nint perimeter(int w, int h) { return 2 * (w + h); }\n",
    );
    w(
        "src/shapes.c",
        "#include \"geom.h\"\n\nint tile_area(void) {\n    return area(2, 3);\n}\n",
    );
    w(
        "src/report.c",
        "#include <stdio.h>\n#include \"geom.h\"\n\nvoid report(void) {\n    printf(\"%d\\n\", perimeter(1, 2));\n}\n",
    );
    w(
        "src/legacy.c",
        "#include \"geom.h\"\n\nint legacy(void) {\n    return perimeter(1, 2) + missing_var;\n}\n",
    );
    commit_all(ws);
    let entries: Vec<Value> = ["geom", "shapes", "report", "legacy"]
        .iter()
        .map(|f| {
            json!({
                "directory": ws.join("build"),
                "arguments": ["/usr/bin/cc", "-c", format!("-I{}", ws.join("include").display()),
                    "-std=c11", "-Wall", "-o", format!("{f}.o"), ws.join(format!("src/{f}.c"))],
                "file": ws.join(format!("src/{f}.c")),
            })
        })
        .collect();
    w(
        "build/compile_commands.json",
        &serde_json::to_string_pretty(&entries).unwrap(),
    );
}

const GEOM_H: &str = "#ifndef GEOM_H\n#define GEOM_H\nint area(int w, int h);\nint perimeter(int w, int h);\n#endif\n";

/// Issue 33, C/C++: the cc plugin (clang -fsyntax-only over the units that include the
/// edited header) names the caller the edit broke in a file nobody edited, never the old
/// error of another unit, lists the header's own error (which clangd reports) once, and a
/// revert clears it.
#[test]
fn cc_names_the_broken_c_caller_never_an_old_error_and_a_revert_clears_it() {
    let env = env_with(
        &["lsp", "cc"],
        // The hook waits for the cc plugin too (not only clangd).
        "[hooks]\ntimeout_ms = 240000\npartial_after_ms = 240000\n",
    );
    let ws = env.workspace("c");
    c_project(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let h = ws.join("include/geom.h");
    std::fs::write(
        &h,
        "#ifndef GEOM_H\n#define GEOM_H\nint area(int w, int h, int d);\nint perimeter(int w, int h);\nextern unknown_t origin;\n#endif\n",
    )
    .unwrap();
    let text = hook(&env, &ws, &h).unwrap_or_else(|| {
        panic!(
            "no feedback naming src/shapes.c; {:?}\nlog:\n{}",
            diagnostics(&ws),
            svc.log_text()
        )
    });
    assert!(
        text.contains(
            "\n- src/shapes.c:4:21 error (clang): too few arguments to function call, expected 3, have 2"
        ),
        "{text}"
    );
    // The header's own new error: clangd reports it, the units that include it meet it too;
    // it is listed once.
    assert_eq!(
        text.to_lowercase()
            .matches("unknown type name 'unknown_t'")
            .count(),
        1,
        "{text}"
    );
    let mut lines: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
    let all = lines.len();
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), all, "nothing is listed twice: {text}");
    assert!(
        !text.contains("legacy.c") && !text.contains("missing_var"),
        "an old error is never blamed on the edit: {text}"
    );
    assert!(!text.contains("report.c"), "{text}");
    wait_until("src/shapes.c is written as affected", || {
        entry_keys(&ws).contains(&"src/shapes.c".to_string())
    });
    let d = diagnostics(&ws).unwrap();
    assert_eq!(
        d.files["src/shapes.c"].affected_by,
        vec!["include/geom.h".to_string()]
    );
    assert!(
        !d.files.contains_key("src/legacy.c"),
        "{:?}",
        d.files.keys()
    );
    let edited = &d.files["include/geom.h"];
    assert!(
        ["lsp", "cc"]
            .iter()
            .all(|s| edited.sources.get(*s).is_some_and(|st| st.answered_at != 0)),
        "both sources checked the header: {:?}",
        edited.sources
    );

    // Revert: no feedback, and the affected entries leave.
    std::fs::write(&h, GEOM_H).unwrap();
    assert_eq!(hook(&env, &ws, &h), None);
    wait_until("src/shapes.c leaves diagnostics.json", || {
        !entry_keys(&ws).iter().any(|k| k.starts_with("src/"))
    });
    svc.terminate();
}
