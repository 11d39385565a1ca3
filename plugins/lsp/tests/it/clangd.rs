//! `clangd` through the plugin: known errors, fixes, quick edits and a crash.

use crate::support;
use crate::support::e;
use serde_json::json;
use support::{errors, signal, Env};

const BAD: &str =
    "int f(int a);\n\nint main(void) {\n  int x = undefined_var;\n  return f(1, 2) + x;\n}\n";
const GOOD: &str = "int f(int a);\n\nint main(void) {\n  int x = 1;\n  return f(1) + x;\n}\n";

#[test]
fn clangd_gives_fresh_results() {
    let env = Env::new(json!({}));
    env.write("compile_flags.txt", "-xc\n-std=c11\n");
    let file = env.write("main.c", BAD);
    let expected = e(&[
        (4, "undeclared_var_use"),
        (5, "typecheck_call_too_many_args_one"),
    ]);

    let items = env.check(&file, 60_000);
    assert_eq!(errors(&items), expected, "{items:#?}");
    let undeclared = items.iter().find(|i| i.line == 4).expect("line 4");
    assert_eq!(
        (undeclared.column, undeclared.source.as_str()),
        (11, "clang")
    );

    env.write("main.c", GOOD);
    assert_eq!(errors(&env.check(&file, 60_000)), vec![]);

    env.write("main.c", "int main(void) { return y; }\n");
    let second = e(&[(3, "undeclared_var_use")]);
    let first = std::thread::scope(|s| {
        let a = s.spawn(|| env.check(&file, 60_000));
        env.write("main.c", "\n\nint main(void) { return z; }\n");
        let b = env.check(&file, 60_000);
        assert_eq!(errors(&b), second, "{b:#?}");
        a.join().expect("first check")
    });
    let first = errors(&first);
    assert!(
        first == e(&[(1, "undeclared_var_use")]) || first == second,
        "{first:#?}"
    );

    let pid = env.pid("clangd");
    signal(pid, "-STOP");
    env.write("main.c", BAD);
    let items = std::thread::scope(|s| {
        let c = s.spawn(|| env.check(&file, 60_000));
        signal(pid, "-KILL");
        c.join().expect("check")
    });
    assert_eq!(errors(&items), expected, "{items:#?}");
    assert_ne!(env.pid("clangd"), pid, "server restarted");
}

/// Issue 14.1: clangd publishes nothing for a `didChange` whose text equals the previous
/// one, so a file reported again without a byte changed (the watcher saw the write, then
/// the hook reported it; or an edit and its revert) used to wait for a push that never
/// came and end as "clangd timed out". The second check of unchanged text gets a 1 s
/// deadline: a wait for a new push would end in the timeout item and fail the comparison.
#[test]
fn unchanged_text_checked_again_settles_with_the_same_items() {
    let env = Env::new(json!({}));
    env.write("compile_flags.txt", "-xc\n-std=c11\n");
    let file = env.write("main.c", BAD);
    let first = env.check(&file, 60_000);
    assert_eq!(
        errors(&first),
        e(&[
            (4, "undeclared_var_use"),
            (5, "typecheck_call_too_many_args_one")
        ])
    );
    // The same bytes written again (the watcher's event, then the hook's report).
    env.write("main.c", BAD);
    let again = env.check(&file, 1_000);
    assert_eq!(
        again, first,
        "unchanged text must settle with the same items"
    );
    // An edit and its revert before the next check: the server last saw this very text.
    env.write("main.c", GOOD);
    env.write("main.c", BAD);
    assert_eq!(
        env.check(&file, 1_000),
        first,
        "a reverted edit settles too"
    );
    // Something else changed on the server meanwhile (another file opened): the same text
    // is sent again asking for a rebuild, which clangd answers.
    let other = env.write("other.c", "int other(void) { return nope; }\n");
    assert_eq!(
        errors(&env.check(&other, 60_000)),
        e(&[(1, "undeclared_var_use")])
    );
    assert_eq!(
        env.check(&file, 1_000),
        first,
        "unchanged after another file"
    );
    // A real change still gets a new result.
    env.write("main.c", GOOD);
    assert_eq!(errors(&env.check(&file, 60_000)), vec![]);
}
