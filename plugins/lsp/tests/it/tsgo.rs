//! `tsgo --lsp` (TypeScript 7's native server, npm `@typescript/native-preview`, opt-in with
//! `enable = ["tsgo"]`) through the plugin: the same errors as `tsgo --noEmit` and `tsc
//! --noEmit` (line, column, code), fresh results after each edit (pull diagnostics for the
//! text sent), an imported module changed on disk is seen, and quick successive edits end
//! with the newest text's results.

use crate::support;
use crate::support::e;
use serde_json::json;
use support::{errors, run, Env};

const TSCONFIG: &str =
    r#"{"compilerOptions":{"strict":true,"noEmit":true,"target":"es2020"},"include":["src/*.ts"]}"#;
const BAD: &str = "const a: number = \"s\";\n\nfunction f(x: number): string {\n  return x;\n}\n\nconsole.log(a, missing, f(1));\n";
const GOOD: &str = "const a: number = 1;\n\nfunction f(x: number): string {\n  return String(x);\n}\n\nconsole.log(a, f(1));\n";

/// (line, code, column) of the `error TS` lines of a compiler's `--pretty false` output.
fn cli_errors(out: &str) -> Vec<(u32, String, u32)> {
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

fn tsgo_env() -> Env {
    Env::new(json!({"enable": ["tsgo"], "disable": ["typescript-language-server"]}))
}

#[test]
fn tsgo_lsp_gives_fresh_results_like_the_compilers() {
    let env = tsgo_env();
    env.write("tsconfig.json", TSCONFIG);
    let file = env.write("src/m.ts", BAD);
    let expected = e(&[(1, "2322"), (4, "2322"), (7, "2304")]);

    let items = env.check(&file, 60_000);
    assert_eq!(errors(&items), expected, "{items:#?}");
    assert_eq!(env.plugin.server_pids().len(), 1);
    assert_eq!(env.plugin.server_pids()[0].0, "tsgo");

    let mut ours: Vec<_> = items
        .iter()
        .filter(|i| i.severity == openfiles_plugin_api::Severity::Error)
        .map(|i| (i.line, i.code.clone().unwrap_or_default(), i.column))
        .collect();
    ours.sort();
    let args = ["--noEmit", "--pretty", "false", "-p", "."];
    assert_eq!(ours, cli_errors(&run(&env.ws, "tsgo", &args)));
    assert_eq!(ours, cli_errors(&run(&env.ws, "tsc", &args)));

    env.write("src/m.ts", GOOD);
    assert_eq!(errors(&env.check(&file, 60_000)), vec![]);

    // Quick successive edits: the last check answers for the newest text.
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
}

#[test]
fn tsgo_lsp_sees_an_imported_module_changed_on_disk() {
    let env = tsgo_env();
    env.write("tsconfig.json", TSCONFIG);
    let lib = env.write("src/lib.ts", "export const limit: number = 10;\n");
    let user = env.write(
        "src/user.ts",
        "import { limit } from \"./lib\";\nexport const n: number = limit;\n",
    );
    assert_eq!(
        errors(&env.check_with(&user, std::slice::from_ref(&lib), 60_000)),
        vec![]
    );
    // The agent edits lib.ts; user.ts (open in the server, unchanged) breaks.
    env.write("src/lib.ts", "export const limit: string = \"10\";\n");
    let items = env.check_with(&lib, std::slice::from_ref(&user), 60_000);
    assert_eq!(errors(&items), vec![]);
    let items = env.check(&user, 60_000);
    assert_eq!(errors(&items), e(&[(2, "2322")]), "{items:#?}");
}
