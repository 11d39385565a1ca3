//! Silencing, flagged (issue 40.6): an edit that makes a problem disappear by hiding it is
//! not a fix. This module owns the built-in source `silencing` that names, in the files an
//! agent edits, what hides a problem instead of fixing it:
//!
//! - a suppression comment or attribute (`# noqa`, `# type: ignore`, `# pyright: ignore`,
//!   `@ts-ignore`, `@ts-expect-error`, `// eslint-disable…`, `#[allow(…)]`, `//nolint`,
//!   `NOLINT`, …);
//! - a cast to "anything" (`as any`, `cast(Any, …)`) that silences an error the baseline did
//!   not have: named only when, earlier in the session, a checker reported an error at that
//!   very line (one the baseline did not have) and the edit that added the cast made it go
//!   ([`keep_cast`]). The rule is the one the pipeline can compute from what it knows — the
//!   session's earlier items for the file and line, no extra check with the cast taken out —
//!   so a cast in fresh code that silenced nothing is not named, nor one written in the same
//!   edit as the error it hides (that error was never reported). The error's line follows
//!   the text from edit to edit (a line diff; an edited line stays itself within its hunk);
//!   a cast put on a line of a hunk that also inserted lines above it may miss its error;
//! - a skipped test (`@pytest.mark.skip`, `.skip(`, `#[ignore]`, `t.Skip`, …) or a test
//!   function that is gone;
//! - a checker's configuration loosened (`"strict": false`, `typeCheckingMode = "basic"`,
//!   a rule turned `"off"`, a lint set to `"allow"`, …).
//!
//! It is a per-file source that checks texts ([`crate::diagnostics::SourceInfo::checks_texts`]):
//! the baseline sends it each edited file's committed text first, so the session's usual
//! classification decides what the edit *added* (an item the committed text had too is not
//! introduced), and the pipeline keeps only the introduced ones ([`keep`]). A removed test is
//! found against the test names of the committed text this source saw (kept in memory: after
//! a restart of the service, removals of the files checked before it are not named).
//! Items are warnings of source `openfiles`; their codes are [`CODES`]. Pure detection lives in
//! [`find`] and [`tests_in`]; [`Silencing`] wraps the service's `Checker` to add the source.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use futures_util::future::BoxFuture;
use openfiles_plugin_api::{confine, CheckRequest, CheckResponse, FileResult, Item, Severity};
use openfiles_wire::spec;
use regex::Regex;

use super::{CheckError, Checker, SourceId, SourceInfo};

mod rules;
pub use rules::handles;
use rules::{checker_section, lang, re, rules, ConfigKind, Lang, SECTION};

/// The source's name in entries (`sources.silencing`).
pub const NAME: &str = "silencing";
/// The items' `source`.
pub const ITEM_SOURCE: &str = spec::SILENCING_SOURCE;
/// The id the source has beside the plugins (theirs count up from 0).
pub const ID: SourceId = SourceId::MAX - 1;
/// A suppression comment or attribute.
pub const SUPPRESSION: &str = spec::SILENCING_CODES[0];
/// A cast to "anything".
pub const CAST_ANY: &str = spec::SILENCING_CODES[1];
/// A skipped test.
pub const TEST_SKIPPED: &str = spec::SILENCING_CODES[2];
/// A test function that is gone.
pub const TEST_REMOVED: &str = spec::SILENCING_CODES[3];
/// A checker's configuration loosened.
pub const CONFIG_LOOSENED: &str = spec::SILENCING_CODES[4];
/// Every code this source gives.
pub const CODES: [&str; 5] = spec::SILENCING_CODES;

/// Largest file read.
const MAX_BYTES: u64 = 4 << 20;
/// Longest excerpt of a configuration line quoted in a message.
const MAX_QUOTE: usize = 80;

/// Whether `item` is one of this source's.
pub fn is_silencing(item: &Item) -> bool {
    spec::is_silencing(item)
}

/// After classification: only what the session added is named. A suppression the committed
/// text had already is the project's own business, and without a baseline (not a git
/// repository, baseline off) what was added is unknown: nothing is named then.
pub fn keep(item: &Item) -> bool {
    !is_silencing(item) || item.introduced == Some(true)
}

/// Whether `item` is an error a cast to "anything" could silence: a checker's error the
/// baseline did not have (introduced, or not classified), not a test runner's nor this
/// source's.
pub fn silenceable(item: &Item) -> bool {
    item.severity == Severity::Error
        && item.introduced != Some(false)
        && !is_silencing(item)
        && !openfiles_plugin_api::test_runners::Runner::ALL
            .iter()
            .any(|r| r.source() == item.source)
}

/// [`keep`], and a cast to "anything" only when it silences an error: `earlier` holds the
/// lines where an earlier content of the file in this session had a [`silenceable`] error
/// (the session's own record, [`crate::diagnostics::session::FileState::earlier_errors`]).
pub fn keep_cast(item: &Item, earlier: &std::collections::BTreeSet<u32>) -> bool {
    keep(item) && (item.code.as_deref() != Some(CAST_ANY) || earlier.contains(&item.line))
}

/// Every silencer in `text` (the file at `path`), one item per line and kind, at the match.
/// Messages carry no line number, so the baseline's matching counts them per kind.
pub fn find(path: &Path, text: &str) -> Vec<Item> {
    let Some(lang) = lang(path) else {
        return Vec::new();
    };
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let mut section: Option<String> = None;
    let mut items = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if let Lang::Config(kind @ (ConfigKind::Toml | ConfigKind::Ini)) = lang {
            if let Some(c) = SECTION.captures(line) {
                section = Some(c[1].to_string());
                continue;
            }
            if !checker_section(kind, file_name, section.as_deref()) {
                continue;
            }
        }
        let mut codes_here: Vec<&str> = Vec::new();
        for r in rules(lang) {
            if codes_here.contains(&r.code) {
                continue;
            }
            let Some(m) = r.re.find(line) else { continue };
            codes_here.push(r.code);
            let message = if r.message.contains("{}") {
                r.message.replace("{}", &quote(line))
            } else {
                r.message.to_string()
            };
            items.push(item(
                u32::try_from(index + 1).unwrap_or(u32::MAX),
                column(line, m.start()),
                r.code,
                message,
            ));
        }
    }
    items
}

fn quote(line: &str) -> String {
    let t = line.trim();
    if t.chars().count() <= MAX_QUOTE {
        return t.to_string();
    }
    let mut s: String = t.chars().take(MAX_QUOTE).collect();
    s.push('…');
    s
}

/// 1-based character column of byte offset `at` in `line`.
fn column(line: &str, at: usize) -> u32 {
    let chars = line.get(..at).map_or(0, |p| p.chars().count());
    u32::try_from(chars + 1).unwrap_or(u32::MAX)
}

fn item(line: u32, column: u32, code: &str, message: String) -> Item {
    Item {
        line,
        column,
        severity: Severity::Warning,
        source: ITEM_SOURCE.to_string(),
        code: Some(code.to_string()),
        message,
        introduced: None,
        fixes: Vec::new(),
    }
}

static PY_TEST: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(async\s+)?def\s+(test\w*)\s*\("));
static PY_CLASS: LazyLock<Regex> = LazyLock::new(|| re(r"^(\s*)class\s+(\w+)"));
static SCRIPT_TEST: LazyLock<Regex> = LazyLock::new(|| {
    re(r#"\b(?:it|test)(?:\.\w+(?:\([^()]*\))?)?\s*\(\s*['"`]((?:[^'"`\\]|\\.)*)['"`]"#)
});
static RUST_TEST_ATTR: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*#\[\s*([\w:]+::)?test(\s*\(.*\))?\s*\]"));
static RUST_FN: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*(pub(\(\w+\))?\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)"));
static GO_TEST: LazyLock<Regex> = LazyLock::new(|| re(r"^func\s+(Test\w*)\s*\("));

/// The tests `text` defines (their names, each with its 1-based line): Python `test…`
/// functions (`Class::test_x` inside a class), `it`/`test` calls in scripts (their titles),
/// Rust functions under a `#[test]`-like attribute, Go `Test…` functions. Only in files that
/// look like tests' files, so a helper named `test_…` in a module is not one.
pub fn tests_in(path: &Path, text: &str) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    let Some(lang) = lang(path) else {
        return out;
    };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let in_tests_dir = path
        .components()
        .any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "test" | "__tests__")));
    let line_no = |i: usize| u32::try_from(i + 1).unwrap_or(u32::MAX);
    match lang {
        Lang::Python if name.starts_with("test_") || name.ends_with("_test.py") || in_tests_dir => {
            let mut class: Option<(usize, String)> = None;
            for (i, line) in text.lines().enumerate() {
                if let Some(c) = PY_CLASS.captures(line) {
                    class = Some((c[1].len(), c[2].to_string()));
                    continue;
                }
                if let Some(c) = PY_TEST.captures(line) {
                    let indent = line.len() - line.trim_start().len();
                    let owner = class.as_ref().filter(|(ci, _)| indent > *ci);
                    let id = match owner {
                        Some((_, cls)) => format!("{cls}::{}", &c[2]),
                        None => c[2].to_string(),
                    };
                    out.entry(id).or_insert(line_no(i));
                } else if !line.trim().is_empty()
                    && class
                        .as_ref()
                        .is_some_and(|(ci, _)| line.len() - line.trim_start().len() <= *ci)
                {
                    class = None;
                }
            }
        }
        Lang::Script if name.contains(".test.") || name.contains(".spec.") || in_tests_dir => {
            for (i, line) in text.lines().enumerate() {
                for c in SCRIPT_TEST.captures_iter(line) {
                    out.entry(c[1].to_string()).or_insert(line_no(i));
                }
            }
        }
        Lang::Rust => {
            let mut armed = false;
            for (i, line) in text.lines().enumerate() {
                if RUST_TEST_ATTR.is_match(line) {
                    armed = true;
                } else if armed {
                    if let Some(c) = RUST_FN.captures(line) {
                        out.entry(c[5].to_string()).or_insert(line_no(i));
                        armed = false;
                    } else if !line.trim_start().starts_with("#[")
                        && !line.trim_start().starts_with("//")
                        && !line.trim().is_empty()
                    {
                        armed = false;
                    }
                }
            }
        }
        Lang::Go if name.ends_with("_test.go") => {
            for (i, line) in text.lines().enumerate() {
                if let Some(c) = GO_TEST.captures(line) {
                    out.entry(c[1].to_string()).or_insert(line_no(i));
                }
            }
        }
        _ => {}
    }
    out
}

/// Items for the tests `before` had and `now` lacks (at line 1 of the file: they are gone).
fn removed(before: &BTreeMap<String, u32>, now: &BTreeMap<String, u32>) -> Vec<Item> {
    before
        .iter()
        .filter(|(name, _)| !now.contains_key(*name))
        .map(|(name, line)| {
            item(
                1,
                1,
                TEST_REMOVED,
                format!(
                    "test `{name}` removed (line {line} of the committed file): a deleted test no longer says whether the code works"
                ),
            )
        })
        .collect()
}

/// The service's checker with the `silencing` source beside the plugins.
pub struct Silencing {
    inner: Arc<dyn Checker>,
    /// Per file, the tests its committed text defines (from the baseline's check of it).
    committed_tests: Arc<Mutex<HashMap<PathBuf, BTreeMap<String, u32>>>>,
}

impl Silencing {
    pub fn wrap(inner: Arc<dyn Checker>) -> Arc<dyn Checker> {
        Arc::new(Silencing {
            inner,
            committed_tests: Arc::default(),
        })
    }

    fn info() -> SourceInfo {
        SourceInfo {
            id: ID,
            name: NAME.to_string(),
            project_wide: false,
            project_markers: Vec::new(),
            needs_project: false,
            checks_texts: true,
            late_fixes: false,
            warm: false,
            superseded: false,
            serves: Vec::new(),
        }
    }
}

/// One check of the source: each file's silencers; with `texts` (the baseline's committed
/// texts) the tests they define are remembered, else the tests that are gone are named too.
fn check_files(
    request: &CheckRequest,
    committed_tests: &Mutex<HashMap<PathBuf, BTreeMap<String, u32>>>,
) -> CheckResponse {
    let mut files = Vec::new();
    for path in &request.files {
        let (text, is_committed) = match request.texts.get(path) {
            Some(t) => (t.clone(), true),
            None => match confine::read_workspace_file(&request.workspace, path, MAX_BYTES) {
                Ok(bytes) => (String::from_utf8_lossy(&bytes).into_owned(), false),
                // Gone or unreadable: nothing to name (the other sources say why).
                Err(_) => (String::new(), false),
            },
        };
        let mut items = find(path, &text);
        let tests = tests_in(path, &text);
        let mut known = committed_tests.lock().unwrap_or_else(|e| e.into_inner());
        if is_committed {
            known.insert(path.clone(), tests);
        } else if let Some(before) = known.get(path) {
            items.extend(removed(before, &tests));
        }
        files.push(FileResult {
            path: path.clone(),
            items,
        });
    }
    CheckResponse {
        files,
        ..Default::default()
    }
}

impl Checker for Silencing {
    fn run_bound(&self) -> Option<Arc<super::bound::RunBound>> {
        self.inner.run_bound()
    }

    fn query(
        &self,
        source: SourceId,
        request: openfiles_plugin_api::query::QueryRequest,
    ) -> BoxFuture<'static, Result<openfiles_plugin_api::query::QueryAnswer, CheckError>> {
        if source == ID {
            return Box::pin(async { Ok(openfiles_plugin_api::query::QueryAnswer::unsupported()) });
        }
        self.inner.query(source, request)
    }

    fn sources_for(&self, path: &Path) -> Vec<SourceInfo> {
        let mut sources = self.inner.sources_for(path);
        // Only beside a real checker: a file nothing checks stays "not checked", never
        // "checked, no problems" because this source looked at it.
        if !sources.is_empty() && handles(path) {
            sources.push(Silencing::info());
        }
        sources
    }

    fn check(
        &self,
        source: SourceId,
        request: CheckRequest,
    ) -> BoxFuture<'static, Result<CheckResponse, CheckError>> {
        if source != ID {
            return self.inner.check(source, request);
        }
        let known = self.committed_tests.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || check_files(&request, &known))
                .await
                .map_err(|e| CheckError::Source(Box::new(e)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(path: &str, text: &str) -> Vec<(u32, String)> {
        find(Path::new(path), text)
            .into_iter()
            .map(|i| (i.line, i.code.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn every_pattern_compiles() {
        for lang in [
            Lang::Python,
            Lang::Script,
            Lang::Rust,
            Lang::Go,
            Lang::C,
            Lang::Config(ConfigKind::Json),
            Lang::Config(ConfigKind::Toml),
            Lang::Config(ConfigKind::Ini),
            Lang::Config(ConfigKind::Eslint),
            Lang::Config(ConfigKind::Yaml),
        ] {
            assert!(!rules(lang).is_empty());
        }
        assert!(!tests_in(Path::new("x_test.go"), "func TestA(t *testing.T) {}\n").is_empty());
    }

    #[test]
    fn python_suppressions_casts_and_skips() {
        let text = "import os  # noqa: F401\nx: int = f()  # type: ignore[assignment]\ny = g()  # pyright: ignore[reportCallIssue]\nz = cast(Any, h())\n@pytest.mark.skip(reason='later')\ndef test_a():\n    pass\nplain = 1\n";
        assert_eq!(
            codes("src/m.py", text),
            vec![
                (1, SUPPRESSION.into()),
                (2, SUPPRESSION.into()),
                (3, SUPPRESSION.into()),
                (4, CAST_ANY.into()),
                (5, TEST_SKIPPED.into()),
            ]
        );
        // Not silencers: the words alone, in a string or a name.
        assert!(codes(
            "src/m.py",
            "ignore = 1\ndef typed(): pass\nnoqa_count = 2\n"
        )
        .is_empty());
    }

    #[test]
    fn script_rust_go_and_c() {
        assert_eq!(
            codes(
                "src/a.ts",
                "// @ts-ignore\nconst a = b as any;\n/* eslint-disable no-console */\nit.skip('x', () => {});\nxit('y', () => {});\nconst many = 3;\n"
            ),
            vec![
                (1, SUPPRESSION.into()),
                (2, CAST_ANY.into()),
                (3, SUPPRESSION.into()),
                (4, TEST_SKIPPED.into()),
                (5, TEST_SKIPPED.into()),
            ]
        );
        assert_eq!(
            codes(
                "src/lib.rs",
                "#![allow(dead_code)]\n#[allow(clippy::too_many_arguments)]\nfn f() {}\n#[test]\n#[ignore]\nfn t() {}\n#[ignore = \"slow\"]\nfn u() {}\n"
            ),
            vec![
                (1, SUPPRESSION.into()),
                (2, SUPPRESSION.into()),
                (5, TEST_SKIPPED.into()),
                (7, TEST_SKIPPED.into()),
            ]
        );
        assert_eq!(
            codes(
                "pkg/a_test.go",
                "x := 1 //nolint:errcheck\nfunc TestA(t *testing.T) { t.Skip(\"later\") }\n"
            ),
            vec![(1, SUPPRESSION.into()), (2, TEST_SKIPPED.into())]
        );
        assert_eq!(
            codes(
                "src/a.c",
                "int x; // NOLINT\n#pragma GCC diagnostic ignored \"-Wall\"\n"
            ),
            vec![(1, SUPPRESSION.into()), (2, SUPPRESSION.into())]
        );
        assert!(codes("README.md", "# type: ignore\n").is_empty());
    }

    #[test]
    fn loosened_configuration_quotes_the_setting() {
        let items = find(
            Path::new("tsconfig.json"),
            "{\n  \"compilerOptions\": {\n    \"strict\": false,\n    \"noImplicitAny\": false,\n    \"target\": \"es2020\"\n  }\n}\n",
        );
        let got: Vec<_> = items.iter().map(|i| (i.line, i.message.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (
                    3,
                    "a checker's configuration loosened: `\"strict\": false,`"
                ),
                (
                    4,
                    "a checker's configuration loosened: `\"noImplicitAny\": false,`"
                ),
            ]
        );
        assert_eq!(
            codes(
                "pyproject.toml",
                "[tool.pyright]\ntypeCheckingMode = \"basic\"\nreportCallIssue = false\n[tool.ruff.lint]\nignore = [\"E501\"]\nselect = [\"E\"]\n"
            ),
            vec![
                (2, CONFIG_LOOSENED.into()),
                (3, CONFIG_LOOSENED.into()),
                (5, CONFIG_LOOSENED.into()),
            ]
        );
        // A packaging table's `exclude` is not a checker's.
        assert!(codes(
            "pyproject.toml",
            "[tool.setuptools.packages.find]\nexclude = [\"tests\"]\n[project]\nname = \"x\"\n"
        )
        .is_empty());
        assert_eq!(
            codes(
                "Cargo.toml",
                "[package]\nexclude = [\"x\"]\n[lints.clippy]\nall = \"allow\"\n"
            ),
            vec![(4, CONFIG_LOOSENED.into())]
        );
        assert_eq!(
            codes(
                "eslint.config.js",
                "rules: {\n  'no-unused-vars': 'off',\n  eqeqeq: 'error',\n}\n"
            ),
            vec![(2, CONFIG_LOOSENED.into())]
        );
        assert_eq!(
            codes("mypy.ini", "[mypy]\nignore_errors = True\nstrict = True\n"),
            vec![(2, CONFIG_LOOSENED.into())]
        );
    }

    #[test]
    fn test_names_per_language() {
        let py = "class TestThing:\n    def test_a(self):\n        pass\n\ndef test_b():\n    pass\ndef helper():\n    pass\n";
        let names: Vec<_> = tests_in(Path::new("tests/test_x.py"), py)
            .into_keys()
            .collect();
        assert_eq!(names, vec!["TestThing::test_a", "test_b"]);
        // A module that is not a test file: `test_`-named helpers are not tests.
        assert!(tests_in(Path::new("src/util.py"), "def test_mode(): pass\n").is_empty());
        let rs = "#[test]\nfn one() {}\n#[tokio::test]\nasync fn two() {}\nfn helper() {}\n#[test]\n#[should_panic]\npub fn three() {}\n";
        let names: Vec<_> = tests_in(Path::new("src/lib.rs"), rs).into_keys().collect();
        assert_eq!(names, vec!["one", "three", "two"]);
        let ts = "describe('x', () => {\n  it('adds two', () => {});\n  test.each([1])('each %i', () => {});\n});\n";
        let names: Vec<_> = tests_in(Path::new("src/a.test.ts"), ts)
            .into_keys()
            .collect();
        assert_eq!(names, vec!["adds two", "each %i"]);
    }

    #[test]
    fn a_removed_test_is_named_against_the_committed_text() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let file = root.join("test_m.py");
        let committed =
            "def test_a():\n    assert f() == 1\n\ndef test_b():\n    assert f() == 2\n";
        std::fs::write(&file, "def test_a():\n    assert f() == 1\n").unwrap();
        let known = Mutex::new(HashMap::new());
        let base = CheckRequest {
            workspace: root.clone(),
            files: vec![file.clone()],
            texts: BTreeMap::from([(file.clone(), committed.to_string())]),
            ..CheckRequest::default()
        };
        assert!(check_files(&base, &known).files[0].items.is_empty());
        let now = CheckRequest {
            workspace: root.clone(),
            files: vec![file.clone()],
            ..CheckRequest::default()
        };
        let items = &check_files(&now, &known).files[0].items;
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(items[0].code.as_deref(), Some(TEST_REMOVED));
        assert!(
            items[0].message.contains("`test_b`"),
            "{}",
            items[0].message
        );
        assert!(items[0].message.contains("line 4"), "{}", items[0].message);
    }

    #[test]
    fn only_what_the_edit_added_is_kept() {
        use crate::diagnostics::baseline::{classify, line_hashes, BaseFile};
        let path = Path::new("src/m.py");
        let committed = "a = f()  # type: ignore\nb = 2\n";
        let now = "a = f(1)  # type: ignore\nb = g()  # type: ignore\nc = 3  # noqa\n";
        let base = BaseFile {
            lines: Some(line_hashes(committed)),
            items: BTreeMap::from([(NAME.to_string(), find(path, committed))]),
            covered: BTreeMap::new(),
        };
        let mut items = find(path, now);
        classify(Some(&base), Some(&line_hashes(now)), NAME, &mut items);
        let unclassified = find(path, now);
        assert!(
            !unclassified.is_empty() && !unclassified.iter().any(keep),
            "no baseline: none"
        );
        items.retain(keep);
        // The edited line 1 kept its suppression (the project's own); lines 2 and 3 are new.
        let kept: Vec<_> = items
            .iter()
            .map(|i| (i.line, i.code.clone().unwrap()))
            .collect();
        assert_eq!(
            kept,
            vec![(2, SUPPRESSION.to_string()), (3, SUPPRESSION.to_string())]
        );
    }
}
