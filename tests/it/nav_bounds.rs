//! Issue 41, the bounds of a question: an answer capped at its page says so and the rest is
//! one `page` away (real pyright, a generated project with more than 200 uses, through
//! `openfiles nav --page` and the MCP tool's `page`); a question whose MCP call is cancelled
//! is cancelled in the plugin, which frees its slot, and a question in flight never delays a
//! check (the `instant` fixture, whose questions about a `*.slow` file block until cancelled).

use crate::common;

use std::collections::BTreeSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use super::hook_late::python_env;
use common::mcp::Mcp;
use common::plugins::{fixture, path_list};
use common::Env;
use openfiles_wire::control::nav::NavReply;
use serde_json::{json, Value};

/// Uses of `helper` in the generated project: 5 modules × 50 calls, its import in each, and
/// its definition.
const USES: usize = 5 * 50 + 5 + 1;

fn many_uses(ws: &Path) {
    std::fs::write(ws.join("pyproject.toml"), "[tool.pyright]\n").unwrap();
    std::fs::write(
        ws.join("util.py"),
        "def helper(n: int) -> int:\n    return n + 1\n",
    )
    .unwrap();
    for m in 0..5 {
        let calls: String = (0..50).map(|i| format!("helper({i})\n")).collect();
        std::fs::write(
            ws.join(format!("m{m}.py")),
            format!("from util import helper\n\n{calls}"),
        )
        .unwrap();
    }
}

fn started(mcp: &mut Mcp, ws: &Path) {
    let init = mcp.ask(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}}));
    assert!(init["result"].is_object(), "{init} ({})", ws.display());
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

fn places(locations: &Value) -> Vec<(String, u64, u64)> {
    locations
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["path"].as_str().unwrap().to_owned(),
                l["line"].as_u64().unwrap(),
                l["column"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn references_past_the_cap_are_one_page_away() {
    let env = python_env(120_000);
    let ws = env.workspace("many");
    many_uses(&ws);
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let mut mcp = Mcp::start(&env, &ws);
    started(&mut mcp, &ws);

    let ask = |mcp: &mut Mcp, page: Option<u64>| {
        let mut args = json!({"path": "util.py", "symbol": "helper"});
        if let Some(p) = page {
            args["page"] = json!(p);
        }
        let r = mcp.tool_result("openfiles_references", args);
        assert_ne!(r["isError"], true, "{r}");
        r
    };
    let first = ask(&mut mcp, None);
    let s = &first["structuredContent"];
    assert_eq!(s["total"], USES, "{s}");
    assert_eq!(s["capped"], true, "{s}");
    assert_eq!(s["nextPage"], 2, "{s}");
    let text = first["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("(showing 1\u{2013}200 of 256; ask with page 2)"),
        "{text}"
    );
    let second = ask(&mut mcp, Some(2));
    let s2 = &second["structuredContent"];
    assert_eq!(s2["capped"], false, "{s2}");
    assert_eq!(s2["offset"], 200, "{s2}");
    assert!(s2.get("nextPage").is_none(), "{s2}");
    let text = second["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("(showing 201\u{2013}256 of 256)"), "{text}");
    // The two pages are every use, each once.
    let (a, b) = (places(&s["locations"]), places(&s2["locations"]));
    assert_eq!((a.len(), b.len()), (200, USES - 200));
    let all: BTreeSet<_> = a.iter().chain(&b).cloned().collect();
    assert_eq!(all.len(), USES);
    for m in 0..5 {
        for line in 3..53 {
            assert!(
                all.contains(&(format!("m{m}.py"), line, 1)),
                "m{m}.py:{line}"
            );
        }
    }

    // The CLI pages the same way, with a smaller page.
    let out = env
        .command(&[
            "nav",
            "refs",
            "util.py#helper",
            "--limit",
            "100",
            "--page",
            "3",
            "--json",
        ])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: NavReply = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((r.offset, r.locations.len(), r.capped), (200, 56, false));
    assert_eq!(r.partial, None, "{r:#?}");
}

/// The line a fixture writes to the FIFO `<file><suffix>` (created here), read on a thread.
fn fifo_line(file: &Path, suffix: &str) -> mpsc::Receiver<String> {
    let mut fifo = file.as_os_str().to_owned();
    fifo.push(suffix);
    let fifo = PathBuf::from(fifo);
    let _ = std::fs::remove_file(&fifo);
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let f = std::fs::File::open(&fifo).unwrap();
        let mut line = String::new();
        std::io::BufReader::new(f).read_line(&mut line).unwrap();
        let _ = tx.send(line);
    });
    rx
}

fn line_of(rx: &mpsc::Receiver<String>, what: &str) -> String {
    rx.recv_timeout(Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

#[test]
fn a_cancelled_question_is_cancelled_in_the_plugin_and_never_delays_a_check() {
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[fixture("instant")]));
    std::fs::write(
        &env.config,
        "[plugin.instant]\nextensions = [\"txt\", \"slow\"]\n",
    )
    .unwrap();
    let ws = env.workspace("w");
    let slow = ws.join("big.slow");
    std::fs::write(&slow, "x\n").unwrap();
    let txt = ws.join("a.txt");
    std::fs::write(&txt, "error: broken\n").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let mut mcp = Mcp::start(&env, &ws);
    started(&mut mcp, &ws);

    // More questions, one after another, than the plugin host answers at once: each one
    // cancelled must give its slot back for the next to start.
    let rounds = openfiles::plugin_host::child::MAX_QUERIES as u64 + 2;
    for round in 0..rounds {
        let (began, gone) = (fifo_line(&slow, ".started"), fifo_line(&slow, ".cancelled"));
        let id = 100 + round;
        mcp.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "openfiles_references",
                "arguments": {"path": "big.slow", "line": 1, "column": 1}}})
            .to_string(),
        );
        let line = line_of(&began, "the question reached the plugin");
        assert!(line.starts_with("started"), "{line}");
        if round == 0 {
            // The question holds nothing a check needs: one of the same plugin answers.
            let r = env.edited(&[&txt]);
            let w = env.wait(&[&txt], r.ts, 60_000);
            assert!(w.complete, "{w:?}");
            let items = &w.workspaces[0].files["a.txt"].items;
            assert!(items.iter().any(|i| i.message == "broken"), "{items:?}");
        }
        mcp.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "test"}})
            .to_string(),
        );
        let line = line_of(&gone, "the plugin was told to cancel");
        assert!(line.starts_with("cancelled"), "round {round}: {line}");
    }

    // `openfiles nav` interrupted: its question is cancelled as well.
    let (began, gone) = (fifo_line(&slow, ".started"), fifo_line(&slow, ".cancelled"));
    let mut cli = env
        .command(&["nav", "refs", "big.slow:1:1"])
        .current_dir(&ws)
        .spawn()
        .unwrap();
    let line = line_of(&began, "the CLI's question reached the plugin");
    assert!(line.starts_with("started"), "{line}");
    common::signal(cli.id() as i32, libc::SIGINT);
    let _ = cli.wait();
    let line = line_of(&gone, "the interrupted CLI's question was cancelled");
    assert!(line.starts_with("cancelled"), "{line}");

    // A question past its deadline: answered as timed out, and cancelled in the plugin.
    let (began, gone) = (fifo_line(&slow, ".started"), fifo_line(&slow, ".cancelled"));
    let answer = env.client().call(&openfiles_wire::control::nav::Nav {
        kind: openfiles_wire::control::nav::QueryKind::References,
        path: slow.clone(),
        line: Some(1),
        column: Some(1),
        symbol: None,
        query: None,
        new_name: None,
        limit: None,
        page: None,
        timeout_ms: Some(1_000),
    });
    let line = line_of(&began, "the question with a deadline reached the plugin");
    assert!(line.starts_with("started"), "{line}");
    let line = line_of(&gone, "the question past its deadline was cancelled");
    assert!(line.starts_with("cancelled"), "{line}");
    let reply = answer.expect("an answer");
    assert!(
        reply.notes.iter().any(|n| n.contains("no answer within")),
        "{reply:#?}"
    );
}
