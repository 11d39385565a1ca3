//! The flag allowlist of a compile database's entries ([`allow`]): what is kept of a unit's
//! flags, made absolute, and what is dropped (see the parent module's docs for why). Flags
//! are matched in one order: search paths, forced includes, then macros, the language and
//! its standard, the tables of switches dropped with their value, `-f`/`-W`/`-m` switches
//! by their own rules, and the plain switches kept as they are.

use std::path::{Path, PathBuf};

use super::{normalize, Remap};

/// What [`allow`] keeps.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Allowed {
    pub args: Vec<String>,
    pub quote_dirs: Vec<PathBuf>,
    pub angle_dirs: Vec<PathBuf>,
    pub forced: Vec<PathBuf>,
}

/// Flags that take the next argument as their value and are dropped with it.
const DROP_WITH_VALUE: &[&str] = &[
    "-o",
    "-MF",
    "-MT",
    "-MQ",
    "-MJ",
    "-Xclang",
    "-Xlinker",
    "-Xassembler",
    "-Xpreprocessor",
    "-Xopenmp-target",
    "-mllvm",
    "-arch",
    "-target",
    "--target",
    "-isysroot",
    "--sysroot",
    "-include-pch",
    "-iprefix",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-iwithsysroot",
    "-imultilib",
    "-ivfsoverlay",
    "-aux-info",
    "-wrapper",
    "-B",
    "-L",
    "-l",
    "-T",
    "-u",
    "-z",
    "-e",
    "-dumpdir",
    "-dumpbase",
    "-dumpbase-ext",
    "--param",
    "-specs",
    "--specs",
    "-fplugin",
    "-fpass-plugin",
    "-load",
    "-plugin",
    "--serialize-diagnostics",
    "-serialize-diagnostics",
    "-main-file-name",
    "-gcc-toolchain",
    "--gcc-toolchain",
    "-resource-dir",
];

/// `-f` switches that write, load or reformat something (a part of the name after
/// `-f`/`-fno-`; a harmless switch that happens to hold one is dropped too).
const DENY_F: &[&str] = &[
    "plugin",
    "pass-plugin",
    "dump",
    "profile",
    "stack-usage",
    "callgraph",
    "save",
    "record",
    "crash",
    "module",
    "implicit-module",
    "prebuilt",
    "pch",
    "diagnostics",
    "color",
    "caret",
    "show-",
    "message-length",
    "coverage",
    "test-coverage",
    "instrument",
    "sanitize",
    "xray",
    "lto",
    "debug",
    "syntax-only",
    "embed",
    "opt-record",
    "time-trace",
    "time-report",
    "proc-stat",
    "ast-dump",
    "depfile",
    "use-ld",
    "linker",
    "ld-path",
    "gnu-runtime",
    "error-limit",
    "max-errors",
    "build-session",
    "temp-file",
    "working-directory",
    "split-",
    "mem-report",
    "stats",
    "preprocessed",
    "directives-only",
    "auto-profile",
    "lsan",
    "asan",
    "callgraph-info",
    "opt-info",
    "report-bug",
    "compare-debug",
    "deps",
    "offload",
    "wrapper",
];

/// `-f<name>=<value>` switches kept with their value.
const F_WITH_VALUE: &[&str] = &[
    "visibility",
    "template-depth",
    "constexpr-depth",
    "constexpr-steps",
    "input-charset",
    "exec-charset",
    "wide-exec-charset",
    "ms-compatibility-version",
    "bracket-depth",
    "gnu89-inline",
    "openmp-version",
    "cf-protection",
    "stack-protector",
    "trivial-auto-var-init",
    "strict-flex-arrays",
    "abi-version",
    "sized-deallocation",
    "char8_t",
    "coroutines",
    "new-alignment",
];

fn plain(s: &str, extra: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || extra.contains(c))
}

fn f_ok(rest: &str) -> bool {
    let name = rest.strip_prefix("no-").unwrap_or(rest);
    if DENY_F.iter().any(|d| name.contains(d)) {
        return false;
    }
    match name.split_once('=') {
        None => plain(name, "+"),
        Some((key, value)) => F_WITH_VALUE.contains(&key) && plain(value, ".+"),
    }
}

fn w_ok(rest: &str) -> bool {
    // `-Wp,`, `-Wl,`, `-Wa,` hand text to other programs: a comma is never kept.
    !rest.contains(',') && plain(rest, "=+") && !matches!(rest, "p" | "l" | "a")
}

fn m_ok(rest: &str) -> bool {
    rest != "llvm" && plain(rest, "=.+")
}

const LANGUAGES: &[&str] = &["c", "c++", "c-header", "c++-header"];

/// Switches kept as they are (no value).
const PLAIN_FLAGS: &[&str] = &[
    "-ansi",
    "-pedantic",
    "-pedantic-errors",
    "-w",
    "-pthread",
    "-nostdinc",
    "-nostdinc++",
    "-undef",
    "-trigraphs",
    "-O",
    "-O0",
    "-O1",
    "-O2",
    "-O3",
    "-Os",
    "-Og",
    "-Oz",
    "-Ofast",
];

/// Search-path flags kept with their folder, and whether the folder is searched for
/// `#include "…"` only (`-iquote`) or for `#include <…>` too.
const SEARCH_PATHS: &[(&str, bool)] = &[
    ("-iquote", true),
    ("-isystem", false),
    ("-idirafter", false),
    ("-I", false),
];

/// Keep the allowed flags of `raw` (see the module docs), paths made absolute against `dir`
/// and moved by `remap`; `-include`/`-imacros` only of a regular file inside `workspace`.
pub fn allow(raw: &[String], dir: &Path, remap: Option<&Remap>, workspace: &Path) -> Allowed {
    let mut out = Allowed::default();
    let abs = |p: &str| {
        let q = normalize(&dir.join(p));
        match remap {
            Some(r) => r.path(q),
            None => q,
        }
    };
    let mut i = 0;
    while i < raw.len() {
        let a = raw[i].as_str();
        i += 1;
        let handled = search_path(raw, &mut i, a, &abs, &mut out)
            || forced_include(raw, &mut i, a, &abs, workspace, &mut out);
        if !handled {
            out.args.extend(kept(raw, &mut i, a));
        }
    }
    out
}

/// A [`SEARCH_PATHS`] flag `a` (its folder attached or next): kept, the folder made `abs`olute
/// and recorded; `false` for any other argument.
fn search_path(
    raw: &[String],
    i: &mut usize,
    a: &str,
    abs: &dyn Fn(&str) -> PathBuf,
    out: &mut Allowed,
) -> bool {
    for &(flag, quote_only) in SEARCH_PATHS {
        let Some(d) = take(raw, i, a, flag) else {
            continue;
        };
        let d = abs(&d);
        if flag == "-I" {
            out.args.push(format!("-I{}", d.display()));
        } else {
            out.args.extend([flag.to_owned(), d.display().to_string()]);
        }
        if quote_only {
            out.quote_dirs.push(d);
        } else {
            out.angle_dirs.push(d);
        }
        return true;
    }
    false
}

/// `-include`/`-imacros FILE`: kept only for a regular file (not a symlink) inside
/// `workspace`; `-include-pch` (with its value) and any other `-include…`/`-imacros…`
/// dropped; `false` for any other argument.
fn forced_include(
    raw: &[String],
    i: &mut usize,
    a: &str,
    abs: &dyn Fn(&str) -> PathBuf,
    workspace: &Path,
    out: &mut Allowed,
) -> bool {
    if a == "-imacros" || a == "-include" {
        let Some(f) = raw.get(*i) else { return true };
        *i += 1;
        let f = abs(f);
        if f.starts_with(workspace) && f.is_file() && !f.is_symlink() {
            out.args.extend([a.to_owned(), f.display().to_string()]);
            out.forced.push(f);
        }
        true
    } else if a.starts_with("-include") || a.starts_with("-imacros") {
        // `-include-pch`, `-includefoo`: dropped (the first with its value).
        if a == "-include-pch" {
            *i += 1;
        }
        true
    } else {
        false
    }
}

/// What is kept of any other argument `a`: a `-D`/`-U` macro, `-x` of a C language,
/// `-std=`, the allowed `-f`, `-W` and `-m` switches, [`PLAIN_FLAGS`]. A [`DROP_WITH_VALUE`]
/// flag is dropped with its value; anything else (inputs, `@files`, `-c`, `-g`, `-M*`,
/// `-B…`, `-specs=…`) is dropped alone.
fn kept(raw: &[String], i: &mut usize, a: &str) -> Vec<String> {
    if let Some(m) = take(raw, i, a, "-D") {
        return Some(format!("-D{m}"))
            .filter(|_| !m.is_empty())
            .into_iter()
            .collect();
    }
    if let Some(m) = take(raw, i, a, "-U") {
        return Some(format!("-U{m}"))
            .filter(|_| !m.is_empty())
            .into_iter()
            .collect();
    }
    if let Some(lang) = take(raw, i, a, "-x") {
        if LANGUAGES.contains(&lang.as_str()) {
            return vec!["-x".into(), lang];
        }
        return Vec::new();
    }
    if DROP_WITH_VALUE.contains(&a) {
        *i += 1;
        return Vec::new();
    }
    if let Some(std) = a.strip_prefix("-std=").or(a.strip_prefix("--std=")) {
        return Some(format!("-std={std}"))
            .filter(|_| plain(std, "+"))
            .into_iter()
            .collect();
    }
    let allowed = if let Some(rest) = a.strip_prefix("-f") {
        f_ok(rest)
    } else if let Some(rest) = a.strip_prefix("-W") {
        w_ok(rest)
    } else if let Some(rest) = a.strip_prefix("-m") {
        m_ok(rest)
    } else {
        PLAIN_FLAGS.contains(&a)
    };
    if allowed {
        vec![a.to_owned()]
    } else {
        Vec::new()
    }
}

/// `a`'s value when it is `flag` with its value attached or as the next argument (then
/// consumed).
fn take(raw: &[String], i: &mut usize, a: &str, flag: &str) -> Option<String> {
    let rest = a.strip_prefix(flag)?;
    if !rest.is_empty() {
        return Some(rest.trim_start_matches('=').to_owned());
    }
    let v = raw.get(*i)?.clone();
    *i += 1;
    Some(v)
}
