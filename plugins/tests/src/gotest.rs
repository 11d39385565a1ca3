//! `go test -json` over the edited files' packages and the module's packages that import
//! them (`go list -json ./...`: imports transitively, a package whose tests import one of
//! them too). A failing test is placed at the last `file_test.go:line:` its output names
//! (`t.Errorf`'s), else at its `func TestX(` line; subtests are reported by their full name
//! (`TestSum/negative`), a parent that failed only through them is not reported again.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use openfiles_plugin_api::{Item, PluginError, Severity};
use serde::Deserialize;

use crate::{mark_flaky, run, Failure, Job, Outcome};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Pkg {
    import_path: String,
    dir: PathBuf,
    #[serde(default)]
    imports: Vec<String>,
    #[serde(default)]
    test_imports: Vec<String>,
    #[serde(default)]
    x_test_imports: Vec<String>,
    #[serde(default)]
    test_go_files: Vec<String>,
    #[serde(default)]
    x_test_go_files: Vec<String>,
}

/// The packages to test for `edited` files: theirs, their importers (transitively), and the
/// packages whose tests import any of those.
fn select(pkgs: &[Pkg], edited: &[PathBuf], whole: bool) -> Vec<String> {
    let has_tests = |p: &Pkg| !p.test_go_files.is_empty() || !p.x_test_go_files.is_empty();
    if whole {
        return pkgs
            .iter()
            .filter(|p| has_tests(p))
            .map(|p| p.import_path.clone())
            .collect();
    }
    let mut importers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in pkgs {
        for i in &p.imports {
            importers
                .entry(i.as_str())
                .or_default()
                .push(p.import_path.as_str());
        }
    }
    let mut reach: BTreeSet<&str> = BTreeSet::new();
    let mut queue: VecDeque<&str> = pkgs
        .iter()
        .filter(|p| edited.iter().any(|f| f.parent() == Some(p.dir.as_path())))
        .map(|p| p.import_path.as_str())
        .collect();
    while let Some(p) = queue.pop_front() {
        if reach.insert(p) {
            queue.extend(importers.get(p).into_iter().flatten());
        }
    }
    pkgs.iter()
        .filter(|p| {
            reach.contains(p.import_path.as_str())
                || p.test_imports
                    .iter()
                    .chain(&p.x_test_imports)
                    .any(|i| reach.contains(i.as_str()))
        })
        .filter(|p| has_tests(p))
        .map(|p| p.import_path.clone())
        .collect()
}

/// Run the tests of `job`'s module that its edited files reach.
pub fn run(job: &Job) -> Result<Outcome, PluginError> {
    let go = job.program("go", "go test (tests plugin)")?;
    let mut cmd = go.command(["list", "-e", "-json", "./..."]);
    cmd.current_dir(job.root);
    let ran = job.run(&mut cmd)?;
    let pkgs = packages(&ran.stdout);
    if pkgs.is_empty() && !ran.success() {
        return Err(PluginError::Tool(format!(
            "go list failed in {}:\n{}",
            job.root.display(),
            run::tail(&ran.stderr, 8)
        )));
    }
    let selected = select(&pkgs, job.files, job.whole);
    eprintln!(
        "tests: go at {}: {} of {} packages selected",
        job.root.display(),
        selected.len(),
        pkgs.len()
    );
    if selected.is_empty() {
        return Ok(Outcome::default());
    }
    let mut args = vec!["test".to_owned(), "-json".to_owned()];
    args.extend(selected.iter().cloned());
    let mut cmd = go.command(&args);
    cmd.current_dir(job.root);
    let ran = job.run(&mut cmd)?;
    let dirs: BTreeMap<&str, &Path> = pkgs
        .iter()
        .map(|p| (p.import_path.as_str(), p.dir.as_path()))
        .collect();
    let (raw, broken) = parse(&ran.stdout);
    let mut failures: Vec<Failure> = raw
        .into_iter()
        .filter_map(|(pkg, test, output)| {
            let dir = dirs.get(pkg.as_str())?;
            Some(place(&test, &output, dir))
        })
        .collect();
    let mut outcome = Outcome::default();
    for pkg in broken {
        outcome.notes.push(Item::note(
            Severity::Warning,
            "go-test",
            format!("the tests of {pkg} did not build, none of them ran"),
        ));
    }
    if ran.timed_out() {
        outcome.unfinished = Some(format!(
            "go test did not finish within the budget: the tests of {} (in {}) not run to the end",
            selected.join(", "),
            job.root.display()
        ));
    } else {
        let pkg_of: BTreeMap<PathBuf, String> = pkgs
            .iter()
            .map(|p| (p.dir.clone(), p.import_path.clone()))
            .collect();
        mark_flaky(job, &mut failures, |f| {
            let Some(pkg) = f.path.parent().and_then(|d| pkg_of.get(d)) else {
                return Ok(false);
            };
            let pattern =
                f.id.split('/')
                    .map(|part| format!("^{part}$"))
                    .collect::<Vec<_>>()
                    .join("/");
            let mut cmd = go.command(["test", "-count=1", "-run", &pattern, pkg]);
            cmd.current_dir(job.root);
            Ok(job.run(&mut cmd)?.success())
        })?;
    }
    outcome.failures = failures;
    Ok(outcome)
}

/// The packages `go list -json` printed (a stream of objects).
fn packages(stdout: &str) -> Vec<Pkg> {
    serde_json::Deserializer::from_str(stdout)
        .into_iter::<Pkg>()
        .map_while(Result::ok)
        .collect()
}

/// `go test -json`'s events: the failed tests (package, name, output), leaves only, and the
/// packages whose tests did not build.
pub fn parse(stdout: &str) -> (Vec<(String, String, String)>, Vec<String>) {
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Event {
        action: String,
        #[serde(default)]
        package: String,
        #[serde(default)]
        test: Option<String>,
        #[serde(default)]
        output: Option<String>,
    }
    let mut output: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut pkg_output: BTreeMap<String, String> = BTreeMap::new();
    let mut failed: Vec<(String, String)> = Vec::new();
    let mut broken = Vec::new();
    for e in stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Event>(l).ok())
    {
        match (e.action.as_str(), e.test) {
            ("output", Some(t)) => output
                .entry((e.package, t))
                .or_default()
                .push_str(e.output.as_deref().unwrap_or("")),
            ("output", None) => pkg_output
                .entry(e.package)
                .or_default()
                .push_str(e.output.as_deref().unwrap_or("")),
            ("fail", Some(t)) => failed.push((e.package, t)),
            ("fail", None) => {
                let out = pkg_output.get(&e.package).map(String::as_str).unwrap_or("");
                if out.contains("[build failed]") || out.contains("[setup failed]") {
                    broken.push(e.package);
                }
            }
            _ => {}
        }
    }
    let leaves: Vec<(String, String, String)> = failed
        .iter()
        .filter(|(p, t)| {
            !failed
                .iter()
                .any(|(p2, t2)| p2 == p && t2.starts_with(&format!("{t}/")))
        })
        .map(|(p, t)| {
            let out = output
                .get(&(p.clone(), t.clone()))
                .cloned()
                .unwrap_or_default();
            (p.clone(), t.clone(), out)
        })
        .collect();
    (leaves, broken)
}

/// Where a failing test goes: its output's last `name_test.go:12: message` line (the file in
/// the package's folder), else its `func TestX(` line.
fn place(test: &str, output: &str, dir: &Path) -> Failure {
    let mut at: Option<(PathBuf, u32, String)> = None;
    let mut message: Vec<String> = Vec::new();
    for line in output.lines() {
        let t = line.trim_start();
        if t.starts_with("=== ") || t.starts_with("--- ") {
            continue;
        }
        let located = t.split_once(": ").and_then(|(loc, msg)| {
            let (file, n) = loc.rsplit_once(':')?;
            (file.ends_with(".go") && !file.contains('/')).then_some((file, n.parse().ok()?, msg))
        });
        match located {
            Some((file, n, msg)) => {
                at = Some((dir.join(file), n, msg.to_owned()));
                message = vec![msg.to_owned()];
            }
            None if at.is_some() && line.starts_with("        ") => message.push(t.to_owned()),
            None => {}
        }
    }
    let (path, line) = match at {
        Some((p, n, _)) => (p, n),
        None => func_line(test, dir).unwrap_or_else(|| (dir.to_owned(), 1)),
    };
    let message = if message.is_empty() {
        output
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("=== ") && !l.starts_with("--- "))
            .take(3)
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        message.join("\n")
    };
    Failure {
        id: test.to_owned(),
        path,
        line,
        message,
        flaky: false,
    }
}

/// The `func TestX(` line of the top-level test in the package's `_test.go` files.
fn func_line(test: &str, dir: &Path) -> Option<(PathBuf, u32)> {
    let name = test.split('/').next()?;
    let needle = format!("func {name}(");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with("_test.go"))
        .collect();
    entries.sort();
    entries.into_iter().find_map(|p| {
        let bytes = openfiles_plugin_api::confine::read_workspace_file(dir, &p, 4 << 20).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        let n = text.lines().position(|l| l.starts_with(&needle))?;
        Some((p, n as u32 + 1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_to_leaf_failures_at_their_line() {
        let out = [
            r#"{"Action":"run","Package":"ex/m","Test":"TestSum"}"#,
            r#"{"Action":"output","Package":"ex/m","Test":"TestSum/neg","Output":"    sum_test.go:12: Sum(-1, -2) = -2, want -3\n"}"#,
            r#"{"Action":"output","Package":"ex/m","Test":"TestSum/neg","Output":"        extra detail\n"}"#,
            r#"{"Action":"fail","Package":"ex/m","Test":"TestSum/neg"}"#,
            r#"{"Action":"fail","Package":"ex/m","Test":"TestSum"}"#,
            r#"{"Action":"output","Package":"ex/b","Output":"FAIL\tex/b [build failed]\n"}"#,
            r#"{"Action":"fail","Package":"ex/b"}"#,
        ]
        .join("\n");
        let (fails, broken) = parse(&out);
        assert_eq!(broken, vec!["ex/b".to_string()]);
        assert_eq!(fails.len(), 1);
        let f = place(&fails[0].1, &fails[0].2, Path::new("/m"));
        assert_eq!(f.id, "TestSum/neg");
        assert_eq!(
            (f.path.as_path(), f.line),
            (Path::new("/m/sum_test.go"), 12)
        );
        assert_eq!(f.message, "Sum(-1, -2) = -2, want -3\nextra detail");
    }
}
