//! `openfiles doctor` against real things: a workspace with Python and Go files, agent hook
//! configs with and without the openfiles hook, real plugin libraries (one good, one with a
//! wrong ABI), a dead socket with loose permissions, and a service started by hand.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

fn doctor(env: &common::Env, ws: &Path, extra: &[&str]) -> (Option<i32>, Value, String) {
    doctor_with(env, ws, extra, None)
}

/// An executable shell script `dir/name`.
fn script(dir: &Path, name: &str, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn doctor_with(
    env: &common::Env,
    ws: &Path,
    extra: &[&str],
    plugin_path: Option<&std::ffi::OsStr>,
) -> (Option<i32>, Value, String) {
    let mut cmd = env.command(&["doctor", "--workspace"]);
    match plugin_path {
        Some(p) => cmd.env("OPENFILES_PLUGIN_PATH", p),
        None => cmd.env_remove("OPENFILES_PLUGIN_PATH"),
    };
    let out = common::packaging::output(
        cmd.arg(ws)
            .args(extra)
            .env("HOME", env.dir.path())
            .env("XDG_CONFIG_HOME", env.dir.path().join("config-home")),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = if extra.contains(&"--json") {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    } else {
        Value::Null
    };
    (out.status.code(), json, text)
}

fn checks<'a>(report: &'a Value, section: &str) -> Vec<&'a Value> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["section"] == section)
        .collect()
}

fn has(report: &Value, section: &str, level: &str, needle: &str) -> bool {
    checks(report, section)
        .iter()
        .any(|c| c["level"] == level && c["message"].as_str().unwrap().contains(needle))
}

#[test]
fn doctor_reports_tools_hooks_and_plugins_and_fails_without_a_service() {
    let env = common::Env::new();
    let ws = env.workspace("proj");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join("app.py"), "x = 1\n").unwrap();
    std::fs::write(ws.join("go.mod"), "module x\n").unwrap();
    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    std::fs::write(
        ws.join(".claude/settings.json"),
        r#"{"hooks":{"PostToolUse":[{"matcher":"Edit|Write","hooks":[{"type":"command","command":"openfiles hook --agent claude"}]}]}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(ws.join(".gemini")).unwrap();
    std::fs::write(ws.join(".gemini/settings.json"), "{}").unwrap();

    let good = common::plugins::plugin("cargo_check");
    let bad = common::plugins::fixture("bad_abi");
    let plugin_path = common::plugins::path_list(&[good, bad]);
    let (code, report, _) = doctor_with(&env, &ws, &["--json"], Some(&plugin_path));

    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["ok"], false);
    assert!(
        has(&report, "service", "fail", "not reachable"),
        "{report:#}"
    );
    assert!(has(&report, "units", "warn", "not installed"), "{report:#}");
    assert!(has(&report, "plugins", "ok", "cargo-check"), "{report:#}");
    assert!(has(&report, "plugins", "fail", "refused"), "{report:#}");
    // Python tools are installed here; whether gopls is depends on the machine.
    assert!(
        has(&report, "languages", "ok", "Python: ruff at"),
        "{report:#}"
    );
    assert!(
        has(&report, "languages", "ok", "Python: pyright-langserver at"),
        "{report:#}"
    );
    let go = common::packaging::have("gopls");
    assert!(
        if go {
            has(&report, "languages", "ok", "Go: gopls")
        } else {
            has(
                &report,
                "languages",
                "warn",
                "Go types: none: install gopls",
            )
        },
        "{report:#}"
    );
    assert!(
        checks(&report, "languages")
            .iter()
            .all(|c| !c["message"].as_str().unwrap().contains("Rust")),
        "no Rust in this workspace: {report:#}"
    );
    // Without a service, the lookups are this shell's, and each line says so.
    assert!(
        has(
            &report,
            "languages",
            "info",
            "no service running: looked up on this shell's PATH"
        ),
        "{report:#}"
    );
    assert!(
        has(&report, "languages", "ok", "(this shell's PATH)"),
        "{report:#}"
    );
    // The installed hook runs a bare `openfiles`, which is on no PATH here: it does not
    // resolve (found by looking, not by running the command).
    assert!(
        has(&report, "hooks", "fail", "claude: ")
            && has(&report, "hooks", "fail", "not found on PATH"),
        "{report:#}"
    );
    assert!(has(&report, "hooks", "warn", "gemini: "), "{report:#}");
    assert_eq!(checks(&report, "inotify").len(), 2, "{report:#}");
}

#[test]
fn doctor_text_is_plain_when_not_a_terminal() {
    let env = common::Env::new();
    let ws = env.workspace("w");
    let (code, _, text) = doctor(&env, &ws, &[]);
    assert_eq!(code, Some(1));
    assert!(!text.contains('\x1b'), "colour without a TTY: {text:?}");
    assert!(text.contains("FAIL not reachable"), "{text}");
    assert!(
        text.lines().last().unwrap().contains("problem(s)"),
        "{text}"
    );
}

#[test]
fn doctor_flags_a_socket_with_loose_permissions() {
    let env = common::Env::new();
    let ws = env.workspace("w");
    let dir = env.socket.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    // A socket file nobody listens on any more, world-writable in a shared folder.
    drop(std::os::unix::net::UnixListener::bind(&env.socket).unwrap());
    std::fs::set_permissions(&env.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, report, _) = doctor(&env, &ws, &["--json"]);
    assert_eq!(code, Some(1));
    let sock = &checks(&report, "socket")[0];
    assert_eq!(sock["level"], "fail", "{report:#}");
    let msg = sock["message"].as_str().unwrap();
    assert!(msg.contains("0666") && msg.contains("0755"), "{msg}");
}

#[test]
fn doctor_sees_a_service_started_by_hand() {
    let env = common::Env::new();
    let ws = env.workspace("w");
    let svc = env.serve(&["--workspace", ws.to_str().unwrap()]);
    let (_, report, _) = doctor(&env, &ws, &["--json"]);
    let service = &checks(&report, "service")[0];
    assert_eq!(service["level"], "ok", "{report:#}");
    let msg = service["message"].as_str().unwrap();
    assert!(
        msg.contains("started by hand (not socket-activated)"),
        "{msg}"
    );
    assert!(msg.contains(&format!("pid {}", svc.pid())), "{msg}");
    assert!(msg.contains("1 workspace(s)"), "{msg}");
    // The service binds 0600 in a 0700 folder.
    assert_eq!(checks(&report, "socket")[0]["level"], "ok", "{report:#}");
    svc.terminate();
}

#[test]
fn doctor_counts_hooks_installed_for_the_user() {
    let env = common::Env::new();
    let ws = env.workspace("w");
    // `hooks install --user` writes the user's configuration under HOME (the env's dir).
    common::packaging::ok(
        env.command(&["hooks", "install", "--user", "--agent", "codex"])
            .env("HOME", env.dir.path()),
    );
    let (_, report, _) = doctor(&env, &ws, &["--json"]);
    assert!(
        has(&report, "hooks", "ok", "codex (all workspaces): "),
        "{report:#}"
    );
    assert!(
        !has(&report, "hooks", "warn", "no agent hooks"),
        "{report:#}"
    );
}

/// The service's PATH is not the shell's: `doctor` reports what the service finds (ruff on
/// its PATH only; a rust-analyzer there that fails its probe, as rustup's proxy does without
/// the component), and checks that each installed hook's program resolves (one that does
/// not fails) without running the hook.
#[test]
fn doctor_asks_the_service_for_its_tools_and_resolves_the_installed_hooks() {
    let env = common::Env::new();
    let ws = env.workspace("proj");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join("app.py"), "x = 1\n").unwrap();
    std::fs::write(ws.join("lib.rs"), "").unwrap();

    let svc_bin = env.dir.path().join("service-bin");
    script(&svc_bin, "ruff", "exit 0");
    script(
        &svc_bin,
        "rust-analyzer",
        "echo \"error: Unknown binary 'rust-analyzer' in official toolchain\" >&2; exit 1",
    );
    let shell_bin = env.dir.path().join("shell-bin");
    script(&shell_bin, "rust-analyzer", "exit 0");

    let svc = env.serve_command({
        let mut cmd = env.command(&["serve", "--workspace", ws.to_str().unwrap()]);
        cmd.env("PATH", format!("{}:/usr/bin", svc_bin.display()));
        cmd
    });

    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    std::fs::write(
        ws.join(".claude/settings.json"),
        r#"{"hooks":{"PostToolUse":[{"hooks":[{"type":"command","command":"openfiles hook --agent claude"}]}]}}"#,
    )
    .unwrap();
    common::packaging::ok(
        env.command(&[
            "hooks",
            "install",
            "--agent",
            "codex",
            "--bin",
            common::bin(),
            "--workspace",
        ])
        .arg(&ws)
        .env("HOME", env.dir.path()),
    );
    // The user trusted the project in Codex (else Codex never reads its `.codex/`).
    let codex_config = env.dir.path().join(".codex/config.toml");
    let mut text = std::fs::read_to_string(&codex_config).unwrap_or_default();
    text.push_str(&format!(
        "\n[projects.{:?}]\ntrust_level = \"trusted\"\n",
        ws.display().to_string()
    ));
    std::fs::write(&codex_config, text).unwrap();

    let out = common::packaging::output(
        env.command(&["doctor", "--json", "--workspace"])
            .arg(&ws)
            .env("HOME", env.dir.path())
            .env("XDG_CONFIG_HOME", env.dir.path().join("config-home"))
            .env("PATH", format!("{}:/usr/bin", shell_bin.display())),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));

    let ruff = format!(
        "Python: ruff at {}/ruff (found by the service)",
        svc_bin.display()
    );
    assert!(has(&report, "languages", "ok", &ruff), "{report:#}");
    let ra = format!(
        "Rust: the service does not use rust-analyzer at {}/rust-analyzer",
        svc_bin.display()
    );
    assert!(has(&report, "languages", "warn", &ra), "{report:#}");
    assert!(
        has(
            &report,
            "languages",
            "warn",
            "Unknown binary 'rust-analyzer'"
        ),
        "the probe's own words: {report:#}"
    );
    assert!(
        !has(&report, "languages", "ok", "shell-bin"),
        "nothing from the shell's PATH while the service answers: {report:#}"
    );

    let claude = checks(&report, "hooks")
        .into_iter()
        .find(|c| c["message"].as_str().unwrap().starts_with("claude: "))
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(claude["level"], "fail", "{report:#}");
    let msg = claude["message"].as_str().unwrap();
    assert!(
        msg.contains("does not resolve") && msg.contains("not found"),
        "{msg}"
    );
    assert!(
        has(&report, "hooks", "ok", "as `hooks install` writes it")
            && has(&report, "hooks", "ok", "is this openfiles"),
        "the codex hook with an absolute path resolves: {report:#}"
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "a hook that cannot run is broken"
    );
    svc.terminate();
}

/// `doctor` asks each agent's own rules, not only whether the command resolves: Codex's
/// project and hook trust, Gemini's folder trust, Claude's `disableAllHooks`. It never says
/// "ok" for a hook the agent will skip.
#[test]
fn doctor_says_when_the_agent_itself_will_skip_the_hook() {
    let env = common::Env::new();
    let ws = env.workspace("proj");
    let home = env.dir.path();
    for agent in ["codex", "gemini", "claude"] {
        common::packaging::ok(
            env.command(&[
                "hooks",
                "install",
                "--agent",
                agent,
                "--bin",
                common::bin(),
                "--workspace",
            ])
            .arg(&ws)
            .env("HOME", home),
        );
    }
    let line = |report: &Value, agent: &str| -> Value {
        checks(report, "hooks")
            .into_iter()
            .find(|c| {
                c["message"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{agent}: "))
            })
            .cloned()
            .unwrap_or_else(|| panic!("{report:#}"))
    };
    let (_, report, _) = doctor(&env, &ws, &["--json"]);
    let codex = line(&report, "codex");
    assert_eq!(codex["level"], "warn", "{codex}");
    assert!(
        codex["message"]
            .as_str()
            .unwrap()
            .contains("only in a trusted project"),
        "{codex}"
    );
    let gemini = line(&report, "gemini");
    assert_eq!(gemini["level"], "warn", "{gemini}");
    assert!(
        gemini["message"]
            .as_str()
            .unwrap()
            .contains("trusted folder"),
        "{gemini}"
    );
    assert_eq!(line(&report, "claude")["level"], "ok", "{report:#}");

    // The user trusts the project in Codex and the folder in Gemini; Claude's hooks are off.
    let codex_config = home.join(".codex/config.toml");
    let trusted = std::fs::read_to_string(&codex_config).unwrap();
    std::fs::write(
        &codex_config,
        format!(
            "{trusted}\n[projects.{:?}]\ntrust_level = \"trusted\"\n",
            ws.display().to_string()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/trustedFolders.json"),
        serde_json::json!({ ws.parent().unwrap().join("proj").to_str().unwrap(): "TRUST_FOLDER" })
            .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(
        home.join(".claude/settings.json"),
        r#"{"disableAllHooks": true}"#,
    )
    .unwrap();
    let (_, report, _) = doctor(&env, &ws, &["--json"]);
    let codex = line(&report, "codex");
    assert!(
        codex["level"] == "ok"
            && codex["message"]
                .as_str()
                .unwrap()
                .contains("as `hooks install` writes it"),
        "{codex}"
    );
    assert_eq!(line(&report, "gemini")["level"], "ok", "{report:#}");
    let claude = line(&report, "claude");
    assert_eq!(claude["level"], "warn", "{claude}");
    assert!(
        claude["message"]
            .as_str()
            .unwrap()
            .contains("disableAllHooks"),
        "{claude}"
    );

    // Our trust record gone (the hook as Codex's /hooks screen shows it: untrusted).
    std::fs::write(
        &codex_config,
        format!(
            "[projects.{:?}]\ntrust_level = \"trusted\"\n",
            ws.display().to_string()
        ),
    )
    .unwrap();
    let (_, report, _) = doctor(&env, &ws, &["--json"]);
    let codex = line(&report, "codex");
    assert!(
        codex["level"] == "warn"
            && codex["message"]
                .as_str()
                .unwrap()
                .contains("the hook is not trusted"),
        "{codex}"
    );
}

/// Each language present gets its checker, or "none: install X" with the command for this
/// machine's package manager; a checker that is only used when enabled says so.
#[test]
fn doctor_lists_each_language_with_its_checker_or_how_to_install_one() {
    let env = common::Env::new();
    let ws = env.workspace("polyglot");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    for (f, text) in [
        ("Dockerfile", "FROM alpine\n"),
        ("deploy/app.yaml", "a: 1\n"),
        ("web/site.css", "a {}\n"),
        ("web/index.php", "<?php\n"),
        ("Taskfile.toml", "a = 1\n"),
        ("native/lib.c", "int f(void);\n"),
    ] {
        let p = ws.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    // A PATH holding only a YAML server (a stand-in script: doctor only looks it up).
    let bin = env.dir.path().join("only-yaml");
    script(&bin, "yaml-language-server", "exit 0");
    let out = common::packaging::output(
        env.command(&["doctor", "--json", "--workspace"])
            .arg(&ws)
            .env("HOME", env.dir.path())
            .env("XDG_CONFIG_HOME", env.dir.path().join("config-home"))
            .env("PATH", &bin),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let yaml = format!(
        "YAML: yaml-language-server at {}/yaml-language-server",
        bin.display()
    );
    assert!(has(&report, "languages", "ok", &yaml), "{report:#}");
    for line in [
        "Dockerfile lint: none: install docker-langserver: `npm install -g dockerfile-language-server-nodejs`",
        "CSS lint: none: install vscode-css-language-server: `npm install -g vscode-langservers-extracted`",
        "PHP types: none: install intelephense: `npm install -g intelephense`",
        "TOML syntax: none: install openfiles-taplo-lsp: `npm install -g --install-links <openfiles checkout>/plugins/lsp/taplo`",
        // The knock-on role: what finds callers an edit broke in files nobody edited.
        "C/C++ project: none: install clang (or gcc)",
    ] {
        assert!(has(&report, "languages", "warn", line), "{line}: {report:#}");
    }
    // Languages the workspace does not hold are not listed.
    for absent in ["Python", "Go", "Rust"] {
        assert!(
            !checks(&report, "languages")
                .iter()
                .any(|c| c["message"].as_str().unwrap().starts_with(absent)),
            "{absent}: {report:#}"
        );
    }
}
