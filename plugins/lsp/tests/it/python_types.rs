//! The other Python type checkers through the plugin, each against its own command line on
//! the same project: `basedpyright-langserver` vs `basedpyright --outputjson`, `ty server` vs
//! `ty check --output-format concise` (line, column, rule). One type checker per file: pyright
//! when present, unless the project asks for basedpyright (`[tool.basedpyright]`) or ty
//! (`ty.toml`, `[tool.ty]`).

use crate::support;
use openfiles_plugin_api::{Item, Severity};
use serde_json::{json, Value};
use support::Env;

const MODELS: &str = "from dataclasses import dataclass


@dataclass
class Order:
    id: int
    total: float

    def with_tax(self, rate: float) -> float:
        return self.total * (1 + rate)
";

const SERVICE: &str = "from shop.models import Order


def load(order_id: int) -> Order:
    return Order(id=str(order_id), total=0)


def invoice(order: Order) -> str:
    amount: int = order.with_tax(0.2)
    print(undefined_total)
    return order.render()
";

const SERVICE_FIXED: &str = "from shop.models import Order


def load(order_id: int) -> Order:
    return Order(id=order_id, total=0)


def invoice(order: Order) -> str:
    amount: float = order.with_tax(0.2)
    return str(amount)
";

fn project(env: &Env, pyproject: &str) -> std::path::PathBuf {
    env.write("pyproject.toml", pyproject);
    env.write("shop/__init__.py", "");
    env.write("shop/models.py", MODELS);
    env.write("shop/service.py", SERVICE)
}

/// (line, column, rule) of error items, sorted.
fn ours(items: &[Item]) -> Vec<(u32, u32, String)> {
    let mut v: Vec<_> = items
        .iter()
        .filter(|i| i.severity == Severity::Error)
        .map(|i| (i.line, i.column, i.code.clone().unwrap_or_default()))
        .collect();
    v.sort();
    v
}

/// (line, column, rule) of the errors `basedpyright --outputjson FILE` reports.
fn basedpyright_cli(env: &Env, rel: &str) -> Vec<(u32, u32, String)> {
    let out = support::run(&env.ws, "basedpyright", &["--outputjson", rel]);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let mut found: Vec<_> = v["generalDiagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap() as u32 + 1,
                d["range"]["start"]["character"].as_u64().unwrap() as u32 + 1,
                d["rule"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    found.sort();
    found
}

/// (line, column, rule) of the errors `ty check --output-format concise FILE` reports:
/// `path:line:col: error[rule] message`.
fn ty_cli(env: &Env, rel: &str) -> Vec<(u32, u32, String)> {
    let out = support::run(&env.ws, "ty", &["check", "--output-format", "concise", rel]);
    let mut found: Vec<_> = out
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(rel)?.strip_prefix(':')?;
            let mut parts = rest.splitn(3, ':');
            let line = parts.next()?.parse().ok()?;
            let column = parts.next()?.parse().ok()?;
            let rule = parts
                .next()?
                .trim()
                .strip_prefix("error[")?
                .split(']')
                .next()?;
            Some((line, column, rule.to_owned()))
        })
        .collect();
    found.sort();
    found
}

#[test]
fn basedpyright_reports_what_its_cli_reports() {
    let env = Env::new(json!({"disable": ["ruff"]}));
    let service = project(
        &env,
        "[project]\nname = \"shop\"\n\n[tool.basedpyright]\ntypeCheckingMode = \"standard\"\n",
    );
    let expected = basedpyright_cli(&env, "shop/service.py");
    assert!(expected.len() >= 4, "planted mistakes: {expected:#?}");
    let items = env.check(&service, 60_000);
    assert_eq!(ours(&items), expected, "{items:#?}");
    // The project asked for basedpyright: pyright (installed too) does not check the file.
    assert!(
        items.iter().all(|i| i.source == "basedpyright"),
        "{items:#?}"
    );
    env.write("shop/service.py", SERVICE_FIXED);
    assert_eq!(basedpyright_cli(&env, "shop/service.py"), vec![]);
    assert_eq!(ours(&env.check(&service, 60_000)), vec![]);
}

#[test]
fn ty_reports_what_its_cli_reports() {
    let env = Env::new(json!({"disable": ["ruff"]}));
    let service = project(
        &env,
        "[project]\nname = \"shop\"\nrequires-python = \">=3.10\"\n\n[tool.ty.rules]\npossibly-unresolved-reference = \"error\"\n",
    );
    let expected = ty_cli(&env, "shop/service.py");
    assert!(expected.len() >= 4, "planted mistakes: {expected:#?}");
    let items = env.check(&service, 60_000);
    assert_eq!(ours(&items), expected, "{items:#?}");
    assert!(items.iter().all(|i| i.source == "ty"), "{items:#?}");
    env.write("shop/service.py", SERVICE_FIXED);
    assert_eq!(ty_cli(&env, "shop/service.py"), vec![]);
    assert_eq!(ours(&env.check(&service, 60_000)), vec![]);
    // The module a caller imports changes: the caller's next check sees the new signature.
    // (The pipeline names the session's other edited files; the server hears of them as a
    // file watcher would tell it.)
    let models = env.write(
        "shop/models.py",
        &MODELS.replace("rate: float) -> float", "rate: float) -> str"),
    );
    let items = env.check_with(&service, &[models], 60_000);
    assert_eq!(ours(&items), ty_cli(&env, "shop/service.py"), "{items:#?}");
    assert!(!ours(&items).is_empty());
}

#[test]
fn one_python_type_checker_per_file() {
    // No project preference: pyright (first in the table) checks, ty does not.
    let env = Env::new(json!({"disable": ["ruff"]}));
    let service = project(&env, "[project]\nname = \"shop\"\n");
    let sources: Vec<String> = env
        .check(&service, 60_000)
        .into_iter()
        .map(|i| i.source)
        .collect();
    assert!(!sources.is_empty());
    assert!(sources.iter().all(|s| s == "Pyright"), "{sources:?}");
    // A ty.toml asks for ty.
    env.write("ty.toml", "[rules]\n");
    let sources: Vec<String> = env
        .check(&service, 60_000)
        .into_iter()
        .map(|i| i.source)
        .collect();
    assert!(!sources.is_empty());
    assert!(sources.iter().all(|s| s == "ty"), "{sources:?}");
}
