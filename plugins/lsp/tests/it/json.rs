//! `vscode-json-language-server` and `vscode-css-language-server` (npm
//! `vscode-langservers-extracted`) through the plugin. JSON: a service config validated
//! against the schema file it names, compared with python-jsonschema on the same files
//! (`tests/fixtures/schema_check.py`); syntax errors where Python's parser puts them; a schema
//! behind a URL is not downloaded (a local listener sees no connection). CSS: the lint and
//! syntax findings of the CSS language service on a stylesheet with planted mistakes.

use crate::support;
use openfiles_plugin_api::Severity;
use serde_json::json;
use support::{schema_cli, schema_kinds, Env, Trap};

const SCHEMA: &str = r#"{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["name", "listen", "routes"],
  "properties": {
    "$schema": {"type": "string"},
    "name": {"type": "string"},
    "listen": {"type": "integer", "minimum": 1024},
    "log": {"enum": ["debug", "info", "warn"]},
    "routes": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["path", "upstream"],
        "properties": {"path": {"type": "string"}, "upstream": {"type": "string"}, "timeout": {"type": "number"}},
        "additionalProperties": false
      }
    }
  },
  "additionalProperties": false
}
"#;

const CONFIG: &str = r#"{
  "$schema": "../schema/service.schema.json",
  "name": 7,
  "listen": 80,
  "log": "verbose",
  "routes": [
    {"path": "/api", "upstream": "http://api:8080", "timeout": "5s"},
    {
      "path": "/static",
      "cache": true
    }
  ],
  "debug": true
}
"#;

const CONFIG_FIXED: &str = r#"{
  "$schema": "../schema/service.schema.json",
  "name": "gateway",
  "listen": 8080,
  "log": "info",
  "routes": [
    {"path": "/api", "upstream": "http://api:8080", "timeout": 5},
    {"path": "/static", "upstream": "http://static:8080"}
  ]
}
"#;

#[test]
fn json_server_validates_against_the_schema_file_as_jsonschema_does() {
    let env = Env::new(json!({}));
    env.write("schema/service.schema.json", SCHEMA);
    let config = env.write("config/service.json", CONFIG);
    // The reference: python-jsonschema, paths as the document names them.
    std::fs::copy(
        env.ws.join("schema/service.schema.json"),
        env.ws.join("config/service.schema.json"),
    )
    .unwrap();
    let expected = schema_cli(
        &env.ws.join("config"),
        "service.schema.json",
        "service.json",
    );
    assert!(expected.len() >= 6, "planted mistakes: {expected:?}");

    let items = env.check(&config, 60_000);
    assert_eq!(schema_kinds(&items), expected, "{items:#?}");
    assert!(items.iter().all(|i| i.source == "json"), "{items:#?}");

    // Fixed: nothing; broken again: the same again (fresh results each time).
    env.write("config/service.json", CONFIG_FIXED);
    assert_eq!(
        schema_cli(
            &env.ws.join("config"),
            "service.schema.json",
            "service.json"
        ),
        vec![]
    );
    let items = env.check(&config, 60_000);
    assert!(items.is_empty(), "{items:#?}");
    env.write("config/service.json", CONFIG);
    assert_eq!(schema_kinds(&env.check(&config, 60_000)), expected);
}

#[test]
fn json_syntax_errors_where_the_parser_finds_them_and_comments_in_tsconfig() {
    let env = Env::new(json!({"disable": ["typescript-language-server"]}));
    // A missing comma after line 3's value: Python's parser stops on line 4.
    let bad = env.write(
        "package.json",
        "{\n  \"name\": \"web\",\n  \"version\": \"1.0.0\"\n  \"private\": true\n}\n",
    );
    let py = support::run(
        &env.ws,
        "python3",
        &[
            "-c",
            "import json,sys\ntry: json.load(open('package.json'))\nexcept json.JSONDecodeError as e: print(e.lineno)",
        ],
    );
    let items = env.check(&bad, 60_000);
    let errors: Vec<u32> = items
        .iter()
        .filter(|i| i.severity == Severity::Error)
        .map(|i| i.line)
        .collect();
    assert_eq!(
        errors,
        vec![py.trim().parse::<u32>().unwrap()],
        "{items:#?}"
    );

    // tsconfig.json is JSON with comments (as editors and tsc read it): no error for them.
    let ts = env.write(
        "tsconfig.json",
        "{\n  // strict everywhere\n  \"compilerOptions\": {\"strict\": true}\n}\n",
    );
    assert_eq!(env.check(&ts, 60_000), vec![]);
}

#[test]
fn json_schema_behind_a_url_is_not_downloaded() {
    let env = Env::new(json!({}));
    let trap = Trap::new("schema.json");
    let doc = env.write(
        "settings.local.json",
        &format!("{{\n  \"$schema\": \"{}\",\n  \"a\": 1\n}}\n", trap.url),
    );
    let items = env.check(&doc, 60_000);
    assert_eq!(trap.connections(), 0, "{items:#?}");
    // Told, not silently skipped: the server says it could not load the schema.
    assert!(
        items.iter().any(|i| i.message.contains(&trap.url)),
        "{items:#?}"
    );
}

const SITE_CSS: &str = ".header { colr: red; }
.empty { }
.grid {
  display: grid;
  width: 10px;
  width: 20px;
}
.title { font-size: 12px
.footer { color: blue; }
";

#[test]
fn css_server_reports_lint_and_syntax_findings() {
    let env = Env::new(json!({}));
    let css = env.write("static/site.css", SITE_CSS);
    let items = env.check(&css, 60_000);
    let got: Vec<(u32, String, Severity)> = {
        let mut v: Vec<_> = items
            .iter()
            .map(|i| (i.line, i.code.clone().unwrap_or_default(), i.severity))
            .collect();
        v.sort();
        v
    };
    // vscode-css-languageservice's own rules: unknownProperties and emptyRules warn by
    // default, duplicateProperties is off by default; the unclosed rule is a syntax error.
    assert!(
        got.contains(&(1, "unknownProperties".into(), Severity::Warning)),
        "{got:#?}"
    );
    assert!(
        got.contains(&(2, "emptyRules".into(), Severity::Warning)),
        "{got:#?}"
    );
    assert!(
        got.iter()
            .any(|(l, c, s)| *l >= 8 && c.starts_with("css-") && *s == Severity::Error),
        "{got:#?}"
    );
    assert!(!got.iter().any(|(_, c, _)| c == "duplicateProperties"));
    let fixed = SITE_CSS
        .replace("colr", "color")
        .replace(".empty { }\n", "")
        .replace("12px\n", "12px; }\n");
    env.write("static/site.css", &fixed);
    assert_eq!(env.check(&css, 60_000), vec![]);
}
