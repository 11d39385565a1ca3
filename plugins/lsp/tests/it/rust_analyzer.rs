//! rust-analyzer's settle rule — cargo-check results are final when the flycheck progress
//! that began after our save has ended — against `fixtures/ra_standin.py`, a stand-in that
//! reproduces rust-analyzer's diagnostics protocol (rust-analyzer itself cannot be installed
//! here). The stand-in is configured as the built-in `rust-analyzer` server (only its command
//! changes), so the built-in settings (`wait_for_progress`) are what is tested.

use crate::support;
use crate::support::e;
use openfiles_plugin_api::Item;
use serde_json::json;
use support::Env;

fn env(check_ms: u32) -> Env {
    let standin = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ra_standin.py");
    Env::new(json!({
        "servers": {"rust-analyzer": {"command": "python3", "args": [standin, check_ms.to_string()]}},
    }))
}

/// (line, code) of every item, sorted.
fn found(items: &[Item]) -> Vec<(u32, String)> {
    let mut v: Vec<_> = items
        .iter()
        .map(|i| (i.line, i.code.clone().unwrap_or_default()))
        .collect();
    v.sort();
    v
}

const CARGO_TOML: &str = "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";

#[test]
fn cargo_check_results_arrive_after_the_native_ones_and_are_waited_for() {
    // The check takes 800 ms: far longer than the quiet window after the native push, so a
    // client that settled on pushes alone would miss E0308.
    let env = env(800);
    env.write("Cargo.toml", CARGO_TOML);
    let file = env.write(
        "src/main.rs",
        "fn main() {\n    let x: u8 = \"mismatch\";\n    let _ = unresolved;\n}\n",
    );
    let items = env.check(&file, 60_000);
    assert_eq!(
        found(&items),
        e(&[(2, "E0308"), (3, "unresolved-ident")]),
        "{items:#?}"
    );
    let e0308 = items
        .iter()
        .find(|i| i.code.as_deref() == Some("E0308"))
        .unwrap();
    assert_eq!((e0308.column, e0308.source.as_str()), (18, "rustc"));

    // Fixed: the next flycheck's (empty) result replaces the old one.
    env.write(
        "src/main.rs",
        "fn main() {\n    let x: u8 = 1;\n    let _ = x;\n}\n",
    );
    assert_eq!(found(&env.check(&file, 60_000)), vec![]);
}

#[test]
fn a_save_during_a_running_flycheck_waits_for_the_restarted_one() {
    let env = env(1500);
    env.write("Cargo.toml", CARGO_TOML);
    let file = env.write(
        "src/main.rs",
        "fn main() {\n    let a: u8 = \"mismatch\";\n}\n",
    );
    let newest =
        "fn main() {\n    let a: u8 = 1;\n    let b: u8 = 2;\n    let c: u8 = \"mismatch\";\n}\n";
    let (first, second) = std::thread::scope(|s| {
        let first = s.spawn(|| env.check(&file, 60_000));
        // The first check's flycheck is running (it takes 1.5 s) when the second save
        // arrives; rust-analyzer cancels it (its progress ends with no results) and restarts.
        std::thread::sleep(std::time::Duration::from_millis(400));
        env.write("src/main.rs", newest);
        let second = env.check(&file, 60_000);
        (first.join().expect("first check"), second)
    });
    // The second check answers for the newest text only: the cancelled run's end did not
    // settle it, and line 2's old mismatch is gone.
    assert_eq!(found(&second), e(&[(4, "E0308")]), "{second:#?}");
    // The first check's flycheck was cancelled: it settles on the cancel's end, with the
    // native results only (no cargo results: the run that had them never finished), or on a
    // later run. The pipeline discards it anyway: the edit after it has a newer generation.
    let first = found(&first);
    assert!(
        first.is_empty() || first == e(&[(2, "E0308")]) || first == e(&[(4, "E0308")]),
        "{first:#?}"
    );
}
