//! `openfiles prompt fix|agents-md|small-steps|pr-description`: prompts written for a model,
//! from the current session, printed or copied (`--copy`); and `prompt agents-md
//! --install|--uninstall`, which keeps the instructions section in AGENTS.md / CLAUDE.md /
//! GEMINI.md between markers.
//!
//! Markers: the section is `<!-- openfiles:begin… -->` … `<!-- openfiles:end -->`, appended
//! after a blank line. Installing again updates the section in place (nothing changes when it
//! is current); uninstalling removes exactly what installing added, so the file is restored
//! byte for byte — the begin marker records the two things that cannot be seen afterwards:
//! that the file had no final newline (`+eol`: one was added) or did not exist (`+new`: it is
//! removed again when nothing else was written into it). A file linked to another
//! (CLAUDE.md → AGENTS.md) is changed once.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::model::{self, Model};
use crate::visible::escape;
use openfiles_wire::spec::Severity;

/// Which prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// The current problems of the session's files, `file:line:col`, to fix.
    Fix,
    /// The instructions section for AGENTS.md / CLAUDE.md / GEMINI.md.
    AgentsMd,
    /// Work in small, checked steps.
    SmallSteps,
    /// Write a pull-request description of the session's changes.
    PrDescription,
}

/// What to do with the prompt.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub dir: Option<PathBuf>,
    pub copy: bool,
    pub install: bool,
    pub uninstall: bool,
    /// `--install`/`--uninstall` targets instead of the default files.
    pub files: Vec<PathBuf>,
}

/// The instruction files `--install` looks for, in this order.
pub const INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md", "GEMINI.md"];

const BEGIN: &str = "<!-- openfiles:begin";
const BEGIN_TAIL: &str =
    " (managed by `openfiles prompt agents-md --install`; `--uninstall` removes it) -->";
const END: &str = "<!-- openfiles:end -->";

/// The instructions section (the snippet in `contrib/`, without its comment for people).
pub fn agents_md() -> String {
    let snippet = include_str!("../../contrib/AGENTS-snippet.md");
    let body = snippet
        .split_once("-->")
        .map_or(snippet, |(_, rest)| rest)
        .trim();
    format!("{body}\n")
}

/// `fix`: the current errors and warnings with `file:line:col` (names and messages with
/// their control characters escaped: [`crate::visible`]).
pub fn fix(m: &Model) -> String {
    let mut lines = Vec::new();
    for &i in &m.order {
        let f = &m.files[i];
        for it in &f.entry.items {
            if it.source == "openfiles"
                || !matches!(it.severity, Severity::Error | Severity::Warning)
            {
                continue;
            }
            let code = it
                .code
                .as_deref()
                .map(|c| format!(" {}", escape(c)))
                .unwrap_or_default();
            lines.push(format!(
                "- {}: {}: {} [{}{code}]",
                escape(&model::location(f, it)),
                model::severity_word(it.severity),
                escape(it.message.lines().next().unwrap_or("")),
                escape(&it.source)
            ));
        }
    }
    if lines.is_empty() {
        return format!(
            "The checkers report no error or warning in the files changed in this session (in {}). Nothing to fix.\n",
            escape(&m.root.display().to_string())
        );
    }
    format!(
        "Fix these problems, which the project's checkers report in the files changed in this \
session. Each line is `file:line:col: severity: message [source code]`; lines and columns are \
1-based and paths are relative to {}.\n\n{}\n\nFix the errors first, then the warnings. Change \
only what each fix needs and keep the behaviour otherwise; do not silence a check instead of \
fixing its cause. When you are done, check the files again (`openfiles check FILE…` prints what \
remains) and make sure no new problem appeared.\n",
        escape(&m.root.display().to_string()),
        lines.join("\n")
    )
}

/// `small-steps`.
pub fn small_steps() -> String {
    "Work in small steps. Make one change at a time — one function, one file, or a few \
closely related edits — and check it before you go on: openfiles checks every file you edit \
and reports its problems back to you (in your hook's feedback, or in \
`.openfiles/diagnostics.json`). Fix what a step broke before you start the next one. Prefer \
editing over rewriting whole files, keep each change easy to review, and say in one sentence \
what each step did and why. Before you say the task is done, make sure the files you changed \
have no errors and no new warnings.\n"
        .to_owned()
}

/// `pr-description`: the session's files by agent, with what remains to fix.
pub fn pr_description(m: &Model) -> String {
    let mut s = String::from(
        "Write a pull-request description for the changes in this working tree. Read them with \
`git diff HEAD` (and new files as they are). Start with a one-line title in the imperative \
mood, then: what changed and why (a short paragraph), the notable changes as a list, how it \
was tested, and anything a reviewer should look at closely. Do not invent changes that are \
not in the diff.\n\nFiles changed in this session, by the agent that changed them last:\n",
    );
    for g in &m.groups {
        s.push_str(&format!("\n{}:\n", escape(&g.agent)));
        for &i in &g.files {
            let f = &m.files[i];
            let e = &f.entry;
            let problems = if e.errors + e.warnings > 0 {
                format!(" ({} errors, {} warnings)", e.errors, e.warnings)
            } else {
                String::new()
            };
            s.push_str(&format!("- {}{problems}\n", escape(&f.key)));
        }
    }
    let t = m.totals();
    if t.errors + t.warnings > 0 {
        s.push_str(&format!(
            "\nThe checkers still report {} error(s) and {} warning(s); mention them under \
known issues.\n",
            t.errors, t.warnings
        ));
    }
    s
}

/// `openfiles prompt KIND [DIR] [--copy] [--install|--uninstall]`.
pub fn run(socket: Option<&Path>, kind: Kind, opts: &Options) -> anyhow::Result<u8> {
    if opts.install || opts.uninstall {
        if kind != Kind::AgentsMd {
            anyhow::bail!("--install and --uninstall are for `openfiles prompt agents-md`");
        }
        let dir = super::folder(opts.dir.as_deref())?;
        let mut out = std::io::stdout().lock();
        for line in install_all(&dir, &opts.files, opts.install)? {
            writeln!(out, "{line}")?;
        }
        return Ok(0);
    }
    let text = match kind {
        Kind::AgentsMd => agents_md(),
        Kind::SmallSteps => small_steps(),
        Kind::Fix | Kind::PrDescription => {
            let dir = super::folder(opts.dir.as_deref())?;
            let mut client = super::connect(socket)?;
            let m = Model::new(super::fetch(&mut client, &dir)?);
            if kind == Kind::Fix {
                fix(&m)
            } else {
                pr_description(&m)
            }
        }
    };
    if opts.copy {
        let how = copy(&text)?;
        eprintln!("copied the prompt ({} bytes) with {how}", text.len());
    } else {
        std::io::stdout().lock().write_all(text.as_bytes())?;
    }
    Ok(0)
}

/// Copy `text` to the clipboard: with OSC 52 through the terminal (works over SSH and in
/// tmux with `set-clipboard on`) and with the first clipboard tool found for the session
/// (wl-copy, xclip, xsel, pbcopy). Returns what was used.
pub fn copy(text: &str) -> anyhow::Result<String> {
    let mut used = Vec::new();
    if let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") {
        let seq = format!("\x1b]52;c;{}\x07", base64(text.as_bytes()));
        if tty.write_all(seq.as_bytes()).is_ok() {
            used.push("OSC 52 (the terminal)".to_owned());
        }
    }
    let tools: &[(&str, &[&str], Option<&str>)] = &[
        ("wl-copy", &[], Some("WAYLAND_DISPLAY")),
        ("xclip", &["-selection", "clipboard"], Some("DISPLAY")),
        ("xsel", &["--clipboard", "--input"], Some("DISPLAY")),
        ("pbcopy", &[], None),
    ];
    for (tool, args, needs) in tools {
        if needs.is_some_and(|v| std::env::var_os(v).is_none_or(|x| x.is_empty())) {
            continue;
        }
        let Ok(exe) = openfiles_gate::Program::user(tool, "clipboard") else {
            continue;
        };
        let child = exe
            .command(*args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Ok(mut child) = child {
            let wrote = child
                .stdin
                .take()
                .is_some_and(|mut i| i.write_all(text.as_bytes()).is_ok());
            if wrote && child.wait().is_ok_and(|s| s.success()) {
                used.push((*tool).to_owned());
                break;
            }
        }
    }
    if used.is_empty() {
        anyhow::bail!(
            "nothing to copy with: no terminal (for OSC 52) and none of wl-copy, xclip, xsel, pbcopy; run without --copy and copy the output"
        );
    }
    Ok(used.join(" and "))
}

fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for k in 0..4 {
            if k <= c.len() {
                s.push(char::from(T[(n >> (18 - 6 * k) & 63) as usize]));
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Largest instruction file read (they are a few KiB; `/dev/zero` is not one).
pub const MAX_INSTRUCTIONS_BYTES: u64 = 4 << 20;

/// Where `target` really is, as a path below the workspace `dir` (canonical): a link to
/// another file of the workspace (CLAUDE.md → AGENTS.md) is resolved; a link that leaves
/// the workspace (AGENTS.md → ~/.bashrc, a cloned repository's trap) is refused, never
/// written through nor replaced, and so is a dangling one.
fn resolve_target(dir: &Path, target: &Path) -> anyhow::Result<PathBuf> {
    let shown = target.display();
    let real = match std::fs::symlink_metadata(target) {
        Ok(_) => target.canonicalize().with_context(|| {
            format!("{shown} is a link to a missing file (or cannot be resolved); left as it is")
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
                anyhow::bail!("{shown} is not a file name");
            };
            parent
                .canonicalize()
                .with_context(|| format!("cannot resolve the folder of {shown}"))?
                .join(name)
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {shown}")),
    };
    if real == dir || !real.starts_with(dir) {
        anyhow::bail!(
            "{shown} leads outside {} (to {}); refusing to write there: a workspace's instruction \
             file may not redirect a write (replace the link with a file, or run the command where \
             the file is)",
            dir.display(),
            real.display()
        );
    }
    Ok(real)
}

/// The text of `real` (below `dir`), `None` when there is none: opened from `dir` without
/// following any symlink, never waiting on a FIFO, regular files only, at most
/// [`MAX_INSTRUCTIONS_BYTES`].
fn read_instructions(dir: &Path, real: &Path, shown: &Path) -> anyhow::Result<Option<String>> {
    use openfiles_plugin_api::confine;
    match confine::read_workspace_file(dir, real, MAX_INSTRUCTIONS_BYTES) {
        Ok(b) => Ok(Some(String::from_utf8(b).with_context(|| {
            format!("{} is not UTF-8 text; left as it is", shown.display())
        })?)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => anyhow::bail!("cannot read {}: {e}; left as it is", shown.display()),
    }
}

/// Install (or uninstall) the section in every target file; one report line each.
pub fn install_all(dir: &Path, files: &[PathBuf], install: bool) -> anyhow::Result<Vec<String>> {
    let dir = &dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))?;
    let mut targets: Vec<PathBuf> = if files.is_empty() {
        INSTRUCTION_FILES
            .iter()
            .map(|f| dir.join(f))
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .collect()
    } else {
        files.iter().map(|f| dir.join(f)).collect()
    };
    if targets.is_empty() && install {
        targets.push(dir.join(INSTRUCTION_FILES[0]));
    }
    // Every target is resolved and read before anything is written: one refused file (a
    // link leaving the workspace, a FIFO) leaves all of them as they were.
    let mut seen = Vec::new();
    let mut jobs = Vec::new();
    for t in targets {
        let real = resolve_target(dir, &t)?;
        if seen.contains(&real) {
            jobs.push((t, None));
            continue;
        }
        seen.push(real.clone());
        let before = read_instructions(dir, &real, &t)?;
        jobs.push((t, Some((real, before))));
    }
    let mut report = Vec::new();
    for (t, job) in jobs {
        let Some((real, before)) = job else {
            report.push(format!(
                "{}: same file as one above, left as it is",
                t.display()
            ));
            continue;
        };
        let (after, what) = if install {
            let a = installed(before.as_deref(), &agents_md());
            if Some(a.as_str()) == before.as_deref() {
                (None, "already up to date")
            } else if before.as_deref().is_some_and(has_section) {
                (Some(Restored::Text(a)), "updated")
            } else {
                (Some(Restored::Text(a)), "installed")
            }
        } else {
            match before.as_deref().map(uninstalled) {
                Some(Some(a)) => (Some(a), "removed"),
                _ => (None, "nothing to remove"),
            }
        };
        match after {
            Some(Restored::Delete) => {
                std::fs::remove_file(&real)
                    .with_context(|| format!("cannot remove {}", t.display()))?;
                report.push(format!(
                    "{}: removed (openfiles had created it)",
                    t.display()
                ));
            }
            Some(Restored::Text(text)) => {
                let mode = std::fs::symlink_metadata(&real)
                    .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777)
                    .unwrap_or(0o644);
                let rel = real.strip_prefix(dir).unwrap_or(&real);
                // Reached from the workspace by descriptor: a folder swapped for a link in
                // the meantime is refused, not written through.
                openfiles_os::fsutil::write_atomic_in(dir, rel, text.as_bytes(), mode, 0o755)
                    .with_context(|| format!("cannot write {}", t.display()))?;
                report.push(format!("{}: {what}", t.display()));
            }
            None => report.push(format!("{}: {what}", t.display())),
        }
    }
    Ok(report)
}

/// What a file becomes.
#[derive(Debug, PartialEq, Eq)]
pub enum Restored {
    Text(String),
    /// The file was created by `--install` and holds nothing else.
    Delete,
}

fn has_section(text: &str) -> bool {
    find_section(text).is_some()
}

/// The byte range of the section (begin marker line through the end marker's newline) and
/// the begin marker's flags.
fn find_section(text: &str) -> Option<(usize, usize, String)> {
    let start = text
        .match_indices(BEGIN)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n')?;
    let line_end = text[start..].find('\n').map_or(text.len(), |n| start + n);
    let flags = text[start + BEGIN.len()..line_end]
        .split(' ')
        .next()
        .unwrap_or("")
        .to_owned();
    let end_at = text[line_end..].find(END).map(|n| line_end + n)?;
    let mut end = end_at + END.len();
    if text[end..].starts_with('\n') {
        end += 1;
    }
    Some((start, end, flags))
}

/// `text` (`None`: no such file) with the section installed or brought up to date.
pub fn installed(text: Option<&str>, body: &str) -> String {
    let section = |flags: &str| format!("{BEGIN}{flags}{BEGIN_TAIL}\n{body}{END}\n");
    let Some(text) = text else {
        return section("+new");
    };
    if let Some((start, end, flags)) = find_section(text) {
        let mut t = text.to_owned();
        t.replace_range(start..end, &section(&flags));
        return t;
    }
    if text.is_empty() {
        section("")
    } else if text.ends_with('\n') {
        format!("{text}\n{}", section(""))
    } else {
        format!("{text}\n\n{}", section("+eol"))
    }
}

/// `text` without the section, exactly as it was before `--install`; `None` when there is
/// no section.
pub fn uninstalled(text: &str) -> Option<Restored> {
    let (start, end, flags) = find_section(text)?;
    let mut before = &text[..start];
    if flags.contains("+eol") {
        before = before.strip_suffix("\n\n").unwrap_or(before);
    } else if !before.is_empty() {
        before = before.strip_suffix('\n').unwrap_or(before);
    }
    let t = format!("{before}{}", &text[end..]);
    if flags.contains("+new") && t.is_empty() {
        return Some(Restored::Delete);
    }
    Some(Restored::Text(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(original: Option<&str>) {
        let body = "## Section\n\nDo things.\n";
        let inst = installed(original, body);
        assert!(inst.contains(body));
        assert_eq!(
            installed(Some(&inst), body),
            inst,
            "installing twice changes nothing"
        );
        let back = uninstalled(&inst).unwrap();
        match original {
            Some(o) => assert_eq!(back, Restored::Text(o.to_owned()), "from {o:?}"),
            None => assert_eq!(back, Restored::Delete),
        }
    }

    #[test]
    fn uninstall_restores_every_kind_of_file_byte_for_byte() {
        for o in [
            None,
            Some(""),
            Some("# Rules\n"),
            Some("# Rules"),
            Some("# Rules\n\n"),
            Some("a\r\nb\r\n"),
        ] {
            round_trip(o);
        }
    }

    #[test]
    fn an_old_section_is_updated_in_place_and_text_after_it_is_kept() {
        let body1 = "old\n";
        let inst = installed(Some("top\n"), body1);
        let edited = format!("{inst}more by hand\n");
        let updated = installed(Some(&edited), "new\n");
        assert!(updated.contains("new\n") && !updated.contains("old\n"));
        assert!(updated.ends_with("more by hand\n"));
        assert_eq!(
            uninstalled(&updated).unwrap(),
            Restored::Text("top\nmore by hand\n".into())
        );
        assert_eq!(uninstalled("no section\n"), None);
    }

    #[test]
    fn base64_matches_the_standard_alphabet() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"hello, world"), "aGVsbG8sIHdvcmxk");
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    /// `install_all` on another thread, given up on (a failure) after 10 s: a FIFO used to
    /// hang it for ever.
    fn install_within(dir: &Path, install: bool) -> anyhow::Result<Vec<String>> {
        let dir = dir.to_owned();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(install_all(&dir, &[], install));
        });
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("install_all hung")
    }

    /// A cloned repository's `AGENTS.md -> ~/.bashrc` had `--install` rewrite the bashrc.
    /// The link is refused (and left alone), the file it points at is untouched.
    #[test]
    fn install_never_writes_through_a_link_that_leaves_the_workspace() {
        let home = tempfile::tempdir().unwrap();
        let bashrc = home.path().join(".bashrc");
        std::fs::write(&bashrc, "alias ll='ls -l'\n").unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&bashrc, ws.path().join("AGENTS.md")).unwrap();
        for install in [true, false] {
            let err = install_within(ws.path(), install).unwrap_err().to_string();
            assert!(err.contains("outside"), "{err}");
        }
        assert_eq!(
            std::fs::read_to_string(&bashrc).unwrap(),
            "alias ll='ls -l'\n"
        );
        assert!(std::fs::symlink_metadata(ws.path().join("AGENTS.md"))
            .unwrap()
            .file_type()
            .is_symlink());
        // One refused target leaves the others as they were too.
        let ws1 = tempfile::tempdir().unwrap();
        std::fs::write(ws1.path().join("AGENTS.md"), "# Rules\n").unwrap();
        std::os::unix::fs::symlink(&bashrc, ws1.path().join("CLAUDE.md")).unwrap();
        assert!(install_within(ws1.path(), true).is_err());
        assert_eq!(
            std::fs::read_to_string(ws1.path().join("AGENTS.md")).unwrap(),
            "# Rules\n"
        );
        // A link inside the workspace is followed (changed once, the link kept).
        let ws2 = tempfile::tempdir().unwrap();
        std::fs::write(ws2.path().join("AGENTS.md"), "# Rules\n").unwrap();
        std::os::unix::fs::symlink("AGENTS.md", ws2.path().join("CLAUDE.md")).unwrap();
        let out = install_within(ws2.path(), true).unwrap();
        assert!(out[0].ends_with("AGENTS.md: installed"), "{out:?}");
        assert!(out[1].contains("same file"), "{out:?}");
        assert!(std::fs::read_to_string(ws2.path().join("AGENTS.md"))
            .unwrap()
            .contains(BEGIN));
    }

    /// AGENTS.md as a FIFO hung `--install` and `--uninstall`; a device (`/dev/zero`) was
    /// read until memory ran out, a huge file whole. Regular files only, capped.
    #[test]
    fn install_refuses_fifos_devices_and_huge_files_promptly() {
        let ws = tempfile::tempdir().unwrap();
        mkfifo(&ws.path().join("AGENTS.md"));
        for install in [true, false] {
            let err = install_within(ws.path(), install).unwrap_err().to_string();
            assert!(err.contains("not a regular file"), "{err}");
        }
        let ws = tempfile::tempdir().unwrap();
        let huge = ws.path().join("AGENTS.md");
        let f = std::fs::File::create(&huge).unwrap();
        f.set_len(MAX_INSTRUCTIONS_BYTES + 1).unwrap();
        let err = install_within(ws.path(), true).unwrap_err().to_string();
        assert!(err.contains("limit"), "{err}");
        assert_eq!(
            std::fs::metadata(&huge).unwrap().len(),
            MAX_INSTRUCTIONS_BYTES + 1
        );
        // An explicit target that is a device (or anything outside the workspace).
        let err = install_all(ws.path(), &[PathBuf::from("/dev/zero")], true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("outside"), "{err}");
    }
}
