//! Code-navigation questions through the plugin (`Plugin::query`) with a real pyright and
//! ruff: definition and references across files, hover, a file's symbols with their name
//! paths, a cap, and nothing started in an untrusted workspace that a check would not start.

use crate::support::Env;
use openfiles_plugin_api::query::{QueryAnswer, QueryKind, QueryRequest};
use openfiles_plugin_api::Plugin;
use serde_json::json;
use std::path::Path;

const LIB: &str = "class Greeter:\n    def greet(self, name: str) -> str:\n        \"\"\"Say hello.\"\"\"\n        return \"hé \" + name\n\n\ndef helper(x: int) -> int:\n    return x + 1\n";
const APP: &str =
    "from lib import helper, Greeter\n\nprint(helper(1))\nprint(Greeter().greet(\"a\"))\n";
const OTHER: &str = "import lib\n\n\ny = lib.helper(2) + lib.helper(3)\n";

fn ask(env: &Env, kind: QueryKind, file: &Path, line: u32, column: u32) -> QueryAnswer {
    ask_as(env, kind, file, line, column, true)
}

fn ask_as(
    env: &Env,
    kind: QueryKind,
    file: &Path,
    line: u32,
    column: u32,
    trusted: bool,
) -> QueryAnswer {
    env.plugin
        .query(QueryRequest {
            id: 1,
            kind,
            workspace: env.ws.clone(),
            file: file.to_path_buf(),
            line,
            column,
            query: None,
            new_name: Some("twice".into()),
            limit: 0,
            offset: 0,
            timeout_ms: 60_000,
            trusted,
        })
        .expect("query")
}

fn at_path(p: &Path, ws: &Path) -> String {
    p.strip_prefix(ws).unwrap_or(p).display().to_string()
}

fn at(a: &QueryAnswer, ws: &Path) -> Vec<(String, u32, u32)> {
    a.locations
        .iter()
        .map(|l| {
            let p = l.path.strip_prefix(ws).unwrap_or(&l.path);
            (p.display().to_string(), l.line, l.column)
        })
        .collect()
}

#[test]
fn pyright_answers_definition_references_hover_and_symbols() {
    let env = Env::new(json!({"disable": ["basedpyright"]}));
    env.write("pyrightconfig.json", "{}\n");
    let lib = env.write("lib.py", LIB);
    let app = env.write("app.py", APP);
    env.write("other.py", OTHER);

    // `helper` in app.py line 3, column 7 (1-based characters).
    let def = ask(&env, QueryKind::Definition, &app, 3, 7);
    assert_eq!(def.server.as_deref(), Some("pyright"), "{def:#?}");
    assert_eq!(at(&def, &env.ws), [("lib.py".into(), 7, 5)], "{def:#?}");
    assert!(def.locations[0].end_column > def.locations[0].column);

    let refs = ask(&env, QueryKind::References, &lib, 7, 5);
    let mut got = at(&refs, &env.ws);
    got.sort();
    assert_eq!(
        got,
        [
            ("app.py".into(), 1, 17),
            ("app.py".into(), 3, 7),
            ("lib.py".into(), 7, 5),
            ("other.py".into(), 4, 9),
            ("other.py".into(), 4, 25),
        ],
        "{refs:#?}"
    );
    assert_eq!((refs.total, refs.capped), (5, false));
    // ruff (asked too: it serves .py files) answers no references; that is no note.
    assert!(refs.notes.is_empty(), "{refs:#?}");

    let hover = ask(&env, QueryKind::Hover, &app, 4, 17);
    let text = hover.text.clone().unwrap_or_default();
    assert!(
        text.contains("greet") && text.contains("Say hello"),
        "{hover:#?}"
    );

    let symbols = ask(&env, QueryKind::DocumentSymbols, &lib, 1, 1);
    // Each at its name (not at `def`), so a question asked there is about it.
    let paths: Vec<(String, u32, u32)> = symbols
        .symbols
        .iter()
        .map(|s| (s.name_path(), s.line, s.column))
        .collect();
    assert!(paths.contains(&("Greeter".into(), 1, 7)), "{paths:?}");
    assert!(paths.contains(&("Greeter/greet".into(), 2, 9)), "{paths:?}");
    assert!(paths.contains(&("helper".into(), 7, 5)), "{paths:?}");

    // Who calls `helper` (the two modules, with where), and what a function calls.
    let callers = ask(&env, QueryKind::IncomingCalls, &lib, 7, 5);
    let from: Vec<(String, usize)> = callers
        .calls
        .iter()
        .map(|c| {
            let s = c.from.as_ref().expect("a caller");
            (at_path(&s.path, &env.ws), c.locations.len())
        })
        .collect();
    assert_eq!(
        from,
        [("app.py".into(), 1), ("other.py".into(), 2)],
        "{callers:#?}"
    );
    assert_eq!(
        (
            callers.calls[1].locations[1].line,
            callers.calls[1].locations[1].column
        ),
        (4, 25)
    );
    let calls = env.write(
        "calls.py",
        "from lib import Greeter\n\n\ndef hello() -> str:\n    return Greeter().greet(\"b\")\n",
    );
    let callees = ask(&env, QueryKind::OutgoingCalls, &calls, 4, 5);
    let to: Vec<(String, String, u32, u32)> = callees
        .calls
        .iter()
        .map(|c| {
            let s = c.to.as_ref().expect("a callee");
            let l = &c.locations[0];
            (s.name.clone(), at_path(&s.path, &env.ws), l.line, l.column)
        })
        .collect();
    assert!(
        to.contains(&("greet".into(), "lib.py".into(), 5, 22)),
        "{callees:#?}"
    );

    // A rename: exact edits per file, each for the content its hash names, nothing written.
    let rename = ask(&env, QueryKind::Rename, &lib, 7, 5);
    let files: Vec<(String, usize)> = rename
        .edits
        .iter()
        .map(|f| (at_path(&f.path, &env.ws), f.edits.len()))
        .collect();
    assert_eq!(
        files,
        [
            ("app.py".into(), 2),
            ("lib.py".into(), 1),
            ("other.py".into(), 2)
        ],
        "{rename:#?}"
    );
    let lib_edit = &rename.edits[1];
    assert_eq!(
        lib_edit.sha256,
        openfiles_plugin_api::content_hash(LIB.as_bytes())
    );
    assert_eq!(
        (
            lib_edit.edits[0].line,
            lib_edit.edits[0].column,
            lib_edit.edits[0].end_column
        ),
        (7, 5, 11)
    );
    assert!(rename
        .edits
        .iter()
        .all(|f| f.edits.iter().all(|e| e.new_text == "twice")));
    assert_eq!(std::fs::read_to_string(&lib).unwrap(), LIB);

    // The files on disk are what is asked about: a file a check opened (as an agent's edit
    // does) and then changed on disk is sent again first, so a new use appears at once.
    let other = env.ws.join("other.py");
    env.check(&other, 60_000);
    env.write("other.py", &format!("{OTHER}z = lib.helper(4)\n"));
    let refs = ask(&env, QueryKind::References, &lib, 7, 5);
    assert_eq!(refs.total, 6, "{refs:#?}");
}

#[test]
fn an_untrusted_workspace_starts_no_server_a_check_would_not_start() {
    // The project's own ruff and pyright (`.venv/bin`) are what an untrusted workspace may
    // not run: the question is answered by the servers a check would start, the traps never run.
    let env = Env::new(json!({"disable": ["basedpyright"]}));
    let marker = env.ws.join("trap-ran");
    for name in ["ruff", "pyright-langserver"] {
        let trap = env.write(
            &format!(".venv/bin/{name}"),
            &format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display()),
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&trap, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    env.write("pyrightconfig.json", "{}\n");
    env.write("lib.py", LIB);
    let app = env.write("app.py", APP);
    let a = ask_as(&env, QueryKind::Definition, &app, 3, 7, false);
    assert_eq!(at(&a, &env.ws), [("lib.py".into(), 7, 5)], "{a:#?}");
    assert!(
        !marker.exists(),
        "a workspace's own server ran for a question"
    );
}
