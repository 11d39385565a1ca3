//! The real agent CLIs (installed from npm by `scripts/install-test-deps.sh` into
//! `/opt/openfiles-agents`, or `$OPENFILES_AGENTS_PREFIX`) run headless against our scripted
//! model stand-in (`tests/agents/model.py`) on loopback, with a fresh HOME, against a real
//! `openfiles serve` with the lsp plugin (ruff + pyright).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{plugins, Env, Service};

/// The file the model writes and the text it holds: an undefined name (ruff F821).
pub const APP: &str = "src/app.py";
pub const APP_TEXT: &str = "def f():\n    return undefined_name\n";
/// A function and its two callers, for the navigation tools.
pub const NAV_TEXT: &str =
    "def greet(name: str) -> str:\n    return \"hi \" + name\n\n\nprint(greet(\"a\"))\nprint(greet(\"b\"))\n";

/// Where the agents are installed.
pub fn prefix() -> PathBuf {
    std::env::var_os("OPENFILES_AGENTS_PREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/openfiles-agents"))
}

/// The agent's program; missing means the test dependencies are not installed.
pub fn agent_bin(name: &str) -> PathBuf {
    let p = prefix().join("node_modules/.bin").join(name);
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-test-deps.sh (it installs the agent CLIs)",
        p.display()
    );
    p
}

/// The scripted model: killed when dropped.
pub struct Model {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Model {
    /// Every request the agent sent, in order.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// One agent run's world: a service on a git workspace, a fresh HOME, the model.
pub struct World {
    pub env: Env,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub model: Model,
    _svc: Service,
}

impl World {
    /// `model_args`: what the stand-in should call (see model.py), given the workspace.
    pub fn new(model_args: impl FnOnce(&Path) -> Vec<std::ffi::OsString>) -> World {
        let mut env = Env::new();
        env.plugin_path = Some(plugins::plugin("lsp").into_os_string());
        let ws = env.workspace("ws");
        super::git(&ws, &["init", "-q"]);
        std::fs::create_dir_all(ws.join("src")).unwrap();
        let home = env.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let svc = env.serve(&["-w", ws.to_str().unwrap()]);
        // Warm the checkers first: these tests assert where the feedback lands, not how fast
        // a cold first edit is (Qwen Code and OpenCode announce no session to warm them).
        let warm = ws.join("src/warm.py");
        std::fs::write(&warm, "x = 1\n").unwrap();
        let r = env.edited(&[&warm]);
        let w = env.wait(&[&warm], r.ts, 120_000);
        assert!(w.complete, "the checkers never answered the warm-up: {w:?}");
        let log = env.dir.path().join("requests.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/model.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg("--log")
            .arg(&log)
            .args(model_args(&ws))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the model prints its port");
        let port = line.trim().parse().expect("a port number");
        World {
            env,
            ws,
            home,
            model: Model { child, port, log },
            _svc: svc,
        }
    }

    /// The stand-in writes `src/app.py` with the agent's file-writing tool.
    pub fn writing() -> World {
        World::new(|ws| {
            vec![
                "--write".into(),
                ws.join(APP).into_os_string(),
                "--content".into(),
                APP_TEXT.into(),
            ]
        })
    }

    /// `src/app.py` holds the undefined name already; the stand-in calls the MCP tool
    /// `openfiles_diagnostics` on it.
    pub fn calling_diagnostics() -> World {
        let world = World::new(|ws| {
            vec![
                "--mcp-tool".into(),
                "openfiles_diagnostics".into(),
                "--mcp-args".into(),
                serde_json::json!({"paths": [ws.join(APP)]})
                    .to_string()
                    .into(),
            ]
        });
        std::fs::write(world.ws.join(APP), APP_TEXT).unwrap();
        world
    }

    /// `src/app.py` defines `greet` and calls it twice; the stand-in calls the MCP tool
    /// `openfiles_references` on it by name (issue 41.7).
    pub fn calling_references() -> World {
        let world = World::new(|ws| {
            vec![
                "--mcp-tool".into(),
                "openfiles_references".into(),
                "--mcp-args".into(),
                serde_json::json!({"path": ws.join(APP), "symbol": "greet"})
                    .to_string()
                    .into(),
            ]
        });
        std::fs::write(world.ws.join(APP), NAV_TEXT).unwrap();
        world
    }

    /// `PATH`: the built `openfiles` first, then the agents.
    pub fn path(&self) -> std::ffi::OsString {
        let bin = Path::new(super::bin()).parent().unwrap().to_owned();
        let rest = std::env::var_os("PATH").unwrap_or_default();
        std::env::join_paths(
            [bin, prefix().join("node_modules/.bin")]
                .into_iter()
                .chain(std::env::split_paths(&rest)),
        )
        .unwrap()
    }

    /// A command in this world: the service's environment, the fresh HOME, PATH, no
    /// telemetry or update checks anywhere.
    pub fn command(&self, program: &Path, args: &[&str]) -> Command {
        let mut c = self.env.command_of(program, args);
        c.current_dir(&self.ws)
            .env("PWD", &self.ws)
            .env("HOME", &self.home)
            .env("PATH", self.path())
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env_remove("CODEX_HOME")
            .env_remove("RUST_LOG")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("NO_UPDATE_NOTIFIER", "1")
            .env("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1")
            .stdin(Stdio::null());
        c
    }

    /// `openfiles hooks install [--mcp] --agent ID --workspace WS`.
    pub fn install(&self, agent: &str, mcp: bool) -> String {
        let mut args = vec!["hooks", "install", "--agent", agent, "--workspace"];
        let ws = self.ws.to_str().unwrap().to_owned();
        args.push(&ws);
        if mcp {
            args.push("--mcp");
        }
        let out = self
            .command(Path::new(super::bin()), &args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Run the agent to its end (failure bound 180 s); its output for messages.
    pub fn run(&self, mut cmd: Command) -> String {
        let out_path = self.env.dir.path().join("agent.out");
        let out = std::fs::File::create(&out_path).unwrap();
        let mut child = cmd
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("the agent CLI");
        let start = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if start.elapsed() > Duration::from_secs(180) {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the agent ran over 180 s: {}",
                    std::fs::read_to_string(&out_path).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::fs::read_to_string(&out_path).unwrap_or_default()
    }
}

/// The checker's message as the hook words it.
pub fn has_f821(text: &str) -> bool {
    text.contains("OpenFiles found") && text.contains("F821 (Ruff)")
}
