//! `contrib/ci` and `contrib/devcontainer` run as a CI job and a container build would run
//! them, in fresh environments (a new HOME, no service manager, no XDG_RUNTIME_DIR, no
//! service): the CI steps in order — install an openfiles tree, install Claude's hook, the
//! agent's hook run from the settings file it wrote, the job summary from the real session
//! — and the dev container Feature's `install.sh` as an unprivileged user, ending in the
//! agent's hook getting pyright's problem back. Every service started here is stopped.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::hook::{run_hook, BIN};
use common::packaging::repo;

/// An installed openfiles tree (`bin/openfiles`, `lib/openfiles/plugins/`) with the real
/// lsp plugin, as a release archive or `scripts/install.sh` lays it out.
fn dist(dir: &Path) -> PathBuf {
    let d = dir.join("dist");
    std::fs::create_dir_all(d.join("bin")).unwrap();
    std::fs::create_dir_all(d.join("lib/openfiles/plugins")).unwrap();
    std::fs::copy(BIN, d.join("bin/openfiles")).unwrap();
    let lsp = common::plugins::plugin("lsp");
    std::fs::copy(
        &lsp,
        d.join("lib/openfiles/plugins")
            .join(lsp.file_name().unwrap()),
    )
    .unwrap();
    d
}

/// The system `PATH` without the test binary's folder (what a runner has before install).
fn system_path() -> std::ffi::OsString {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::env::split_paths(&rest).filter(|p| p != bin_dir)).unwrap()
}

/// A command in the fresh environment: HOME, TMPDIR, `PATH`, and none of the service
/// manager's or openfiles' variables.
fn fresh(
    program: impl AsRef<std::ffi::OsStr>,
    home: &Path,
    tmp: &Path,
    path: &std::ffi::OsStr,
) -> Command {
    let mut c = Command::new(program);
    c.env("HOME", home).env("TMPDIR", tmp).env("PATH", path);
    for var in [
        "XDG_RUNTIME_DIR",
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "OPENFILES_SOCKET",
        "OPENFILES_CONFIG",
        "OPENFILES_STATE_DIR",
        "OPENFILES_PLUGIN_PATH",
        "OPENFILES_AUTOSTART",
        "NOTIFY_SOCKET",
        "LISTEN_FDS",
        "LISTEN_PID",
        "DBUS_SESSION_BUS_ADDRESS",
        "CLAUDE_PROJECT_DIR",
        "GITHUB_PATH",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_WORKSPACE",
        "RUST_LOG",
    ] {
        c.env_remove(var);
    }
    c
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The command Claude would run after an edit, from the settings file `hooks install` wrote.
fn claude_hook_command(home: &Path) -> String {
    let text = std::fs::read_to_string(home.join(".claude/settings.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cmd = v["hooks"]["PostToolUse"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["hooks"].as_array().into_iter().flatten())
        .filter_map(|h| h["command"].as_str())
        .find(|c| c.contains("openfiles") && c.contains("hook"))
        .unwrap_or_else(|| panic!("no openfiles hook in {text}"));
    cmd.to_owned()
}

fn python_project(dir: &Path) -> (PathBuf, PathBuf) {
    let ws = dir.join("repo");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let file = ws.join("m.py");
    std::fs::write(&file, "def f():\n    return undefined_name\n").unwrap();
    (ws.canonicalize().unwrap(), file.canonicalize().unwrap())
}

/// Stop the service `openfiles status` names (run as `cmd` builds it).
fn stop_service(mut status: Command) {
    let Ok(out) = status.args(["status", "--json"]).output() else {
        return;
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
        return;
    };
    if let Some(pid) = v["pid"].as_i64() {
        common::signal(pid as i32, libc::SIGTERM);
        common::wait_until("the autostarted service stops", || {
            // SAFETY: signal 0 only checks that the process exists.
            unsafe { libc::kill(pid as i32, 0) != 0 }
        });
    }
}

#[test]
fn ci_steps_in_order_give_the_agent_feedback_and_the_job_a_summary() {
    let tmp = tempfile::Builder::new().prefix("of-ci").tempdir().unwrap();
    let dir = tmp.path();
    let home = dir.join("home");
    let tmpdir = dir.join("tmp");
    std::fs::create_dir_all(home.join(".config/openfiles")).unwrap();
    std::fs::create_dir_all(&tmpdir).unwrap();
    // Room for cold language servers on a loaded machine.
    std::fs::write(
        home.join(".config/openfiles/config.toml"),
        "[hooks]\ntimeout_ms = 60000\n",
    )
    .unwrap();
    let source = dist(dir);
    let prefix = dir.join("prefix");
    let github_path = dir.join("github_path");
    let summary = dir.join("summary.md");
    let ci = repo().join("contrib/ci");
    let path = system_path();

    // 1. install: the tree lands in the prefix, whose bin/ goes on the job's PATH.
    let out = fresh("sh", &home, &tmpdir, &path)
        .arg(ci.join("install.sh"))
        .env("OPENFILES_SOURCE", &source)
        .env("OPENFILES_PREFIX", &prefix)
        .env("GITHUB_PATH", &github_path)
        .output()
        .unwrap();
    ok(out, "install.sh");
    assert!(prefix.join("bin/openfiles").is_file());
    assert!(prefix
        .join("lib/openfiles/plugins/libopenfiles_plugin_lsp.so")
        .is_file());
    let added = std::fs::read_to_string(&github_path).unwrap();
    assert_eq!(added.trim(), prefix.join("bin").to_str().unwrap());
    let job_path = std::env::join_paths(
        std::iter::once(prefix.join("bin")).chain(std::env::split_paths(&path)),
    )
    .unwrap();

    // 2. hooks: Claude's user settings run `openfiles hook`.
    let out = fresh("sh", &home, &tmpdir, &job_path)
        .arg(ci.join("hooks.sh"))
        .env("OPENFILES_AGENTS", "claude")
        .output()
        .unwrap();
    ok(out, "hooks.sh");
    let hook = claude_hook_command(&home);

    // 3. the agent edits a file; its hook, as Claude runs it, starts the service and gets
    //    the problem.
    let (ws, file) = python_project(dir);
    let mut agent = fresh("sh", &home, &tmpdir, &job_path);
    agent.arg("-c").arg(&hook).current_dir(&ws);
    let out = run_hook(&mut agent, &common::hook::write_payload(&file));
    let text = common::hook::additional_context(&out);
    assert!(text.contains("undefined_name"), "{text}");

    // 4. the summary, from the real session.
    let out = fresh("sh", &home, &tmpdir, &job_path)
        .arg(ci.join("summary.sh"))
        .env("GITHUB_WORKSPACE", &ws)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    ok(out, "summary.sh");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.starts_with("## openfiles: "), "{md}");
    assert!(
        md.contains("error(s)") && md.contains("in 1 edited file(s)"),
        "{md}"
    );
    assert!(md.contains("| m.py | 2:12 | error |"), "{md}");
    // Rendered as `undefined_name`: the underscore is a character reference.
    assert!(md.contains("undefined&#95;name"), "{md}");
    // Asked to, the step fails the job when errors are left.
    let st = fresh("sh", &home, &tmpdir, &job_path)
        .arg(ci.join("summary.sh"))
        .env("GITHUB_WORKSPACE", &ws)
        .env("GITHUB_STEP_SUMMARY", dir.join("again.md"))
        .env("OPENFILES_FAIL_ON_ERRORS", "1")
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(1));

    stop_service(fresh(
        prefix.join("bin/openfiles"),
        &home,
        &tmpdir,
        &job_path,
    ));
}

/// The uid the Feature test runs as (`nobody`).
const NOBODY: u32 = 65534;

#[test]
fn devcontainer_feature_installs_as_an_unprivileged_user_and_the_hook_gets_feedback() {
    if !nix::unistd::geteuid().is_root()
        || Command::new("setpriv").arg("--version").output().is_err()
    {
        eprintln!("SKIPPED: needs root and setpriv to become an unprivileged user");
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("of-feature")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = dir.join("home");
    let tmpdir = dir.join("tmp");
    std::fs::create_dir_all(home.join(".config/openfiles")).unwrap();
    std::fs::create_dir_all(&tmpdir).unwrap();
    std::fs::write(
        home.join(".config/openfiles/config.toml"),
        "[hooks]\ntimeout_ms = 60000\n",
    )
    .unwrap();
    let source = dist(dir);
    let (ws, file) = python_project(dir);
    for p in [&home, &tmpdir, &ws] {
        Command::new("chown")
            .args(["-R", &format!("{NOBODY}:{NOBODY}")])
            .arg(p)
            .status()
            .unwrap();
    }
    // The user's own PATH: system folders only (root's tool folders are not theirs).
    let path = std::ffi::OsString::from("/usr/local/bin:/usr/bin:/bin");
    let as_user = |program: &Path| {
        let mut c = fresh("setpriv", &home, &tmpdir, &path);
        c.args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "--",
        ])
        .arg(program)
        .current_dir(&home);
        c
    };
    let feature = repo().join("contrib/devcontainer/src/openfiles");
    let prefix = home.join(".local");
    // Options reach install.sh as upper-case variables (containers.dev).
    let out = as_user(Path::new("/bin/sh"))
        .arg(feature.join("install.sh"))
        .env("AGENTS", "claude")
        .env("SOURCE", &source)
        .env("PREFIX", &prefix)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    ok(out, "the Feature's install.sh");
    assert!(prefix.join("bin/openfiles").is_file());
    let hook = claude_hook_command(&home);

    let job_path = std::ffi::OsString::from(format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        prefix.join("bin").display()
    ));
    let mut agent = fresh("setpriv", &home, &tmpdir, &job_path);
    agent
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "--",
            "/bin/sh",
            "-c",
        ])
        .arg(&hook)
        .current_dir(&ws);
    let out = run_hook(&mut agent, &common::hook::write_payload(&file));
    let text = common::hook::additional_context(&out);
    assert!(text.contains("undefined_name"), "{text}");

    let mut status = fresh("setpriv", &home, &tmpdir, &job_path);
    status
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "--",
        ])
        .arg(prefix.join("bin/openfiles"));
    // Signalled as root: allowed for any uid.
    stop_service(status);
}

/// Issue: `summary.sh` put file names and checker messages into `$GITHUB_STEP_SUMMARY` as
/// raw Markdown and HTML, so a checker message `<a href=…>Fix: sign in</a>` became a link in
/// the job's page, and a `|` in a file name split the table. Now every cell is text: the
/// characters Markdown or HTML act on are character references. Through the real service and
/// session (the `instant` fixture reports the file's `error: ` line as its message).
#[test]
fn the_job_summary_shows_names_and_messages_as_text() {
    let mut env = common::Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("ws");
    common::git(&ws, &["init", "-q"]);
    let name = "<img src=x onerror=alert(1)>|[y](z)*_.txt";
    let file = ws.join(name);
    std::fs::write(
        &file,
        "error: <a href=https://evil.example/login>Fix: sign in</a> `run` **now** _x_ [l](u) | cell\n",
    )
    .unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let since = env.edited(&[&file]).ts;
    env.wait(&[&file], since, 20_000);
    common::wait_until("the session has the problem", || {
        common::diagnostics(&ws).is_some_and(|d| d.files.get(name).is_some_and(|e| e.errors == 1))
    });
    let summary = env.dir.path().join("summary.md");
    let out = env
        .command_of(Path::new("sh"), &[])
        .arg(repo().join("contrib/ci/summary.sh"))
        .env("OPENFILES_BIN", BIN)
        .env("OPENFILES_WORKSPACE", &ws)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    ok(out, "summary.sh");
    let md = std::fs::read_to_string(&summary).unwrap();
    let row = md
        .lines()
        .find(|l| l.contains("evil.example"))
        .unwrap_or_else(|| panic!("no row with the message:\n{md}"));
    for raw in ["<", ">", "`", "[", "]", "*", "_"] {
        assert!(
            !row.contains(raw),
            "{raw:?} reached the summary raw:\n{row}"
        );
    }
    assert_eq!(
        row.matches('|').count(),
        7,
        "only the table's own separators:\n{row}"
    );
    assert!(
        row.contains("&lt;a href=https://evil.example/login&gt;Fix: sign in&lt;/a&gt;"),
        "{row}"
    );
    assert!(
        row.starts_with("| &lt;img src=x onerror=alert(1)&gt;&#124;&#91;y&#93;(z)&#42;&#95;.txt | 1:1 | error |"),
        "{row}"
    );
}

/// Issue: the dev container Feature pasted its `agents` option into `sh -c`, so an option
/// that closes the quote ran its own command at image build. Now each agent is checked
/// against the known ids and passed as one argument: the build stops with a clear error and
/// nothing runs. Run as the build runs it (root, no `_REMOTE_USER`), in a temporary HOME, with
/// the built `openfiles` on PATH; the control case installs Claude's hook.
#[test]
fn the_feature_never_runs_its_agents_option_as_shell() {
    let tmp = tempfile::Builder::new()
        .prefix("of-feature-agents")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let home = dir.join("home");
    let tmpdir = dir.join("tmp");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmpdir).unwrap();
    let marker = dir.join("MARKER");
    let m = marker.to_str().unwrap();
    let feature = repo().join("contrib/devcontainer/src/openfiles/install.sh");
    let run = |agents: &str| {
        fresh("sh", &home, &tmpdir, &common::hook::path_with_bin())
            .arg(&feature)
            .env("AGENTS", agents)
            .env_remove("SOURCE")
            .env_remove("_REMOTE_USER")
            .env("PREFIX", dir.join("prefix"))
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for agents in [
        format!("claude';touch${{IFS}}{m};'"),
        format!("claude; touch {m}"),
        format!("x'$(touch${{IFS}}{m})'"),
        format!("claude\ntouch {m}"),
        "*".to_owned(),
    ] {
        let out = run(&agents);
        assert!(!marker.exists(), "{agents:?} ran a command: {out:?}");
        assert_eq!(out.status.code(), Some(2), "{agents:?}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("unknown agent"),
            "{agents:?}: {out:?}"
        );
        assert!(!home.join(".claude/settings.json").exists());
    }
    let out = run("claude");
    ok(out, "the Feature with agents=claude");
    assert!(claude_hook_command(&home).contains("hook"));
}
