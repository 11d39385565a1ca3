//! Claws through the real service: `openfiles serve` serves `.claws/claws.sock` in every
//! workspace, `status` counts its terminals, `introspect` lists every served folder, and a
//! clean stop hangs up terminals and removes the socket.

use crate::common;

use common::*;

#[test]
fn the_service_serves_claws_in_every_workspace() {
    let mut env = Env::new();
    let (a, b) = (env.workspace("a"), env.workspace("b"));
    let home = env.workspace("home");
    env.extra_env.push(("HOME".into(), home.into_os_string()));
    env.extra_env.push(("SHELL".into(), "/bin/bash".into()));
    // `serve` answers only once every workspace (and its Claws socket) is up.
    let svc = env.serve(&["-w", a.to_str().unwrap(), "-w", b.to_str().unwrap()]);
    let sock = a.join(".claws/claws.sock");
    assert!(sock.exists());

    let intro = json_call(&sock, r#"{"id":1,"cmd":"introspect"}"#);
    let servers = intro["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{intro}");

    let exec = common::claws_exec_in_new_terminal(&sock, "svc", "sh -c 'echo in-service; exit 7'");
    assert_eq!(exec["event"]["exitCode"], 7, "{exec}");
    assert!(
        exec["event"]["output"]
            .as_str()
            .unwrap()
            .contains("in-service"),
        "{exec}"
    );

    let st = env.status();
    let wa = st.workspaces.iter().find(|w| w.root == a).unwrap();
    assert_eq!(wa.terminals, 1);
    assert_eq!(wa.claws_socket.as_deref(), Some(sock.as_path()));
    assert_eq!(st.terminals, 1);

    assert_eq!(svc.terminate(), Some(0));
    assert!(!sock.exists(), "socket removed on stop");
}

#[test]
fn claws_can_be_disabled_per_workspace() {
    let env = Env::new();
    let ws = env.workspace("ws");
    std::fs::create_dir_all(ws.join(".openfiles")).unwrap();
    std::fs::write(
        ws.join(".openfiles/config.toml"),
        "[claws]\nenabled = false\n",
    )
    .unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let st = env.status();
    assert_eq!(st.workspaces[0].claws_socket, None);
    assert!(!ws.join(".claws/claws.sock").exists());
}

/// A workspace no Claws client has used costs its socket and nothing else under `.claws/`;
/// the first client gets the full service (terminals, `exec`, the bus's event log), made on
/// its connection.
#[test]
fn claws_state_is_made_for_the_first_client() {
    let mut env = Env::new();
    let (used, unused) = (env.workspace("used"), env.workspace("unused"));
    let home = env.workspace("home");
    env.extra_env.push(("HOME".into(), home.into_os_string()));
    env.extra_env.push(("SHELL".into(), "/bin/bash".into()));
    let svc = env.serve(&["-w", used.to_str().unwrap(), "-w", unused.to_str().unwrap()]);
    let entries = |ws: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(ws.join(".claws"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(entries(&used), [".gitignore", "claws.sock"]);

    let sock = used.join(".claws/claws.sock");
    let exec = common::claws_exec_in_new_terminal(&sock, "first", "echo first-use");
    assert_eq!(exec["event"]["exitCode"], 0, "{exec}");
    assert!(
        exec["event"]["output"]
            .as_str()
            .unwrap()
            .contains("first-use"),
        "{exec}"
    );
    let names = entries(&used);
    assert!(names.iter().any(|n| n == "events"), "{names:?}");
    assert!(names.iter().any(|n| n == "shell"), "{names:?}");
    assert_eq!(env.status().terminals, 1);

    assert_eq!(
        entries(&unused),
        [".gitignore", "claws.sock"],
        "the other workspace stays lean"
    );
    assert_eq!(svc.terminate(), Some(0));
    assert!(!sock.exists(), "socket removed on stop");
    assert!(
        !unused.join(".claws/claws.sock").exists(),
        "socket removed on stop"
    );
}
