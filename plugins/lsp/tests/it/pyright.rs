//! `pyright-langserver` through the plugin: known errors, fixes, quick edits, a crash, and
//! `pyright --outputjson` on the same file.

use crate::support;
use crate::support::e;
use serde_json::json;
use support::{errors, pyright_cli, signal, Env};

const BAD: &str =
    "import os\n\n\ndef f(x: int) -> int:\n    return undefined_name + x\n\n\ny: int = \"text\"\n";
const GOOD: &str = "def f(x: int) -> int:\n    return x\n\n\ny: int = 3\n";

#[test]
fn pyright_gives_fresh_results_like_the_cli() {
    let env = Env::new(json!({"disable": ["ruff", "basedpyright"]}));
    let file = env.write("m.py", BAD);
    let expected = e(&[(5, "reportUndefinedVariable"), (8, "reportAssignmentType")]);

    let items = env.check(&file, 60_000);
    assert_eq!(errors(&items), expected, "{items:#?}");
    let undefined = items.iter().find(|i| i.line == 5).expect("line 5");
    assert_eq!(
        (undefined.column, undefined.source.as_str()),
        (12, "Pyright")
    );

    assert_eq!(errors(&items), pyright_cli(&env.ws, "m.py"));

    // Columns count characters: pyright speaks UTF-16 ("𝄞" is 2 units).
    env.write("m.py", "x = \"é𝄞\"; y = undefined_q\n");
    let items = env.check(&file, 60_000);
    let undefined: Vec<_> = items
        .iter()
        .filter(|i| i.severity == openfiles_plugin_api::Severity::Error)
        .map(|i| (i.line, i.column))
        .collect();
    assert_eq!(undefined, [(1, 15)], "{items:#?}");

    env.write("m.py", GOOD);
    assert_eq!(errors(&env.check(&file, 60_000)), vec![]);

    env.write("m.py", "a: str = 1\n");
    let first = std::thread::scope(|s| {
        let a = s.spawn(|| env.check(&file, 60_000));
        env.write("m.py", "\n\nb: int = 'x'\nprint(nope)\n");
        let b = env.check(&file, 60_000);
        assert_eq!(
            errors(&b),
            e(&[(3, "reportAssignmentType"), (4, "reportUndefinedVariable")]),
            "{b:#?}"
        );
        a.join().expect("first check")
    });
    let first = errors(&first);
    assert!(
        first == e(&[(1, "reportAssignmentType")])
            || first == e(&[(3, "reportAssignmentType"), (4, "reportUndefinedVariable")]),
        "{first:#?}"
    );

    let pid = env.pid("pyright");
    signal(pid, "-STOP");
    env.write("m.py", BAD);
    let items = std::thread::scope(|s| {
        let c = s.spawn(|| env.check(&file, 60_000));
        signal(pid, "-KILL");
        c.join().expect("check")
    });
    assert_eq!(errors(&items), expected, "{items:#?}");
    assert_ne!(env.pid("pyright"), pid, "server restarted");

    // An imported module that was opened earlier and then changed on disk is not checked
    // against its old open copy.
    let dep = env.write("dep.py", "value: int = 1\n");
    let user = env.write("user.py", "from dep import value\n\nx: int = value\n");
    assert_eq!(errors(&env.check(&dep, 60_000)), vec![]);
    assert_eq!(errors(&env.check(&user, 60_000)), vec![]);
    env.write("dep.py", "value: str = \"s\"\n");
    let items = env.check(&user, 60_000);
    assert_eq!(
        errors(&items),
        e(&[(3, "reportAssignmentType")]),
        "{items:#?}"
    );

    // A session file the server never opened reaches it as a watched-file event when it
    // changes (pyright registers watchers and otherwise may keep its cached copy).
    let lib = env.write("lib2.py", "count: int = 1\n");
    let main = env.write("main2.py", "from lib2 import count\n\nn: int = count\n");
    assert_eq!(
        errors(&env.check_with(&main, std::slice::from_ref(&lib), 60_000)),
        vec![]
    );
    env.write("lib2.py", "count: str = \"s\"\n");
    let items = env.check_with(&main, &[lib], 60_000);
    assert_eq!(
        errors(&items),
        e(&[(3, "reportAssignmentType")]),
        "{items:#?}"
    );
}
