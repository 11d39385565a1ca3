//! `docker-langserver` (npm `dockerfile-language-server-nodejs`) through the plugin, found by
//! file name (`Dockerfile` has no extension): its items are those of the validator's own
//! command line, `dockerfile-utils lint` (line, column, severity, message), a fix clears them.

use crate::support;
use openfiles_plugin_api::{Item, Severity};
use serde_json::json;
use std::path::PathBuf;
use support::Env;

const DOCKERFILE: &str = "FROM python:3.12-slim AS base
MAINTAINER platform@example.com
RUN apt-get update && apt-get install -y --no-install-recommends curl
WORKDIR app
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . /app
ENTRYPOINT python -m app
CMD [\"--port\", \"8000\"]
CMD [\"--port\", \"9000\"]
HEALTHCHECK --interval=often CMD curl -f http://localhost:8000/health
ARG
";

const FIXED: &str = "FROM python:3.12-slim AS base
LABEL maintainer=platform@example.com
RUN apt-get update && apt-get install -y --no-install-recommends curl
WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . /app
ENTRYPOINT [\"python\", \"-m\", \"app\"]
CMD [\"--port\", \"8000\"]
HEALTHCHECK --interval=30s CMD curl -f http://localhost:8000/health
";

/// `dockerfile-utils` as npm installed it beside the server.
fn dockerfile_utils() -> PathBuf {
    let root = support::run(std::path::Path::new("/"), "npm", &["root", "-g"]);
    PathBuf::from(root.trim()).join(
        "dockerfile-language-server-nodejs/node_modules/dockerfile-utils/bin/dockerfile-utils",
    )
}

/// (line, column, severity, message) of `dockerfile-utils lint FILE`: blocks of
/// `Line: N`, the line, a caret line under the range, `Error|Warning: message`.
fn lint(env: &Env, rel: &str) -> Vec<(u32, u32, Severity, String)> {
    let out = support::run(
        &env.ws,
        dockerfile_utils().to_str().unwrap(),
        &["lint", rel],
    );
    let lines: Vec<&str> = out.lines().collect();
    let mut v = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(n) = l.strip_prefix("Line: ") else {
            continue;
        };
        let caret = lines[i + 2];
        let column = caret.find('^').unwrap() as u32 + 1;
        let (sev, msg) = lines[i + 3].split_once(": ").unwrap();
        let severity = if sev == "Error" {
            Severity::Error
        } else {
            Severity::Warning
        };
        v.push((n.parse().unwrap(), column, severity, msg.to_owned()));
    }
    v.sort();
    v
}

fn ours(items: &[Item]) -> Vec<(u32, u32, Severity, String)> {
    let mut v: Vec<_> = items
        .iter()
        .map(|i| (i.line, i.column, i.severity, i.message.clone()))
        .collect();
    v.sort();
    v
}

#[test]
fn dockerfile_server_reports_what_dockerfile_utils_lint_reports() {
    let env = Env::new(json!({}));
    let file = env.write("services/api/Dockerfile", DOCKERFILE);
    let expected = lint(&env, "services/api/Dockerfile");
    assert!(expected.len() >= 5, "planted mistakes: {expected:#?}");
    assert!(expected.iter().any(|e| e.2 == Severity::Error));

    let items = env.check(&file, 60_000);
    assert_eq!(ours(&items), expected, "{items:#?}");
    assert!(items.iter().all(|i| i.source == "dockerfile-utils"));

    // The Podman name, `Containerfile`, too.
    let other = env.write("Containerfile", DOCKERFILE);
    assert_eq!(
        ours(&env.check(&other, 60_000)),
        lint(&env, "Containerfile")
    );

    env.write("services/api/Dockerfile", FIXED);
    assert_eq!(lint(&env, "services/api/Dockerfile"), vec![]);
    assert_eq!(env.check(&file, 60_000), vec![]);
}
