//! The Nix side, offline: every `.nix` file parses, the NixOS / home-manager / nix-darwin
//! modules evaluate (against the stub nixpkgs in `nix/stub-nixpkgs`) to the units and
//! LaunchAgent the shipped files describe, the home-manager units pass
//! `systemd-analyze verify`, the rendered settings are a valid openfiles config, the
//! package's source is a tree cargo builds, and `nix flake check --no-build` passes with the
//! nixpkgs input overridden by the stub.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::packaging::*;

fn eval_modules(store: &Path) -> serde_json::Value {
    let out = ok(nix("nix-instantiate", store)
        .current_dir(repo())
        .args(["--eval", "--strict", "--json", "--expr"])
        .arg("import ./nix/tests/eval.nix {}"));
    serde_json::from_str(&out).expect("eval.nix prints JSON")
}

#[test]
fn every_nix_file_parses() {
    let store = tempfile::tempdir().unwrap();
    let files = nix_files();
    assert!(files.len() >= 9, "{files:?}");
    for f in files {
        ok(nix("nix-instantiate", store.path()).arg("--parse").arg(&f));
    }
}

#[test]
fn home_manager_units_match_the_packaged_units_and_verify() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    let bin = r["packageBin"].as_str().unwrap();
    let socket = r["hmLinux"]["socketUnit"].as_str().unwrap();
    let service = r["hmLinux"]["serviceUnit"].as_str().unwrap();
    assert!(
        service.contains(&format!("ExecStart={bin} serve")),
        "{service}"
    );
    assert!(
        service.contains("Environment=PATH=/nix/store/"),
        "{service}"
    );

    // Same keys as packaging/systemd (minus comments, Documentation, the PATH line and the
    // reload trigger home-manager's switch reads), but for the `kill` ExecReload runs: the
    // store's, not /bin/kill.
    let shipped = |name: &str| {
        let text = std::fs::read_to_string(repo().join("packaging/systemd").join(name)).unwrap();
        ini_pairs(&text.replace("/usr/bin/openfiles", bin))
            .into_iter()
            .filter(|(_, k, _)| k != "Documentation")
            .collect::<std::collections::BTreeSet<_>>()
    };
    let rendered = |text: &str| {
        ini_pairs(&text.replace("RemoveOnStop=true", "RemoveOnStop=yes"))
            .into_iter()
            .filter(|(_, k, _)| k != "Environment" && k != "X-Reload-Triggers")
            .map(|(s, k, v)| match v.find("/bin/kill ") {
                Some(at) if k == "ExecReload" && v.starts_with("/nix/store/") => {
                    (s, k, v[at..].to_owned())
                }
                _ => (s, k, v),
            })
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(rendered(socket), shipped("openfiles.socket"));
    assert_eq!(rendered(service), shipped("openfiles.service"));

    let (good, text) =
        verify_store_units(&[("openfiles.socket", socket), ("openfiles.service", service)]);
    assert!(good && text.trim().is_empty(), "verify complained:\n{text}");
    assert_eq!(r["hmLinux"]["hasLaunchd"], false);
    // On Linux the default socket is where clients look anyway: no variable needed.
    assert!(r["hmLinux"]["sessionVariables"]
        .get("OPENFILES_SOCKET")
        .is_none());
}

/// NixOS has no `/bin/kill`: the units the NixOS and home-manager modules write reload
/// through a program in the store, and `systemd-analyze verify` passes on them with
/// `/bin/kill` masked.
#[test]
fn module_units_name_only_store_programs_and_verify_without_bin_kill() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    for who in ["hmLinux", "nixos"] {
        let socket = r[who]["socketUnit"].as_str().unwrap();
        let service = r[who]["serviceUnit"].as_str().unwrap();
        let pairs = ini_pairs(service);
        let reload = pairs
            .iter()
            .find(|(_, k, _)| k == "ExecReload")
            .map(|(_, _, v)| v.as_str())
            .unwrap_or_else(|| panic!("{who}: no ExecReload in\n{service}"));
        assert!(
            reload.starts_with("/nix/store/") && reload.ends_with("/bin/kill -HUP $MAINPID"),
            "{who}: ExecReload={reload}"
        );
        for (_, key, value) in pairs.iter().filter(|(_, k, _)| k.starts_with("Exec")) {
            assert!(
                value.starts_with("/nix/store/"),
                "{who}: {key}={value} runs a program outside the store"
            );
        }
        let (good, text) =
            verify_store_units(&[("openfiles.socket", socket), ("openfiles.service", service)]);
        assert!(
            good && text.trim().is_empty(),
            "{who}: verify complained:\n{text}\n{service}"
        );
    }
}

/// The `PATH=` value of a unit's `Environment=` lines, split.
fn unit_path(unit: &str) -> Vec<String> {
    ini_pairs(unit)
        .into_iter()
        .filter(|(_, k, _)| k == "Environment")
        .filter_map(|(_, _, v)| {
            let v = v.trim_matches('"');
            v.strip_prefix("PATH=").map(str::to_owned)
        })
        .flat_map(|p| p.split(':').map(str::to_owned).collect::<Vec<_>>())
        .collect()
}

/// By default the service sees what its user installed with Nix: every module puts the
/// user's profiles on its PATH, after the extraPackages, with or without them.
#[test]
fn services_see_the_extra_packages_then_the_users_nix_profiles() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    let check = |who: &str, path: Vec<String>, home: &str, user: &str, extras: &[&str]| {
        let at = |want: &str| {
            path.iter()
                .position(|p| p == want)
                .unwrap_or_else(|| panic!("{who}: {want} not on PATH {path:?}"))
        };
        let profiles = [
            format!("{home}/.nix-profile/bin"),
            format!("/etc/profiles/per-user/{user}/bin"),
            format!("{home}/.local/state/nix/profile/bin"),
        ];
        let first_profile = profiles.iter().map(|p| at(p)).min().unwrap();
        for extra in extras {
            let i = path
                .iter()
                .position(|p| p.starts_with("/nix/store/") && p.ends_with(&format!("-{extra}/bin")))
                .unwrap_or_else(|| panic!("{who}: {extra} not on PATH {path:?}"));
            assert!(
                i < first_profile,
                "{who}: {extra} after the profiles: {path:?}"
            );
        }
        // The system's packages after the user's (NixOS has no /usr/bin to fall back on).
        assert!(
            at("/run/current-system/sw/bin") > first_profile,
            "{who}: {path:?}"
        );
    };
    let unit = |v: &serde_json::Value| unit_path(v.as_str().unwrap());
    check(
        "home-manager",
        unit(&r["hmLinux"]["serviceUnit"]),
        "%h",
        "%u",
        &["ruff", "pyright"],
    );
    check(
        "home-manager, no extras",
        unit(&r["hmLinux"]["bareServiceUnit"]),
        "%h",
        "%u",
        &[],
    );
    check(
        "NixOS",
        unit(&r["nixos"]["serviceUnit"]),
        "%h",
        "%u",
        &["ruff"],
    );
    let agent = |v: &serde_json::Value| -> Vec<String> {
        v["EnvironmentVariables"]["PATH"]
            .as_str()
            .unwrap_or_else(|| panic!("no PATH in {v:#}"))
            .split(':')
            .map(str::to_owned)
            .collect()
    };
    let home = "/Users/alice";
    check(
        "home-manager macOS",
        agent(&r["hmDarwin"]["agent"]["config"]),
        home,
        "alice",
        &[],
    );
    check(
        "home-manager macOS, extras",
        agent(&r["hmDarwin"]["extraAgent"]),
        home,
        "alice",
        &["ruff"],
    );
    check(
        "nix-darwin",
        agent(&r["darwin"]["agent"]),
        home,
        "alice",
        &["ruff"],
    );
}

#[test]
fn rendered_settings_are_a_valid_openfiles_config() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    for text in [
        &r["hmLinux"]["configText"],
        &r["nixos"]["configText"],
        &r["darwin"]["configText"],
    ] {
        let text = text.as_str().expect("config text");
        let cfg = openfiles::config::Config::parse(text, Path::new("config.toml"))
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(cfg.hooks.feedback, openfiles_wire::spec::Feedback::Errors);
        assert_eq!(cfg.hooks.timeout_ms, 6000);
        assert_eq!(cfg.service.log_level, "debug");
        assert_eq!(cfg.plugins.disabled, vec!["tsc".to_string()]);
    }
}

#[test]
fn nixos_module_declares_a_socket_activated_user_service() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    let n = &r["nixos"];
    let bin = r["packageBin"].as_str().unwrap();
    assert_eq!(
        n["socket"]["wantedBy"],
        serde_json::json!(["sockets.target"])
    );
    assert_eq!(
        n["socket"]["listenStreams"],
        serde_json::json!(["%t/openfiles/openfiles.sock"])
    );
    let sc = &n["socket"]["socketConfig"];
    assert_eq!(sc["SocketMode"], "0600");
    assert_eq!(sc["DirectoryMode"], "0700");
    assert_eq!(sc["FileDescriptorName"], "control");
    assert_eq!(sc["RemoveOnStop"], true);
    let svc = &n["service"];
    assert_eq!(svc["serviceConfig"]["Type"], "notify");
    assert_eq!(svc["serviceConfig"]["ExecStart"], format!("{bin} serve"));
    assert_eq!(svc["requires"], serde_json::json!(["openfiles.socket"]));
    assert!(
        svc.get("wantedBy").is_none(),
        "the service must start on demand only"
    );
    assert_eq!(
        svc["environment"]["OPENFILES_CONFIG"],
        "/etc/openfiles/config.toml"
    );
    assert!(svc["path"][0].as_str().unwrap().ends_with("-ruff"));
    assert!(n["systemPackages"][0]
        .as_str()
        .unwrap()
        .ends_with("-openfiles-0.1.0"));
    assert_eq!(
        n["disabledHasUnits"], false,
        "a disabled module must add nothing"
    );
}

#[test]
fn darwin_modules_render_a_valid_launch_agent() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    let bin = r["darwinPackageBin"].as_str().unwrap();
    let sock = "/Users/alice/Library/Caches/openfiles/openfiles.sock";
    for (agent, who) in [
        (&r["darwin"]["agent"], "nix-darwin"),
        (&r["hmDarwin"]["agent"]["config"], "home-manager"),
    ] {
        // Through plistlib, as launchd would read it.
        let dir = tempfile::tempdir().unwrap();
        let json_path = dir.path().join("agent.json");
        let plist_path = dir.path().join("agent.plist");
        std::fs::write(&json_path, agent.to_string()).unwrap();
        ok(Command::new("python3")
            .arg("-c")
            .arg("import json,plistlib,sys\nplistlib.dump(json.load(open(sys.argv[1])), open(sys.argv[2],'wb'))")
            .arg(&json_path)
            .arg(&plist_path));
        let p = plist_json(&plist_path);
        assert_eq!(p["Label"], "org.openfiles.openfiles", "{who}");
        assert_eq!(
            p["ProgramArguments"],
            serde_json::json!([bin, "serve"]),
            "{who}"
        );
        assert_eq!(p["Sockets"]["Listeners"]["SockPathName"], sock, "{who}");
        assert_eq!(p["Sockets"]["Listeners"]["SockPathMode"], 0o600, "{who}");
        assert_eq!(p["EnvironmentVariables"]["OPENFILES_SOCKET"], sock, "{who}");
        assert!(
            p.get("RunAtLoad").is_none() && p.get("KeepAlive").is_none(),
            "{who}"
        );
    }
    assert_eq!(r["hmDarwin"]["agent"]["enable"], true);
    assert_eq!(r["hmDarwin"]["hasSystemd"], false);
    assert_eq!(r["hmDarwin"]["sessionVariables"]["OPENFILES_SOCKET"], sock);
    assert_eq!(r["darwin"]["variables"]["OPENFILES_SOCKET"], sock);
    assert!(r["hmDarwin"]["activation"]
        .as_str()
        .unwrap()
        .contains("chmod 700 '/Users/alice/Library/Caches/openfiles'"));
    assert!(r["darwin"]["activation"]["extraActivation"]
        .as_str()
        .unwrap()
        .contains("chown 'alice' '/Users/alice/Library/Caches/openfiles'"));
}

#[test]
fn nix_darwin_user_defaults_to_the_primary_user_and_mistakes_are_assertions() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    assert_eq!(r["darwinPrimary"]["user"], "alice");
    assert_eq!(
        r["darwinPrimary"]["socket"],
        "/Users/alice/Library/Caches/openfiles/openfiles.sock"
    );
    let failed = |name: &str| -> Vec<String> {
        r["assertions"][name]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {r:#}"))
            .iter()
            .map(|m| m.as_str().unwrap().to_owned())
            .collect()
    };
    for fine in ["nixos", "hmLinux", "hmDarwin", "darwin", "darwinPrimary"] {
        assert!(failed(fine).is_empty(), "{fine}: {:?}", failed(fine));
    }
    let other = failed("darwinOther");
    assert!(
        other.len() == 1 && other[0].contains("(bob) differs from system.primaryUser (alice)"),
        "{other:?}"
    );
    let no_home = failed("darwinNoHome");
    assert!(
        no_home.len() == 1 && no_home[0].contains("users.users.alice is declared without `home`"),
        "{no_home:?}"
    );
    let nobody = failed("darwinNobody");
    assert!(
        nobody.len() == 1 && nobody[0].contains("set system.primaryUser"),
        "{nobody:?}"
    );
    let bad = failed("nixosBadPackages");
    assert!(
        bad.len() == 1 && bad[0].contains("extraPackages must be packages"),
        "{bad:?}"
    );
}

#[test]
fn home_manager_on_macos_names_the_config_file_it_writes() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    assert_eq!(
        r["hmDarwinSettings"]["file"],
        serde_json::json!(["openfiles/config.toml"])
    );
    // The LaunchAgent reads the file xdg.configFile wrote, whatever the binary's default.
    assert_eq!(
        r["hmDarwinSettings"]["config"],
        "/Users/alice/.config/openfiles/config.toml"
    );
}

#[test]
fn package_option_follows_the_overlay_and_the_package_has_meta() {
    let store = tempfile::tempdir().unwrap();
    let r = eval_modules(store.path());
    let o = &r["packageOption"];
    assert_eq!(o["overlay"], o["expected"], "pkgs.openfiles wins: {o}");
    assert!(
        o["flake"].as_str().unwrap().contains("-openfiles-") && o["flake"] != o["overlay"],
        "without the overlay, the flake's package: {o}"
    );
    let m = &r["packageMeta"];
    assert_eq!(m["mainProgram"], "openfiles");
    assert!(!m["description"].as_str().unwrap().is_empty());
    assert_eq!(m["license"][0]["spdxId"], "MIT");
    assert_eq!(m["platforms"].as_array().unwrap().len(), 4, "{m}");
}

/// The package's source: what the build reads and nothing else, so an edit elsewhere
/// (docs, tests, the Nix files, a `result` symlink) leaves its hash, and the build, alone.
#[test]
fn package_source_is_only_what_the_build_reads() {
    let src = tempfile::tempdir().unwrap();
    copy_repo(src.path());
    let store = tempfile::tempdir().unwrap();
    let source = |dir: &Path| -> String {
        serde_json::from_str(&ok(nix("nix-instantiate", store.path())
            .current_dir(dir)
            .args(["--eval", "--strict", "--json", "--expr"])
            .arg("(import ./nix/tests/eval.nix {}).packageSource")))
        .unwrap()
    };
    let before = source(src.path());
    assert!(before.starts_with("/nix/store/"), "{before}");
    std::fs::write(src.path().join("docs/INSTALL.md"), "changed\n").unwrap();
    std::fs::write(src.path().join("tests/new_test.rs"), "// new\n").unwrap();
    std::fs::create_dir_all(src.path().join("fuzz/extra")).unwrap();
    std::fs::write(src.path().join("fuzz/extra/x"), "x").unwrap();
    std::fs::write(src.path().join("README.md"), "changed\n").unwrap();
    std::os::unix::fs::symlink("/nix/store/none-result", src.path().join("result")).unwrap();
    std::fs::create_dir_all(src.path().join("target/debug")).unwrap();
    std::fs::write(src.path().join("target/debug/junk"), "x").unwrap();
    let nix_file = src.path().join("nix/modules/nixos.nix");
    let text = std::fs::read_to_string(&nix_file).unwrap();
    std::fs::write(&nix_file, format!("{text}\n# edited\n")).unwrap();
    assert_eq!(
        source(src.path()),
        before,
        "an edit outside the build's inputs"
    );
    for input in [
        "src/lib.rs",
        "benches/hook.rs",
        "plugins/lsp/src/lib.rs",
        "crates/claws/src/lib.rs",
        "crates/wire/src/lib.rs",
        "packaging/systemd/openfiles.socket",
    ] {
        let f = src.path().join(input);
        let text = std::fs::read_to_string(&f).unwrap();
        std::fs::write(&f, format!("{text}\n")).unwrap();
        let after = source(src.path());
        assert_ne!(after, before, "{input} is a build input");
        std::fs::write(&f, text).unwrap();
    }
}

/// The package's source, as the fileset selects it, is a tree cargo builds: it parses every
/// manifest and finds every target (a `[[bench]]` whose file is left out fails here, as it
/// fails in the Nix build before compiling anything), plans the package's own `cargo build`
/// offline against Cargo.lock, and holds every file the sources `include_str!`.
#[test]
fn package_source_is_a_tree_cargo_builds() {
    let store = tempfile::tempdir().unwrap();
    let eval = |format: &str, attr: &str| -> String {
        ok(nix("nix", store.path())
            .current_dir(repo())
            .args(["eval", format, "--impure", "--expr"])
            .arg(format!("(import ./nix/tests/eval.nix {{}}).{attr}")))
    };
    // `nix eval` (unlike `nix-instantiate --eval`) copies the source into the store.
    let source = eval("--raw", "packageSource");
    let in_store = store.path().join(source.trim_start_matches('/'));
    assert!(in_store.join("Cargo.toml").is_file(), "{source}");
    let tree = tempfile::tempdir().unwrap();
    copy_tree(&in_store, tree.path());

    let cargo = |args: &[&str]| {
        let mut c = Command::new("cargo");
        c.current_dir(tree.path())
            .env("CARGO_TARGET_DIR", tree.path().join("target"))
            .args(args);
        c
    };
    ok(&mut cargo(&[
        "metadata",
        "--offline",
        "--locked",
        "--format-version",
        "1",
    ]));
    // What buildRustPackage runs, planned but not compiled (`--unit-graph` parses every
    // target of every member; RUSTC_BOOTSTRAP lets stable cargo print it).
    let flags: Vec<String> =
        serde_json::from_str(&eval("--json", "packageCargoBuildFlags")).unwrap();
    let mut build = cargo(&[
        "build",
        "-Z",
        "unstable-options",
        "--unit-graph",
        "--offline",
        "--locked",
    ]);
    build.env("RUSTC_BOOTSTRAP", "1").args(&flags);
    let graph: serde_json::Value = serde_json::from_str(&ok(&mut build)).unwrap();
    let units = graph["units"].as_array().unwrap();
    let root = tree.path().to_str().unwrap();
    for (kind, name) in [("bin", "openfiles"), ("cdylib", "openfiles_plugin_lsp")] {
        assert!(
            units.iter().any(|u| u["target"]["name"] == name
                && u["target"]["kind"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k == kind)
                && u["target"]["src_path"].as_str().unwrap().starts_with(root)),
            "the build plan has no {kind} {name}"
        );
    }

    // Files the compiler reads besides the modules: each `include_str!`/`include_bytes!`
    // of a workspace source names a file in the tree.
    let mut stack = vec![tree.path().to_path_buf()];
    let mut includes = 0;
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            for mac in ["include_str!(\"", "include_bytes!(\""] {
                for (at, _) in text.match_indices(mac) {
                    let rest = &text[at + mac.len()..];
                    let rel = &rest[..rest.find('"').unwrap()];
                    let file = p.parent().unwrap().join(rel);
                    assert!(
                        file.is_file(),
                        "{} includes {rel}, not in the source",
                        p.display()
                    );
                    includes += 1;
                }
            }
        }
    }
    assert!(includes >= 5, "{includes} includes found");
}

/// Copy a directory tree (a store path: read-only files) into `dest`, writable.
fn copy_tree(from: &Path, dest: &Path) {
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, to) = (e.path(), dest.join(e.file_name()));
        if src.is_dir() {
            std::fs::create_dir_all(&to).unwrap();
            copy_tree(&src, &to);
        } else {
            std::fs::copy(&src, &to).unwrap();
            use std::os::unix::fs::PermissionsExt;
            let mut perm = std::fs::metadata(&to).unwrap().permissions();
            perm.set_mode(perm.mode() | 0o200);
            std::fs::set_permissions(&to, perm).unwrap();
        }
    }
}

#[test]
fn flake_check_passes_offline_against_the_stub_nixpkgs() {
    let src = tempfile::tempdir().unwrap();
    copy_repo(src.path());
    let store = tempfile::tempdir().unwrap();
    let flake = format!("path:{}", src.path().display());
    let stub = format!("path:{}", src.path().join("nix/stub-nixpkgs").display());
    let out = output(
        nix("nix", store.path())
            .current_dir(src.path())
            .args(["flake", "check", "--no-build", "--no-write-lock-file"])
            .args(["--override-input", "nixpkgs", &stub])
            .arg(&flake),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "nix flake check failed:\n{stderr}");
    assert!(!stderr.contains("error:"), "{stderr}");

    // Every output the issue names evaluates, for every system.
    for system in [
        "x86_64-linux",
        "aarch64-linux",
        "x86_64-darwin",
        "aarch64-darwin",
    ] {
        for attr in [
            format!("packages.{system}.default.drvPath"),
            format!("devShells.{system}.default.drvPath"),
            format!("checks.{system}.modules.drvPath"),
        ] {
            let out = ok(nix("nix", store.path())
                .current_dir(src.path())
                .args(["eval", "--raw", "--no-write-lock-file"])
                .args(["--override-input", "nixpkgs", &stub])
                .arg(format!("{flake}#{attr}")));
            assert!(
                out.starts_with("/nix/store/") && out.ends_with(".drv"),
                "{attr}: {out}"
            );
        }
    }
    for attr in [
        "nixosModules.default",
        "homeModules.default",
        "homeManagerModules.default",
        "darwinModules.default",
        "overlays.default",
    ] {
        let out = ok(nix("nix", store.path())
            .current_dir(src.path())
            .args([
                "eval",
                "--no-write-lock-file",
                "--apply",
                "builtins.isFunction",
            ])
            .args(["--override-input", "nixpkgs", &stub])
            .arg(format!("{flake}#{attr}")));
        assert_eq!(out.trim(), "true", "{attr}");
    }
}

/// home-manager's flake output is `homeModules`; `homeManagerModules` stays as an alias.
/// Both render the same units for the same configuration.
#[test]
fn home_modules_and_its_alias_are_the_same_module() {
    let src = tempfile::tempdir().unwrap();
    copy_repo(src.path());
    let store = tempfile::tempdir().unwrap();
    let flake = format!("path:{}", src.path().display());
    let stub = format!("path:{}", src.path().join("nix/stub-nixpkgs").display());
    let eval_nix = src.path().join("nix/tests/eval.nix");
    let render = |attr: &str| -> serde_json::Value {
        let out = ok(nix("nix", store.path())
            .current_dir(src.path())
            .args(["eval", "--json", "--impure", "--no-write-lock-file"])
            .args(["--override-input", "nixpkgs", &stub])
            .arg("--apply")
            .arg(format!(
                "m: let r = import {} {{ hmModule = m; }}; in {{ inherit (r) hmLinux hmDarwin; }}",
                eval_nix.display()
            ))
            .arg(format!("{flake}#{attr}")));
        serde_json::from_str(&out).unwrap()
    };
    let home = render("homeModules.default");
    assert!(
        home["hmLinux"]["serviceUnit"]
            .as_str()
            .unwrap()
            .contains("ExecStart=/nix/store/"),
        "{home:#}"
    );
    assert_eq!(home, render("homeManagerModules.default"));
}

/// The package's `postInstall`, run against a fake `$out` holding the real binary, with
/// small stand-ins for the two nixpkgs setup-hook functions it calls.
#[test]
fn package_install_script_lays_out_plugins_units_and_completions_without_placeholders() {
    let store = tempfile::tempdir().unwrap();
    let script: String = serde_json::from_str(&ok(nix("nix-instantiate", store.path())
        .current_dir(repo())
        .args(["--eval", "--strict", "--json", "--expr"])
        .arg("((import ./nix/stub-nixpkgs/default.nix {}).callPackage ./nix/package.nix {}).postInstall")))
    .unwrap();
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(out.join("bin")).unwrap();
    std::fs::create_dir_all(out.join("lib")).unwrap();
    if std::fs::hard_link(BIN, out.join("bin/openfiles")).is_err() {
        std::fs::copy(BIN, out.join("bin/openfiles")).unwrap();
    }
    std::fs::write(out.join("lib/libopenfiles_plugin_cargo_check.so"), b"").unwrap();
    std::fs::write(out.join("lib/libunrelated.so"), b"").unwrap();
    let shims = r#"
set -euo pipefail
substituteInPlace() {
  local f=$1; shift
  while [ $# -gt 0 ]; do
    case $1 in
      --replace-fail)
        grep -qF -- "$2" "$f" || { echo "substituteInPlace: '$2' not in $f" >&2; exit 1; }
        local c; c=$(cat "$f"); printf '%s\n' "${c//"$2"/"$3"}" > "$f"; shift 3 ;;
      *) echo "substituteInPlace: unknown $1" >&2; exit 1 ;;
    esac
  done
}
installShellCompletion() {
  local cmd=
  while [ $# -gt 0 ]; do
    case $1 in
      --cmd) cmd=$2; shift 2 ;;
      --bash) install -Dm644 "$2" "$out/share/bash-completion/completions/$cmd"; shift 2 ;;
      --zsh) install -Dm644 "$2" "$out/share/zsh/site-functions/_$cmd"; shift 2 ;;
      --fish) install -Dm644 "$2" "$out/share/fish/vendor_completions.d/$cmd.fish"; shift 2 ;;
      *) echo "installShellCompletion: unknown $1" >&2; exit 1 ;;
    esac
  done
}
"#;
    ok(Command::new("bash")
        .current_dir(repo())
        .env("out", &out)
        .arg("-c")
        .arg(format!("{shims}\n{script}")));

    assert!(out
        .join("lib/openfiles/plugins/libopenfiles_plugin_cargo_check.so")
        .is_file());
    assert!(
        out.join("lib/libunrelated.so").is_file(),
        "only openfiles plugins move"
    );
    let exe = out.join("bin/openfiles");
    for dir in ["lib/systemd/user", "share/systemd/user"] {
        let service = std::fs::read_to_string(out.join(dir).join("openfiles.service")).unwrap();
        assert!(
            service.contains(&format!("\nExecStart={} serve\n", exe.display())),
            "{service}"
        );
    }
    // The installed units are linked on NixOS too, which has no /bin/kill.
    let units = out.join("lib/systemd/user");
    let read = |name: &str| std::fs::read_to_string(units.join(name)).unwrap();
    let (socket, service) = (read("openfiles.socket"), read("openfiles.service"));
    assert!(
        service
            .lines()
            .any(|l| l.starts_with("ExecReload=/nix/store/")
                && l.ends_with("-coreutils/bin/kill -HUP $MAINPID")),
        "{service}"
    );
    let (good, text) = verify_store_units(&[
        ("openfiles.socket", &socket),
        ("openfiles.service", &service),
    ]);
    assert!(good && text.trim().is_empty(), "verify complained:\n{text}");
    // Nothing installed keeps a template placeholder (the plist's socket and log live in a
    // user's home: `service install` and the modules write it per user).
    let mut stack = vec![out.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p != exe {
                let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
                for placeholder in ["@SOCKET@", "@LOG@", "@OPENFILES@"] {
                    assert!(
                        !text.contains(placeholder),
                        "{} keeps {placeholder}",
                        p.display()
                    );
                }
            }
        }
    }
    assert!(!out.join("share/openfiles/launchd").exists());
    for f in [
        "share/bash-completion/completions/openfiles",
        "share/zsh/site-functions/_openfiles",
        "share/fish/vendor_completions.d/openfiles.fish",
    ] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(text.contains("openfiles"), "{f} is empty");
    }
}
