//! Terminal escape handling with `vte`: stripping captured output to plain text for
//! `readLog`/`exec`, and spotting the shell-integration marks in the live PTY stream.
//!
//! Stripping removes OSC strings, DCS/SOS/PM/APC strings, CSI sequences, other ESC
//! sequences, then C0 controls and DEL except tab, newline and carriage return.
//!
//! Marks are `ESC ] 633 ; <kind> ; <nonce> [; <payload>] BEL`. Only BEL-terminated marks that
//! carry this terminal's nonce count, so program output (which does not know the nonce,
//! the integration scripts unset it) cannot fake a prompt or an exit code.

use vte::{Params, Parser, Perform};

/// Plain text of `bytes` (invalid UTF-8 becomes U+FFFD).
pub fn strip(bytes: &[u8]) -> String {
    struct Plain(String);
    impl Perform for Plain {
        fn print(&mut self, c: char) {
            if c != '\x7f' {
                self.0.push(c);
            }
        }
        fn execute(&mut self, b: u8) {
            if matches!(b, b'\t' | b'\n' | b'\r') {
                self.0.push(b as char);
            }
        }
    }
    let mut p = Plain(String::with_capacity(bytes.len()));
    let mut parser: Parser = Parser::new();
    parser.advance(&mut p, bytes);
    p.0
}

/// Stripped text with `\r\n` folded to `\n` and lone carriage returns dropped (command output).
pub fn plain_output(bytes: &[u8]) -> String {
    strip(bytes).replace("\r\n", "\n").replace('\r', "")
}

/// A shell-integration mark and the absolute offsets of its first and one-past-last byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub kind: MarkKind,
    pub start: u64,
    pub end: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkKind {
    /// `A`: the prompt is about to be drawn (the shell is idle).
    Prompt,
    /// `E`: the command line about to run.
    CommandLine(String),
    /// `C`: the command starts; its output follows.
    Start,
    /// `D`: the command finished with this exit code.
    End(i32),
    /// `X`: the command about to start is the one `exec` typed with this token.
    ExecStart(u64),
    /// `R`: the shell refused the line `exec` typed with this token (syntax error, incomplete
    /// input); the payload is the shell's reason (empty: see its output).
    Refused(u64, String),
}

/// Finds marks in a byte stream fed in arbitrary chunks. Plain output is skipped with
/// `memchr` for the `ESC ] 633 ;` prefix; each candidate up to its BEL is parsed by `vte`.
/// A candidate cut by a chunk boundary is carried into the next chunk (bounded).
pub struct MarkScanner {
    nonce: Vec<u8>,
    carry: Vec<u8>,
    carry_base: u64,
}

const PREFIX: &[u8] = b"\x1b]633;";
/// Longest mark kept across chunks (a mark carries an escaped command line).
const MAX_MARK: usize = 256 << 10;

struct Collect<'a> {
    nonce: &'a [u8],
    found: Option<MarkKind>,
}

impl Perform for Collect<'_> {
    fn osc_dispatch(&mut self, params: &[&[u8]], bell_terminated: bool) {
        if !bell_terminated || params.len() < 3 || params[0] != b"633" || params[2] != self.nonce {
            return;
        }
        self.found = match params[1] {
            b"A" => Some(MarkKind::Prompt),
            b"C" => Some(MarkKind::Start),
            b"E" => Some(MarkKind::CommandLine(unescape(
                params.get(3).copied().unwrap_or(b""),
            ))),
            b"D" => Some(MarkKind::End(
                params
                    .get(3)
                    .and_then(|p| std::str::from_utf8(p).ok())
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(-1),
            )),
            b"X" => token(params.get(3)).map(MarkKind::ExecStart),
            b"R" => token(params.get(3))
                .map(|t| MarkKind::Refused(t, unescape(params.get(4).copied().unwrap_or(b"")))),
            _ => None,
        };
    }
    fn csi_dispatch(&mut self, _: &Params, _: &[u8], _: bool, _: char) {}
}

fn token(p: Option<&&[u8]>) -> Option<u64> {
    std::str::from_utf8(p?).ok()?.parse().ok()
}

impl MarkScanner {
    pub fn new(nonce: &str) -> MarkScanner {
        MarkScanner {
            nonce: nonce.as_bytes().to_vec(),
            carry: Vec::new(),
            carry_base: 0,
        }
    }

    /// Feed `chunk`, whose first byte sits at absolute offset `base`; marks are appended to `out`.
    pub fn feed(&mut self, base: u64, chunk: &[u8], out: &mut Vec<Mark>) {
        if self.carry.is_empty() {
            self.scan(base, chunk, out);
        } else {
            let mut data = std::mem::take(&mut self.carry);
            data.extend_from_slice(chunk);
            let b = self.carry_base;
            self.scan(b, &data, out);
        }
    }

    fn scan(&mut self, base: u64, data: &[u8], out: &mut Vec<Mark>) {
        let mut pos = 0;
        // Whole `ESC ] 633 ;` prefixes are found with one SIMD substring search, so output
        // dense with other escape sequences (colours) costs no per-ESC work.
        while let Some(i) = memchr::memmem::find(&data[pos..], PREFIX) {
            let start = pos + i;
            let rest = &data[start..];
            let Some(j) = memchr::memchr(0x07, rest) else {
                if rest.len() <= MAX_MARK {
                    self.keep(base + start as u64, rest);
                }
                return;
            };
            let mut collect = Collect {
                nonce: &self.nonce,
                found: None,
            };
            let mut parser: Parser = Parser::new();
            parser.advance(&mut collect, &rest[..=j]);
            if let Some(kind) = collect.found {
                out.push(Mark {
                    kind,
                    start: base + start as u64,
                    end: base + (start + j + 1) as u64,
                });
            }
            pos = start + j + 1;
        }
        // A prefix cut by the chunk's end: an ESC among the last few bytes that starts it.
        let tail = data.len().saturating_sub(PREFIX.len() - 1).max(pos);
        for k in memchr::memchr_iter(0x1b, &data[tail..]) {
            let rest = &data[tail + k..];
            if PREFIX.starts_with(rest) {
                self.keep(base + (tail + k) as u64, rest);
                return;
            }
        }
    }

    fn keep(&mut self, at: u64, bytes: &[u8]) {
        self.carry_base = at;
        self.carry.extend_from_slice(bytes);
    }
}

/// Undo the scripts' escaping: `\\` is a backslash, `\xHH` a byte.
fn unescape(p: &[u8]) -> String {
    let mut out = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        if p[i] == b'\\' && i + 1 < p.len() {
            if p[i + 1] == b'\\' {
                out.push(b'\\');
                i += 2;
                continue;
            }
            if p[i + 1] == b'x' && i + 3 < p.len() {
                if let Ok(b) = u8::from_str_radix(&String::from_utf8_lossy(&p[i + 2..i + 4]), 16) {
                    out.push(b);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(p[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_order() {
        let s = strip(b"a\x1b]0;title\x07b\x1bP1$r\x1b\\c\x1b[31md\x1b7e\x01\x7ff\tg\r\n");
        assert_eq!(s, "abcdef\tg\r\n");
    }

    #[test]
    fn marks_need_the_nonce_and_carry_offsets() {
        let mut sc = MarkScanner::new("n1");
        let mut out = Vec::new();
        let data = b"xx\x1b]633;D;bad;0\x07\x1b]633;E;n1;echo a\\x3bb\\\\\x07yy\x1b]633;D;n1;3\x07";
        // feed in two pieces split inside a mark
        sc.feed(100, &data[..20], &mut out);
        sc.feed(120, &data[20..], &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0].kind, MarkKind::CommandLine("echo a;b\\".into()));
        assert_eq!(out[1].kind, MarkKind::End(3));
        assert_eq!(out[1].end, 100 + data.len() as u64);
        assert_eq!(
            out[1].end - out[1].start,
            "\x1b]633;D;n1;3\x07".len() as u64
        );
    }

    #[test]
    fn exec_token_marks() {
        let mut sc = MarkScanner::new("n1");
        let mut out = Vec::new();
        let data = b"\x1b]633;X;n1;12\x07\x1b]633;R;n1;13;parse error near `)'\x07\x1b]633;R;n1;14\x07\x1b]633;X;n1;zz\x07\x1b]633;R;n2;15\x07";
        sc.feed(0, data, &mut out);
        let kinds: Vec<MarkKind> = out.into_iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            vec![
                MarkKind::ExecStart(12),
                MarkKind::Refused(13, "parse error near `)'".into()),
                MarkKind::Refused(14, String::new()),
            ]
        );
    }

    #[test]
    fn marks_split_at_every_byte() {
        let data = b"a\x1b[1m\x1b\x1b]633;A;n1\x07b\x1b]633;D;n1;7\x07\x1b";
        for cut in 0..=data.len() {
            let mut sc = MarkScanner::new("n1");
            let mut out = Vec::new();
            sc.feed(10, &data[..cut], &mut out);
            sc.feed(10 + cut as u64, &data[cut..], &mut out);
            let kinds: Vec<_> = out.iter().map(|m| (m.kind.clone(), m.start)).collect();
            assert_eq!(
                kinds,
                vec![(MarkKind::Prompt, 10 + 6), (MarkKind::End(7), 10 + 18)],
                "cut at {cut}"
            );
        }
    }
}
