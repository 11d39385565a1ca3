//! The systemd units and the LaunchAgent plist as shipped and as `openfiles service install`
//! writes them: `systemd-analyze verify` is silent on them, `systemctl --global enable`
//! enables the socket, the plist parses with plistlib and has launchd's keys, install and
//! uninstall touch only their own files, and a binary run from a Nix profile gets the
//! profile path in `ExecStart`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::packaging::*;

/// `openfiles service …` with HOME and XDG_CONFIG_HOME under `home`.
fn service(home: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("OPENFILES_SOCKET")
        .arg("service");
    c
}

fn unit_dir(home: &Path) -> PathBuf {
    home.join(".config/systemd/user")
}

#[test]
fn installed_units_pass_systemd_analyze_verify_without_output() {
    let home = tempfile::tempdir().unwrap();
    let out = ok(service(home.path()).arg("install"));
    assert!(
        out.contains("systemctl --user enable --now openfiles.socket"),
        "{out}"
    );
    let dir = unit_dir(home.path());
    let (good, text) = verify_units(&[dir.join("openfiles.socket"), dir.join("openfiles.service")]);
    assert!(good && text.trim().is_empty(), "verify complained:\n{text}");
    let service = std::fs::read_to_string(dir.join("openfiles.service")).unwrap();
    let exe = Path::new(BIN).canonicalize().unwrap();
    assert!(
        service.contains(&format!("\nExecStart={} serve\n", exe.display())),
        "{service}"
    );
}

#[test]
fn packaged_units_verify_once_the_binary_path_is_substituted() {
    // What the Nix package and distro packagers do: replace /usr/bin/openfiles.
    let dir = tempfile::tempdir().unwrap();
    let src = repo().join("packaging/systemd");
    let service = std::fs::read_to_string(src.join("openfiles.service"))
        .unwrap()
        .replace("/usr/bin/openfiles", BIN);
    std::fs::write(dir.path().join("openfiles.service"), service).unwrap();
    std::fs::copy(
        src.join("openfiles.socket"),
        dir.path().join("openfiles.socket"),
    )
    .unwrap();
    let (good, text) = verify_units(&[
        dir.path().join("openfiles.socket"),
        dir.path().join("openfiles.service"),
    ]);
    assert!(good && text.trim().is_empty(), "verify complained:\n{text}");
}

#[test]
fn global_enable_of_the_service_enables_the_socket() {
    let root = tempfile::tempdir().unwrap();
    let etc = root.path().join("etc/systemd/user");
    std::fs::create_dir_all(&etc).unwrap();
    for unit in ["openfiles.socket", "openfiles.service"] {
        std::fs::copy(repo().join("packaging/systemd").join(unit), etc.join(unit)).unwrap();
    }
    ok(Command::new("systemctl")
        .arg("--global")
        .arg(format!("--root={}", root.path().display()))
        .args(["enable", "openfiles"]));
    let link = etc.join("sockets.target.wants/openfiles.socket");
    let target = std::fs::read_link(&link).expect("sockets.target.wants/openfiles.socket");
    assert_eq!(target, Path::new("/etc/systemd/user/openfiles.socket"));
    // The service itself is not wanted by anything: it starts on the first connection.
    assert!(!etc.join("default.target.wants/openfiles.service").exists());
}

fn assert_launchd_keys(plist: &serde_json::Value, exe: &str, socket: &str) {
    assert_eq!(plist["Label"], "org.openfiles.openfiles");
    assert_eq!(plist["ProgramArguments"], serde_json::json!([exe, "serve"]));
    let listeners = &plist["Sockets"]["Listeners"];
    assert_eq!(listeners["SockPathName"], socket);
    assert_eq!(listeners["SockPathMode"], 0o600);
    assert_eq!(listeners["SockType"], "stream");
    assert_eq!(plist["EnvironmentVariables"]["OPENFILES_SOCKET"], socket);
    assert!(plist.get("RunAtLoad").is_none(), "RunAtLoad must be absent");
    assert!(plist.get("KeepAlive").is_none(), "KeepAlive must be absent");
}

#[test]
fn plist_template_and_installed_plist_parse_with_the_required_keys() {
    let template = plist_json(&repo().join("packaging/launchd/org.openfiles.openfiles.plist"));
    assert_launchd_keys(&template, "@OPENFILES@", "@SOCKET@");

    let home = tempfile::tempdir().unwrap();
    let socket = home.path().join("run/openfiles.sock");
    let out = ok(service(home.path()).arg("--socket").arg(&socket).args([
        "install",
        "--platform",
        "launchd",
    ]));
    assert!(out.contains("launchctl bootstrap gui/"), "{out}");
    let plist_path = home
        .path()
        .join("Library/LaunchAgents/org.openfiles.openfiles.plist");
    let exe = Path::new(BIN).canonicalize().unwrap();
    let plist = plist_json(&plist_path);
    assert_launchd_keys(&plist, exe.to_str().unwrap(), socket.to_str().unwrap());
    assert!(plist["StandardErrorPath"]
        .as_str()
        .unwrap()
        .ends_with("Library/Logs/openfiles.log"));
    // The socket's folder exists and is private, as launchd needs it.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(socket.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);

    ok(service(home.path()).args(["uninstall", "--platform", "launchd"]));
    assert!(!plist_path.exists());
}

#[test]
fn dry_run_writes_nothing_and_shows_the_units() {
    let home = tempfile::tempdir().unwrap();
    let out = ok(service(home.path()).args(["install", "--dry-run"]));
    assert!(
        out.contains("would write") && out.contains("ListenStream=%t/openfiles/openfiles.sock"),
        "{out}"
    );
    assert!(!unit_dir(home.path()).exists());
}

#[test]
fn uninstall_removes_exactly_what_install_wrote() {
    let home = tempfile::tempdir().unwrap();
    let dir = unit_dir(home.path());
    ok(service(home.path()).arg("install"));
    // What `systemctl --user enable openfiles.socket` creates, plus a neighbour's unit.
    std::fs::create_dir_all(dir.join("sockets.target.wants")).unwrap();
    std::os::unix::fs::symlink(
        dir.join("openfiles.socket"),
        dir.join("sockets.target.wants/openfiles.socket"),
    )
    .unwrap();
    std::fs::write(
        dir.join("other.service"),
        "[Service]\nExecStart=/bin/true\n",
    )
    .unwrap();
    let status = output(service(home.path()).arg("status"));
    assert!(status.status.success());
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("enabled: yes"), "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&ok(service(home.path()).args(["status", "--json"]))).unwrap();
    assert_eq!(report["installed"], true, "{report}");
    assert_eq!(report["enabled"], true, "{report}");
    assert!(
        report["problems"].as_array().unwrap().is_empty(),
        "{report}"
    );

    let out = ok(service(home.path()).arg("uninstall"));
    assert!(out.contains("removed"), "{out}");
    assert!(!dir.join("openfiles.socket").exists());
    assert!(!dir.join("openfiles.service").exists());
    assert!(std::fs::symlink_metadata(dir.join("sockets.target.wants/openfiles.socket")).is_err());
    assert!(dir.join("other.service").exists());
    assert_eq!(
        output(service(home.path()).arg("status")).status.code(),
        Some(1)
    );
}

#[test]
fn install_refuses_to_overwrite_a_unit_it_did_not_write() {
    let home = tempfile::tempdir().unwrap();
    let dir = unit_dir(home.path());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("openfiles.service"),
        "[Service]\nExecStart=/opt/mine serve\n",
    )
    .unwrap();
    let out = output(service(home.path()).arg("install"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    assert_eq!(
        std::fs::read_to_string(dir.join("openfiles.service")).unwrap(),
        "[Service]\nExecStart=/opt/mine serve\n"
    );
    // uninstall leaves it alone too
    let out = ok(service(home.path()).arg("uninstall"));
    assert!(out.contains("leaving"), "{out}");
    assert!(dir.join("openfiles.service").exists());
    ok(service(home.path()).args(["install", "--force"]));
    assert!(std::fs::read_to_string(dir.join("openfiles.service"))
        .unwrap()
        .contains("openfiles service install"));
}

#[test]
fn binary_in_the_nix_store_gets_its_profile_path() {
    // A fake store and profile with the real binary hard-linked in (same filesystem as target/).
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let store = tmp.path().join("store");
    let bin_dir = store.join("0123abcd-openfiles-0.1.0/bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let store_bin = bin_dir.join("openfiles");
    if std::fs::hard_link(BIN, &store_bin).is_err() {
        std::fs::copy(BIN, &store_bin).unwrap();
    }
    let home = tmp.path().join("home");
    let profile = home.join(".nix-profile/bin");
    std::fs::create_dir_all(&profile).unwrap();
    std::os::unix::fs::symlink(&store_bin, profile.join("openfiles")).unwrap();

    let run = |path_env: &str| {
        ok(Command::new(profile.join("openfiles"))
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("NIX_STORE_DIR", &store)
            .env("PATH", path_env)
            .args(["service", "install", "--dry-run"]))
    };
    let out = run("/usr/bin:/bin");
    let want = format!("ExecStart={} serve", profile.join("openfiles").display());
    assert!(out.contains(&want), "expected {want} in:\n{out}");
    assert!(!out.contains(&format!("ExecStart={}", store.display())));

    // Without any profile link, the store path is used and the user is warned.
    std::fs::remove_file(profile.join("openfiles")).unwrap();
    let out = output(
        Command::new(&store_bin)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("NIX_STORE_DIR", &store)
            .args(["service", "install", "--dry-run"]),
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("garbage-collected"));
}

#[test]
fn macos_code_paths_compile_check_where_the_target_exists() {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let target = ["x86_64-apple-darwin", "aarch64-apple-darwin"]
        .into_iter()
        .find(|t| installed.lines().any(|l| l.trim() == *t));
    let Some(target) = target else {
        eprintln!(
            "SKIPPED: no Apple target installed (rustup target list --installed: {:?}); the \
             launchd backend is still compiled and tested on this platform through \
             `service install --platform launchd`",
            installed.trim()
        );
        return;
    };
    ok(Command::new("cargo").current_dir(repo()).args([
        "check",
        "-p",
        "openfiles",
        "--lib",
        "--target",
        target,
    ]));
}

#[test]
fn status_reports_a_unit_whose_binary_is_gone() {
    let home = tempfile::tempdir().unwrap();
    ok(service(home.path()).arg("install"));
    let path = unit_dir(home.path()).join("openfiles.service");
    let text = std::fs::read_to_string(&path).unwrap();
    let exe = Path::new(BIN).canonicalize().unwrap();
    let gone = "/nix/store/00000000000000000000000000000000-openfiles-0.0.1/bin/openfiles";
    std::fs::write(&path, text.replace(exe.to_str().unwrap(), gone)).unwrap();
    let out = output(service(home.path()).arg("status"));
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("runs {gone}, which does not exist")),
        "{text}"
    );
}
