//! `openfiles logs [-f] [-n LINES]`: what the service said. Without journald the service
//! writes `<state dir>/serve.log` (rotated once to `serve.log.1`); this prints its last
//! lines and, with `-f`, follows it across rotations. When the service logs to journald
//! instead (no `serve.log` newer than its journal), it runs `journalctl --user -u
//! openfiles.service` with the same options.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;

use crate::paths::{rotated, SERVICE_LOG as NAME};

/// Run the command; the exit status.
pub fn run(follow: bool, lines: usize) -> anyhow::Result<u8> {
    let path = crate::paths::state_dir().join(NAME);
    if !path.exists() {
        return journal(follow, lines, &path);
    }
    let mut text = std::fs::read(rotated(&path)).unwrap_or_default();
    let mut file =
        std::fs::File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
    file.read_to_end(&mut text)?;
    let out = &mut std::io::stdout().lock();
    if out.write_all(tail(&text, lines)).is_err() {
        return Ok(0); // the reader went away
    }
    if !follow {
        return Ok(0);
    }
    let mut pos = file.stream_position()?;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        if len < pos {
            // Rotated: the rest of the old file is `serve.log.1`'s tail; start the new one.
            file = std::fs::File::open(&path)?;
            pos = 0;
        }
        file.seek(SeekFrom::Start(pos))?;
        let mut more = Vec::new();
        file.read_to_end(&mut more)?;
        pos += more.len() as u64;
        if !more.is_empty() && (out.write_all(&more).is_err() || out.flush().is_err()) {
            return Ok(0);
        }
    }
}

/// The last `n` lines of `text`.
fn tail(text: &[u8], n: usize) -> &[u8] {
    if n == 0 {
        return &text[text.len()..];
    }
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let start = body
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'\n')
        .nth(n - 1)
        .map_or(0, |(i, _)| i + 1);
    &text[start..]
}

fn journal(follow: bool, lines: usize, path: &Path) -> anyhow::Result<u8> {
    let status = openfiles_gate::Program::user("journalctl", "logs")
        .map_err(std::io::Error::from)
        .and_then(|journalctl| {
            let lines = lines.to_string();
            let mut args = vec!["--user", "-u", "openfiles.service", "-n", &lines];
            if follow {
                args.push("-f");
            }
            journalctl.command(args).status()
        });
    match status {
        Ok(st) => Ok(u8::from(!st.success())),
        Err(_) => anyhow::bail!(
            "no log yet: {} does not exist and journalctl is not available (the service \
             writes that file when it runs without journald)",
            path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::tail;

    #[test]
    fn tail_takes_the_last_lines() {
        assert_eq!(tail(b"a\nb\nc\n", 2), b"b\nc\n");
        assert_eq!(tail(b"a\nb\nc", 2), b"b\nc");
        assert_eq!(tail(b"a\n", 5), b"a\n");
        assert_eq!(tail(b"a\nb\n", 0), b"");
    }
}
