//! The tool table: every tool `openfiles mcp` offers, as data (`tools.json`, compiled in).
//!
//! Each entry has the MCP fields (`name`, `description`, `inputSchema`) and, for the Claws
//! orchestration tools that only forward one socket command, a `forward` rule: which
//! command, which arguments are renamed or defaulted, and which fields of the answer form
//! the result. Adding such a tool is adding a row; tools with behaviour of their own
//! (terminals, workers, diagnostics) are matched by name in the handlers.
//!
//! Arguments are checked against the schema before a handler runs (the subset our schemas
//! use: object properties, `required`, `additionalProperties: false`, `type`, `enum`,
//! array `items`, `minimum`), so a handler only sees well-typed input; a mismatch is a
//! JSON-RPC "invalid params" error naming the argument.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Map, Value};

const TOOLS_JSON: &str = include_str!("tools.json");

/// What a forwarded tool returns from the socket's answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ResultRule {
    /// These fields of the answer, as a JSON object (missing ones as `null`).
    Pick(Vec<String>),
    /// This one field of the answer, as it is.
    Field(String),
    /// A fixed object once the answer is `ok`.
    Fixed(Map<String, Value>),
}

/// A tool that forwards one request to the Claws socket.
#[derive(Debug, Clone, Deserialize)]
pub struct Forward {
    pub cmd: String,
    pub result: ResultRule,
    /// Send on the bus connection (the one that said `hello`), not a fresh one.
    #[serde(default)]
    pub stateful: bool,
    #[serde(default)]
    pub rename: HashMap<String, String>,
    #[serde(default)]
    pub defaults: Map<String, Value>,
    #[serde(default)]
    pub protocol: Option<String>,
}

/// One row of the table.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(default)]
    pub forward: Option<Forward>,
}

/// The table, parsed once.
pub struct Catalog {
    pub tools: Vec<Tool>,
    by_name: HashMap<String, usize>,
    /// The `tools/list` result, serialized once.
    pub list_json: Value,
}

impl Catalog {
    fn parse(text: &str) -> Result<Catalog, serde_json::Error> {
        let tools: Vec<Tool> = serde_json::from_str(text)?;
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        let list: Vec<Value> = tools
            .iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": t.input_schema,
                })
            })
            .collect();
        Ok(Catalog {
            tools,
            by_name,
            list_json: serde_json::json!({ "tools": list }),
        })
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }
}

/// The compiled-in table. `tools.json` is checked by a unit test, so parsing cannot fail
/// in a released binary; should it anyway, the table is empty rather than a panic.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        Catalog::parse(TOOLS_JSON).unwrap_or_else(|_| Catalog {
            tools: Vec::new(),
            by_name: HashMap::new(),
            list_json: serde_json::json!({ "tools": [] }),
        })
    })
}

/// Why arguments do not fit a tool's schema; the text names the offending argument (`at`:
/// `arguments`, `` `id` ``, `` `workers`[0] ``).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Invalid {
    #[error("{at} must be {}", article(.ty))]
    Type { at: String, ty: String },
    #[error("{at} must be one of {allowed}")]
    NotOneOf { at: String, allowed: String },
    #[error("{at} must be at least {min}")]
    Below { at: String, min: f64 },
    #[error("missing required argument `{0}`")]
    Missing(String),
    #[error("unknown argument `{0}`")]
    Unknown(String),
}

/// Check `args` against `schema`; the error names the offending argument.
pub fn validate(schema: &Value, args: &Value) -> Result<(), Invalid> {
    check(schema, args, "arguments")
}

fn check(schema: &Value, v: &Value, at: &str) -> Result<(), Invalid> {
    if let Some(ty) = schema.get("type").and_then(Value::as_str) {
        let fits = match ty {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            _ => true,
        };
        if !fits {
            return Err(Invalid::Type {
                at: at.to_owned(),
                ty: ty.to_owned(),
            });
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(v) {
            let names: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(Invalid::NotOneOf {
                at: at.to_owned(),
                allowed: names.join(", "),
            });
        }
    }
    if let (Some(min), Some(n)) = (schema.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if n < min {
            return Err(Invalid::Below {
                at: at.to_owned(),
                min,
            });
        }
    }
    if let Some(obj) = v.as_object() {
        let props = schema.get("properties").and_then(Value::as_object);
        for req in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !obj.contains_key(req) {
                return Err(Invalid::Missing(req.to_owned()));
            }
        }
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (k, val) in obj {
            match props.and_then(|p| p.get(k)) {
                // `null` stands for "not given", as many clients send it for optional ones.
                Some(_) if val.is_null() => {}
                Some(sub) => check(sub, val, &format!("`{k}`"))?,
                None if closed => return Err(Invalid::Unknown(k.clone())),
                None => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, item) in arr.iter().enumerate() {
            check(items, item, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

fn article(ty: &str) -> String {
    match ty {
        "object" | "array" | "integer" => format!("an {ty}"),
        _ => format!("a {ty}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The table parses, names are unique and MCP-valid, and every schema is a closed
    /// object schema whose `required` names exist and whose types are JSON Schema types.
    #[test]
    fn tools_json_is_a_valid_table() {
        let cat = Catalog::parse(TOOLS_JSON).expect("tools.json parses");
        assert_eq!(cat.by_name.len(), cat.tools.len(), "duplicate tool names");
        let claws = cat
            .tools
            .iter()
            .filter(|t| t.name.starts_with("claws_"))
            .count();
        assert_eq!(claws, 41, "every tool of Claws's MCP server");
        for t in &cat.tools {
            assert!(
                t.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{}",
                t.name
            );
            assert!(!t.description.is_empty(), "{} has no description", t.name);
            let s = &t.input_schema;
            assert_eq!(s["type"], "object", "{}", t.name);
            assert_eq!(s["additionalProperties"], false, "{}", t.name);
            let props = s["properties"].as_object().expect("properties");
            for r in s["required"].as_array().into_iter().flatten() {
                assert!(
                    props.contains_key(r.as_str().unwrap_or("")),
                    "{}: {r}",
                    t.name
                );
            }
            walk_types(&t.name, s);
            if let Some(f) = &t.forward {
                assert!(!f.cmd.is_empty());
                for from in f.rename.keys() {
                    assert!(props.contains_key(from), "{}: rename of {from}", t.name);
                }
            }
        }
        for name in [
            "openfiles_diagnostics",
            "openfiles_check",
            "openfiles_fix",
            "openfiles_status",
        ] {
            assert!(cat.get(name).is_some(), "{name}");
        }
    }

    fn walk_types(tool: &str, s: &Value) {
        if let Some(ty) = s.get("type") {
            let ok = ["object", "array", "string", "boolean", "integer", "number"];
            assert!(
                ok.contains(&ty.as_str().unwrap_or("?")),
                "{tool}: type {ty}"
            );
        }
        if let Some(p) = s.get("properties").and_then(Value::as_object) {
            p.values().for_each(|v| walk_types(tool, v));
        }
        if let Some(i) = s.get("items") {
            assert_eq!(s["type"], "array", "{tool}: items outside an array");
            walk_types(tool, i);
        }
    }

    #[test]
    fn validation_names_the_bad_argument() {
        let cat = catalog();
        let exec = &cat.get("claws_exec").expect("claws_exec").input_schema;
        assert!(validate(exec, &json!({"id": "1", "command": "ls"})).is_ok());
        assert_eq!(
            validate(exec, &json!({"id": "1"})).unwrap_err().to_string(),
            "missing required argument `command`"
        );
        assert_eq!(
            validate(exec, &json!({"id": 1, "command": "ls"}))
                .unwrap_err()
                .to_string(),
            "`id` must be a string"
        );
        assert_eq!(
            validate(exec, &json!({"id": "1", "command": "ls", "x": 1}))
                .unwrap_err()
                .to_string(),
            "unknown argument `x`"
        );
        let hello = &cat.get("claws_hello").expect("hello").input_schema;
        assert!(validate(hello, &json!({"role": "boss", "peerName": "a"}))
            .unwrap_err()
            .to_string()
            .contains("one of"));
        let fleet = &cat.get("claws_fleet").expect("fleet").input_schema;
        assert_eq!(
            validate(fleet, &json!({"workers": [{"mission": "x"}]}))
                .unwrap_err()
                .to_string(),
            "missing required argument `name`"
        );
        assert!(validate(exec, &json!("nope")).is_err());
    }
}
