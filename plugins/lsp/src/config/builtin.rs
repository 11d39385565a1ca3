//! The built-in server table: each language server openfiles knows, with the command,
//! extensions, root markers, settings and trust facts it starts with (see the parent
//! module's docs for what the trust fields mean). `[plugin.lsp]` overrides are applied over
//! this table by [`super::Config::servers`]; nothing here reads a file or starts a process.
//!
//! The order of [`builtin`] is the order results are listed in, and within a group (the
//! Python type checkers) the order in which a member is picked.

use super::{DiagnosticsMode, ServerSpec};
use serde_json::Value;
use std::collections::BTreeMap;

pub(super) fn spec(
    name: &str,
    command: &str,
    args: &[&str],
    exts: &[&str],
    markers: &[&str],
) -> ServerSpec {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    ServerSpec {
        name: name.into(),
        command: command.into(),
        args: s(args),
        extensions: s(exts),
        file_names: Vec::new(),
        language_ids: BTreeMap::new(),
        root_markers: s(markers),
        initialization_options: None,
        settings: Value::Null,
        wait_for_progress: Vec::new(),
        diagnostics: DiagnosticsMode::Auto,
        probe: None,
        node_package: false,
        opt_in: false,
        finds_projects: false,
        runs_project_code: false,
        needs_project: false,
        untrusted_args: Vec::new(),
        filtered_compile_db: false,
        outside_typescript: false,
        schemas_from_client: false,
        after_initialized: Vec::new(),
        indexing: None,
        group: None,
        claims: Vec::new(),
    }
}

/// The built-in servers, in the order their results are listed.
pub fn builtin() -> Vec<ServerSpec> {
    let mut all = python();
    all.extend(typescript());
    all.push(eslint(&TS));
    all.push(clangd());
    all.push(rust_analyzer());
    all.push(spec("gopls", "gopls", &[], &["go"], &["go.work", "go.mod"]));
    all.push(spec(
        "bash-language-server",
        "bash-language-server",
        &["start"],
        &["sh", "bash"],
        &[],
    ));
    all.extend(data_languages());
    all.extend(untested());
    for s in &mut all {
        s.node_package = NODE_PACKAGES.contains(&s.name.as_str());
    }
    all
}

/// The built-in servers distributed through npm ([`ServerSpec::node_package`]).
const NODE_PACKAGES: &[&str] = &[
    "pyright",
    "basedpyright",
    "typescript-language-server",
    "tsgo",
    "bash-language-server",
    "eslint",
];

const PY: [&str; 2] = ["py", "pyi"];
const TS: [&str; 8] = ["ts", "tsx", "js", "jsx", "mts", "cts", "mjs", "cjs"];

/// ruff, then the Python type checkers (one group: one of them checks a file).
fn python() -> Vec<ServerSpec> {
    let ruff = spec(
        "ruff",
        "ruff",
        &["server"],
        &PY,
        &["pyproject.toml", "ruff.toml", ".ruff.toml"],
    );
    // A pyproject.toml is a pyright project only with a [tool.pyright] table: packages
    // without one are checked in the enclosing project, one program for all of them
    // (each workspace folder is a whole program in pyright, ~0.3 s and ~20 MiB apiece).
    let mut pyright = spec(
        "pyright",
        "pyright-langserver",
        &["--stdio"],
        &PY,
        python_roots("pyright"),
    );
    pyright.group = Some(PYTHON_TYPES.into());
    let mut basedpyright = spec(
        "basedpyright",
        "basedpyright-langserver",
        &["--stdio"],
        &PY,
        python_roots("basedpyright"),
    );
    basedpyright.group = Some(PYTHON_TYPES.into());
    basedpyright.claims = python_claims("basedpyright");
    // Astral's checker (PyPI `ty`): pull diagnostics; a project configures it in ty.toml or
    // [tool.ty], which is also how a project asks for it over pyright.
    let mut ty = spec("ty", "ty", &["server"], &PY, python_roots("ty"));
    ty.group = Some(PYTHON_TYPES.into());
    ty.claims = python_claims("ty");
    vec![ruff, pyright, basedpyright, ty]
}

/// typescript-language-server, and TypeScript 7's native server (opt-in).
fn typescript() -> Vec<ServerSpec> {
    let markers = ["tsconfig.json", "jsconfig.json", "package.json"];
    let mut tsls = spec(
        "typescript-language-server",
        "typescript-language-server",
        &["--stdio"],
        &TS,
        &markers,
    );
    tsls.diagnostics = DiagnosticsMode::Tsserver;
    // tsserver opens each file in the project of the nearest tsconfig.json, as it does for an
    // editor window holding many packages.
    tsls.finds_projects = true;
    // It would run the project's `node_modules/typescript/lib/tsserver.js` first.
    tsls.outside_typescript = true;
    // One tsserver, no typings installer: by default typescript-language-server starts a
    // second, syntax-only tsserver beside the semantic one (both parse the project at the
    // start, on the cores the first edit's check needs) and tsserver's automatic type
    // acquisition runs npm to download `@types` packages named by the repository's
    // `package.json` into a cache outside it. `tsc`, the reference, does neither.
    tsls.initialization_options = Some(serde_json::json!({
        "disableAutomaticTypingAcquisition": true,
        "tsserver": {"useSyntaxServer": "never"},
    }));
    // TypeScript 7's native server (npm @typescript/native-preview): pull diagnostics for
    // the text sent. Opt-in while it is a preview.
    let mut tsgo = spec("tsgo", "tsgo", &["--lsp", "--stdio"], &TS, &markers);
    tsgo.opt_in = true;
    vec![tsls, tsgo]
}

/// clangd, which looks up each file's compile database and .clangd in its parent folders.
fn clangd() -> ServerSpec {
    let mut clangd = spec(
        "clangd",
        "clangd",
        &["--log=error"],
        &["c", "h", "cpp", "cc", "cxx", "hpp", "hh"],
        &["compile_commands.json", "compile_flags.txt", ".clangd"],
    );
    clangd.finds_projects = true;
    // `.clangd` (CompileFlags: Add: [-MJ, …]) and the repository's compile database
    // name paths clangd writes to: neither is read in an untrusted workspace.
    clangd.untrusted_args = vec!["--enable-config=false".into()];
    clangd.filtered_compile_db = true;
    clangd
}

/// rust-analyzer: probed first (rustup's proxy exists without the component), it runs build
/// scripts and proc macros, and its results are final once its cargo check has run.
fn rust_analyzer() -> ServerSpec {
    let mut ra = spec(
        "rust-analyzer",
        "rust-analyzer",
        &[],
        &["rs"],
        &["Cargo.toml"],
    );
    ra.probe = Some(vec!["--version".into()]);
    ra.runs_project_code = true;
    ra.wait_for_progress = vec!["cargo check".into(), "flycheck".into()];
    ra
}

/// The group of Python type checkers: one of pyright, basedpyright and ty checks a file.
pub const PYTHON_TYPES: &str = "python-types";

/// The markers by which a project asks for a Python type checker (shared with the pyright
/// plugin, which runs the same checker's command line).
fn python_claims(name: &str) -> Vec<String> {
    openfiles_plugin_api::markers::python_type_checker_claims(name)
        .iter()
        .map(|m| m.to_string())
        .collect()
}

/// Where a Python type checker's projects are rooted (shared with the pyright plugin, which
/// runs the same checker over the same projects).
fn python_roots(name: &str) -> &'static [&'static str] {
    openfiles_plugin_api::markers::python_type_checker_roots(name)
}

/// ESLint through `vscode-eslint-language-server` (npm `vscode-langservers-extracted`). It
/// loads the project's ESLint configuration, which is JavaScript: a program the repository
/// brings, so only in workspaces the user trusts, and only for files under an ESLint
/// configuration. The ESLint library is the project's (`node_modules/eslint`), else the one
/// npm installed globally (`packageManager`).
fn eslint(ts: &[&str]) -> ServerSpec {
    let mut s = spec(
        "eslint",
        "vscode-eslint-language-server",
        &["--stdio"],
        ts,
        &[
            "eslint.config.js",
            "eslint.config.mjs",
            "eslint.config.cjs",
            "eslint.config.ts",
            "eslint.config.mts",
            "eslint.config.cts",
            ".eslintrc.js",
            ".eslintrc.cjs",
            ".eslintrc.json",
            ".eslintrc.yaml",
            ".eslintrc.yml",
            ".eslintrc",
        ],
    );
    s.runs_project_code = true;
    s.needs_project = true;
    // The settings the VS Code extension sends (the server asks for them per file, section
    // ""): validate on type, problems in full, no code actions, the file's folder as the
    // working directory (so its nearest configuration applies).
    s.settings = serde_json::json!({
        "validate": "on",
        "run": "onType",
        "packageManager": "npm",
        "useESLintClass": false,
        "useFlatConfig": null,
        "experimental": {},
        "codeAction": {
            "disableRuleComment": {"enable": false, "location": "separateLine", "commentStyle": "line"},
            "showDocumentation": {"enable": false},
        },
        "codeActionOnSave": {"enable": false, "mode": "all"},
        "format": false,
        "quiet": false,
        "onIgnoredFiles": "off",
        "options": {},
        "rulesCustomizations": [],
        "problems": {"shortenToSingleLine": false},
        "nodePath": null,
        "workingDirectory": {"mode": "location"},
        "timeBudget": {"onValidation": {"warn": 8000, "error": 15000}, "onFixes": {"warn": 3000, "error": 6000}},
    });
    s
}

/// JSON, CSS, YAML, Dockerfiles, PHP and TOML: servers that check one file at a time, offline.
/// Schemas are the ones a file names (`$schema`, `# yaml-language-server: $schema=`) or the
/// user configures (`settings.json.schemas`, `settings.yaml.schemas`) and that are files:
/// a schema behind http(s) is never downloaded (JSON: `schemaDownload` off, and only `file`
/// handled by the server itself; YAML: schema store off, and http schemas asked of the
/// client, which declines).
fn data_languages() -> Vec<ServerSpec> {
    use serde_json::json;
    let mut json = spec(
        "json",
        "vscode-json-language-server",
        &["--stdio"],
        &["json", "jsonc"],
        &[],
    );
    json.initialization_options = Some(json!({
        "provideFormatter": false,
        "handledSchemaProtocols": ["file"],
    }));
    json.schemas_from_client = true;
    json.settings = json!({
        "json": {"validate": {"enable": true}, "schemaDownload": {"enable": false},
                 "format": {"enable": false}, "schemas": []},
        "http": {"proxyStrictSSL": true},
    });
    let mut css = spec(
        "css",
        "vscode-css-language-server",
        &["--stdio"],
        &["css", "scss", "less"],
        &[],
    );
    css.settings = json!({
        "css": {"validate": true},
        "scss": {"validate": true},
        "less": {"validate": true},
    });
    let mut yaml = spec(
        "yaml",
        "yaml-language-server",
        &["--stdio"],
        &["yaml", "yml"],
        &[],
    );
    yaml.settings = json!({
        "yaml": {"validate": true, "schemaStore": {"enable": false}, "schemas": {},
                 "format": {"enable": false}, "hover": false, "completion": false},
        "http": {"proxyStrictSSL": true},
        "[yaml]": {},
        "editor": {},
        "files": {},
    });
    yaml.after_initialized = vec![(
        "yaml/registerContentRequest".into(),
        serde_json::Value::Null,
    )];
    let mut docker = spec(
        "dockerfile",
        "docker-langserver",
        &["--stdio"],
        &["dockerfile"],
        &[],
    );
    docker.file_names = vec!["Dockerfile".into(), "Containerfile".into()];
    let mut php = spec(
        "intelephense",
        "intelephense",
        &["--stdio"],
        &["php"],
        &["composer.json"],
    );
    php.indexing = Some(("indexingStarted".into(), "indexingEnded".into()));
    php.settings = json!({"intelephense": {"telemetry": {"enabled": false}}});
    // taplo's own server (Even Better TOML's), the WebAssembly build npm's @taplo/lsp ships,
    // run by `plugins/lsp/taplo/server.js` (the PyPI and npm builds of the taplo CLI leave
    // the server out): syntax and structure, as `taplo lint --no-schema` says them. Zero-config
    // and offline in every workspace: the host gives it no network and no file (no
    // `.taplo.toml`, no `#:schema` file), and schemas are off.
    let mut toml = spec("taplo", "openfiles-taplo-lsp", &[], &["toml"], &[]);
    toml.settings = json!({"evenBetterToml": {
        "schema": {"enabled": false, "catalogs": [], "associations": {}, "links": false},
        "taplo": {"configFile": {"enabled": false}},
    }});
    vec![json, css, yaml, docker, php, toml]
}

/// Servers openfiles knows but no test has run here (they cannot be installed from the
/// registries this project uses, or their LSP build is not published there): opt-in, each
/// marked untested in the README.
fn untested() -> Vec<ServerSpec> {
    let mut v = vec![
        // Validates only the CSS and JavaScript embedded in HTML.
        spec(
            "html",
            "vscode-html-language-server",
            &["--stdio"],
            &["html", "htm"],
            &[],
        ),
        spec(
            "jdtls",
            "jdtls",
            &[],
            &["java"],
            &[
                "pom.xml",
                "build.gradle",
                "build.gradle.kts",
                "settings.gradle",
                ".project",
            ],
        ),
        spec("csharp-ls", "csharp-ls", &[], &["cs"], &["global.json"]),
        spec("ruby-lsp", "ruby-lsp", &[], &["rb"], &["Gemfile"]),
        spec(
            "kotlin-language-server",
            "kotlin-language-server",
            &[],
            &["kt", "kts"],
            &["settings.gradle.kts", "build.gradle.kts", "pom.xml"],
        ),
        spec(
            "sourcekit-lsp",
            "sourcekit-lsp",
            &[],
            &["swift"],
            &["Package.swift"],
        ),
    ];
    for s in &mut v {
        s.opt_in = true;
        // Their servers build the project to know it, and a build file is a program:
        // jdtls and kotlin-language-server run Gradle or Maven, sourcekit-lsp compiles and
        // runs Package.swift, ruby-lsp runs Bundler over the Gemfile, csharp-ls MSBuild.
        s.runs_project_code = matches!(
            s.name.as_str(),
            "jdtls" | "kotlin-language-server" | "sourcekit-lsp" | "ruby-lsp" | "csharp-ls"
        );
    }
    v
}
