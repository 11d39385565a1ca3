//! A language server that crashes on every start, through the real service with the real
//! `lsp` plugin: the server is a tiny script that counts its starts in a file, complains on
//! stderr and exits 1. Asserts: after the backoff limit the server is marked broken, the
//! file's item (in the `wait` answer and in `diagnostics.json`) names it and quotes its
//! stderr, the number of starts stops at the limit however many more checks are asked for
//! (no busy loop), the other plugin's diagnostics for the same file keep arriving, and the
//! service stays healthy (status, other files, a clean stop).

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::*;

/// The lsp plugin's limit: more than this many crashes within its window mark the server
/// broken (`plugins/lsp/src/server.rs`, `MAX_RESTARTS`).
const MAX_RESTARTS: usize = 5;

fn starts(counter: &Path) -> usize {
    std::fs::read_to_string(counter)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// One edit + wait round trip on `file`; its items as (source, message).
fn round_trip(env: &Env, file: &Path, name: &str) -> Vec<(String, String)> {
    let r = env.edited(&[file]);
    let w = env.wait(&[file], r.ts, 120_000);
    assert!(w.complete, "{w:?}");
    w.workspaces[0].files[name]
        .items
        .iter()
        .map(|i| (i.source.clone(), i.message.clone()))
        .collect()
}

#[test]
fn a_language_server_crashing_on_every_start_is_marked_broken_without_a_busy_loop() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::path_list(&[
        common::plugins::fixture("instant"),
        common::plugins::plugin("lsp"),
    ]));
    let counter = env.dir.path().join("starts");
    let server = env.dir.path().join("crashy-server");
    std::fs::write(
        &server,
        format!(
            "#!/bin/sh\necho start >> '{}'\necho \"crashy: unknown option $1\" >&2\nexit 1\n",
            counter.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The instant plugin checks the same extension, so the file gets diagnostics from a
    // healthy plugin alongside. A short backoff keeps the test quick; the limit is the same.
    std::fs::write(
        &env.config,
        format!(
            "[plugin.instant]\nextensions = [\"txt\", \"crash\"]\n\n\
             [plugin.lsp]\nrestart_backoff_ms = 20\nstartup_timeout_ms = 60000\n\n\
             [plugin.lsp.servers.crashy]\ncommand = \"{}\"\nargs = [\"--bogus\"]\n\
             extensions = [\"crash\"]\n",
            server.display()
        ),
    )
    .unwrap();
    let ws = env.workspace("ws");
    let file = ws.join("a.crash");
    std::fs::write(&file, "x").unwrap();
    let other = ws.join("b.txt");
    std::fs::write(&other, "x").unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);

    // Each check that needs the server starts it once (a failed start counts as a crash)
    // until the limit; the round trip that finds it broken no longer starts it.
    let is_broken = |items: &[(String, String)]| {
        items
            .iter()
            .any(|(s, m)| s == "openfiles" && m.contains("crashy") && m.contains("crashed"))
    };
    let mut rounds = 0;
    let mut quoted = 0;
    let items = loop {
        let items = round_trip(&env, &file, "a.crash");
        rounds += 1;
        // The healthy plugin's item is there on every round.
        assert!(
            items.iter().any(|(s, m)| s == "instant" && m == "checked"),
            "round {rounds}: no item from the instant plugin: {items:?}"
        );
        // Every round has an item naming the server and why it gave nothing.
        assert!(
            items.iter().any(|(s, m)| s == "openfiles"
                && m.contains("crashy")
                && (m.contains("failed to start") || m.contains("crashed"))),
            "round {rounds}: no item explaining the failure: {items:?}"
        );
        // The server's stderr is quoted (the plugin waits up to 1 s for it after the exit,
        // so under heavy load one round may miss it; not all of them).
        quoted += usize::from(
            items
                .iter()
                .any(|(_, m)| m.contains("crashy: unknown option --bogus")),
        );
        if is_broken(&items) {
            break items;
        }
        assert!(
            rounds <= 3 * (MAX_RESTARTS + 1),
            "not marked broken after {rounds} checks ({} starts): {items:?}",
            starts(&counter)
        );
    };
    assert!(
        quoted > 0,
        "no item quoted the server's stderr in {rounds} rounds"
    );
    let at_broken = starts(&counter);
    println!(
        "lsp crash: marked broken after {rounds} checks, {at_broken} starts \
         (stderr quoted in {quoted} of {rounds} items): {items:?}"
    );
    assert_eq!(
        at_broken,
        MAX_RESTARTS + 1,
        "starts before the server was marked broken"
    );
    let broken = items
        .iter()
        .find(|(s, m)| s == "openfiles" && m.contains("crashed"))
        .unwrap();
    assert!(
        broken
            .1
            .contains(&format!("crashed {} times", MAX_RESTARTS + 1)),
        "{broken:?}"
    );

    // diagnostics.json carries the same explanation.
    wait_until("diagnostics.json explains the broken server", || {
        diagnostics(&ws).is_some_and(|d| {
            d.files.get("a.crash").is_some_and(|f| {
                f.items
                    .iter()
                    .any(|i| i.message.contains("crashy") && i.message.contains("crashed"))
            })
        })
    });

    // No busy loop: more checks that would need the server do not start it again.
    for _ in 0..5 {
        let items = round_trip(&env, &file, "a.crash");
        assert!(is_broken(&items), "{items:?}");
        assert!(items.iter().any(|(s, _)| s == "instant"), "{items:?}");
    }
    // A file another plugin checks, and the status, are served as before.
    let items = round_trip(&env, &other, "b.txt");
    assert_eq!(
        items,
        vec![("instant".to_owned(), "checked".to_owned())],
        "{items:?}"
    );
    let st = env.status();
    assert_eq!(st.workspaces.len(), 1);
    let after = starts(&counter);
    println!("lsp crash: {after} starts after 5 more checks of the file");
    assert_eq!(after, at_broken, "the broken server was started again");
    assert_eq!(svc.terminate(), Some(0));
}
