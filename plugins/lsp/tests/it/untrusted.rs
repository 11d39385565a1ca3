//! Servers started for a workspace the user has not trusted: nothing the repository's files
//! say makes them write a file, load a library or run a program.
//!
//! - clangd: `-MJ <path>` (append a compile-database line to any file the user can write)
//!   in `compile_commands.json`, `compile_flags.txt` and `.clangd`: none is obeyed, and the
//!   diagnostics still come;
//! - gopls: started with the gate's environment for an untrusted workspace
//!   (`GOTOOLCHAIN=local`: a `toolchain` line downloads and runs a Go; `CGO_ENABLED=0`;
//!   git's repository-run programs off);
//! - typescript-language-server: the project's `node_modules/typescript` (JavaScript the
//!   repository brings) never runs; the TypeScript installed beside the server does;
//! - the JSON server: a `$schema` naming a file outside the workspace is not read; one
//!   inside still is.

use crate::support;
use serde_json::json;
use std::path::Path;
use support::{errors, Env};

const BAD: &str = "int main(void) {\n  return undefined_var;\n}\n";

#[test]
fn clangd_obeys_no_flag_the_repository_gives() {
    let env = Env::new(json!({}));
    let outside = env.ws.parent().unwrap().to_owned();
    let marker = |n: &str| outside.join(format!("MJ-{n}.json"));
    // `a/`: a compile_commands.json; `b/`: a compile_flags.txt; the root's `.clangd` adds
    // the flag to every file, `c/` has no database of its own.
    let a = env.write("a/a.c", BAD);
    let entries = json!([{
        "directory": env.ws.join("a").display().to_string(),
        "arguments": ["/usr/bin/cc", "-MJ", marker("db").display().to_string(), "-c", "a.c"],
        "file": "a.c",
    }]);
    env.write("a/compile_commands.json", &entries.to_string());
    let b = env.write("b/b.c", BAD);
    env.write(
        "b/compile_flags.txt",
        &format!("-xc\n-MJ\n{}\n", marker("flags").display()),
    );
    env.write(
        ".clangd",
        &format!(
            "CompileFlags:\n  Add: [-MJ, {}]\n",
            marker("clangd").display()
        ),
    );
    let c = env.write("c/c.c", BAD);
    for file in [&a, &b, &c] {
        let items = env.check_untrusted(file, 180_000);
        assert_eq!(
            errors(&items),
            vec![(2, "undeclared_var_use".to_string())],
            "{}: {items:#?}",
            file.display()
        );
    }
    for m in ["db", "flags", "clangd"] {
        assert!(
            !marker(m).exists(),
            "clangd obeyed the repository's -MJ ({m}): {}",
            std::fs::read_to_string(marker(m)).unwrap_or_default()
        );
    }
    // Its command line names the plugin's own folder, a private one.
    let pid = env.pid("clangd");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    assert!(
        args.contains(&"--enable-config=false".to_string()),
        "{args:?}"
    );
    let dir = args
        .iter()
        .find_map(|a| a.strip_prefix("--compile-commands-dir="))
        .unwrap_or_else(|| panic!("{args:?}"));
    assert!(!Path::new(dir).starts_with(&env.ws), "{dir}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    // The allowed flags still reach clangd: a macro from the database is defined.
    env.write(
        "a/compile_commands.json",
        &json!([{
            "directory": env.ws.join("a").display().to_string(),
            "arguments": ["/usr/bin/cc", "-DRET=undefined_var", "-c", "a.c"],
            "file": "a.c",
        }])
        .to_string(),
    );
    let macro_user = env.write("a/m.c", "int main(void) {\n  return RET;\n}\n");
    let mut db: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.ws.join("a/compile_commands.json")).unwrap(),
    )
    .unwrap();
    db.as_array_mut().unwrap().push(json!({
        "directory": env.ws.join("a").display().to_string(),
        "arguments": ["/usr/bin/cc", "-DRET=undefined_var", "-c", "m.c"],
        "file": "m.c",
    }));
    env.write("a/compile_commands.json", &db.to_string());
    let items = env.check_untrusted(&macro_user, 180_000);
    assert_eq!(
        errors(&items),
        vec![(2, "undeclared_var_use".to_string())],
        "{items:#?}"
    );
}

/// The environment of a running process, as `KEY=value` strings.
fn environ(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap()
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

#[test]
fn gopls_runs_with_go_kept_local_in_an_untrusted_workspace() {
    let env = Env::new(json!({}));
    env.write(
        "go.mod",
        "module example.com/t\n\ngo 1.19\n\ntoolchain go1.99.0\n",
    );
    let file = env.write("t.go", "package t\n\nvar X int = \"x\"\n");
    let _ = env.check_untrusted(&file, 180_000);
    let vars = environ(env.pid("gopls"));
    for want in ["GOTOOLCHAIN=local", "CGO_ENABLED=0"] {
        assert!(vars.iter().any(|v| v == want), "{want} missing: {vars:?}");
    }
    assert!(
        vars.iter()
            .any(|v| v.starts_with("GOFLAGS=") && v.contains("-buildvcs=false")),
        "{vars:?}"
    );
    assert!(
        vars.iter()
            .any(|v| v == "GIT_CONFIG_VALUE_0=false" || v.starts_with("GIT_CONFIG_COUNT=")),
        "{vars:?}"
    );
}

#[test]
fn typescript_language_server_never_runs_the_projects_typescript_when_untrusted() {
    let env = Env::new(json!({}));
    let marker = env.ws.parent().unwrap().join("RAN");
    // A "typescript" package whose tsserver.js would leave a marker (and then fail).
    env.write(
        "node_modules/typescript/package.json",
        r#"{"name": "typescript", "version": "5.9.9", "main": "lib/typescript.js"}"#,
    );
    let js = format!(
        "require('fs').writeFileSync({:?}, 'ran'); process.exit(1);\n",
        marker.display().to_string()
    );
    env.write("node_modules/typescript/lib/tsserver.js", &js);
    env.write("node_modules/typescript/lib/typescript.js", &js);
    env.write("tsconfig.json", r#"{"compilerOptions": {"strict": true}}"#);
    let file = env.write("a.ts", "const x: number = \"x\";\nexport {};\n");
    let items = env.check_untrusted(&file, 180_000);
    assert!(!marker.exists(), "the project's TypeScript ran");
    assert_eq!(errors(&items), vec![(1, "2322".to_string())], "{items:#?}");
}

#[test]
fn a_json_schema_outside_an_untrusted_workspace_is_not_read() {
    let env = Env::new(json!({}));
    let outside = env.ws.parent().unwrap().join("private.schema.json");
    std::fs::write(
        &outside,
        r#"{"type": "object", "required": ["secret_required"]}"#,
    )
    .unwrap();
    env.write(
        "schema/in.schema.json",
        r#"{"type": "object", "required": ["needed"]}"#,
    );
    let out_doc = env.write(
        "out.json",
        &format!(
            "{{\n  \"$schema\": \"{}\",\n  \"a\": 1\n}}\n",
            outside.display()
        ),
    );
    let in_doc = env.write(
        "in.json",
        "{\n  \"$schema\": \"./schema/in.schema.json\",\n  \"a\": 1\n}\n",
    );
    let said = |items: &[openfiles_plugin_api::Item], what: &str| {
        items.iter().any(|i| i.message.contains(what))
    };
    let items = env.check_untrusted(&out_doc, 180_000);
    assert!(!said(&items, "secret_required"), "{items:#?}");
    let items = env.check_untrusted(&in_doc, 180_000);
    assert!(said(&items, "needed"), "{items:#?}");
    // Trusted, the user's own file is theirs to name.
    let items = env.check(&out_doc, 180_000);
    assert!(said(&items, "secret_required"), "{items:#?}");
}
