//! `gopls` (Debian's package) through the plugin, against the Go toolchain's own verdicts:
//! type errors as `go build` prints them, and `go vet`'s findings (printf, self-assignment),
//! then a fix clears them.
//!
//! Debian bookworm ships gopls 0.5.0 (2020) with Go 1.19. It is old, but it type-checks and
//! runs the vet analyzers; what it gives is what this test pins: where it differs from the
//! toolchain, the test says so.

use crate::support;
use openfiles_plugin_api::Item;
use serde_json::json;
use support::Env;

const GO_MOD: &str = "module example.com/demo\n\ngo 1.19\n";
const VETME: &str = "package vetme

import \"fmt\"

// Report prints a summary.
func Report(name string, n int) {
\tfmt.Printf(\"%d items for %s\\n\", name, n)
\tx := 1
\tx = x
}
";
const VETME_FIXED: &str = "package vetme

import \"fmt\"

// Report prints a summary.
func Report(name string, n int) {
\tfmt.Printf(\"%d items for %s\\n\", n, name)
}
";
const BROKEN: &str = "package broken

// Total adds up.
func Total(xs []int) int {
\tvar sum string = 0
\tfor _, x := range xs {
\t\tsum += x
\t}
\treturn sum
}
";

/// (line, column) of each `path:line:col: message` line of a Go tool's output for `file`.
fn go_positions(out: &str, file: &str) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = out
        .lines()
        .map(|l| l.trim_start_matches("vet: "))
        .filter_map(|l| {
            let rest = l.strip_prefix(file)?.strip_prefix(':')?;
            let mut parts = rest.splitn(3, ':');
            Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
        })
        .collect();
    v.sort();
    v
}

/// Output (stdout + stderr) of a Go tool: they print findings on stderr.
fn go(env: &Env, args: &[&str]) -> String {
    let out = std::process::Command::new("go")
        .args(args)
        .current_dir(&env.ws)
        .output()
        .expect("run go");
    String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout)
}

fn positions(items: &[Item]) -> Vec<(u32, u32)> {
    let mut v: Vec<_> = items.iter().map(|i| (i.line, i.column)).collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn gopls_reports_type_errors_and_vet_findings_like_the_go_toolchain() {
    let env = Env::new(json!({}));
    env.write("go.mod", GO_MOD);
    let vetme = env.write("vetme/vetme.go", VETME);
    let broken = env.write("broken/broken.go", BROKEN);

    // Type errors: every one `go build` names (vet stops at the first).
    let build = go_positions(&go(&env, &["build", "./broken"]), "broken/broken.go");
    assert_eq!(build.len(), 3, "planted type errors");
    let items = env.check(&broken, 120_000);
    assert_eq!(positions(&items), build, "{items:#?}");
    assert!(items
        .iter()
        .all(|i| i.severity == openfiles_plugin_api::Severity::Error));

    // vet findings: printf and self-assignment, at vet's positions.
    let vet = go_positions(&go(&env, &["vet", "./vetme"]), "vetme/vetme.go");
    assert_eq!(vet.len(), 2, "planted vet findings");
    let items = env.check(&vetme, 120_000);
    assert_eq!(positions(&items), vet, "{items:#?}");
    assert!(
        items.iter().any(|i| i.message.contains("Printf format %d")),
        "{items:#?}"
    );

    // Fixed: clean in both.
    env.write("vetme/vetme.go", VETME_FIXED);
    assert_eq!(
        go_positions(&go(&env, &["vet", "./vetme"]), "vetme/vetme.go"),
        vec![]
    );
    let items = env.check(&vetme, 120_000);
    assert_eq!(positions(&items), vec![], "{items:#?}");
}
