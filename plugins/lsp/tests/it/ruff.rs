//! `ruff server` through the plugin: known errors, fixes, quick edits, a crash, and the CLI.

use crate::support;
use serde_json::json;
use support::{all, run, signal, Env};

const BAD: &str = "import os\n\n\ndef f(x: int) -> int:\n    return undefined_name + x\n";
const GOOD: &str = "def f(x: int) -> int:\n    return x\n";

#[test]
fn ruff_server_gives_fresh_results_like_the_cli() {
    let env = Env::new(json!({"disable": ["pyright", "basedpyright", "ty"]}));
    let file = env.write("pkg/mod.py", BAD);

    let items = env.check(&file, 30_000);
    let expected = vec![(1, "F401".to_string()), (5, "F821".to_string())];
    assert_eq!(all(&items), expected, "{items:#?}");
    assert!(items.iter().all(|i| i.source == "Ruff"), "{items:#?}");
    let f821 = items
        .iter()
        .find(|i| i.code.as_deref() == Some("F821"))
        .expect("F821");
    assert_eq!(f821.column, 12);

    // The CLI agrees on codes, lines and columns.
    let cli: serde_json::Value = serde_json::from_str(&run(
        &env.ws,
        "ruff",
        &["check", "--output-format", "json", "pkg/mod.py"],
    ))
    .expect("ruff json");
    let mut cli: Vec<(u32, String, u32)> = cli
        .as_array()
        .expect("array")
        .iter()
        .map(|d| {
            (
                d["location"]["row"].as_u64().unwrap() as u32,
                d["code"].as_str().unwrap().to_owned(),
                d["location"]["column"].as_u64().unwrap() as u32,
            )
        })
        .collect();
    cli.sort();
    let mut ours: Vec<_> = items
        .iter()
        .map(|i| (i.line, i.code.clone().unwrap_or_default(), i.column))
        .collect();
    ours.sort();
    assert_eq!(ours, cli);

    // Columns count characters: ruff negotiates UTF-8 ("é" is 2 bytes, "𝄞" 4), the CLI
    // counts characters too.
    env.write("pkg/mod.py", "x = \"é𝄞\"; y = undefined_q\n");
    let items = env.check(&file, 30_000);
    let cli: serde_json::Value = serde_json::from_str(&run(
        &env.ws,
        "ruff",
        &["check", "--output-format", "json", "pkg/mod.py"],
    ))
    .expect("ruff json");
    let f821: Vec<_> = items
        .iter()
        .filter(|i| i.code.as_deref() == Some("F821"))
        .map(|i| (i.line, i.column))
        .collect();
    assert_eq!(f821, [(1, 15)], "{items:#?}");
    assert_eq!(cli[0]["location"]["column"], 15, "{cli}");

    // Fixed: zero items, not the stale ones.
    env.write("pkg/mod.py", GOOD);
    assert_eq!(env.check(&file, 30_000), vec![]);

    // Two quick edits: the second check reports the second text.
    env.write("pkg/mod.py", "import sys\n");
    let first = std::thread::scope(|s| {
        let a = s.spawn(|| env.check(&file, 30_000));
        env.write("pkg/mod.py", "x = 1\n\n\nprint(undefined_b)\n");
        let b = env.check(&file, 30_000);
        assert_eq!(all(&b), vec![(4, "F821".to_string())]);
        a.join().expect("first check")
    });
    assert!(
        all(&first) == vec![(1, "F401".to_string())]
            || all(&first) == vec![(4, "F821".to_string())],
        "{first:#?}"
    );

    // Kill the server while a check is in flight: it restarts and the check is right.
    let pid = env.pid("ruff");
    signal(pid, "-STOP");
    env.write("pkg/mod.py", BAD);
    let items = std::thread::scope(|s| {
        let c = s.spawn(|| env.check(&file, 30_000));
        signal(pid, "-KILL");
        c.join().expect("check")
    });
    assert_eq!(all(&items), expected, "{items:#?}");
    assert_ne!(env.pid("ruff"), pid, "server restarted");
    assert_eq!(all(&env.check(&file, 30_000)), expected);
}
