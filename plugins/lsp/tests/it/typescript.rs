//! `typescript-language-server` through the plugin: known errors, fixes, quick edits, a
//! crash, and `tsc --noEmit` on the same project.

use crate::support;
use crate::support::e;
use serde_json::json;
use support::{errors, run, signal, Env};

const TSCONFIG: &str =
    r#"{"compilerOptions":{"strict":true,"noEmit":true,"target":"es2020"},"include":["src/*.ts"]}"#;
const BAD: &str = "const a: number = \"s\";\n\nfunction f(x: number): string {\n  return x;\n}\n\nconsole.log(a, missing, f(1));\n";
const GOOD: &str = "const a: number = 1;\n\nfunction f(x: number): string {\n  return String(x);\n}\n\nconsole.log(a, f(1));\n";

/// `file(line,col): error TSnnnn: …` lines of `tsc` as (line, code, column).
fn tsc_errors(out: &str) -> Vec<(u32, String, u32)> {
    let mut v: Vec<_> = out
        .lines()
        .filter_map(|l| {
            let (pos, rest) = l.split_once("): error TS")?;
            let (_, lc) = pos.rsplit_once('(')?;
            let (line, col) = lc.split_once(',')?;
            let code = rest.split(':').next()?;
            Some((line.parse().ok()?, code.to_owned(), col.parse().ok()?))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn typescript_language_server_gives_fresh_results_like_tsc() {
    let env = Env::new(json!({}));
    env.write("tsconfig.json", TSCONFIG);
    let file = env.write("src/m.ts", BAD);
    let expected = e(&[(1, "2322"), (4, "2322"), (7, "2304")]);

    let items = env.check(&file, 60_000);
    assert_eq!(errors(&items), expected, "{items:#?}");
    assert!(
        items
            .iter()
            .filter(|i| i.code.as_deref() == Some("2304"))
            .all(|i| i.source == "typescript"),
        "{items:#?}"
    );

    let cli = tsc_errors(&run(
        &env.ws,
        "tsc",
        &["--noEmit", "--pretty", "false", "-p", "."],
    ));
    let mut ours: Vec<_> = items
        .iter()
        .filter(|i| i.severity == openfiles_plugin_api::Severity::Error)
        .map(|i| (i.line, i.code.clone().unwrap_or_default(), i.column))
        .collect();
    ours.sort();
    assert_eq!(ours, cli);

    env.write("src/m.ts", GOOD);
    assert_eq!(errors(&env.check(&file, 60_000)), vec![]);

    env.write("src/m.ts", "const b: string = 1;\nconsole.log(b);\n");
    let second = e(&[(3, "2304")]);
    let first = std::thread::scope(|s| {
        let a = s.spawn(|| env.check(&file, 60_000));
        env.write("src/m.ts", "\n\nconsole.log(nope);\n");
        let b = env.check(&file, 60_000);
        assert_eq!(errors(&b), second, "{b:#?}");
        a.join().expect("first check")
    });
    let first = errors(&first);
    assert!(first == e(&[(1, "2322")]) || first == second, "{first:#?}");

    let pid = env.pid("typescript-language-server");
    signal(pid, "-STOP");
    env.write("src/m.ts", BAD);
    let items = std::thread::scope(|s| {
        let c = s.spawn(|| env.check(&file, 60_000));
        signal(pid, "-KILL");
        c.join().expect("check")
    });
    assert_eq!(errors(&items), expected, "{items:#?}");
    assert_ne!(
        env.pid("typescript-language-server"),
        pid,
        "server restarted"
    );
}

/// The command lines of `pid`'s descendants (read from /proc).
fn descendants(pid: u32) -> Vec<String> {
    let mut procs: Vec<(u32, u32, String)> = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let (Ok(stat), Ok(cmd)) = (
            std::fs::read_to_string(format!("/proc/{p}/stat")),
            std::fs::read(format!("/proc/{p}/cmdline")),
        ) else {
            continue;
        };
        // `pid (comm) state ppid …`: the comm may hold spaces, so after its last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0);
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        procs.push((p, ppid, cmd));
    }
    let mut out = Vec::new();
    let mut parents = vec![pid];
    while let Some(parent) = parents.pop() {
        for (p, pp, cmd) in &procs {
            if *pp == parent {
                parents.push(*p);
                out.push(cmd.clone());
            }
        }
    }
    out
}

/// In a trusted workspace whose `package.json` names dependencies that are not installed,
/// typescript-language-server runs one tsserver, with no automatic type acquisition: no
/// syntax-only second server and no typings installer (npm downloading `@types` packages
/// into a cache outside the workspace), as `tsc` — the reference — does neither.
#[test]
fn typescript_language_server_runs_one_tsserver_and_no_typings_installer() {
    let env = Env::new(json!({}));
    env.write("tsconfig.json", TSCONFIG);
    env.write(
        "package.json",
        r#"{"name":"x","dependencies":{"lodash":"^4.17.21","express":"^4.19.2"}}"#,
    );
    let file = env.write("src/m.ts", BAD);
    let items = env.check(&file, 60_000);
    assert_eq!(
        errors(&items),
        e(&[(1, "2322"), (4, "2322"), (7, "2304")]),
        "{items:#?}"
    );
    let tree = descendants(env.pid("typescript-language-server"));
    let tsservers: Vec<&String> = tree.iter().filter(|c| c.contains("tsserver.js")).collect();
    assert_eq!(tsservers.len(), 1, "{tree:#?}");
    assert!(
        tsservers[0].contains("--disableAutomaticTypingAcquisition")
            && !tsservers[0].contains("partialSemantic"),
        "{tree:#?}"
    );
    assert!(
        !tree.iter().any(|c| c.contains("typingsInstaller")),
        "{tree:#?}"
    );
}

/// A check of a given text (the service's baseline check of a committed one) at the same
/// time as checks of the file's own text, on a server still loading the project (the
/// session start's warm-up and the first edit's baseline): each answer is for its own text.
/// tsserver answers for the newest text it has, so without turns one of them took the
/// other's (the new error taken for one already committed).
#[test]
fn a_given_texts_check_beside_the_files_own_checks_answers_for_its_text() {
    let env = Env::new(json!({}));
    env.write("tsconfig.json", TSCONFIG);
    let file = env.write("src/m.ts", BAD);
    let bad = e(&[(1, "2322"), (4, "2322"), (7, "2304")]);
    let (own, given, own_again) = std::thread::scope(|s| {
        let own = s.spawn(|| env.check(&file, 60_000));
        let given = s.spawn(|| env.check_text(&file, GOOD, 60_000));
        let own_again = s.spawn(|| env.check(&file, 60_000));
        (
            own.join().expect("own"),
            given.join().expect("given"),
            own_again.join().expect("own again"),
        )
    });
    assert_eq!(errors(&own), bad, "{own:#?}");
    assert_eq!(errors(&given), vec![], "{given:#?}");
    assert_eq!(errors(&own_again), bad, "{own_again:#?}");
}
