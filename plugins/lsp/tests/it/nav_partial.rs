//! Issue 41.4 with real servers: an answer from a server that knows only the files it has
//! opened says so (`partial`) — clangd without a compile database, tsserver for a file in no
//! `tsconfig.json` and for a project whose `tsconfig.json` leaves the tests out — and the
//! same question where the server knows the project is whole (clangd with a
//! `compile_commands.json` once its index is built; tsserver with the tests included).

use crate::support::{wait_until, Env};
use openfiles_plugin_api::query::{QueryAnswer, QueryKind, QueryRequest};
use openfiles_plugin_api::Plugin;
use serde_json::json;
use std::path::Path;

fn refs(env: &Env, file: &Path, line: u32, column: u32) -> QueryAnswer {
    ask(env, QueryKind::References, file, line, column)
}

fn ask(env: &Env, kind: QueryKind, file: &Path, line: u32, column: u32) -> QueryAnswer {
    env.plugin
        .query(QueryRequest {
            id: 1,
            kind,
            workspace: env.ws.clone(),
            file: file.to_path_buf(),
            line,
            column,
            query: None,
            new_name: None,
            limit: 0,
            offset: 0,
            timeout_ms: 60_000,
            trusted: true,
        })
        .expect("query")
}

fn files(a: &QueryAnswer, ws: &Path) -> Vec<String> {
    let mut v: Vec<String> = a
        .locations
        .iter()
        .map(|l| {
            l.path
                .strip_prefix(ws)
                .unwrap_or(&l.path)
                .display()
                .to_string()
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

const LIB_C: &str = "int twice(int n) { return 2 * n; }\n";
const LIB_H: &str = "int twice(int n);\n";
const USE_C: &str = "#include \"lib.h\"\n\nint main(void) { return twice(2); }\n";

#[test]
fn clangd_without_a_compile_database_says_its_references_are_partial() {
    let env = Env::new(json!({}));
    env.write("lib.h", LIB_H);
    let lib = env.write("lib.c", LIB_C);
    env.write("use.c", USE_C);
    let a = refs(&env, &lib, 1, 5);
    assert_eq!(a.server.as_deref(), Some("clangd"), "{a:#?}");
    // It knows lib.c only: main's call in use.c is missing, and the answer says so.
    assert!(!files(&a, &env.ws).contains(&"use.c".to_owned()), "{a:#?}");
    let why = a.partial.clone().unwrap_or_default();
    assert!(
        why.contains("no compile database") && why.contains("opened"),
        "{a:#?}"
    );

    // With a compile database listing both files, clangd indexes them: once its index is
    // built the answer is whole, and holds the use in the file nobody opened.
    let env = Env::new(json!({}));
    env.write("lib.h", LIB_H);
    let lib = env.write("lib.c", LIB_C);
    env.write("use.c", USE_C);
    let dir = env.ws.display().to_string();
    let db = json!([
        {"directory": dir, "file": "lib.c", "arguments": ["cc", "-c", "lib.c"]},
        {"directory": dir, "file": "use.c", "arguments": ["cc", "-c", "use.c"]},
    ]);
    env.write("compile_commands.json", &db.to_string());
    let mut last = None;
    let whole = wait_until(|| {
        let a = refs(&env, &lib, 1, 5);
        let done = a.partial.is_none() && files(&a, &env.ws).contains(&"use.c".to_owned());
        last = Some(a);
        done
    });
    assert!(whole, "{last:#?}");
}

const TSCONFIG_SRC: &str =
    r#"{"compilerOptions": {"strict": true, "noEmit": true}, "include": ["src"]}"#;
const TSCONFIG_ALL: &str =
    r#"{"compilerOptions": {"strict": true, "noEmit": true}, "include": ["src", "test"]}"#;
const LIB_TS: &str = "export function twice(n: number): number {\n  return 2 * n;\n}\n";
const TEST_TS: &str = "import { twice } from \"../src/lib\";\n\nexport const four = twice(2);\n";

#[test]
fn tsserver_says_when_the_project_leaves_files_out() {
    let env = Env::new(json!({}));
    env.write("tsconfig.json", TSCONFIG_SRC);
    let lib = env.write("src/lib.ts", LIB_TS);
    let test = env.write("test/lib.test.ts", TEST_TS);
    let a = refs(&env, &lib, 1, 17);
    assert_eq!(
        a.server.as_deref(),
        Some("typescript-language-server"),
        "{a:#?}"
    );
    let why = a.partial.clone().unwrap_or_default();
    assert!(
        why.contains("1 TypeScript files under . are not in tsconfig.json (e.g. test/lib.test.ts)"),
        "{a:#?}"
    );
    // The test file itself is in no project: tsserver infers one for it.
    let b = refs(&env, &test, 3, 21);
    let why = b.partial.clone().unwrap_or_default();
    assert!(why.contains("in no tsconfig.json"), "{b:#?}");

    // A project that includes the tests: whole, and the test's use is found.
    let env = Env::new(json!({}));
    env.write("tsconfig.json", TSCONFIG_ALL);
    let lib = env.write("src/lib.ts", LIB_TS);
    env.write("test/lib.test.ts", TEST_TS);
    let a = refs(&env, &lib, 1, 17);
    assert_eq!(a.partial, None, "{a:#?}");
    assert_eq!(
        files(&a, &env.ws),
        ["src/lib.ts", "test/lib.test.ts"],
        "{a:#?}"
    );
}

/// rust-analyzer answers references with nothing while it loads the workspace (walkdir: 0
/// uses, then 7); the plugin waits until it has loaded it (`experimental/serverStatus` says it
/// is quiescent, or it is only priming its caches, which on a busy machine outlasts the wait)
/// and the first question's answer is whole.
#[test]
fn rust_analyzer_is_asked_once_it_loaded_the_workspace() {
    let env = Env::new(json!({}));
    env.write(
        "Cargo.toml",
        "[package]\nname = \"twice\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    let lib = env.write(
        "src/lib.rs",
        "mod other;\n\n/// Doubles `twice`'s argument.\npub fn twice(n: i32) -> i32 {\n    2 * n\n}\n\n\
         pub struct Walker {\n    depth: usize,\n}\n\nimpl Walker {\n    \
         /// Returns the depth at which this entry was created relative to the root.\n    \
         ///\n    /// The smallest depth is `0` and always corresponds to the path given\n    \
         /// to the `new` function on `WalkDir`.\n    pub fn depth(&self) -> usize {\n        \
         self.depth\n    }\n}\n",
    );
    env.write(
        "src/other.rs",
        "pub fn four() -> i32 {\n    crate::twice(crate::twice(1))\n}\n",
    );
    let a = refs(&env, &lib, 4, 8);
    assert_eq!(a.server.as_deref(), Some("rust-analyzer"), "{a:#?}");
    assert!(a.partial.is_none(), "{a:#?}");
    let uses = a
        .locations
        .iter()
        .filter(|l| l.path.ends_with("src/other.rs"))
        .count();
    assert_eq!(uses, 2, "{a:#?}");

    // Its outline puts a documented function's selection at the name's first mention in the
    // doc comment; the symbol is where the name is declared.
    let outline = ask(&env, QueryKind::DocumentSymbols, &lib, 1, 1);
    let at = |name: &str, kind: &str| {
        outline
            .symbols
            .iter()
            .find(|s| s.name == name && s.kind == kind)
            .map(|s| (s.line, s.column))
    };
    assert_eq!(at("twice", "function"), Some((4, 8)), "{outline:#?}");
    assert_eq!(at("depth", "method"), Some((17, 12)), "{outline:#?}");
}
