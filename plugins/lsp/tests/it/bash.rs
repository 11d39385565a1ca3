//! `bash-language-server` (npm) with `shellcheck` (Debian) through the plugin: on scripts
//! with planted mistakes its items are shellcheck's own (`shellcheck -f json`: line, column,
//! code, severity, message), a fix clears them, and a second script is checked on its own.

use crate::support;
use openfiles_plugin_api::{Item, Severity};
use serde_json::{json, Value};
use support::{run, Env};

const DEPLOY: &str = "#!/usr/bin/env bash
# Deploy the build to a target directory.
set -e
target=$1
unused_flag=yes
cd $target
for f in $(ls *.tar.gz); do
  echo \"unpacking $f into `pwd`\"
  tar xzf $f
done
";

const DEPLOY_FIXED: &str = "#!/usr/bin/env bash
# Deploy the build to a target directory.
set -e
target=$1
cd \"$target\"
for f in ./*.tar.gz; do
  echo \"unpacking $f into $(pwd)\"
  tar xzf \"$f\"
done
";

const CLEANUP: &str = "#!/bin/sh
# POSIX sh: arrays and [[ are bashisms.
files=(a b c)
if [[ -n \"$1\" ]]; then
  rm -rf \"$1/\"*
fi
echo \"${files[0]}\"
";

/// (line, column, code, severity, message) of shellcheck's JSON findings for `rel`.
fn shellcheck(env: &Env, rel: &str) -> Vec<(u32, u32, String, Severity, String)> {
    let out = run(&env.ws, "shellcheck", &["-f", "json", rel]);
    let v: Vec<Value> = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let mut found: Vec<_> = v
        .iter()
        .map(|d| {
            let severity = match d["level"].as_str().unwrap() {
                "error" => Severity::Error,
                "warning" => Severity::Warning,
                "info" => Severity::Info,
                _ => Severity::Hint,
            };
            (
                d["line"].as_u64().unwrap() as u32,
                d["column"].as_u64().unwrap() as u32,
                format!("SC{}", d["code"]),
                severity,
                d["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    found.sort();
    found
}

fn ours(items: &[Item]) -> Vec<(u32, u32, String, Severity, String)> {
    let mut v: Vec<_> = items
        .iter()
        .map(|i| {
            (
                i.line,
                i.column,
                i.code.clone().unwrap_or_default(),
                i.severity,
                i.message.clone(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn bash_language_server_reports_what_shellcheck_reports() {
    let env = Env::new(json!({}));
    let deploy = env.write("scripts/deploy.sh", DEPLOY);
    let expected = shellcheck(&env, "scripts/deploy.sh");
    assert!(expected.len() >= 6, "planted mistakes: {expected:#?}");
    assert!(expected
        .iter()
        .any(|e| e.2 == "SC2034" && e.3 == Severity::Warning));
    assert!(expected
        .iter()
        .any(|e| e.2 == "SC2045" && e.3 == Severity::Error));

    let items = env.check(&deploy, 60_000);
    assert_eq!(ours(&items), expected, "{items:#?}");
    assert!(items.iter().all(|i| i.source == "shellcheck"), "{items:#?}");

    // A POSIX sh script: shellcheck judges it as sh, and so does the server.
    let cleanup = env.write("scripts/cleanup.sh", CLEANUP);
    let expected = shellcheck(&env, "scripts/cleanup.sh");
    assert!(expected.iter().any(|e| e.2 == "SC3010"), "{expected:#?}");
    assert_eq!(ours(&env.check(&cleanup, 60_000)), expected);

    // The fix clears the first script: a fresh result, not the earlier push.
    env.write("scripts/deploy.sh", DEPLOY_FIXED);
    assert_eq!(shellcheck(&env, "scripts/deploy.sh"), vec![]);
    let items = env.check(&deploy, 60_000);
    assert_eq!(ours(&items), vec![], "{items:#?}");

    // And breaking it again brings them back.
    env.write("scripts/deploy.sh", DEPLOY);
    let items = env.check(&deploy, 60_000);
    assert_eq!(ours(&items), shellcheck(&env, "scripts/deploy.sh"));
}
