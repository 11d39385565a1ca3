//! Edits arriving as files rather than requests: `.openfiles/queue.jsonl` ([`queue`]) and
//! writes noticed under the workspace when no hook reports them ([`watch`]).
//!
//! The intake parses what it reads and hands typed entries to the workspace's pipeline
//! (`diagnostics::pipeline`); it depends on the pipeline, never the other way round. The
//! cursor it advances is owned by the writer that persists it (`diagnostics::writer`).

pub mod queue;
pub mod watch;

use std::path::PathBuf;

use openfiles_wire::spec::QueueLine;

/// Why a queue line was skipped.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LineError {
    #[error("not JSON: {0}")]
    Json(String),
    #[error("no \"paths\" array")]
    NoPaths,
    #[error("unknown version v={0}")]
    Version(u64),
}

/// Parse one queue line (without the newline). Only `v: 1` (or no `v`) is understood.
pub fn parse_line(line: &[u8]) -> Result<QueueLine, LineError> {
    let value: serde_json::Value =
        serde_json::from_slice(line).map_err(|e| LineError::Json(e.to_string()))?;
    let v = value.get("v").map(|v| v.as_u64().unwrap_or(0)).unwrap_or(1);
    if v != 1 {
        return Err(LineError::Version(v));
    }
    let Some(paths) = value.get("paths").and_then(|p| p.as_array()) else {
        return Err(LineError::NoPaths);
    };
    let paths: Vec<PathBuf> = paths
        .iter()
        .filter_map(|p| p.as_str())
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .collect();
    let text = |k: &str| value.get(k).and_then(|x| x.as_str()).map(str::to_owned);
    Ok(QueueLine {
        v: 1,
        ts: value.get("ts").and_then(|t| t.as_u64()).unwrap_or(0),
        agent: text("agent"),
        tool: text("tool"),
        paths,
    })
}

/// A queue line that was skipped, with an excerpt of it for the log.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SkippedLine {
    #[error("line longer than 1 MiB: {0}")]
    TooLong(String),
    #[error("{error}: {excerpt}")]
    Malformed { error: LineError, excerpt: String },
}

/// Parse the lines of one read step: each becomes a queue line or the reason it was skipped
/// (oversized lines arrive skipped already).
pub fn parse_lines(
    lines: Vec<Result<Vec<u8>, SkippedLine>>,
) -> Vec<Result<QueueLine, SkippedLine>> {
    lines
        .into_iter()
        .map(|line| {
            let line = line?;
            parse_line(&line).map_err(|error| SkippedLine::Malformed {
                error,
                excerpt: excerpt(&line),
            })
        })
        .collect()
}

/// The first characters of a line, for logs.
pub fn excerpt(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(&line[..line.len().min(80)]);
    if line.len() > 80 {
        format!("{s}…")
    } else {
        s.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_spec_example() {
        let l = parse_line(br#"{"v":1,"ts":1789322228384,"agent":"claude","tool":"Edit","paths":["/home/me/app/src/auth.ts"]}"#).unwrap();
        assert_eq!(l.paths, vec![PathBuf::from("/home/me/app/src/auth.ts")]);
        assert_eq!(l.agent.as_deref(), Some("claude"));
    }

    #[test]
    fn skipped_lines_say_why_with_an_excerpt() {
        let parsed = parse_lines(vec![
            Ok(br#"{"paths":["a"]}"#.to_vec()),
            Ok(b"{oops".to_vec()),
            Err(SkippedLine::TooLong("xxx".into())),
        ]);
        assert!(parsed[0].is_ok());
        let why = parsed[1].as_ref().unwrap_err().to_string();
        assert!(
            why.starts_with("not JSON") && why.ends_with(": {oops"),
            "{why}"
        );
        assert_eq!(
            parsed[2].as_ref().unwrap_err().to_string(),
            "line longer than 1 MiB: xxx"
        );
    }

    #[test]
    fn rejects_malformed_lines() {
        assert!(matches!(parse_line(b"{oops"), Err(LineError::Json(_))));
        assert_eq!(parse_line(br#"{"v":1}"#), Err(LineError::NoPaths));
        assert_eq!(
            parse_line(br#"{"v":1,"paths":"x"}"#),
            Err(LineError::NoPaths)
        );
        assert_eq!(
            parse_line(br#"{"v":2,"paths":[]}"#),
            Err(LineError::Version(2))
        );
    }
}
