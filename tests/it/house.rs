//! The house rule (ARCHITECTURE.md, "Direction"): imports run one way. Between crates the
//! manifests keep it ([`crates_depend_one_way`]): os at the bottom, wire on the plugin API,
//! claws on os and wire, the service on all of them, plugins on the plugin API only. Inside
//! the service crate: the CLI at the top; then the clients and the service's own wiring;
//! control and workspace; diagnostics, intake and the plugin host; leaves at the bottom. This
//! test reads every `crate::…`/`super::…` path in `src/` and every crate's `src/` (tests inside
//! `#[cfg(test)] mod tests` excluded) and fails on an import that runs up, on a loop between
//! rooms, and on a loop between sibling files of one folder. The clients speak the wire
//! ([`clients_speak_the_wire`]): a client room imports only the few modules of the service
//! crate [`CLIENT_MAY_IMPORT`] lists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Rooms of `src/` by rank: a room may import rooms of a higher rank, and rooms of its own
/// rank only where [`SAME_RANK`] says so (or, for the leaves, without a loop).
const RANKS: &[(&str, u8)] = &[
    ("main", 0),
    ("lib", 0),
    ("cli", 0),
    ("service", 1),
    ("claws_serve", 1),
    ("in_process", 1),
    ("check", 1),
    ("admin", 1),
    ("setup", 1),
    ("hook", 1),
    ("logs", 1),
    ("mcp", 1),
    ("review", 1),
    ("claws_client", 1),
    ("nav", 1),
    ("control", 2),
    ("workspace", 2),
    ("autostart", 3),
    ("diagnostics", 3),
    ("intake", 3),
    ("plugin_host", 3),
    ("policy", 4),
    ("config", 4),
    ("paths", 4),
    ("fswatch", 4),
    ("gitcmd", 4),
    ("visible", 4),
];

/// Allowed imports between rooms of one rank (besides the leaves).
const SAME_RANK: &[(&str, &str)] = &[
    // `doctor` and `service install` probe the hook installer's targets.
    ("setup", "hook"),
    // MCP and review are clients of the hook's feedback wording and the Claws client.
    ("mcp", "hook"),
    ("review", "hook"),
    // The MCP rename applies its edits as `openfiles nav rename --apply` does.
    ("mcp", "nav"),
    // The one exception to "clients speak the wire" ([`CLIENT_MAY_IMPORT`]).
    ("check", "in_process"),
    ("control", "workspace"),
    ("intake", "diagnostics"),
    ("plugin_host", "diagnostics"),
];
const LEAF_RANK: u8 = 4;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code without comments and without its `#[cfg(test)] mod tests` (by
/// convention the last item of a file).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => &text[..],
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every identifier following `prefix` (`crate::x`, `super::x`, `use crate::{x, y}`).
fn targets(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// The room of a file under `src/`: its first path component (file stem for top files).
fn room(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

fn rank(room: &str) -> u8 {
    RANKS
        .iter()
        .find(|(r, _)| *r == room)
        .map(|(_, k)| *k)
        .unwrap_or_else(|| panic!("room `{room}` has no rank: add it to RANKS in tests/it/house.rs and to ARCHITECTURE.md"))
}

/// Strongly connected groups of more than one node.
fn loops(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Small graphs: a node is in a loop with every node it reaches that reaches it back.
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(n) = todo.pop() {
            for m in edges.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let mut groups: BTreeSet<Vec<String>> = BTreeSet::new();
    for n in edges.keys() {
        let r = reach(n);
        if !r.contains(n) {
            continue;
        }
        let mut g: Vec<String> = r.into_iter().filter(|m| reach(m).contains(n)).collect();
        g.sort();
        if g.len() > 1 {
            groups.insert(g);
        }
    }
    groups.into_iter().collect()
}

#[test]
fn imports_run_one_way_between_rooms() {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let from = room(&src, f);
        for to in targets(&code(f), "crate::") {
            if to == from || !RANKS.iter().any(|(r, _)| *r == to) {
                continue;
            }
            edges.entry(from.clone()).or_default().insert(to.clone());
            let (a, b) = (rank(&from), rank(&to));
            let ok = b > a
                || (a == b
                    && (a == LEAF_RANK || SAME_RANK.contains(&(from.as_str(), to.as_str()))));
            if !ok {
                wrong.push(format!(
                    "{} imports crate::{to} ({from} is rank {a}, {to} rank {b})",
                    f.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the direction:\n{}",
        wrong.join("\n")
    );
    let l = loops(&edges);
    assert!(l.is_empty(), "import loops between rooms: {l:?}");
}

/// Sibling files of one folder (`mod.rs`/`lib.rs` excluded: a parent re-exports its
/// children and children name their parent's types) must not import each other in a loop.
fn sibling_loops(dir_root: &Path, crate_root: &Path, crate_prefix: &[String]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir_root, &mut files);
    let mut by_dir: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for f in files {
        by_dir
            .entry(f.parent().unwrap().to_owned())
            .or_default()
            .push(f);
    }
    let mut found = Vec::new();
    for (dir, files) in by_dir {
        let stems: BTreeSet<String> = files
            .iter()
            .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
            .filter(|s| s != "mod" && s != "lib" && s != "main")
            .collect();
        // The module path of the folder, as `crate::a::b::` sees it.
        let mut module: Vec<String> = crate_prefix.to_vec();
        module.extend(
            dir.strip_prefix(crate_root)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned()),
        );
        let crate_path = format!(
            "{}::",
            ["crate".to_owned()]
                .iter()
                .chain(&module)
                .cloned()
                .collect::<Vec<_>>()
                .join("::")
        );
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in &files {
            let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
            if !stems.contains(&stem) {
                continue;
            }
            let c = code(f);
            let mut to: BTreeSet<String> = targets(&c, "super::");
            to.extend(targets(&c, &crate_path));
            for t in to {
                if t != stem && stems.contains(&t) {
                    edges.entry(stem.clone()).or_default().insert(t);
                }
            }
        }
        for l in loops(&edges) {
            found.push(format!(
                "{}: {l:?}",
                dir.strip_prefix(root()).unwrap().display()
            ));
        }
    }
    found
}

#[test]
fn sibling_files_do_not_import_each_other_in_a_loop() {
    let mut found = sibling_loops(&root().join("src"), &root().join("src"), &[]);
    for folder in ["crates", "plugins"] {
        for e in std::fs::read_dir(root().join(folder)).unwrap() {
            let src = e.unwrap().path().join("src");
            if src.is_dir() {
                found.extend(sibling_loops(&src, &src, &[]));
            }
        }
    }
    assert!(
        found.is_empty(),
        "loops between sibling files:\n{}",
        found.join("\n")
    );
}

#[test]
fn plugins_know_only_the_plugin_api() {
    for e in std::fs::read_dir(root().join("plugins")).unwrap() {
        let dir = e.unwrap().path();
        let manifest = dir.join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest).unwrap();
        let doc: toml::Table = text.parse().unwrap();
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            let Some(deps) = doc.get(section).and_then(|d| d.as_table()) else {
                continue;
            };
            for (name, spec) in deps {
                let path = spec.get("path").and_then(|p| p.as_str());
                // The plugin API stands on the gate (and re-exports it to the plugins).
                let api_on_gate = dir.ends_with("api") && name == "openfiles-gate";
                assert!(
                    api_on_gate || (name != "openfiles" && path.is_none_or(|p| p.ends_with("api"))),
                    "{} depends on {name} ({section}): plugins know only openfiles-plugin-api",
                    manifest.strip_prefix(root()).unwrap().display()
                );
            }
        }
    }
}

/// The workspace crates each crate's manifest names (path dependencies), by package name.
fn path_deps(manifest: &Path) -> BTreeSet<String> {
    let doc: toml::Table = std::fs::read_to_string(manifest).unwrap().parse().unwrap();
    let mut out = BTreeSet::new();
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        for (name, spec) in doc
            .get(section)
            .and_then(|d| d.as_table())
            .into_iter()
            .flatten()
        {
            if spec.get("path").is_some() {
                out.insert(name.clone());
            }
        }
    }
    out
}

#[test]
fn crates_depend_one_way() {
    let set = |names: &[&str]| {
        names
            .iter()
            .map(|n| (*n).to_owned())
            .collect::<BTreeSet<_>>()
    };
    let allowed: &[(&str, BTreeSet<String>)] = &[
        ("crates/gate", set(&[])),
        ("crates/os", set(&[])),
        ("crates/wire", set(&["openfiles-plugin-api"])),
        ("crates/fixes", set(&["openfiles-plugin-api"])),
        (
            "crates/claws",
            set(&["openfiles-gate", "openfiles-os", "openfiles-wire"]),
        ),
    ];
    for (dir, may) in allowed {
        let deps = path_deps(&root().join(dir).join("Cargo.toml"));
        assert!(
            deps.is_subset(may),
            "{dir} depends on {:?}; it may depend on {may:?} only",
            deps.difference(may).collect::<Vec<_>>()
        );
    }
    // Every crate under crates/ is in the table: a new one states its place here.
    for e in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = format!("crates/{}", e.unwrap().file_name().to_string_lossy());
        assert!(
            allowed.iter().any(|(d, _)| *d == dir),
            "{dir} has no place in crates_depend_one_way (tests/it/house.rs) and ARCHITECTURE.md"
        );
    }
}

/// What starts a process, outside the gate: `Command::new` (std's and tokio's), the libc
/// and nix calls that replace or fork a process image.
const SPAWNS: &[&str] = &[
    "Command::new(",
    "posix_spawn",
    "libc::exec",
    "unistd::exec",
    "unistd::fork",
    "libc::fork",
    "libc::vfork",
    "libc::system(",
    "pty_process",
];

/// The one place each spawning call may appear: the gate, and the second fork of a detached
/// service start, which runs inside the `pre_exec` of a command the gate built.
const SPAWN_ALLOWED: &[(&str, &str)] = &[
    ("crates/gate/src/spawn.rs", "Command::new("),
    ("src/autostart.rs", "libc::fork"),
];

/// Every non-test source file of the service, the crates and the plugins.
fn product_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    for group in ["crates", "plugins"] {
        for e in std::fs::read_dir(root().join(group)).unwrap() {
            let src = e.unwrap().path().join("src");
            if src.is_dir() {
                rust_files(&src, &mut files);
            }
        }
    }
    files.retain(|f| {
        let name = f.file_name().unwrap().to_string_lossy();
        // Test-only modules (`#[cfg(test)] mod tests;` / `mod testing;`) and the fixtures'
        // plugins.
        name != "tests.rs"
            && name != "testing.rs"
            && !f.components().any(|c| c.as_os_str() == "test-fixtures")
    });
    files
}

/// Places outside the gate that start a process, as `file: call`.
fn spawns_outside_the_gate(files: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(root()).unwrap_or(file);
        let rel_s = rel.to_string_lossy();
        let text = code(file);
        for call in SPAWNS {
            if text.contains(call) && !SPAWN_ALLOWED.contains(&(rel_s.as_ref(), *call)) {
                found.push(format!("{rel_s}: {call}"));
            }
        }
    }
    found
}

/// One way to start a process (RELIABILITY.md, "Trust"): every program openfiles, its
/// plugin host and its plugins start is an `openfiles_gate::Program`, which resolves it by
/// the workspace's trust and sets the environment that trust calls for.
#[test]
fn every_process_starts_at_the_gate() {
    let files = product_sources();
    assert!(
        files.len() > 100,
        "the scan found only {} files",
        files.len()
    );
    let found = spawns_outside_the_gate(&files);
    assert!(
        found.is_empty(),
        "processes started outside openfiles_gate::Program (use Program::find/at/this_exe \
         with the workspace's Scope):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_gate_rule_sees_a_spawn() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.rs");
    std::fs::write(
        &f,
        "fn f() { let _ = tokio::process::Command::new(\"sh\"); }\n\
         #[cfg(test)]\nmod tests { fn g() { std::process::Command::new(\"sh\"); } }\n",
    )
    .unwrap();
    let found = spawns_outside_the_gate(std::slice::from_ref(&f));
    assert_eq!(found.len(), 1, "{found:?}");
    std::fs::write(&f, "// Command::new(\"sh\") in a comment\n").unwrap();
    assert!(spawns_outside_the_gate(&[f]).is_empty());
}

/// The clients (ARCHITECTURE.md, "Clients speak the wire"): processes that reach the service
/// through its sockets and files, never by running its rooms.
const CLIENTS: &[&str] = &[
    "hook",
    "check",
    "claws_client",
    "mcp",
    "review",
    "autostart",
    "admin",
    "logs",
    "nav",
];

/// What a client may import from the service crate, by module path (a path and everything
/// below it), besides its own room and the clients [`SAME_RANK`] lets it use. What both sides
/// need otherwise lives in a crate beside the wire (`openfiles-fixes`, the gate's `resolve`
/// and `trust`, the wire's `summary`).
const CLIENT_MAY_IMPORT: &[(&str, &str)] = &[
    // The user's config file and where things live: read the same way by every process.
    ("*", "config"),
    ("*", "paths"),
    // Text from outside shown to people; the one git builder (review's `git diff`).
    ("*", "visible"),
    ("*", "gitcmd"),
    // Start the service on first use, and the CLI's side of the control socket.
    ("*", "autostart"),
    ("*", "control::client"),
    // The one exception: `check` without a service runs the pipeline in its own process,
    // through this one entry (the service's rooms behind it stay the service's).
    ("check", "in_process"),
];

/// Every `crate::` path in `code`, groups expanded (`crate::a::{b, c::d}` gives `a::b` and
/// `a::c::d`), as its `::`-separated components.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    fn ident(s: &str) -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    }
    fn expand(prefix: &[String], rest: &str, out: &mut Vec<Vec<String>>) {
        let mut path = prefix.to_vec();
        let mut rest = rest.trim_start();
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                // Split the group at its top-level commas.
                let (mut depth, mut start) = (0, 0);
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            expand(&path, &group[start..i], out);
                            return;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            expand(&path, &group[start..i], out);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            let name = ident(rest);
            if name.is_empty() {
                break;
            }
            rest = &rest[name.len()..];
            path.push(name);
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        if path.len() > prefix.len() {
            out.push(path);
        }
    }
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        expand(&[], rest, &mut out);
    }
    out
}

/// The imports of a client room's file that reach into the service crate outside
/// [`CLIENT_MAY_IMPORT`], as `file: crate::path`.
fn client_imports_outside_the_list(src: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for f in files {
        let from = room(src, f);
        if !CLIENTS.contains(&from.as_str()) {
            continue;
        }
        for path in crate_paths(&code(f)) {
            let to = &path[0];
            let allowed = *to == from
                || !RANKS.iter().any(|(r, _)| r == to)
                || (SAME_RANK.contains(&(from.as_str(), to.as_str()))
                    && CLIENTS.contains(&to.as_str()))
                || CLIENT_MAY_IMPORT.iter().any(|(who, m)| {
                    (*who == "*" || *who == from)
                        && m.split("::").zip(&path).all(|(a, b)| a == b)
                        && m.split("::").count() <= path.len()
                });
            if !allowed {
                found.push(format!(
                    "{}: crate::{}",
                    f.strip_prefix(root()).unwrap_or(f).display(),
                    path.join("::")
                ));
            }
        }
    }
    found
}

/// Clients speak the wire: the hook, `check`, `openfiles claws`, MCP, review, autostart and
/// the admin commands reach the service through its sockets and files (the wire crate's
/// types), and what both sides need lives in small crates beside it; a client importing
/// one of the service's rooms fails here.
#[test]
fn clients_speak_the_wire() {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for c in CLIENTS {
        assert!(
            files.iter().any(|f| room(&src, f) == *c),
            "client room `{c}` has no file: update CLIENTS in tests/it/house.rs"
        );
    }
    let found = client_imports_outside_the_list(&src, &files);
    assert!(
        found.is_empty(),
        "clients importing the service's rooms (speak the wire, or put what both sides need \
         in a crate beside it; see CLIENT_MAY_IMPORT in tests/it/house.rs):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_client_rule_sees_a_reach_into_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("mcp")).unwrap();
    let mcp = src.join("mcp/link.rs");
    std::fs::write(
        &mcp,
        "use crate::control::{client::Client, server};\n\
         use crate::{paths, workspace::resolve::root_for};\n\
         fn f() { crate::hook::report::x(); crate::mcp::call::y(); }\n",
    )
    .unwrap();
    let check = src.join("check.rs");
    std::fs::write(
        &check,
        "use crate::in_process;\nfn f() { crate::diagnostics::pipeline::x(); }\n",
    )
    .unwrap();
    let mut found = client_imports_outside_the_list(&src, &[mcp.clone(), check]);
    found
        .iter_mut()
        .for_each(|l| *l = l.rsplit(": ").next().unwrap().to_owned());
    assert_eq!(
        found,
        vec![
            "crate::control::server",
            "crate::workspace::resolve::root_for",
            "crate::diagnostics::pipeline::x",
        ]
    );
    // `in_process` is `check`'s exception alone.
    std::fs::write(&mcp, "use crate::in_process::check;\n").unwrap();
    assert_eq!(client_imports_outside_the_list(&src, &[mcp]).len(), 1);
}

/// The pipeline and what feeds it never touch the Claws crate: they share `config.rs`'s one
/// parse of the user's file (whose `[claws]` section the Claws crate types), and read only
/// their own sections of it (ARCHITECTURE.md, "Clients speak the wire").
#[test]
fn the_pipeline_reaches_no_claws_type() {
    let mut files = Vec::new();
    for room in ["diagnostics", "intake", "plugin_host"] {
        rust_files(&root().join("src").join(room), &mut files);
    }
    assert!(
        files.len() > 10,
        "the scan found only {} files",
        files.len()
    );
    let found: Vec<String> = files
        .iter()
        .filter(|f| {
            let c = code(f);
            c.contains("openfiles_claws") || c.contains(".claws.") || c.contains("ClawsConfig")
        })
        .map(|f| f.strip_prefix(root()).unwrap_or(f).display().to_string())
        .collect();
    assert!(
        found.is_empty(),
        "the pipeline names the Claws crate or its config: {found:?}"
    );
}

#[test]
fn the_rule_catches_an_upward_import() {
    // The scanner itself: an upward path and a grouped import are both seen.
    let t = targets(
        "use crate::{service, spec::X};\nfn f() { crate::control::x(); }",
        "crate::",
    );
    assert_eq!(
        t.into_iter().collect::<Vec<_>>(),
        vec![
            "control".to_owned(),
            "service".to_owned(),
            "spec".to_owned()
        ]
    );
    assert!(rank("diagnostics") > rank("workspace"));
    let mut e = BTreeMap::new();
    e.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    e.insert("b".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(loops(&e), vec![vec!["a".to_owned(), "b".to_owned()]]);
}
