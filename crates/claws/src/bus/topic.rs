//! Topic names and patterns: lowercase-ish dot-separated segments; in a pattern `*` matches
//! exactly one segment and `**` one or more.

/// A topic to publish on: non-empty segments, no wildcards, no whitespace.
pub fn valid_topic(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 512
        && t.split('.').all(|s| {
            !s.is_empty() && s != "*" && s != "**" && !s.chars().any(|c| c.is_whitespace())
        })
}

/// A pattern to subscribe with: like a topic, but segments may be `*` or `**`.
pub fn valid_pattern(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= 512
        && p.split('.')
            .all(|s| !s.is_empty() && !s.chars().any(|c| c.is_whitespace()))
}

pub fn matches(pattern: &[String], topic: &[&str]) -> bool {
    match pattern.split_first() {
        None => topic.is_empty(),
        Some((p, rest)) if p == "**" => (1..=topic.len()).any(|k| matches(rest, &topic[k..])),
        Some((p, rest)) => {
            !topic.is_empty() && (p == "*" || p == topic[0]) && matches(rest, &topic[1..])
        }
    }
}

pub fn segments(p: &str) -> Vec<String> {
    p.split('.').map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("a.b", "a.b", true),
            ("a.b", "a.c", false),
            ("a.*", "a.b", true),
            ("a.*", "a.b.c", false),
            ("a.*", "a", false),
            ("a.**", "a.b", true),
            ("a.**", "a.b.c.d", true),
            ("a.**", "a", false),
            ("**", "x", true),
            ("**", "x.y.z", true),
            ("*.b.*", "a.b.c", true),
            ("*.b.*", "a.c.c", false),
            ("a.**.z", "a.b.c.z", true),
            ("a.**.z", "a.z", false),
            ("command.*.end", "command.12.end", true),
        ];
        for (p, t, want) in cases {
            let ts: Vec<&str> = t.split('.').collect();
            assert_eq!(matches(&segments(p), &ts), *want, "{p} vs {t}");
        }
    }
}
