//! Text that came from a repository (file names, file contents), an agent (a queue line's
//! `agent`) or a checker (messages, codes, source names), made safe to print for people.
//!
//! A terminal acts on control characters: `ESC ] 52 ; c ; … BEL` in a file name sets the
//! clipboard of whoever runs `openfiles review --list`, other sequences retitle the window,
//! hide text or move the cursor over what was printed before. [`escape`] is the one rule
//! every output for people (`status --short`, `review`, `review --list`, `prompt`, `check`,
//! `session add-git`) applies to such text: each control character is shown, never sent —
//! `ESC` as `\e`, other C0 characters and DEL as `\x07`, C1 characters (which some
//! terminals also obey: `\u{9b}` is CSI) and the bidirectional overrides (which reorder
//! what is shown) as `\u{9b}`. JSON outputs stay exact: serde escapes control characters.

use std::borrow::Cow;

/// `s` with every control character shown escaped (one line: `\n` and `\t` too).
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_keeping(s, false)
}

/// [`escape`] for text of several lines (a file's lines, a long message): line ends and
/// tabs stay as they are, everything else is escaped.
pub fn escape_lines(s: &str) -> Cow<'_, str> {
    escape_keeping(s, true)
}

/// A character a terminal could act on, or that reorders what is shown.
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape_keeping(s: &str, layout: bool) -> Cow<'_, str> {
    let kept = |c: char, next: Option<char>| {
        layout && (c == '\n' || c == '\t' || (c == '\r' && next == Some('\n')))
    };
    let mut chars = s.chars().peekable();
    let mut clean = true;
    while let Some(c) = chars.next() {
        if unsafe_char(c) && !kept(c, chars.peek().copied()) {
            clean = false;
            break;
        }
    }
    if clean {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if !unsafe_char(c) || kept(c, chars.peek().copied()) {
            out.push(c);
            continue;
        }
        match c {
            '\x1b' => out.push_str("\\e"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_sent() {
        assert!(matches!(escape("src/lib.rs"), Cow::Borrowed(_)));
        assert_eq!(escape("a\x1b]52;c;aGk=\x07b"), r"a\e]52;c;aGk=\x07b");
        assert_eq!(escape("\u{9b}31m\x7f\0"), r"\u{9b}31m\x7f\x00");
        assert_eq!(escape("x\ny\tz\r"), r"x\ny\tz\r");
        assert_eq!(escape("abc\u{202e}fed"), r"abc\u{202e}fed");
        assert_eq!(escape("naïve ✓"), "naïve ✓");
        assert_eq!(
            escape_lines("one\r\ntwo\tthree\n\x1b[2Jfour\r"),
            "one\r\ntwo\tthree\n\\e[2Jfour\\r"
        );
    }
}
