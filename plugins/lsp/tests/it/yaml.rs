//! `yaml-language-server` (npm) through the plugin: a deployment file validated against the
//! schema file its modeline names, compared with python-jsonschema on the same files
//! (`tests/fixtures/schema_check.py`); a YAML syntax error; a schema behind a URL is not
//! downloaded (a local listener sees no connection) and the schema store is off.

use crate::support;
use serde_json::json;
use support::{schema_cli, schema_kinds, Env, Trap};

const SCHEMA: &str = r#"{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["name", "services"],
  "properties": {
    "name": {"type": "string"},
    "replicas": {"type": "integer", "minimum": 1},
    "tier": {"enum": ["web", "worker", "batch"]},
    "services": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["image"],
        "properties": {
          "image": {"type": "string"},
          "port": {"type": "integer"},
          "env": {"type": "object", "additionalProperties": {"type": "string"}}
        },
        "additionalProperties": false
      }
    }
  },
  "additionalProperties": false
}
"#;

const DEPLOY: &str = "# yaml-language-server: $schema=../schemas/deploy.schema.json
name: shop
replicas: 0
tier: frontend
services:
  - image: nginx:1.27
    port: \"80\"
    env:
      WORKERS: 4
  - port: 8080
    healthcheck: /health
owner: team-a
";

const DEPLOY_FIXED: &str = "# yaml-language-server: $schema=../schemas/deploy.schema.json
name: shop
replicas: 2
tier: web
services:
  - image: nginx:1.27
    port: 80
    env:
      WORKERS: \"4\"
  - image: shop/api:3
    port: 8080
";

#[test]
fn yaml_server_validates_against_the_modeline_schema_as_jsonschema_does() {
    let env = Env::new(json!({}));
    env.write("schemas/deploy.schema.json", SCHEMA);
    let deploy = env.write("deploy/shop.yaml", DEPLOY);
    let expected = schema_cli(
        &env.ws.join("deploy"),
        "../schemas/deploy.schema.json",
        "shop.yaml",
    );
    assert!(expected.len() >= 7, "planted mistakes: {expected:?}");

    let items = env.check(&deploy, 60_000);
    assert_eq!(schema_kinds(&items), expected, "{items:#?}");

    env.write("deploy/shop.yaml", DEPLOY_FIXED);
    assert_eq!(
        schema_cli(
            &env.ws.join("deploy"),
            "../schemas/deploy.schema.json",
            "shop.yaml"
        ),
        vec![]
    );
    let items = env.check(&deploy, 60_000);
    assert!(items.is_empty(), "{items:#?}");
    env.write("deploy/shop.yaml", DEPLOY);
    assert_eq!(schema_kinds(&env.check(&deploy, 60_000)), expected);
}

#[test]
fn yaml_syntax_error_is_reported_where_pyyaml_finds_it() {
    let env = Env::new(json!({}));
    let ci = env.write(
        ".github/workflows/ci.yml",
        "name: ci\non: [push\njobs:\n  test:\n    runs-on: ubuntu-latest\n",
    );
    let py = support::run(
        &env.ws,
        "python3",
        &[
            "-c",
            "import yaml\ntry: yaml.safe_load(open('.github/workflows/ci.yml'))\nexcept yaml.MarkedYAMLError as e: print(e.problem_mark.line + 1)",
        ],
    );
    let items = env.check(&ci, 60_000);
    let lines: Vec<u32> = items.iter().map(|i| i.line).collect();
    assert!(!items.is_empty());
    assert!(
        lines.contains(&py.trim().parse::<u32>().unwrap()),
        "pyyaml: {py}, ours: {items:#?}"
    );
    // No schema store: a workflow file is not matched to a downloaded schema, so nothing
    // but the syntax error is said.
    assert!(items.iter().all(|i| i.source == "YAML"), "{items:#?}");
}

#[test]
fn yaml_schema_behind_a_url_is_not_downloaded() {
    let env = Env::new(json!({}));
    let trap = Trap::new("compose.json");
    let doc = env.write(
        "compose.yaml",
        &format!(
            "# yaml-language-server: $schema={}\nservices:\n  web:\n    image: nginx\n",
            trap.url
        ),
    );
    let items = env.check(&doc, 60_000);
    assert_eq!(trap.connections(), 0, "{items:#?}");
    assert!(
        items.iter().any(|i| i.message.contains(&trap.url)),
        "{items:#?}"
    );
}
