//! Column conversion: tools print columns in bytes (compilers, go) or UTF-16 units (pyright,
//! tsc, LSP servers); an [`Item`](crate::Item) counts characters. The one copy of both
//! conversions the plugins use.

/// A 1-based column as a tool printed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// In characters already.
    Chars(u32),
    /// In bytes of the line's UTF-8 (clang, gcc, go).
    Bytes(u32),
    /// In UTF-16 units (pyright, tsc).
    Utf16(u32),
}

impl Column {
    /// The 1-based character column on `line` (the text of the line, when it could be read;
    /// without it, the tool's own column, at least 1).
    pub fn to_chars(self, line: Option<&str>) -> u32 {
        match (self, line) {
            (Column::Chars(c), _) => c.max(1),
            (Column::Bytes(c), Some(l)) => byte_to_char_column(l, c),
            (Column::Utf16(c), Some(l)) => utf16_to_char_column(l, c),
            (Column::Bytes(c) | Column::Utf16(c), None) => c.max(1),
        }
    }
}

/// Convert a 1-based column counted in `unit`s of each character to a 1-based character
/// column on `line`; a column past the end of the line keeps its overshoot (one character
/// per unit), one inside a character names that character.
fn to_char_column(line: &str, column: u32, unit: impl Fn(char) -> usize) -> u32 {
    let target = column.saturating_sub(1) as usize;
    let mut units = 0usize;
    let mut chars = 0u32;
    for ch in line.chars() {
        if units >= target {
            break;
        }
        units += unit(ch);
        chars += 1;
    }
    if units < target {
        chars += (target - units) as u32;
    }
    chars + 1
}

/// A 1-based byte column on `line` as a 1-based character column.
pub fn byte_to_char_column(line: &str, column: u32) -> u32 {
    to_char_column(line, column, char::len_utf8)
}

/// A 1-based UTF-16 column on `line` as a 1-based character column.
pub fn utf16_to_char_column(line: &str, column: u32) -> u32 {
    to_char_column(line, column, char::len_utf16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_columns_become_character_columns() {
        // "é" is two bytes, "𝕏" four.
        let line = "é = 𝕏 + x";
        assert_eq!(byte_to_char_column(line, 1), 1);
        assert_eq!(byte_to_char_column(line, 3), 2); // after é
        assert_eq!(byte_to_char_column(line, 6), 5); // 𝕏
        assert_eq!(byte_to_char_column(line, 10), 6); // after 𝕏
        assert_eq!(byte_to_char_column(line, 2), 2); // inside é: the next character
        assert_eq!(byte_to_char_column(line, 0), 1);
        // Past the end: the overshoot is kept.
        assert_eq!(byte_to_char_column("ab", 5), 5);
        assert_eq!(byte_to_char_column("é", 5), 4);
        // go's and the C compilers' cases, from their plugins.
        assert_eq!(byte_to_char_column("s := \"é\"x", 10), 9);
        assert_eq!(byte_to_char_column("\tx := \"日本\"; return f(1)", 24), 20);
        assert_eq!(byte_to_char_column("char *s = \"é\"; x", 17), 16);
        assert_eq!(byte_to_char_column("abc", 3), 3);
    }

    #[test]
    fn utf16_columns_become_character_columns() {
        let line = "é = 𝕏 + x"; // é one unit, 𝕏 two
        assert_eq!(utf16_to_char_column(line, 1), 1);
        assert_eq!(utf16_to_char_column(line, 5), 5);
        assert_eq!(utf16_to_char_column(line, 7), 6);
        assert_eq!(utf16_to_char_column("ab", 5), 5);
        // pyright's (0-based there) and tsc's cases, from their plugins.
        assert_eq!(utf16_to_char_column("s = \"😀\"; x", 11), 10);
        assert_eq!(utf16_to_char_column("const s = \"😀\"; x", 17), 16);
        assert_eq!(utf16_to_char_column("abc", 6), 6);
        assert_eq!(Column::Utf16(7).to_chars(Some(line)), 6);
        assert_eq!(Column::Bytes(10).to_chars(None), 10);
        assert_eq!(Column::Chars(0).to_chars(Some(line)), 1);
    }
}
