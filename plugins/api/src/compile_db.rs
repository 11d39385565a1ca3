//! The compile database: where a file's is (clangd's rule), its translation units, and each
//! unit's flags cut down to an allowlist — one rule for the cc plugin (which reads the units
//! with clang or gcc) and the lsp plugin (which hands clangd, in a workspace the user has not
//! trusted, only a database rewritten from these units: [`clangd_database`]).
//!
//! A file's database is the first of `compile_commands.json`, `compile_flags.txt`,
//! `build/compile_commands.json` found in the file's folder or a folder above it, inside the
//! workspace (what clangd looks for, in its order). `compile_commands.json` lists the units;
//! with `compile_flags.txt` every C/C++ source file below its folder is a unit, with its flags.
//!
//! The database is written by the repository, so it is data: the compiler it names is never
//! run (its base name only says C or C++), and of its flags only those that change how the
//! code is read are kept ([`allow`], in `flags`): include folders, macros, the language and
//! its standard, `-include` of a workspace file, and feature, warning and target switches
//! that neither load nor write anything. Everything else — `-fplugin`, `-wrapper`, `-B`,
//! `-specs`, `-Wp,`/`-Wl,`/`-Wa,`, `@files`, `-o`, `-M*`, `-Xclang`, dump and profile
//! switches — is dropped, with its value.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use crate::confine::{read_regular, Last};

mod flags;

pub use flags::{allow, Allowed};

/// The largest `compile_commands.json` read.
pub const MAX_DB_BYTES: u64 = 64 << 20;
/// The most source files a `compile_flags.txt` folder contributes.
pub const MAX_FLAG_UNITS: usize = 20_000;

/// The C/C++ files (sources and headers) the cc plugin handles.
pub const C_EXTENSIONS: &[&str] = &[
    "c", "h", "cc", "cpp", "cxx", "c++", "hpp", "hh", "hxx", "h++", "inl", "ipp",
];
/// The file names, in the order searched in each folder, of a compile database (clangd's).
pub const DATABASE_NAMES: &[&str] = &[
    "compile_commands.json",
    "compile_flags.txt",
    "build/compile_commands.json",
];

/// Extensions of C/C++ translation units (what a `compile_flags.txt` folder's units are).
pub const SOURCE_EXTENSIONS: &[&str] = &["c", "cc", "cpp", "cxx", "c++", "C"];
/// Extensions the compiler reads as C++ whatever it was asked.
const CXX_EXTENSIONS: &[&str] = &["cc", "cpp", "cxx", "c++", "C", "hpp", "hh", "hxx", "h++"];

/// One translation unit: a source file and the (allowed) flags to read it with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unit {
    /// Absolute, normalized.
    pub file: PathBuf,
    /// The folder the entry ran in (relative paths of its flags are resolved against it).
    pub dir: PathBuf,
    /// The allowed flags, include folders and `-include` files absolute.
    pub args: Vec<String>,
    /// Read as C++ (`-x c++` is added when the file's extension alone would say C).
    pub cxx: bool,
    /// `-iquote` folders (searched for `#include "…"` only, after the file's own folder).
    pub quote_dirs: Vec<PathBuf>,
    /// `-I`, `-isystem`, `-idirafter` folders, in the compiler's order.
    pub angle_dirs: Vec<PathBuf>,
    /// `-include`/`-imacros` files (read before the unit).
    pub forced: Vec<PathBuf>,
}

/// A loaded database.
#[derive(Debug, Clone)]
pub struct Db {
    /// The database file (`compile_commands.json` or `compile_flags.txt`).
    pub path: PathBuf,
    pub units: Vec<Unit>,
}

/// Where the database of `file` is (see the module docs), inside `workspace`.
pub fn find(file: &Path, workspace: &Path) -> Option<PathBuf> {
    file.ancestors()
        .skip(1)
        .take_while(|d| d.starts_with(workspace))
        .flat_map(|d| DATABASE_NAMES.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
}

/// Paths of a database written for one tree (`from`, the real workspace) read in another
/// (`to`, its snapshot): a path under `from` moves under `to` when it exists there (a
/// generated header in an untracked build folder stays where it is).
#[derive(Debug, Clone)]
pub struct Remap {
    pub from: PathBuf,
    pub to: PathBuf,
}

impl Remap {
    fn path(&self, p: PathBuf) -> PathBuf {
        match p.strip_prefix(&self.from) {
            Ok(rel) => {
                let q = self.to.join(rel);
                if q.exists() {
                    q
                } else {
                    p
                }
            }
            Err(_) => p,
        }
    }

    /// A unit's own file always moves (the snapshot's copy is the one to check).
    fn unit_file(&self, p: PathBuf) -> PathBuf {
        match p.strip_prefix(&self.from) {
            Ok(rel) => self.to.join(rel),
            Err(_) => p,
        }
    }
}

/// Why a compile database could not be used (the text is shown on the files it covers).
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: crate::confine::ConfineError,
    },
    #[error("{} is not a compile database: {source}", path.display())]
    NotADatabase {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Read the database at `path` (see the module docs). `remap` for a snapshot's run;
/// `workspace` bounds `-include` files.
pub fn load(path: &Path, remap: Option<&Remap>, workspace: &Path) -> Result<Db, DbError> {
    let bytes = read_regular(path, Last::Follow, MAX_DB_BYTES).map_err(|source| DbError::Read {
        path: path.to_owned(),
        source,
    })?;
    let folder = path.parent().unwrap_or(Path::new("/")).to_owned();
    let is_flags = path.file_name().is_some_and(|n| n == "compile_flags.txt");
    let mut units = Vec::new();
    let mut seen = HashSet::new();
    if is_flags {
        let text = String::from_utf8_lossy(&bytes);
        let args: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        let dir = match remap {
            Some(r) => r.path(folder.clone()),
            None => folder.clone(),
        };
        let root = match remap {
            Some(r) => r.unit_file(folder),
            None => folder,
        };
        for file in walk_sources(&root) {
            let cxx = has_ext(&file, CXX_EXTENSIONS);
            let u = unit(file, dir.clone(), &args, cxx, remap, workspace);
            if seen.insert(u.clone()) {
                units.push(u);
            }
        }
    } else {
        let entries: Vec<serde_json::Value> =
            serde_json::from_slice(&bytes).map_err(|source| DbError::NotADatabase {
                path: path.to_owned(),
                source,
            })?;
        for e in entries {
            let Some(dir) = e.get("directory").and_then(|v| v.as_str()) else {
                continue;
            };
            let Some(file) = e.get("file").and_then(|v| v.as_str()) else {
                continue;
            };
            let dir = folder.join(dir); // a relative directory is relative to the database
            let args: Vec<String> = match (e.get("arguments"), e.get("command")) {
                (Some(serde_json::Value::Array(a)), _) => a
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect(),
                (_, Some(serde_json::Value::String(c))) => split_command(c),
                _ => continue,
            };
            let Some(compiler) = args.first() else {
                continue;
            };
            let file = normalize(&dir.join(file));
            if !has_ext(&file, SOURCE_EXTENSIONS) && !has_ext(&file, C_EXTENSIONS) {
                continue;
            }
            let cxx = is_cxx_compiler(compiler) || has_ext(&file, CXX_EXTENSIONS);
            let (file, dir) = match remap {
                Some(r) => (r.unit_file(file), r.path(normalize(&dir))),
                None => (file, normalize(&dir)),
            };
            let u = unit(file, dir, &args[1..], cxx, remap, workspace);
            if seen.insert(u.clone()) {
                units.push(u);
            }
        }
    }
    Ok(Db {
        path: path.to_owned(),
        units,
    })
}

/// The arguments that read `unit` after the compiler's own name: the allowed flags, `-x c++`
/// when the unit is C++ but its extension says C, then the file.
pub fn unit_arguments(unit: &Unit) -> Vec<String> {
    let mut args = unit.args.clone();
    let says_cxx = !has_ext(&unit.file, &["c", "h"]);
    if unit.cxx && !says_cxx && !unit.args.iter().any(|a| a == "-x") {
        args.extend(["-x".into(), "c++".into()]);
    }
    args.push(unit.file.display().to_string());
    args
}

/// `db` as a `compile_commands.json` for clangd: one entry per unit, with only the allowed
/// flags, a compiler name that is never a program the repository chose (`clang`, `clang++`;
/// clangd runs no compiler without `--query-driver`), every path absolute.
pub fn clangd_database(units: &[Unit]) -> serde_json::Value {
    let entries: Vec<serde_json::Value> = units
        .iter()
        .map(|u| {
            let driver = if u.cxx { "clang++" } else { "clang" };
            let mut arguments = vec![driver.to_owned()];
            arguments.extend(unit_arguments(u));
            serde_json::json!({
                "directory": u.dir.display().to_string(),
                "file": u.file.display().to_string(),
                "arguments": arguments,
            })
        })
        .collect();
    serde_json::Value::Array(entries)
}

/// Whether a compiler's base name is a C++ driver (`g++`, `clang++-14`, `c++`, `CC`…).
/// Only the name is looked at: the program is never run.
pub fn is_cxx_compiler(compiler: &str) -> bool {
    let base = compiler.rsplit('/').next().unwrap_or(compiler);
    base.contains("++") || base == "CC" || base.contains("cxx")
}

fn has_ext(p: &Path, exts: &[&str]) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| exts.contains(&e))
}

/// Lexically clean `p` (`.` and `..` removed), without touching the disk.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The source files below `root` (no hidden folder, no symlink followed), at most
/// [`MAX_FLAG_UNITS`].
fn walk_sources(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && has_ext(&p, SOURCE_EXTENSIONS) {
                out.push(p);
                if out.len() >= MAX_FLAG_UNITS {
                    return out;
                }
            }
        }
    }
    out
}

/// Build a unit from an entry's arguments (after the compiler).
fn unit(
    file: PathBuf,
    dir: PathBuf,
    raw: &[String],
    cxx: bool,
    remap: Option<&Remap>,
    workspace: &Path,
) -> Unit {
    let a = allow(raw, &dir, remap, workspace);
    Unit {
        file,
        dir,
        args: a.args,
        cxx,
        quote_dirs: a.quote_dirs,
        angle_dirs: a.angle_dirs,
        forced: a.forced,
    }
}

/// Split a `command` string the way a POSIX shell splits words (quotes and backslashes; no
/// expansion of any kind).
pub fn split_command(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => cur.push(e),
                            Some(e) => {
                                cur.push('\\');
                                cur.push(e);
                            }
                            None => {}
                        },
                        _ => cur.push(d),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(d) = chars.next() {
                    cur.push(d);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_allowed_flags_survive_and_paths_become_absolute() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        std::fs::write(ws.join("pre.h"), "").unwrap();
        let raw = strings(&[
            "-Iinclude",
            "-I",
            "/usr/include/x",
            "-iquote",
            "q",
            "-isystem/sys",
            "-DFOO=1",
            "-D",
            "BAR",
            "-UBAZ",
            "-std=c11",
            "-include",
            "pre.h",
            "-include",
            "/etc/passwd",
            "-Wall",
            "-Wno-unused",
            "-Werror=format",
            "-O2",
            "-fPIC",
            "-fno-common",
            "-fvisibility=hidden",
            "-m64",
            "-march=native",
            // Everything below is dropped.
            "-fplugin=/tmp/evil.so",
            "-fplugin",
            "/tmp/evil.so",
            "-wrapper",
            "/bin/sh,-c,touch /tmp/pwned",
            "-B/tmp/evil",
            "-B",
            "/tmp/evil",
            "-specs=/tmp/evil.specs",
            "-Wp,-MD,/tmp/out.d",
            "-Wl,-rpath,/x",
            "-Wa,--defsym,x=1",
            "@/tmp/response",
            "-o",
            "/tmp/out.o",
            "-MD",
            "-MF",
            "/tmp/dep.d",
            "-Xclang",
            "-load",
            "-Xclang",
            "/tmp/evil.so",
            "-mllvm",
            "-debug",
            "-fdump-tree-all",
            "-fprofile-generate",
            "-fmodules",
            "-fdiagnostics-format=json",
            "-save-temps",
            "-c",
            "main.c",
        ]);
        let a = allow(&raw, ws, None, ws);
        let w = ws.display();
        assert_eq!(
            a.args,
            strings(&[
                &format!("-I{w}/include"),
                "-I/usr/include/x",
                "-iquote",
                &format!("{w}/q"),
                "-isystem",
                "/sys",
                "-DFOO=1",
                "-DBAR",
                "-UBAZ",
                "-std=c11",
                "-include",
                &format!("{w}/pre.h"),
                "-Wall",
                "-Wno-unused",
                "-Werror=format",
                "-O2",
                "-fPIC",
                "-fno-common",
                "-fvisibility=hidden",
                "-m64",
                "-march=native",
            ])
        );
        assert_eq!(a.forced, vec![ws.join("pre.h")]);
        assert_eq!(a.quote_dirs, vec![ws.join("q")]);
        assert_eq!(
            a.angle_dirs,
            vec![
                ws.join("include"),
                PathBuf::from("/usr/include/x"),
                PathBuf::from("/sys")
            ]
        );
    }

    #[test]
    fn commands_split_like_a_shell_without_expansion() {
        assert_eq!(
            split_command(r#"/usr/bin/cc -DX="a b" -I'my dir' a\ b.c $(rm -rf /)"#),
            strings(&[
                "/usr/bin/cc",
                "-DX=a b",
                "-Imy dir",
                "a b.c",
                "$(rm",
                "-rf",
                "/)"
            ])
        );
        assert!(is_cxx_compiler("/usr/bin/g++-12"));
        assert!(is_cxx_compiler("clang++"));
        assert!(!is_cxx_compiler("/usr/bin/cc"));
        assert!(!is_cxx_compiler("gcc"));
    }

    #[test]
    fn the_database_is_found_the_way_clangd_finds_it() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        std::fs::create_dir_all(ws.join("src/sub")).unwrap();
        std::fs::create_dir_all(ws.join("build")).unwrap();
        let f = ws.join("src/sub/a.c");
        assert_eq!(find(&f, ws), None);
        std::fs::write(ws.join("build/compile_commands.json"), "[]").unwrap();
        assert_eq!(find(&f, ws), Some(ws.join("build/compile_commands.json")));
        std::fs::write(ws.join("src/compile_flags.txt"), "-DX\n").unwrap();
        assert_eq!(find(&f, ws), Some(ws.join("src/compile_flags.txt")));
        // Never above the workspace.
        assert_eq!(find(&f, &ws.join("src/sub")), None);
    }
}
