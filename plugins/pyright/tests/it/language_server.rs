//! The warm language-server path of the pyright plugin (`pyright-langserver` in workspace
//! mode, the default) against its command line (`language_server = false`, the reference):
//! the same items on a generated multi-module project before an edit, after an edit that
//! breaks callers in other modules, and after the revert; a server that dies between checks
//! is started again; one that cannot start leaves the check to the command line, with the
//! reason logged; an idle server stops, and so does one over `max_memory_mib` (after its
//! answer); the server's V8 heap is bounded by it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use openfiles_plugin_api::{Item, Plugin};
use openfiles_plugin_pyright::Pyright;

use crate::support::{by_file, edit_request, plugin, workspace, write};

fn check(p: &Pyright, ws: &Path, edited: &Path, id: u64) -> BTreeMap<PathBuf, Vec<Item>> {
    by_file(p.check(edit_request(ws, edited, id)).unwrap().files)
}

const GOOD: &str = "def price_with_tax(amount: Money, rate: float) -> Money:";
const BROKEN: &str = "def price_with_tax(amount: Money, rate: float, region: str) -> Money:";

/// `src/shop/core/money.py` and eight service modules calling it, three with problems of
/// their own before any edit (an undefined name after a non-ASCII string, a wrong argument
/// type, a possibly unbound variable) and a warning the project's config asks for. A `src/`
/// layout, as click's: `shop` resolves only through the checker's automatic search paths.
fn project() -> (tempfile::TempDir, PathBuf) {
    let (tmp, ws) = workspace();
    let w = |rel: &str, text: &str| write(&ws, rel, text);
    w(
        "pyrightconfig.json",
        "{\"typeCheckingMode\": \"standard\", \"reportUnnecessaryComparison\": \"warning\"}\n",
    );
    w("src/shop/__init__.py", "");
    w("src/shop/core/__init__.py", "");
    w(
        "src/shop/core/money.py",
        &format!(
            "from dataclasses import dataclass\n\n\n@dataclass\nclass Money:\n    cents: int\n    \
             currency: str = \"EUR\"\n\n\n{GOOD}\n    return Money(int(amount.cents * (1 + rate)), \
             amount.currency)\n"
        ),
    );
    // Outside `src/`: `shop` resolves only through the automatic search paths.
    w(
        "tests/test_quote.py",
        "from shop.core.money import Money, price_with_tax\n\n\ndef test_quote() -> None:\n    \
         assert price_with_tax(Money(100), 0.5).cents == 150\n",
    );
    for i in 0..8 {
        let own = match i {
            0 => "    label = \"prix 😀 é\"; print(label, nope)\n",
            1 => "    fmt_cents(\"12\")\n",
            2 => "    if cents > 3:\n        late = 1\n    print(late)\n",
            3 => "    if cents is None:\n        return \"\"\n",
            _ => "",
        };
        w(
            &format!("src/shop/service_{i}.py"),
            &format!(
                "from shop.core.money import Money, price_with_tax\n\n\ndef fmt_cents(c: int) -> \
                 str:\n    return str(c)\n\n\ndef quote_{i}(cents: int) -> str:\n{own}    total = \
                 price_with_tax(Money(cents), 0.2)\n    return fmt_cents(total.cents)\n"
            ),
        );
    }
    (tmp, ws)
}

#[test]
fn the_language_server_gives_the_command_lines_items_before_an_edit_after_it_and_after_the_revert()
{
    let (_tmp, ws) = project();
    let money = ws.join("src/shop/core/money.py");
    let served = plugin(serde_json::Value::Null);
    let cli = plugin(serde_json::json!({"language_server": false}));
    let text = std::fs::read_to_string(&money).unwrap();

    let before = check(&cli, &ws, &money, 1);
    assert!(before.len() >= 3, "the project's own problems: {before:#?}");
    assert_eq!(check(&served, &ws, &money, 2), before);
    assert_eq!(served.server_pids().len(), 1, "{:?}", served.fallbacks());
    // Issue 42.3: its heap bounded at three quarters of `max_memory_mib` (1024 by default).
    let environ = std::fs::read(format!("/proc/{}/environ", served.server_pids()[0])).unwrap();
    let node_options = environ
        .split(|b| *b == 0)
        .find_map(|v| v.strip_prefix(b"NODE_OPTIONS="))
        .map(|v| String::from_utf8_lossy(v).into_owned());
    assert!(
        node_options
            .as_deref()
            .is_some_and(|o| o.starts_with("--max-old-space-size=768")),
        "{node_options:?}"
    );

    std::fs::write(&money, text.replace(GOOD, BROKEN)).unwrap();
    let broken = check(&cli, &ws, &money, 3);
    let callers = (0..8)
        .filter(|i| {
            broken[&ws.join(format!("src/shop/service_{i}.py"))]
                .iter()
                .any(|it| it.code.as_deref() == Some("reportCallIssue"))
        })
        .count();
    assert_eq!(callers, 8, "every caller broken: {broken:#?}");
    assert_eq!(check(&served, &ws, &money, 4), broken);

    std::fs::write(&money, &text).unwrap();
    assert_eq!(
        check(&served, &ws, &money, 5),
        before,
        "the revert clears it"
    );
    assert_eq!(served.fallbacks(), Vec::<String>::new());
    assert_eq!(served.server_pids().len(), 1, "one warm server throughout");
}

#[test]
fn a_server_that_dies_is_started_again_and_one_that_cannot_start_leaves_it_to_the_command_line() {
    let (_tmp, ws) = project();
    let money = ws.join("src/shop/core/money.py");
    let served = plugin(serde_json::Value::Null);
    let before = check(&served, &ws, &money, 1);
    let pid = served.server_pids()[0];
    // SAFETY: kill(2) on the server this test's plugin started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(check(&served, &ws, &money, 2), before);
    let now = served.server_pids();
    assert_eq!(now.len(), 1);
    assert_ne!(now[0], pid, "a new server");

    // A pyright whose language server crashes at once: the command line answers.
    let bin = tempfile::tempdir().unwrap();
    let real = openfiles_plugin_api::tools::on_path("pyright").expect("pyright on PATH");
    let script = |name: &str, body: &str| {
        use std::os::unix::fs::PermissionsExt;
        let p = bin.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    };
    let pyright = script("pyright", &format!("exec '{}' \"$@\"", real.display()));
    script("pyright-langserver", "echo broken >&2; exit 3");
    let crashing = plugin(serde_json::json!({"pyright": pyright}));
    assert_eq!(check(&crashing, &ws, &money, 3), before);
    let why = crashing.fallbacks();
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(
        why[0].contains("language server") && why[0].contains("command line"),
        "{why:?}"
    );
    assert!(crashing.server_pids().is_empty());
}

fn alive(pid: u32) -> bool {
    // A stopped server is reaped by its owner: no /proc entry, or a zombie at most.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

#[test]
fn an_idle_server_stops_and_one_over_the_memory_bound_stops_after_its_answer() {
    let (_tmp, ws) = project();
    let money = ws.join("src/shop/core/money.py");
    let idle = plugin(serde_json::json!({"idle_timeout_ms": 400}));
    let before = check(&idle, &ws, &money, 1);
    let pid = idle.server_pids()[0];
    let t = std::time::Instant::now();
    while alive(pid) && t.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!alive(pid), "stopped when idle");
    assert!(idle.server_pids().is_empty());

    let bounded = plugin(serde_json::json!({"max_memory_mib": 1}));
    assert_eq!(
        check(&bounded, &ws, &money, 2),
        before,
        "the answer still comes"
    );
    assert!(bounded.server_pids().is_empty(), "then the server stops");
    assert!(bounded.fallbacks().is_empty());
}
