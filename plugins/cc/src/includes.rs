//! Which translation units read a file: every unit's `#include`s followed, transitively,
//! through the workspace's files.
//!
//! An over-approximation, never an under-one: `#if` is ignored (an include in any branch
//! counts), `#include_next` counts every folder's file of that name, and a unit with an
//! include the scanner cannot name (`#include MACRO`) reads everything. A `"…"` include is
//! looked up in the including file's folder, then the `-iquote` folders, then the `-I`,
//! `-isystem`, `-idirafter` ones; a `<…>` include in the last three; the first file found
//! is the one read, as the compiler would. Files outside the workspace (system headers) are
//! not scanned: an edit cannot reach them.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use openfiles_plugin_api::confine::{read_regular, Last};

use crate::db::{normalize, Unit};

/// The largest file scanned for includes.
const MAX_SCAN_BYTES: u64 = 8 << 20;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Directive {
    Quote(String),
    Angle(String),
    /// `#include_next`: every match counts.
    Next(String),
    /// An include the scanner cannot name.
    Computed,
}

/// The `#include` directives of a text.
fn directives(text: &str) -> Vec<Directive> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        let (next, rest) = if let Some(r) = rest.strip_prefix("include_next") {
            (true, r)
        } else if let Some(r) = rest
            .strip_prefix("include")
            .or_else(|| rest.strip_prefix("import"))
        {
            (false, r)
        } else {
            continue;
        };
        let rest = rest.trim_start();
        let name = if let Some(r) = rest.strip_prefix('"') {
            r.split('"').next().map(|n| (n, true))
        } else if let Some(r) = rest.strip_prefix('<') {
            r.split('>').next().map(|n| (n, false))
        } else {
            None
        };
        out.push(match name {
            Some((n, _)) if next => Directive::Next(n.to_owned()),
            Some((n, true)) => Directive::Quote(n.to_owned()),
            Some((n, false)) => Directive::Angle(n.to_owned()),
            None if rest.is_empty() || rest.starts_with("//") || rest.starts_with("/*") => continue,
            None => Directive::Computed,
        });
    }
    out
}

/// Scans files once per run and answers which units read which files.
pub struct Scanner {
    workspace: PathBuf,
    files: HashMap<PathBuf, Vec<Directive>>,
    canon: HashMap<PathBuf, Option<PathBuf>>,
}

impl Scanner {
    pub fn new(workspace: &Path) -> Self {
        Scanner {
            workspace: workspace.to_owned(),
            files: HashMap::new(),
            canon: HashMap::new(),
        }
    }

    fn directives_of(&mut self, path: &Path) -> Vec<Directive> {
        if let Some(d) = self.files.get(path) {
            return d.clone();
        }
        let d = read_regular(path, Last::Follow, MAX_SCAN_BYTES)
            .map(|b| directives(&String::from_utf8_lossy(&b)))
            .unwrap_or_default();
        self.files.insert(path.to_owned(), d.clone());
        d
    }

    /// `p` as a canonical path when it is a file, else `None` (cached).
    fn file(&mut self, p: PathBuf) -> Option<PathBuf> {
        if let Some(c) = self.canon.get(&p) {
            return c.clone();
        }
        let c = if p.is_file() {
            Some(std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone()))
        } else {
            None
        };
        self.canon.insert(p, c.clone());
        c
    }

    /// Whether `unit` reads one of `targets` (canonical paths), see the module docs.
    pub fn reaches(&mut self, unit: &Unit, targets: &HashSet<PathBuf>) -> bool {
        let mut seen = HashSet::new();
        let mut stack: Vec<PathBuf> = Vec::new();
        for f in std::iter::once(&unit.file).chain(unit.forced.iter()) {
            if let Some(c) = self.file(f.clone()) {
                stack.push(c);
            }
        }
        while let Some(f) = stack.pop() {
            if targets.contains(&f) {
                return true;
            }
            if !seen.insert(f.clone()) || !f.starts_with(&self.workspace) {
                continue;
            }
            let here = f.parent().map(Path::to_owned).unwrap_or_default();
            for d in self.directives_of(&f) {
                let (name, quote, all) = match d {
                    Directive::Computed => return true,
                    Directive::Quote(n) => (n, true, false),
                    Directive::Angle(n) => (n, false, false),
                    Directive::Next(n) => (n, true, true),
                };
                if Path::new(&name).is_absolute() {
                    if let Some(c) = self.file(normalize(Path::new(&name))) {
                        stack.push(c);
                    }
                    continue;
                }
                let dirs: Vec<PathBuf> = quote
                    .then(|| here.clone())
                    .into_iter()
                    .chain(if quote {
                        unit.quote_dirs.clone()
                    } else {
                        Vec::new()
                    })
                    .chain(unit.angle_dirs.iter().cloned())
                    .collect();
                for dir in dirs {
                    if let Some(c) = self.file(normalize(&dir.join(&name))) {
                        stack.push(c);
                        if !all {
                            break;
                        }
                    }
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_of_every_kind() {
        let text = "#include \"a.h\"\n  #  include <sys/b.h>\n#include_next <c.h>\n#import \"d.h\"\n#include CONFIG_H\n// #include \"no.h\"\n#define X 1\n";
        assert_eq!(
            directives(text),
            vec![
                Directive::Quote("a.h".into()),
                Directive::Angle("sys/b.h".into()),
                Directive::Next("c.h".into()),
                Directive::Quote("d.h".into()),
                Directive::Computed,
            ]
        );
    }

    #[test]
    fn a_header_reached_through_another_and_an_include_folder() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        for dir in ["src", "include/lib"] {
            std::fs::create_dir_all(ws.join(dir)).unwrap();
        }
        std::fs::write(ws.join("src/a.c"), "#include \"local.h\"\nint x;\n").unwrap();
        std::fs::write(ws.join("src/local.h"), "#include <lib/api.h>\n").unwrap();
        std::fs::write(
            ws.join("include/lib/api.h"),
            "#if 0\n#include \"deep.h\"\n#endif\n",
        )
        .unwrap();
        std::fs::write(ws.join("include/lib/deep.h"), "").unwrap();
        std::fs::write(ws.join("src/b.c"), "int y;\n").unwrap();
        let unit = |f: &str| Unit {
            file: ws.join(f),
            dir: ws.clone(),
            args: Vec::new(),
            cxx: false,
            quote_dirs: Vec::new(),
            angle_dirs: vec![ws.join("include")],
            forced: Vec::new(),
        };
        let mut s = Scanner::new(&ws);
        let deep = HashSet::from([ws.join("include/lib/deep.h")]);
        assert!(s.reaches(&unit("src/a.c"), &deep), "#if is ignored");
        assert!(!s.reaches(&unit("src/b.c"), &deep));
        let mut b = unit("src/b.c");
        b.forced = vec![ws.join("src/local.h")];
        assert!(s.reaches(&b, &deep), "through -include");
    }
}
