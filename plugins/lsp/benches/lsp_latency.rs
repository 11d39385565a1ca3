//! Edit → fresh diagnostics through the lsp plugin, per server: cold start to first result,
//! warm p50/p95, and the overhead over the server itself.
//!
//! Run: `cargo bench -p openfiles-plugin-lsp --bench lsp_latency` (servers not installed are
//! skipped). "raw" is `benches/lsp_raw_latency.py`, a bare client against the same server and
//! file, the floor any bridge can reach, using the same mechanism the plugin uses for that
//! server (pull, push, or tsserver requests); overhead = our warm p50 − raw warm p50. For
//! servers the plugin does not push-wait on, the raw push figure (didChange →
//! publishDiagnostics for that version, the shared tool's measure) is printed too. Both
//! edit the file the same way (append one or two newlines, alternately). Goals (issue 4): ruff p50 ≤ 50 ms,
//! pyright and typescript-language-server p50 ≤ 500 ms, overhead ≤ 10 ms. Issue 19 adds
//! tsgo (opt-in, enabled here), bash-language-server and gopls; issue 33 basedpyright, ty, ESLint,
//! the JSON, CSS and YAML servers, docker-langserver and intelephense.
//! `OPENFILES_BENCH_SERVERS=ty,eslint` runs only those.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

use openfiles_plugin_api::{CheckRequest, Init, Plugin};
use openfiles_plugin_lsp::LspPlugin;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

const WARM_RUNS: usize = 30;

struct Case {
    server: &'static str,
    file: &'static str,
    lang: &'static str,
    text: &'static str,
    extra: &'static [(&'static str, &'static str)],
    raw_cmd: &'static [&'static str],
    /// How the plugin gets this server's results: the raw client's matching mode.
    raw_mode: &'static str,
}

const CASES: &[Case] = &[
    Case {
        server: "ruff",
        file: "m.py",
        lang: "python",
        text: "import os\n\n\ndef f(x: int) -> int:\n    return undefined_name + x\n",
        extra: &[],
        raw_cmd: &["ruff", "server"],
        raw_mode: "pull",
    },
    Case {
        server: "pyright",
        file: "m.py",
        lang: "python",
        text: "import os\n\n\ndef f(x: int) -> int:\n    return undefined_name + x\n\n\ny: int = \"text\"\n",
        extra: &[],
        raw_cmd: &["pyright-langserver", "--stdio"],
        raw_mode: "pull",
    },
    Case {
        server: "typescript-language-server",
        file: "m.ts",
        lang: "typescript",
        text: "const a: number = \"s\";\n\nfunction f(x: number): string {\n  return x;\n}\n\nconsole.log(a, missing, f(1));\n",
        extra: &[("tsconfig.json", r#"{"compilerOptions":{"strict":true,"noEmit":true},"include":["*.ts"]}"#)],
        raw_cmd: &["typescript-language-server", "--stdio"],
        raw_mode: "tsserver",
    },
    Case {
        server: "tsgo",
        file: "m.ts",
        lang: "typescript",
        text: "const a: number = \"s\";\n\nfunction f(x: number): string {\n  return x;\n}\n\nconsole.log(a, missing, f(1));\n",
        extra: &[("tsconfig.json", r#"{"compilerOptions":{"strict":true,"noEmit":true},"include":["*.ts"]}"#)],
        raw_cmd: &["tsgo", "--lsp", "--stdio"],
        raw_mode: "pull",
    },
    Case {
        server: "bash-language-server",
        file: "deploy.sh",
        lang: "shellscript",
        text: "#!/usr/bin/env bash\ntarget=$1\nunused=1\ncd $target\nfor f in $(ls *.tar.gz); do tar xzf $f; done\n",
        extra: &[],
        raw_cmd: &["bash-language-server", "start"],
        raw_mode: "push",
    },
    Case {
        server: "gopls",
        file: "main.go",
        lang: "go",
        text: "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tvar n int = \"s\"\n\tfmt.Printf(\"%d\\n\", \"x\", n)\n}\n",
        extra: &[("go.mod", "module example.com/bench\n\ngo 1.19\n")],
        raw_cmd: &["gopls"],
        raw_mode: "push",
    },
    Case {
        server: "clangd",
        file: "main.c",
        lang: "c",
        text: "int f(int a);\n\nint main(void) {\n  int x = undefined_var;\n  return f(1, 2) + x;\n}\n",
        extra: &[("compile_flags.txt", "-xc\n-std=c11\n")],
        raw_cmd: &["clangd"],
        raw_mode: "push",
    },
    Case {
        server: "basedpyright",
        file: "m.py",
        lang: "python",
        text: "import os\n\n\ndef f(x: int) -> int:\n    return undefined_name + x\n\n\ny: int = \"text\"\n",
        extra: &[("pyproject.toml", "[tool.basedpyright]\ntypeCheckingMode = \"standard\"\n")],
        raw_cmd: &["basedpyright-langserver", "--stdio"],
        raw_mode: "pull",
    },
    Case {
        server: "ty",
        file: "m.py",
        lang: "python",
        text: "import os\n\n\ndef f(x: int) -> int:\n    return undefined_name + x\n\n\ny: int = \"text\"\n",
        extra: &[("ty.toml", "[rules]\n")],
        raw_cmd: &["ty", "server"],
        raw_mode: "pull",
    },
    Case {
        server: "eslint",
        file: "m.js",
        lang: "javascript",
        text: "import { readFile } from \"node:fs\";\nlet count = 1;\nexport function f(arg) {\n  if (count == 1) console.log(missing);\n}\n",
        extra: &[
            ("package.json", r#"{"type":"module"}"#),
            ("eslint.config.js", "export default [{rules: {\"no-unused-vars\": \"error\", \"no-undef\": \"error\", eqeqeq: \"warn\"}}];\n"),
        ],
        // A bare client cannot run it: the server needs the extension's settings.
        raw_cmd: &["vscode-eslint-language-server", "--stdio"],
        raw_mode: "none",
    },
    Case {
        server: "json",
        file: "m.json",
        lang: "json",
        text: "{\n  \"$schema\": \"./s.json\",\n  \"port\": \"80\",\n  \"extra\": 1\n}\n",
        extra: &[("s.json", r#"{"properties":{"port":{"type":"integer"}},"additionalProperties":false}"#)],
        raw_cmd: &["vscode-json-language-server", "--stdio"],
        raw_mode: "pull",
    },
    Case {
        server: "css",
        file: "m.css",
        lang: "css",
        text: ".a { colr: red; }\n.b { }\n.c { width: 1px\n",
        extra: &[],
        raw_cmd: &["vscode-css-language-server", "--stdio"],
        raw_mode: "pull",
    },
    Case {
        server: "yaml",
        file: "m.yaml",
        lang: "yaml",
        text: "# yaml-language-server: $schema=./s.json\nport: \"80\"\nextra: 1\n",
        extra: &[("s.json", r#"{"properties":{"port":{"type":"integer"}},"additionalProperties":false}"#)],
        raw_cmd: &["yaml-language-server", "--stdio"],
        raw_mode: "push",
    },
    Case {
        server: "dockerfile",
        file: "Dockerfile",
        lang: "dockerfile",
        text: "FROM alpine\nMAINTAINER me\nWORKDIR app\nCMD [\"a\"]\nCMD [\"b\"]\n",
        extra: &[],
        raw_cmd: &["docker-langserver", "--stdio"],
        raw_mode: "push",
    },
    Case {
        server: "intelephense",
        file: "m.php",
        lang: "php",
        text: "<?php\necho undefined_fn(1);\n$x = new NoSuchClass();\n",
        extra: &[],
        raw_cmd: &["intelephense", "--stdio"],
        raw_mode: "push",
    },
];

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn raw(case: &Case, mode: &str, file: &Path) -> Option<serde_json::Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/lsp_raw_latency.py");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(script);
    if mode != "push" {
        cmd.arg(format!("--{mode}"));
    }
    let out = cmd
        .arg(file)
        .arg(case.lang)
        .arg("--")
        .args(case.raw_cmd)
        .output()
        .ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

fn main() {
    let everything = [
        "ruff",
        "pyright",
        "basedpyright",
        "typescript-language-server",
        "tsgo",
        "clangd",
        "rust-analyzer",
        "gopls",
        "bash-language-server",
        "ty",
        "eslint",
        "json",
        "css",
        "yaml",
        "dockerfile",
        "intelephense",
    ];
    // OPENFILES_BENCH_SERVERS=ty,eslint runs those only.
    let only = std::env::var("OPENFILES_BENCH_SERVERS").ok();
    for case in CASES {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|s| s == case.server))
        {
            continue;
        }
        if openfiles_plugin_lsp::config::on_path(case.raw_cmd[0]).is_none() {
            println!("{:<28} skipped: {} not found", case.server, case.raw_cmd[0]);
            continue;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().canonicalize().expect("canonical");
        for (name, text) in case.extra {
            std::fs::write(ws.join(name), text).expect("write");
        }
        let file = ws.join(case.file);
        std::fs::write(&file, case.text).expect("write");
        let disable: Vec<_> = everything.iter().filter(|s| **s != case.server).collect();
        let init = Init {
            config: json!({"disable": disable, "enable": ["tsgo"]}),
            state_dir: ws.join(".state"),
            host_version: "bench".into(),
        };
        let (plugin, _) = LspPlugin::create(init).expect("create");
        let mut id = 0;
        let mut check = || {
            id += 1;
            let req = CheckRequest {
                trusted: true,
                id,
                workspace: ws.clone(),
                files: vec![file.clone()],
                also_report: vec![],
                timeout_ms: 120_000,
                ..Default::default()
            };
            let t = Instant::now();
            let resp = plugin.check(req).expect("check");
            let n = resp.files.iter().map(|f| f.items.len()).sum::<usize>();
            (t.elapsed(), n)
        };
        let (cold, n) = check();
        let mut warm: Vec<f64> = (0..WARM_RUNS)
            .map(|i| {
                std::fs::write(&file, format!("{}{}", case.text, "\n".repeat(i % 2 + 1)))
                    .expect("write");
                ms(check().0)
            })
            .collect();
        warm.sort_by(f64::total_cmp);
        let (p50, p95) = (pct(&warm, 0.5), pct(&warm, 0.95));
        drop(plugin);
        std::fs::write(&file, case.text).expect("write");
        let raw_same = if case.raw_mode == "none" {
            None
        } else {
            raw(case, case.raw_mode, &file)
        };
        let raw_push = if case.raw_mode == "push" || case.raw_mode == "none" {
            None
        } else {
            raw(case, "push", &file)
        };
        let f = |r: &Option<serde_json::Value>, k: &str| r.as_ref().and_then(|r| r[k].as_f64());
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        let raw_p50 = f(&raw_same, "warm_p50_ms");
        println!(
            "{:<27} cold {:>6.0} ms ({n} items) | warm p50 {:>6.1} ms, p95 {:>6.1} ms | raw {:<8} cold {:>6} ms, warm p50 {:>6} ms | overhead {}{}",
            case.server,
            ms(cold),
            p50,
            p95,
            case.raw_mode,
            fmt(f(&raw_same, "cold_ms")),
            fmt(raw_p50),
            raw_p50.map_or("-".into(), |v| format!("{:+.1} ms", p50 - v)),
            f(&raw_push, "warm_p50_ms").map_or(String::new(), |v| format!(" | raw push warm p50 {v:.1} ms")),
        );
    }
}
