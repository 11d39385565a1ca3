//! The fuzz corpora replayed in the ordinary test suite, for the targets over the `openfiles`
//! crate's own API (`control_decode`, `queue_line`, `queue_reader`, `hook_payload`): each
//! input goes through the same calls and the same checks as its fuzz target (see `fuzz/`).
//! A crashing input libFuzzer finds is kept, once fixed, as
//! `fuzz/corpus/<target>/regress-<what>` (tracked by git, like the `seed-*` files), so it
//! stays a regression test here even where cargo-fuzz does not run.

use std::io::Write;
use std::path::{Path, PathBuf};

use openfiles::diagnostics::writer::Cursor;
use openfiles::hook::payload;
use openfiles::intake::queue::Reader;
use openfiles_wire::control;

/// The tracked inputs of one target's corpus (`seed-*`, `regress-*`).
fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("seed-") || n.starts_with("regress-"))
        })
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no inputs in {}", dir.display());
    out
}

#[test]
fn control_decode_corpus() {
    for (path, data) in corpus("control_decode") {
        let inc = control::decode(&data);
        if let Err(e) = &inc.request {
            let reply = control::error_reply(inc.id.as_ref(), e);
            assert!(
                control::Reply::parse(&reply).is_ok(),
                "{}: unparseable error reply {reply:?}",
                path.display()
            );
        }
    }
}

#[test]
fn queue_line_corpus() {
    let mut parsed = 0;
    for (path, data) in corpus("queue_line") {
        let line = openfiles::intake::parse_line(&data);
        // A refused line says why; its excerpt (for the log) is at most 80 characters and
        // an ellipsis.
        match line {
            Ok(_) => parsed += 1,
            Err(e) => assert!(!e.to_string().is_empty(), "{}", path.display()),
        }
        assert!(openfiles::intake::excerpt(&data).chars().count() <= 81);
    }
    assert!(parsed > 0, "no seed of queue_line parses");
}

#[test]
fn queue_reader_corpus() {
    for (path, data) in corpus("queue_reader") {
        let (first, rest) = match data.iter().position(|&b| b == 0xFF) {
            Some(i) => (&data[..i], &data[i + 1..]),
            None => (&data[..], &[][..]),
        };
        let dir = tempfile::tempdir().unwrap();
        let q = dir.path().join(".openfiles");
        std::fs::create_dir(&q).unwrap();
        let queue = q.join("queue.jsonl");
        std::fs::write(&queue, first).unwrap();
        let mut reader = Reader::new(dir.path(), Cursor::default());
        let mut taken = 0usize;
        for round in 0..6 {
            let Ok(step) = reader.step() else { break };
            for line in step.lines.iter().flatten() {
                let _ = openfiles::intake::parse_line(line);
                taken += line.len() + 1;
            }
            reader.acked = reader.cursor;
            if round == 0 && !rest.is_empty() {
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&queue)
                    .unwrap()
                    .write_all(rest)
                    .unwrap();
            }
        }
        assert!(
            taken <= first.len() + rest.len() + 2,
            "{}: more bytes taken than written",
            path.display()
        );
    }
}

#[test]
fn hook_payload_corpus() {
    for (path, data) in corpus("hook_payload") {
        let _ = payload::parse_bytes(&data);
        if let Ok(text) = std::str::from_utf8(&data) {
            let mut out = Vec::new();
            payload::patch_targets(text, &mut out);
            assert!(
                out.iter().all(|p| !p.contains('\n')),
                "{}: {out:?}",
                path.display()
            );
        }
    }
}

#[test]
fn path_policy_corpus() {
    use openfiles::policy::{Policy, Verdict};
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.py"), "x = 1\n").unwrap();
    std::fs::write(base.join("outside.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink(base.join("outside.txt"), root.join("src/out.py")).unwrap();
    let policy = Policy::new(&root, &Default::default()).unwrap();
    let mut checked = 0;
    for (path, data) in corpus("path_policy") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        let candidate = root.join(text);
        if let Verdict::Check(p) = policy.judge(&candidate) {
            assert!(p.starts_with(&root), "{}: {p:?}", path.display());
            checked += 1;
        }
        if let Ok(bytes) =
            openfiles_plugin_api::confine::read_workspace_file(&root, &candidate, 1 << 20)
        {
            assert_ne!(bytes, b"outside\n", "{}", path.display());
        }
    }
    assert!(checked > 0, "no seed reached a checkable file");
}

/// `claws_request`: a Claws request line parses or is refused, and a parsed command survives
/// its own encoding (`to_value` → parse) unchanged.
#[test]
fn claws_request_corpus() {
    use openfiles_wire::claws::request::Command;
    use openfiles_wire::claws::Request;
    let mut commands = 0;
    for (path, data) in corpus("claws_request") {
        let Some(req) = Request::parse(&data) else {
            continue;
        };
        let _ = req.id();
        let _ = req.protocol_error();
        if let Ok(cmd) = Command::parse(&req) {
            commands += 1;
            let again = Request::from_value(cmd.to_value()).expect("an object");
            assert_eq!(
                Command::parse(&again).as_ref(),
                Ok(&cmd),
                "{}: the command changed through its own encoding",
                path.display()
            );
        }
    }
    assert!(commands > 0, "the corpus holds commands that parse");
}
