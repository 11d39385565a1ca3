//! What the Nix modules do on a switch (`nixos-rebuild`, `home-manager`, `darwin-rebuild
//! switch`), offline against the stub nixpkgs: the order of their activation steps against
//! the order nix-darwin and home-manager run them in, and how a new `settings` reaches the
//! running service — home-manager's reload trigger, and the activation steps of NixOS and
//! nix-darwin, and home-manager's `onChange` on macOS, run under bash.
//!
//! Those steps drive `systemctl --user` and `launchctl`, which have no manager to talk to
//! here (macOS' launchd cannot run on Linux at all): the scripts run as rendered, with a
//! recording stand-in for those two programs (answering as they do: success, "No such
//! process" for an agent that is not running, or another error) and, where the script names
//! a fixed system path (`/etc/openfiles/config.toml`, `/run/current-system`, `/bin/launchctl`,
//! the store's `systemctl`), that one path pointed into a scratch folder.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::packaging::*;

fn eval_modules(store: &Path) -> serde_json::Value {
    let out = ok(nix("nix-instantiate", store)
        .current_dir(repo())
        .args(["--eval", "--strict", "--json", "--expr"])
        .arg("import ./nix/tests/eval.nix {}"));
    serde_json::from_str(&out).expect("eval.nix prints JSON")
}

fn text<'a>(v: &'a serde_json::Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {v:#}"))
}

/// nix-darwin's activation phases, in the order its `activate` script runs them
/// (modules/system/activation-scripts.nix of nix-darwin/nix-darwin a1fa429e, June 2026). A
/// phase not in this list is never run.
const DARWIN_PHASES: &[&str] = &[
    "preActivation",
    "checks",
    "createRun",
    "extraActivation",
    "groups",
    "users",
    "applications",
    "pam",
    "patches",
    "openssh",
    "etc",
    "defaults",
    "userDefaults",
    "launchd",
    "userLaunchd",
    "nix-daemon",
    "time",
    "networking",
    "power",
    "keyboard",
    "fonts",
    "nvram",
    "homebrew",
    "postActivation",
];

/// The nix-darwin phase whose text contains `needle`, and its place in the run.
fn darwin_phase(activation: &serde_json::Value, needle: &str) -> (String, usize) {
    let phases = activation.as_object().expect("activation phases");
    let hits: Vec<&String> = phases
        .iter()
        .filter(|(_, t)| t.as_str().is_some_and(|t| t.contains(needle)))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(hits.len(), 1, "{needle:?} in {hits:?} of {activation:#}");
    let name = hits[0].clone();
    let at = DARWIN_PHASES
        .iter()
        .position(|p| *p == name)
        .unwrap_or_else(|| panic!("{name} is not a phase nix-darwin runs"));
    (name, at)
}

fn at(phase: &str) -> usize {
    DARWIN_PHASES.iter().position(|p| *p == phase).unwrap()
}

/// launchd binds a LaunchAgent's socket when the agent is loaded: the socket's folder is made
/// in a phase nix-darwin runs before `userLaunchd` (and after `checks`, which verify that the
/// user it is given to exists), and home-manager's step declares that it runs before
/// `setupLaunchAgents` and after `writeBoundary`.
#[test]
fn socket_folder_is_made_before_the_agent_is_loaded() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    let dir = "'/Users/alice/Library/Caches/openfiles'";
    let mkdir = format!("mkdir -p {dir}");
    for who in ["activation", "bareActivation"] {
        let activation = &r["darwin"][who];
        let (phase, i) = darwin_phase(activation, &mkdir);
        assert!(
            at("checks") < i && i < at("userLaunchd"),
            "{who}: the folder is made in {phase}"
        );
        for then in [format!("chmod 700 {dir}"), format!("chown 'alice' {dir}")] {
            assert_eq!(darwin_phase(activation, &then).0, phase, "{who}: {then}");
        }
    }

    let order = &r["hmDarwin"]["activationOrder"];
    assert_eq!(order["before"], serde_json::json!(["setupLaunchAgents"]));
    assert_eq!(order["after"], serde_json::json!(["writeBoundary"]));
    let step = text(&r["hmDarwin"]["activation"], "hm activation");
    assert!(
        step.contains(&mkdir) && step.contains(&format!("chmod 700 {dir}")),
        "{step}"
    );
}

/// The steps pass shellcheck: nix-darwin runs `shellcheck --exclude=SC2016,SC1112` on the
/// `activate` script it builds (modules/system/default.nix), so a warning there fails
/// `darwin-rebuild` (e.g. `mkdir -p -m`, SC2174). The home-manager and NixOS steps are held
/// to the same standard.
#[test]
fn activation_steps_pass_shellcheck() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    let tmp = tempfile::tempdir().unwrap();
    let check = |name: &str, script: String, args: &[&str]| {
        let file = tmp.path().join(name);
        std::fs::write(&file, script).unwrap();
        let out = output(Command::new("shellcheck").args(args).arg(&file));
        assert!(
            out.status.success(),
            "{name}: shellcheck:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // As nix-darwin's `activate` holds them: its header, then the phases in their order.
    let darwin = &r["darwin"]["activation"];
    let mut activate = String::from(
        "#!/usr/bin/env bash\nset -e\nset -o pipefail\nsystemConfig=/nix/store/x-darwin-system\n",
    );
    for phase in DARWIN_PHASES {
        if let Some(t) = darwin.get(*phase).and_then(|t| t.as_str()) {
            activate.push_str(t);
            activate.push('\n');
        }
    }
    assert!(activate.contains("kill SIGHUP"), "{activate}");
    check("activate", activate, &["--exclude=SC2016,SC1112"]);
    let bash = &["-s", "bash"];
    check(
        "hm-activation",
        format!(
            "{}\n{}",
            text(&r["hmDarwin"]["activation"], "hm activation"),
            text(&r["hmDarwinSettings"]["onChange"], "onChange")
        ),
        bash,
    );
    check(
        "nixos-user-activation",
        text(&r["nixos"]["userActivation"], "userActivation").to_owned(),
        bash,
    );
}

/// home-manager on Linux: the service unit names the config file it reads in
/// `X-Reload-Triggers`, and a new `settings` changes that line and nothing else in the unit —
/// which is what makes home-manager's switcher (sd-switch) reload the running service
/// instead of stopping and starting it. Without settings there is no trigger.
#[test]
fn home_manager_units_reload_when_only_the_settings_change() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    let h = &r["hmLinux"];
    let triggers = |unit: &str| -> Vec<String> {
        ini_pairs(unit)
            .into_iter()
            .filter(|(s, k, _)| s == "Unit" && k == "X-Reload-Triggers")
            .map(|(_, _, v)| v)
            .collect()
    };
    let unit = text(&h["serviceUnit"], "unit");
    let changed = text(&h["changed"]["serviceUnit"], "changed unit");
    let source = text(&h["configSource"], "config source");
    let changed_source = text(&h["changed"]["configSource"], "changed config source");
    assert!(source.starts_with("/nix/store/"), "{source}");
    assert_ne!(source, changed_source);
    assert_eq!(triggers(unit), vec![source.to_owned()], "{unit}");
    assert_eq!(triggers(changed), vec![changed_source.to_owned()]);
    let rest = |u: &str| {
        ini_pairs(u)
            .into_iter()
            .filter(|(_, k, _)| k != "X-Reload-Triggers")
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(rest(unit), rest(changed), "only the trigger may differ");
    assert!(
        triggers(text(&h["bareServiceUnit"], "bare unit")).is_empty(),
        "no settings, no file, no trigger"
    );
    // systemd itself ignores X- keys; the unit with the trigger verifies.
    let (good, out) = verify_store_units(&[
        ("openfiles.socket", text(&h["socketUnit"], "socket")),
        ("openfiles.service", unit),
    ]);
    assert!(good && out.trim().is_empty(), "verify complained:\n{out}");
    // On Linux the reload is systemd's business: no launchd hook.
    assert_eq!(h["hasOnChange"], false);
}

/// A folder of stand-in programs that record their arguments, one line per call, in `log`.
/// `launchctl kill` answers according to the file `mode` (`running`, `stopped`, `broken`),
/// `systemctl --user is-active` according to `active` (`yes`/`no`), `id -u -- alice` is 501.
struct Fakes {
    dir: tempfile::TempDir,
}

impl Fakes {
    fn new() -> Fakes {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let d = dir.path().display();
        let scripts = [
            (
                "launchctl",
                format!(
                    r#"#!/bin/sh
echo "launchctl $*" >> {d}/log
case $(cat {d}/mode) in
  running) exit 0 ;;
  stopped) echo "Could not kill service: 3: No such process" >&2; exit 3 ;;
  *) echo "Could not kill service: 1: Operation not permitted" >&2; exit 1 ;;
esac
"#
                ),
            ),
            (
                "systemctl",
                format!(
                    r#"#!/bin/sh
echo "systemctl $*" >> {d}/log
case $* in
  *is-active*) [ "$(cat {d}/active)" = yes ] ;;
  *) [ ! -e {d}/fail ] ;;
esac
"#
                ),
            ),
            (
                "id",
                r#"#!/bin/sh
[ "$*" = "-u -- alice" ] && { echo 501; exit 0; }
exec /usr/bin/id "$@"
"#
                .to_owned(),
            ),
        ];
        for (name, body) in scripts {
            let p = bin.join(name);
            std::fs::write(&p, body).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Fakes { dir }
    }

    fn bin(&self, name: &str) -> PathBuf {
        self.dir.path().join("bin").join(name)
    }

    fn set(&self, file: &str, value: &str) {
        std::fs::write(self.dir.path().join(file), value).unwrap();
    }

    /// The calls recorded since the last `take`.
    fn take(&self) -> Vec<String> {
        let log = self.dir.path().join("log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        text.lines().map(str::to_owned).collect()
    }

    /// Run `script` with bash the way the activation runs it (`set -eu -o pipefail` for
    /// nix-darwin and home-manager), the stand-ins first on PATH; returns (stdout, stderr).
    fn run(&self, prelude: &str, script: &str, envs: &[(&str, &Path)]) -> (String, String) {
        let path = format!(
            "{}:{}",
            self.dir.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new("bash");
        cmd.env("PATH", path)
            .arg("-c")
            .arg(format!("{prelude}\n{script}"));
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let out = output(&mut cmd);
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(
            out.status.success(),
            "the step failed the activation ({}):\n{script}\nstdout:\n{o}\nstderr:\n{e}",
            out.status
        );
        (o, e)
    }
}

/// nix-darwin: with settings, postActivation (after `etc` put the new file in place, while
/// /run/current-system is still the previous generation) sends SIGHUP to the user's agent when
/// the file differs from the previous generation's; an agent that is not running is no
/// error, any other failure is reported and the activation goes on. Without settings there is
/// no such step.
#[test]
fn nix_darwin_signals_the_agent_when_the_config_changed() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    let d = &r["darwin"];
    let (phase, i) = darwin_phase(&d["activation"], "kill SIGHUP");
    assert!(
        i > at("etc") && i > at("userLaunchd"),
        "the signal is sent in {phase}, before the new file or agent is in place"
    );
    assert!(
        d["bareActivation"].get(&phase).is_none(),
        "{:#}",
        d["bareActivation"]
    );
    let script = text(&d["activation"][&phase], "postActivation");
    // The step compares at activation time: it is the same for any settings.
    assert_eq!(d["changedActivation"][&phase], d["activation"][&phase]);
    let previous = "/run/current-system/etc/openfiles/config.toml";
    assert!(
        script.contains(previous) && script.contains("$systemConfig/etc/openfiles/config.toml")
    );
    assert!(script
        .contains("launchctl kill SIGHUP \"gui/$(id -u -- 'alice')/org.openfiles.openfiles\""));

    let fakes = Fakes::new();
    let gens = tempfile::tempdir().unwrap();
    let (old, new) = (gens.path().join("old"), gens.path().join("new"));
    for g in [&old, &new] {
        std::fs::create_dir_all(g.join("etc/openfiles")).unwrap();
    }
    let write = |g: &Path, t: &serde_json::Value| {
        std::fs::write(g.join("etc/openfiles/config.toml"), text(t, "config")).unwrap()
    };
    let script = script.replace("/run/current-system/", &format!("{}/", old.display()));
    let run = || {
        fakes.run(
            "set -e\nset -o pipefail",
            &script,
            &[("systemConfig", &new)],
        )
    };
    let sighup = vec!["launchctl kill SIGHUP gui/501/org.openfiles.openfiles".to_owned()];

    // Same file in both generations: nothing to do.
    write(&old, &d["configText"]);
    write(&new, &d["configText"]);
    fakes.set("mode", "running");
    run();
    assert!(fakes.take().is_empty());

    // New settings, agent running: SIGHUP to it.
    write(&new, &d["changedConfigText"]);
    let (out, err) = run();
    assert_eq!(fakes.take(), sighup);
    assert!(out.contains("reloaded") && err.is_empty(), "{out}{err}");

    // Not running (nothing connected since it was loaded): quietly nothing.
    fakes.set("mode", "stopped");
    let (_, err) = run();
    assert_eq!(fakes.take(), sighup);
    assert!(err.is_empty(), "{err}");

    // Another failure: said, and the activation goes on.
    fakes.set("mode", "broken");
    let (_, err) = run();
    assert_eq!(fakes.take(), sighup);
    assert!(
        err.contains("could not signal") && err.contains("Operation not permitted"),
        "{err}"
    );

    // First activation (no previous generation's file): the agent is told too.
    std::fs::remove_file(old.join("etc/openfiles/config.toml")).unwrap();
    fakes.set("mode", "running");
    run();
    assert_eq!(fakes.take(), sighup);
}

/// home-manager on macOS: the config file's `onChange` (run by home-manager when the linked
/// file changed) sends SIGHUP to the agent in the user's GUI domain, as the user running the
/// activation; not running is no error; the step never fails the activation. Without
/// settings there is no file and no hook.
#[test]
fn home_manager_on_macos_signals_the_agent_when_the_config_changed() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    let s = &r["hmDarwinSettings"];
    assert_eq!(s["bareFiles"], serde_json::json!([]));
    let hook = text(&s["onChange"], "onChange");
    assert!(
        hook.contains("/bin/launchctl kill SIGHUP \"gui/$UID/org.openfiles.openfiles\""),
        "{hook}"
    );
    let fakes = Fakes::new();
    let hook = hook.replace(
        "/bin/launchctl",
        &fakes.bin("launchctl").display().to_string(),
    );
    let uid = ok(Command::new("id").arg("-u"));
    let sighup = vec![format!(
        "launchctl kill SIGHUP gui/{}/org.openfiles.openfiles",
        uid.trim()
    )];
    let prelude = "set -eu\nset -o pipefail";
    for (mode, quiet) in [("running", true), ("stopped", true), ("broken", false)] {
        fakes.set("mode", mode);
        let (_, err) = fakes.run(prelude, &hook, &[]);
        assert_eq!(fakes.take(), sighup, "{mode}");
        assert_eq!(err.is_empty(), quiet, "{mode}: {err}");
    }
}

/// NixOS: `nixos-rebuild switch` runs each logged-in user's activation, not their services'
/// reloads. The module's user activation step reloads a running service when
/// /etc/openfiles/config.toml changed since the step last ran, restarts it when the file went
/// away (the unit lost OPENFILES_CONFIG), and otherwise leaves it alone; a stopped service is
/// never started. The unit itself does not change with the settings (it names the /etc path).
#[test]
fn nixos_user_activation_reloads_the_running_service_when_the_config_changed() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    let n = &r["nixos"];
    assert_eq!(n["serviceUnit"], n["changed"]["serviceUnit"]);
    assert_ne!(n["configText"], n["changed"]["configText"]);
    assert_eq!(n["userActivation"], n["changed"]["userActivation"]);
    assert_eq!(n["disabledHasActivation"], false);
    let script = text(&n["userActivation"], "userActivation");
    let systemctl = text(&n["systemctl"], "systemctl");
    let etc = "/etc/openfiles/config.toml";
    assert!(
        script.contains(etc)
            && script.contains(&format!("{systemctl} --user reload openfiles.service"))
    );

    let fakes = Fakes::new();
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.toml"), tmp.path().join("b.toml"));
    std::fs::write(&a, text(&n["configText"], "config")).unwrap();
    std::fs::write(&b, text(&n["changed"]["configText"], "config")).unwrap();
    let link = tmp.path().join("etc-openfiles-config.toml");
    let point = |to: Option<&Path>| {
        let _ = std::fs::remove_file(&link);
        if let Some(to) = to {
            std::os::unix::fs::symlink(to, &link).unwrap();
        }
    };
    let runtime = tempfile::tempdir().unwrap();
    let script = script
        .replace(etc, &link.display().to_string())
        .replace(systemctl, &fakes.bin("systemctl").display().to_string());
    // NixOS runs the snippets with an ERR trap, not `set -e`.
    let run = || fakes.run("", &script, &[("XDG_RUNTIME_DIR", runtime.path())]);
    let is_active = "systemctl --user is-active --quiet openfiles.service".to_owned();
    let reload = "systemctl --user reload openfiles.service".to_owned();

    // First run after login: the service has not started; nothing to tell it.
    point(Some(&a));
    fakes.set("active", "no");
    run();
    assert_eq!(fakes.take(), vec![is_active.clone()]);
    let stamp = runtime.path().join("openfiles/config.applied");
    assert!(stamp.is_file());
    // A switch that leaves the settings alone: nothing, even with the service running.
    fakes.set("active", "yes");
    run();
    assert!(fakes.take().is_empty());
    // New settings: reload.
    point(Some(&b));
    run();
    assert_eq!(fakes.take(), vec![is_active.clone(), reload.clone()]);
    run();
    assert!(fakes.take().is_empty(), "reloaded once per change");
    // Changed while stopped: not started, and not reloaded later for the same change.
    point(Some(&a));
    fakes.set("active", "no");
    run();
    assert_eq!(fakes.take(), vec![is_active.clone()]);
    fakes.set("active", "yes");
    run();
    assert!(fakes.take().is_empty());
    // A reload that fails is said, not fatal.
    point(Some(&b));
    fakes.set("fail", "");
    let (_, err) = run();
    assert_eq!(fakes.take(), vec![is_active.clone(), reload]);
    assert!(err.contains("reload failed"), "{err}");
    std::fs::remove_file(fakes.dir.path().join("fail")).unwrap();
    // Settings emptied: the file is gone and so is the unit's OPENFILES_CONFIG; restart.
    point(None);
    run();
    assert_eq!(
        fakes.take(),
        vec![
            is_active,
            "systemctl --user try-restart openfiles.service".to_owned()
        ]
    );
}
