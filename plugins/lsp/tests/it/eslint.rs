//! ESLint through `vscode-eslint-language-server` (npm `vscode-langservers-extracted`) with
//! the ESLint library npm installed: on a module with planted mistakes under a flat config,
//! the items are the `eslint --format json` CLI's (line, column, rule, severity, message); a
//! fix clears them. The configuration is JavaScript the repository brings: nothing in a
//! workspace the user does not trust, and nothing for files under no ESLint configuration.

use crate::support;
use openfiles_plugin_api::{Item, Severity};
use serde_json::{json, Value};
use support::Env;

const CONFIG: &str = r#"export default [
  {
    files: ["**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { console: "readonly", process: "readonly" },
    },
    rules: {
      "no-unused-vars": "error",
      "no-undef": "error",
      eqeqeq: "warn",
      "prefer-const": "warn",
      "no-duplicate-imports": "error",
    },
  },
];
"#;

const CART: &str = r#"import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { basename } from "node:path";

let taxRate = 0.2;

export function total(items, currency) {
  let sum = 0;
  for (const item of items) {
    if (item.qty == 0) continue;
    sum += item.price * item.qty;
  }
  return format(sum * (1 + taxRate), join("a", "b"));
}
"#;

const CART_FIXED: &str = r#"import { join } from "node:path";

const taxRate = 0.2;

export function total(items) {
  let sum = 0;
  for (const item of items) {
    if (item.qty === 0) continue;
    sum += item.price * item.qty;
  }
  return [sum * (1 + taxRate), join("a", "b")];
}
"#;

/// (line, column, rule, severity, message) of `eslint --format json FILE`, run in the
/// project (`web/`, where its configuration is).
fn eslint_cli(env: &Env, rel: &str) -> Vec<(u32, u32, String, Severity, String)> {
    let out = support::run(&env.ws.join("web"), "eslint", &["--format", "json", rel]);
    let v: Vec<Value> = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let mut found: Vec<_> = v[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["line"].as_u64().unwrap() as u32,
                m["column"].as_u64().unwrap() as u32,
                m["ruleId"].as_str().unwrap_or_default().to_owned(),
                if m["severity"] == 2 {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                m["message"].as_str().unwrap().to_owned(),
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

fn project(env: &Env) {
    env.write("web/package.json", r#"{"name": "web", "type": "module"}"#);
    env.write("web/eslint.config.js", CONFIG);
}

#[test]
fn eslint_server_reports_what_the_eslint_cli_reports() {
    // typescript-language-server also checks .js files; this test is about ESLint.
    let env = Env::new(json!({"disable": ["typescript-language-server"]}));
    project(&env);
    let cart = env.write("web/src/cart.js", CART);
    let expected = eslint_cli(&env, "src/cart.js");
    assert!(expected.len() >= 6, "planted mistakes: {expected:#?}");

    let items = env.check(&cart, 60_000);
    assert_eq!(ours(&items), expected, "{items:#?}");
    assert!(items.iter().all(|i| i.source == "eslint"), "{items:#?}");

    env.write("web/src/cart.js", CART_FIXED);
    assert_eq!(eslint_cli(&env, "src/cart.js"), vec![]);
    assert_eq!(env.check(&cart, 60_000), vec![]);
    env.write("web/src/cart.js", CART);
    assert_eq!(ours(&env.check(&cart, 60_000)), expected);
}

#[test]
fn eslint_runs_only_in_trusted_workspaces_and_only_under_a_configuration() {
    let env = Env::new(json!({"disable": ["typescript-language-server"]}));
    project(&env);
    let cart = env.write("web/src/cart.js", CART);
    // Untrusted: the configuration (a program) is never loaded, so no server starts.
    assert_eq!(env.check_untrusted(&cart, 60_000), vec![]);
    assert!(env.plugin.server_pids().is_empty());
    // A script outside any ESLint configuration: nothing starts either.
    let tool = env.write("tools/gen.js", CART);
    assert_eq!(env.check(&tool, 60_000), vec![]);
    assert!(env.plugin.server_pids().is_empty());
}
