//! The cc plugin against real compilers (clang 14 from `scripts/install-test-deps.sh`, and
//! gcc): the callers an edited header broke, in files nobody edited, named at their line and
//! character column; a unit that cannot read the header is left alone; the units it reported
//! are read again until they are fixed; the baseline's run over a snapshot with the real
//! workspace's database; `compile_flags.txt`; a cancelled check; and a hostile database that
//! runs nothing and writes nothing.

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, CheckResponse, Init, Item, Plugin, Severity};
use openfiles_plugin_cc::Cc;

struct Fixture {
    _tmp: tempfile::TempDir,
    _state: tempfile::TempDir,
    ws: PathBuf,
    cc: Cc,
}

fn plugin(config: serde_json::Value, state: &Path) -> Cc {
    let (p, caps) = Cc::create(Init {
        config,
        state_dir: state.to_owned(),
        host_version: "test".into(),
    })
    .unwrap();
    assert!(caps.project_wide);
    assert!(caps.extensions.contains(&"h".to_string()));
    p
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const API: &str = "#ifndef API_H\n#define API_H\nint add(int a, int b);\n#endif\n";

/// `include/api.h` declares `add`; `src/calc.c` defines it, `src/main.c` (through
/// `src/local.h`) and `src/ui.c` call it; `src/legacy.c` reads no header of the project and
/// has an old error. `compile_commands.json` in `build/`, with absolute paths, one entry
/// as `command` and the others as `arguments`.
fn project(config: serde_json::Value) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    write(&ws.join("include/api.h"), API);
    write(
        &ws.join("src/calc.c"),
        "#include <api.h>\n\nint add(int a, int b) { return a + b; }\n",
    );
    write(
        &ws.join("src/local.h"),
        "#include \"api.h\"\n#define TWICE(x) add((x), (x))\n",
    );
    write(
        &ws.join("src/main.c"),
        "#include \"local.h\"\n\nint main(void) {\n    const char *s = \"héllo\"; int n = add(1, 2);\n    return TWICE(n) + (s != 0);\n}\n",
    );
    write(
        &ws.join("src/ui.c"),
        "#include <api.h>\n\nint show(void) {\n    return add(3, 4);\n}\n",
    );
    write(
        &ws.join("src/legacy.c"),
        "int legacy(void) {\n    return undeclared_thing;\n}\n",
    );
    write_db(&ws, &ws);
    let cc = plugin(config, state.path());
    Fixture {
        _tmp: tmp,
        _state: state,
        ws,
        cc,
    }
}

/// The database of the project at `ws`, naming the paths of `tree`.
fn write_db(ws: &Path, tree: &Path) {
    let t = tree.display();
    let inc = format!("-I{t}/include");
    let mut entries = vec![serde_json::json!({
        "directory": format!("{t}/build"),
        "command": format!("/usr/bin/cc -c {inc} -iquote {t}/include -DNDEBUG -std=c11 -o calc.o ../src/calc.c"),
        "file": "../src/calc.c",
    })];
    for f in ["main", "ui", "legacy"] {
        entries.push(serde_json::json!({
            "directory": format!("{t}/build"),
            "arguments": ["/usr/bin/cc", "-c", inc, "-iquote", format!("{t}/include"), "-std=c11", "-o", format!("{f}.o"), format!("{t}/src/{f}.c")],
            "file": format!("{t}/src/{f}.c"),
        }));
    }
    write(
        &ws.join("build/compile_commands.json"),
        &serde_json::to_string_pretty(&entries).unwrap(),
    );
}

fn request(ws: &Path, id: u64, files: Vec<PathBuf>) -> CheckRequest {
    CheckRequest {
        id,
        workspace: ws.to_owned(),
        files,
        report_all: true,
        timeout_ms: 120_000,
        ..Default::default()
    }
}

fn reported(resp: &CheckResponse) -> Vec<(String, Vec<Item>)> {
    let mut v: Vec<(String, Vec<Item>)> = resp
        .files
        .iter()
        .filter(|f| !f.items.is_empty())
        .map(|f| (f.path.display().to_string(), f.items.clone()))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn items_of<'a>(resp: &'a CheckResponse, file: &Path) -> Vec<&'a Item> {
    resp.files
        .iter()
        .filter(|f| f.path == file)
        .flat_map(|f| f.items.iter())
        .collect()
}

const BROKEN_API: &str = "#ifndef API_H\n#define API_H\nint add(int a, int b, int c);\n#endif\n";

#[test]
fn an_edited_header_names_its_broken_callers_and_nothing_else() {
    let f = project(serde_json::Value::Null);
    let api = f.ws.join("include/api.h");
    write(&api, BROKEN_API);
    let resp = f.cc.check(request(&f.ws, 1, vec![api.clone()])).unwrap();
    let got = reported(&resp);
    let files: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
    let w = f.ws.display().to_string();
    assert_eq!(
        files,
        vec![
            format!("{w}/src/calc.c"),
            format!("{w}/src/main.c"),
            format!("{w}/src/ui.c"),
        ],
        "{got:#?}"
    );
    // The call's closing parenthesis, after "héllo": byte column 47, character column 46.
    let main = items_of(&resp, &f.ws.join("src/main.c"));
    let call = main
        .iter()
        .find(|i| i.line == 4)
        .unwrap_or_else(|| panic!("{main:#?}"));
    assert_eq!(call.severity, Severity::Error);
    assert_eq!(call.source, "clang");
    assert_eq!(call.column, 46, "{call:?}");
    assert!(
        call.message.contains("too few arguments"),
        "{}",
        call.message
    );
    // The macro from local.h is reported where it is expanded, as clang does.
    assert!(main.iter().any(|i| i.line == 5), "{main:#?}");
    // legacy.c reads no edited file: not read, its old error not reported.
    assert!(!files.iter().any(|p| p.ends_with("legacy.c")));
    // The edited header itself: clangd reports it, not this plugin (clangd is installed).
    assert!(items_of(&resp, &api).is_empty());
    assert!(resp.files.iter().any(|r| r.path == api));
}

#[test]
fn units_it_reported_are_read_again_until_the_edit_is_undone() {
    let f = project(serde_json::Value::Null);
    let api = f.ws.join("include/api.h");
    let other = f.ws.join("include/other.h");
    write(&other, "int other(void);\n");
    write(&api, BROKEN_API);
    let first = f.cc.check(request(&f.ws, 1, vec![api.clone()])).unwrap();
    assert!(!items_of(&first, &f.ws.join("src/ui.c")).is_empty());
    // An edit of a header no unit reads: the units broken last time are read again, so
    // ui.c is still reported (the service would otherwise think it fixed).
    write(&other, "int other(int);\n");
    let second = f.cc.check(request(&f.ws, 2, vec![other.clone()])).unwrap();
    assert!(!items_of(&second, &f.ws.join("src/ui.c")).is_empty());
    // A new instance (a restarted service) remembers them too.
    let again = plugin(serde_json::Value::Null, f._state.path());
    let third = again.check(request(&f.ws, 3, vec![other.clone()])).unwrap();
    assert!(!items_of(&third, &f.ws.join("src/ui.c")).is_empty());
    // Undone: nothing is reported, and the next check reads nothing.
    write(&api, API);
    let fourth = f.cc.check(request(&f.ws, 4, vec![api.clone()])).unwrap();
    assert_eq!(reported(&fourth), Vec::new());
    let fifth = f.cc.check(request(&f.ws, 5, vec![other])).unwrap();
    assert_eq!(reported(&fifth), Vec::new());
}

#[test]
fn the_snapshot_run_reads_every_unit_with_the_workspaces_database() {
    let f = project(serde_json::Value::Null);
    // The snapshot: the committed tree, without the (untracked) build folder.
    let snap_tmp = tempfile::tempdir().unwrap();
    let snap = snap_tmp.path().canonicalize().unwrap();
    for rel in [
        "include/api.h",
        "src/calc.c",
        "src/local.h",
        "src/main.c",
        "src/ui.c",
        "src/legacy.c",
    ] {
        write(
            &snap.join(rel),
            &std::fs::read_to_string(f.ws.join(rel)).unwrap(),
        );
    }
    // The workspace's header is edited; the snapshot has the committed one.
    write(&f.ws.join("include/api.h"), BROKEN_API);
    let mut req = request(&snap, 1, vec![snap.join("include/api.h")]);
    req.cache_of = Some(f.ws.clone());
    let resp = f.cc.check(req).unwrap();
    let got = reported(&resp);
    let s = snap.display().to_string();
    assert_eq!(
        got.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(),
        vec![format!("{s}/src/legacy.c")],
        "only the old error, read from the snapshot: {got:#?}"
    );
    assert!(got[0].1[0].message.contains("undeclared_thing"));
    // A snapshot's run is not remembered as the workspace's last check.
    let after =
        f.cc.check(request(&f.ws, 2, vec![f.ws.join("src/calc.c")]))
            .unwrap();
    assert!(!reported(&after)
        .iter()
        .any(|(p, _)| p.ends_with("legacy.c")));
}

#[test]
fn gcc_reads_the_units_when_it_is_the_compiler() {
    let f = project(serde_json::json!({"compiler": "gcc", "report_edited": true}));
    let api = f.ws.join("include/api.h");
    write(&api, BROKEN_API);
    let ui = f.ws.join("src/ui.c");
    let resp = f.cc.check(request(&f.ws, 1, vec![api.clone()])).unwrap();
    let items = items_of(&resp, &ui);
    assert_eq!(items.len(), 1, "{items:#?}");
    assert_eq!(
        (items[0].line, items[0].source.as_str(), items[0].severity),
        (4, "gcc", Severity::Error)
    );
    assert!(items[0].message.contains("too few arguments"));
    let main = items_of(&resp, &f.ws.join("src/main.c"));
    // gcc points at the callee, `add` (byte column 39, character column 38).
    assert!(
        main.iter().any(|i| i.line == 4 && i.column == 38),
        "{main:#?}"
    );
    // report_edited: the edited file's own items too (none here: the header is fine).
    assert!(resp.files.iter().any(|r| r.path == api));
}

fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Against both compilers: gcc runs a `-wrapper` and reads `-specs`, clang loads
/// `-Xclang -load` plugins.
#[test]
fn a_hostile_database_runs_nothing_and_writes_nothing() {
    hostile(serde_json::Value::Null);
    hostile(serde_json::json!({"compiler": "gcc"}));
}

fn hostile(config: serde_json::Value) {
    let f = project(config);
    let ws = &f.ws;
    let w = ws.display();
    let pwned = ws.join("PWNED");
    // A "compiler", a wrapper, a cc1 for -B and a specs file: each would leave PWNED.
    let script = format!("#!/bin/sh\ntouch {}\nexit 0\n", pwned.display());
    for exe in ["evil-cc", "bin/cc1", "bin/clang", "bin/gcc", "wrap.sh"] {
        write(&ws.join(exe), &script);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(ws.join(exe), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    write(
        &ws.join("evil.specs"),
        &format!("*cc1:\n+ -fplugin={w}/evil.so\n\n*startfile:\n%:touch({w}/PWNED)\n"),
    );
    write(&ws.join("rsp"), &format!("-wrapper {w}/wrap.sh\n"));
    let entries = serde_json::json!([{
        "directory": format!("{w}/build"),
        "arguments": [
            format!("{w}/evil-cc"),
            format!("-wrapper"), format!("{w}/wrap.sh"),
            format!("-fplugin={w}/evil.so"),
            "-fplugin", format!("{w}/evil.so"),
            format!("-B{w}/bin"), "-B", format!("{w}/bin"),
            format!("-specs={w}/evil.specs"),
            format!("-Wp,-MD,{w}/out.d"),
            "-Xclang", "-load", "-Xclang", format!("{w}/evil.so"),
            format!("@{w}/rsp"),
            "-MD", "-MF", format!("{w}/dep.d"),
            "-save-temps", "-fdump-tree-all", "-ftime-trace",
            format!("-fmodules-cache-path={w}/mcache"), "-fmodules",
            "-o", format!("{w}/ui.o"),
            format!("-I{w}/include"),
            format!("{w}/src/ui.c"),
        ],
        "file": format!("{w}/src/ui.c"),
    }]);
    write(
        &ws.join("build/compile_commands.json"),
        &serde_json::to_string(&entries).unwrap(),
    );
    let api = ws.join("include/api.h");
    write(&api, BROKEN_API);
    let before = listing(ws);
    let resp = f.cc.check(request(ws, 1, vec![api])).unwrap();
    assert!(!pwned.exists(), "a program of the repository ran");
    assert_eq!(listing(ws), before, "the check wrote into the workspace");
    // The unit was still read, with the flags that were allowed.
    let ui = items_of(&resp, &ws.join("src/ui.c"));
    assert!(
        ui.iter().any(|i| i.message.contains("too few arguments")),
        "{ui:#?}"
    );
}

#[test]
fn compile_flags_txt_makes_every_source_below_it_a_unit() {
    let f = project(serde_json::Value::Null);
    std::fs::remove_dir_all(f.ws.join("build")).unwrap();
    write(
        &f.ws.join("compile_flags.txt"),
        "-Iinclude\n-std=c11\n-fplugin=/tmp/evil.so\n",
    );
    let api = f.ws.join("include/api.h");
    write(&api, BROKEN_API);
    let resp = f.cc.check(request(&f.ws, 1, vec![api])).unwrap();
    let files: Vec<String> = reported(&resp).into_iter().map(|(p, _)| p).collect();
    let w = f.ws.display().to_string();
    assert_eq!(
        files,
        vec![
            format!("{w}/src/calc.c"),
            format!("{w}/src/main.c"),
            format!("{w}/src/ui.c"),
        ]
    );
}

#[test]
fn a_cancelled_check_reads_nothing() {
    let f = project(serde_json::Value::Null);
    let api = f.ws.join("include/api.h");
    write(&api, BROKEN_API);
    f.cc.cancel(9);
    assert!(f
        .cc
        .check(request(&f.ws, 9, vec![api.clone()]))
        .unwrap_err()
        .is_cancelled());
    // The id is forgotten: the next check with another id runs.
    let resp = f.cc.check(request(&f.ws, 10, vec![api])).unwrap();
    assert!(!reported(&resp).is_empty());
}

/// A database written for gcc read by clang and the other way round: the flags the compiler
/// refuses are dropped (as clangd drops them) and the units are still read.
#[test]
fn flags_the_other_compiler_refuses_are_dropped() {
    for config in [
        serde_json::Value::Null,
        serde_json::json!({"compiler": "gcc"}),
    ] {
        let f = project(config);
        let w = f.ws.display().to_string();
        let entries = serde_json::json!([{
            "directory": w,
            "arguments": ["cc", "-fconserve-stack", "-fno-addrsig", format!("-I{w}/include"), "-c", "src/ui.c"],
            "file": "src/ui.c",
        }]);
        write(
            &f.ws.join("build/compile_commands.json"),
            &serde_json::to_string(&entries).unwrap(),
        );
        let api = f.ws.join("include/api.h");
        write(&api, BROKEN_API);
        let resp = f.cc.check(request(&f.ws, 1, vec![api])).unwrap();
        let ui = items_of(&resp, &f.ws.join("src/ui.c"));
        assert_eq!(ui.len(), 1, "{ui:#?}");
        assert!(ui[0].message.contains("too few arguments"), "{ui:#?}");
    }
}

/// C++: a class's method in a `.hpp` changes; the `.cpp` that calls it is named, with both
/// compilers (g++ named in the database, only its base name read).
#[test]
fn cpp_units_are_read_as_cpp() {
    for config in [
        serde_json::Value::Null,
        serde_json::json!({"compiler": "gcc"}),
    ] {
        let f = project(config);
        let w = f.ws.display().to_string();
        write(
            &f.ws.join("lib/shape.hpp"),
            "#pragma once\nnamespace geo {\nstruct Shape {\n    int area(int scale) const;\n};\n}\n",
        );
        write(
            &f.ws.join("lib/use.cpp"),
            "#include \"shape.hpp\"\n#include <vector>\n\nint total(const std::vector<geo::Shape>& v) {\n    int t = 0;\n    for (auto& s : v) t += s.area(2);\n    return t;\n}\n",
        );
        let entries = serde_json::json!([{
            "directory": format!("{w}/lib"),
            "command": "/usr/bin/g++ -std=c++17 -c use.cpp -o use.o",
            "file": "use.cpp",
        }]);
        write(
            &f.ws.join("build/compile_commands.json"),
            &serde_json::to_string(&entries).unwrap(),
        );
        let hpp = f.ws.join("lib/shape.hpp");
        let clean = f.cc.check(request(&f.ws, 1, vec![hpp.clone()])).unwrap();
        assert_eq!(reported(&clean), Vec::new());
        write(
            &hpp,
            "#pragma once\nnamespace geo {\nstruct Shape {\n    int area(int scale, int unit) const;\n};\n}\n",
        );
        let resp = f.cc.check(request(&f.ws, 2, vec![hpp])).unwrap();
        let items = items_of(&resp, &f.ws.join("lib/use.cpp"));
        assert!(
            items
                .iter()
                .any(|i| i.line == 6 && i.severity == Severity::Error),
            "{items:#?}"
        );
    }
}

/// A baseline taken before the build wrote its database knows none of the old errors: until
/// a baseline run finds a database, no file nobody edited is reported (never an old error
/// blamed on the edit).
#[test]
fn a_database_made_after_the_baseline_blames_nothing() {
    let f = project(serde_json::Value::Null);
    let db = f.ws.join("build/compile_commands.json");
    let saved = std::fs::read_to_string(&db).unwrap();
    std::fs::remove_file(&db).unwrap();
    let snap_tmp = tempfile::tempdir().unwrap();
    let snap = snap_tmp.path().canonicalize().unwrap();
    write(&snap.join("include/api.h"), API);
    let baseline = |id| {
        let mut req = request(&snap, id, vec![snap.join("include/api.h")]);
        req.cache_of = Some(f.ws.clone());
        f.cc.check(req).unwrap()
    };
    assert_eq!(reported(&baseline(1)), Vec::new());
    // The build writes its database; the header is edited.
    write(&db, &saved);
    let api = f.ws.join("include/api.h");
    write(&api, BROKEN_API);
    let resp = f.cc.check(request(&f.ws, 2, vec![api.clone()])).unwrap();
    assert_eq!(reported(&resp), Vec::new());
    // A restarted service remembers it.
    let again = plugin(serde_json::Value::Null, f._state.path());
    let resp = again.check(request(&f.ws, 3, vec![api.clone()])).unwrap();
    assert_eq!(reported(&resp), Vec::new());
    // The next baseline (a new commit) has the database: callers are named again.
    write(&snap.join("src/ui.c"), "int show(void) { return 0; }\n");
    assert_eq!(reported(&baseline(4)), Vec::new());
    let resp = f.cc.check(request(&f.ws, 5, vec![api])).unwrap();
    assert!(!items_of(&resp, &f.ws.join("src/ui.c")).is_empty());
}
