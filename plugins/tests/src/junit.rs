//! Reading a JUnit XML report (pytest's `--junitxml`, `junit_family=xunit1`): the test
//! cases and their failures. A small reader for the one shape runners write — elements,
//! attributes, text and the five predefined entities plus character references — not a
//! general XML parser: anything it does not understand is skipped.

/// One `<testcase>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Case {
    pub classname: String,
    pub name: String,
    /// `file` and `line` (0-based, as pytest writes it), when the report has them.
    pub file: Option<String>,
    pub line: Option<u32>,
    /// A `<failure>` or `<error>`: its `message` attribute and its text.
    pub failure: Option<(String, String)>,
}

/// The test cases of a report.
pub fn cases(xml: &str) -> Vec<Case> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(at) = rest.find("<testcase") {
        rest = &rest[at + "<testcase".len()..];
        let Some(end) = rest.find('>') else { break };
        let head = &rest[..end];
        let attrs = attributes(head.trim_end_matches('/'));
        let get = |k: &str| attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let mut case = Case {
            classname: get("classname").unwrap_or_default(),
            name: get("name").unwrap_or_default(),
            file: get("file"),
            line: get("line").and_then(|l| l.parse().ok()),
            failure: None,
        };
        let self_closed = head.ends_with('/');
        rest = &rest[end + 1..];
        if !self_closed {
            let close = rest.find("</testcase>").unwrap_or(rest.len());
            let body = &rest[..close];
            case.failure = failure(body, "failure").or_else(|| failure(body, "error"));
            rest = &rest[close..];
        }
        out.push(case);
    }
    out
}

/// The `message` and text of the first `<tag …>` in `body`.
fn failure(body: &str, tag: &str) -> Option<(String, String)> {
    let open = format!("<{tag}");
    let at = body.find(&open)?;
    let after = &body[at + open.len()..];
    let end = after.find('>')?;
    let head = &after[..end];
    let message = attributes(head.trim_end_matches('/'))
        .into_iter()
        .find(|(n, _)| n == "message")
        .map(|(_, v)| v)
        .unwrap_or_default();
    if head.ends_with('/') {
        return Some((message, String::new()));
    }
    let text = &after[end + 1..];
    let text = &text[..text.find(&format!("</{tag}>")).unwrap_or(text.len())];
    Some((message, unescape(text)))
}

/// `name="value"` pairs of an element's head.
fn attributes(head: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = head;
    while let Some(eq) = rest.find('=') {
        let name = rest[..eq].trim().to_owned();
        let after = rest[eq + 1..].trim_start();
        let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            break;
        };
        let value_and_rest = &after[1..];
        let Some(close) = value_and_rest.find(quote) else {
            break;
        };
        out.push((name, unescape(&value_and_rest[..close])));
        rest = &value_and_rest[close + 1..];
    }
    out
}

/// The text with XML's entities and character references replaced.
pub fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let Some(semi) = after.find(';').filter(|s| *s <= 10) else {
            out.push('&');
            rest = &after[1..];
            continue;
        };
        let entity = &after[1..semi];
        let ch = match entity {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pytests_report() {
        let xml = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="1" skipped="0" tests="2"><testcase classname="tests.test_other" name="test_other" file="tests/test_other.py" line="0" time="0.000" /><testcase classname="tests.test_util" name="test_add[1]" file="tests/test_util.py" line="3" time="0.001"><failure message="assert 2 == 3&#10; +  where 2 = add(1, 1)">a = 1

&gt;       assert add(a, 1) == 3
E       assert 2 == 3

tests/test_util.py:6: AssertionError</failure></testcase></testsuite></testsuites>"#;
        let c = cases(xml);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].name, "test_other");
        assert_eq!(c[0].failure, None);
        assert_eq!(c[1].file.as_deref(), Some("tests/test_util.py"));
        assert_eq!(c[1].line, Some(3));
        let (message, text) = c[1].failure.clone().unwrap();
        assert_eq!(message, "assert 2 == 3\n +  where 2 = add(1, 1)");
        assert!(text.contains(">       assert add(a, 1) == 3"));
        assert!(text.ends_with("tests/test_util.py:6: AssertionError"));
    }

    #[test]
    fn unknown_entities_stay_as_text() {
        assert_eq!(
            unescape("a &amp; b &bogus; &#x41;&#66;"),
            "a & b &bogus; AB"
        );
    }
}
