//! The languages room: the languages the workspace holds, and for each role (a job such as
//! Python's type checking) the tool that does it — as the running service finds it
//! (`tools`), else as this shell finds it, labelled so — gathered in [`LanguageFacts`] and
//! judged by [`judge_languages`]. A tool the untrusted workspace brings itself
//! (`node_modules/.bin`, `.venv/bin`) is neither used nor run; its line says so. The `tests`
//! line ([`judge_tests`]) names the test runner the `tests` plugin runs there, and why.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{check, Check, Level};
use crate::control::client::{Client, ClientError};
use crate::control::tools;
use crate::setup::checkers::{self, Packages};
use crate::setup::probe::{self, Language};
use openfiles_wire::control::{ToolQuery, ToolsQuery, ToolsReply};

/// What the service said to `tools`.
#[derive(Debug, Clone)]
pub enum ServiceTools {
    /// No service runs.
    NoService,
    Answered(ToolsReply),
    /// It did not answer `tools` (`older`: it does not know the request).
    Failed {
        older: bool,
        why: String,
    },
}

/// The workspace's languages and where their tools are.
#[derive(Debug, Clone)]
pub struct LanguageFacts {
    pub root: PathBuf,
    pub languages: BTreeSet<Language>,
    pub service: ServiceTools,
    /// This shell's lookups, by the same rules (used when the service did not answer).
    pub local: BTreeMap<String, tools::Found>,
    pub packages: Packages,
}

impl LanguageFacts {
    /// `service_socket`: the running service's socket, `None` without one.
    pub fn gather(root: &Path, trusted: bool, service_socket: Option<&Path>) -> LanguageFacts {
        let languages = probe::languages(root);
        let names: BTreeSet<&'static str> = languages.iter().flat_map(|l| l.tools()).collect();
        let service = match service_socket {
            None => ServiceTools::NoService,
            Some(_) if languages.is_empty() => ServiceTools::NoService,
            Some(socket) => match ask_tools(socket, root, &names) {
                Ok(reply) => ServiceTools::Answered(reply),
                Err(e) => ServiceTools::Failed {
                    older: matches!(&e, ClientError::Server(m) if m.contains("unknown cmd")),
                    why: e.to_string(),
                },
            },
        };
        let scope = tools::scope(Some(root), trusted);
        let local = match service {
            ServiceTools::Answered(_) => BTreeMap::new(),
            _ => names
                .iter()
                .map(|t| ((*t).to_owned(), tools::lookup(t, &scope)))
                .collect(),
        };
        LanguageFacts {
            root: root.to_owned(),
            languages,
            service,
            local,
            packages: Packages::detect(),
        }
    }
}

/// The tools the workspace's languages need, asked of the running service.
fn ask_tools(
    socket: &Path,
    root: &Path,
    names: &BTreeSet<&'static str>,
) -> Result<ToolsReply, ClientError> {
    let tools = names
        .iter()
        .map(|t| ToolQuery {
            name: (*t).to_owned(),
            probe: probe::probe_args(t)
                .iter()
                .map(|a| (*a).to_owned())
                .collect(),
        })
        .collect();
    let mut client = Client::connect(socket, Some(Duration::from_secs(30)))?;
    client.call(&ToolsQuery {
        tools,
        root: Some(root.to_owned()),
    })
}

/// Where one tool is: the path used, the probe's complaint, the workspace's own copy held
/// back.
#[derive(Debug, Clone, Default)]
struct Seen {
    path: Option<PathBuf>,
    probe_error: Option<String>,
    held_back: Option<PathBuf>,
}

type Lookup<'a> = dyn Fn(&str) -> Seen + 'a;

/// The `languages` lines: the service's view when it answered, else this shell's, labelled.
pub fn judge_languages(f: &LanguageFacts) -> Vec<Check> {
    const S: &str = "languages";
    let mut out = Vec::new();
    if f.languages.is_empty() {
        out.push(check(
            S,
            Level::Info,
            format!("no known languages under {}", f.root.display()),
        ));
        return out;
    }
    let reply = match &f.service {
        ServiceTools::Answered(reply) => Some(reply),
        ServiceTools::Failed { older, why } => {
            let why = if *older {
                "the service is older than this binary and cannot say which tools it finds \
                 (restart it with `openfiles service restart`)"
                    .to_owned()
            } else {
                format!("the service did not say which tools it finds ({why})")
            };
            out.push(check(
                S,
                Level::Info,
                format!("{why}: looked up on this shell's PATH instead, which may differ from the service's"),
            ));
            None
        }
        ServiceTools::NoService => {
            out.push(check(
                S,
                Level::Info,
                "no service running: looked up on this shell's PATH, which may differ from the service's",
            ));
            None
        }
    };
    let (lookup, whose, install_where): (Box<Lookup<'_>>, &str, String) = match reply {
        Some(reply) => (
            Box::new(move |tool: &str| {
                let t = reply.tools.iter().find(|t| t.name == tool);
                Seen {
                    path: t.and_then(|t| t.path.clone()),
                    probe_error: t.and_then(|t| t.probe_error.clone()),
                    held_back: t.and_then(|t| t.held_back.clone()),
                }
            }),
            "found by the service",
            format!(
                "where the service looks (its PATH: {}; with the Nix modules, add it to \
                 extraPackages)",
                reply.path.clone().unwrap_or_default()
            ),
        ),
        None => (
            Box::new(|tool: &str| {
                let found = f.local.get(tool).cloned().unwrap_or_default();
                Seen {
                    path: found.path,
                    probe_error: None,
                    held_back: found.held_back,
                }
            }),
            "this shell's PATH",
            "on this shell's PATH".to_owned(),
        ),
    };
    for lang in &f.languages {
        out.extend(language_checks(
            *lang,
            &*lookup,
            whose,
            &install_where,
            f.packages,
        ));
        out.extend(held_back_checks(*lang, &*lookup, &f.root));
    }
    out
}

/// A line for each tool of `lang` the untrusted workspace brings and openfiles leaves alone.
fn held_back_checks(lang: Language, lookup: &Lookup<'_>, root: &Path) -> Vec<Check> {
    lang.tools()
        .into_iter()
        .filter_map(|tool| {
            let p = lookup(tool).held_back?;
            Some(
                check(
                    "languages",
                    Level::Info,
                    format!(
                        "{}: {tool} is present in the workspace ({}), not used until `openfiles trust`",
                        lang.name(),
                        p.display()
                    ),
                )
                .hint(format!("openfiles trust {}", root.display())),
            )
        })
        .collect()
}

/// One language's lines: per role (a job such as Python's type checking), the first of its
/// tools found and usable, else "none: install X" with the command for this machine's
/// package manager (`setup/checkers.rs`). `lookup` gives a tool's path and, when the service
/// would not use it, the probe's complaint; `whose` says where it was looked up.
fn language_checks(
    lang: Language,
    lookup: &Lookup<'_>,
    whose: &str,
    install_where: &str,
    packages: Packages,
) -> Vec<Check> {
    const S: &str = "languages";
    let mut out = Vec::new();
    for role in lang.roles() {
        let seen: Vec<(&str, PathBuf, Option<String>)> = role
            .tools
            .iter()
            .filter_map(|t| {
                let seen = lookup(t);
                seen.path.map(|p| (*t, p, seen.probe_error))
            })
            .collect();
        if let Some((tool, p, _)) = seen.iter().find(|(_, _, e)| e.is_none()) {
            out.push(if role.opt_in {
                check(
                    S,
                    Level::Info,
                    format!(
                        "{}: {tool} at {} ({whose}), used only when enabled: `[plugin.lsp] enable = [\"{}\"]`",
                        lang.name(),
                        p.display(),
                        checkers::server_name(tool),
                    ),
                )
            } else {
                check(
                    S,
                    Level::Ok,
                    format!("{}: {tool} at {} ({whose})", lang.name(), p.display()),
                )
            });
            continue;
        }
        if let Some((tool, p, Some(err))) = seen.first() {
            out.push(
                check(
                    S,
                    Level::Warn,
                    format!(
                        "{}: the service does not use {tool} at {}: {err}",
                        lang.name(),
                        p.display()
                    ),
                )
                .hint(if *tool == "rust-analyzer" {
                    "rustup component add rust-analyzer (or put a working rust-analyzer on the service's PATH)".to_owned()
                } else {
                    format!("repair or replace {tool} on the service's PATH")
                }),
            );
            continue;
        }
        out.push(none_found(lang, role, install_where, packages));
    }
    out
}

/// The line of a role no tool of which was found: how to install the first one.
fn none_found(
    lang: Language,
    role: &checkers::Role,
    install_where: &str,
    packages: Packages,
) -> Check {
    const S: &str = "languages";
    let first = role.tools.first().copied().unwrap_or_default();
    let command = checkers::install_command(first, packages);
    if role.opt_in {
        return check(
            S,
            Level::Info,
            format!(
                "{} {}: none by default ({first}, opt-in: `[plugin.lsp] enable = [\"{}\"]` once installed with `{command}`)",
                lang.name(),
                role.name,
                checkers::server_name(first),
            ),
        );
    }
    let others = match role.tools.len() {
        0 | 1 => String::new(),
        _ => format!(" (or {})", role.tools[1..].join(", ")),
    };
    check(
        S,
        Level::Warn,
        format!(
            "{} {}: none: install {first}{others}: `{command}`",
            lang.name(),
            role.name
        ),
    )
    .hint(format!("install {first} {install_where}"))
}

/// The `tests` line: which test runner the `tests` plugin runs for the workspace (by the
/// plugin API's one rule, tools as this shell finds them) and why; none in an untrusted one.
pub fn judge_tests(root: &Path, trusted: bool) -> Check {
    use openfiles_plugin_api::test_runners::describe;
    let scope = tools::scope(Some(root), trusted);
    let runners = describe(root, |name| tools::lookup(name, &scope).path);
    let message = match (runners.is_empty(), trusted) {
        (true, _) => {
            "no test runner: no Cargo.toml, go.mod, Python project or package.json naming vitest or jest at the workspace's root"
                .to_owned()
        }
        (false, true) => runners.join("; "),
        (false, false) => format!(
            "none run: the workspace is not trusted (`openfiles trust`); trusted, {}",
            runners.join("; ")
        ),
    };
    check("tests", Level::Info, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(service: ServiceTools) -> LanguageFacts {
        LanguageFacts {
            root: "/w/app".into(),
            languages: [Language::Go, Language::Rust].into_iter().collect(),
            service,
            local: BTreeMap::from([(
                "gopls".to_owned(),
                tools::Found {
                    path: Some("/usr/bin/gopls".into()),
                    held_back: None,
                },
            )]),
            packages: Packages::Apt,
        }
    }

    #[test]
    fn an_older_service_without_tools_falls_back_to_labelled_local_lookups() {
        let out = judge_languages(&facts(ServiceTools::Failed {
            older: true,
            why: "unknown cmd: tools".into(),
        }));
        assert_eq!(out[0].level, Level::Info);
        assert!(
            out[0].message.contains("older than this binary")
                && out[0].message.contains("this shell's PATH"),
            "{}",
            out[0].message
        );
        assert!(
            out.iter().any(|c| c.level == Level::Ok
                && c.message == "Go: gopls at /usr/bin/gopls (this shell's PATH)"),
            "{out:#?}"
        );
        assert!(
            out.iter().any(|c| c.level == Level::Warn
                && c.message.starts_with("Rust")
                && c.hint.as_deref() == Some("install rust-analyzer on this shell's PATH")),
            "{out:#?}"
        );
    }

    /// The service's answer: a failed probe is a warning with the probe's words, and a
    /// copy the untrusted workspace brings is named as held back, never as used.
    #[test]
    fn the_service_s_view_with_a_failed_probe_and_a_held_back_copy() {
        let reply = ToolsReply {
            path: Some("/usr/bin".into()),
            tools: vec![openfiles_wire::control::ToolFound {
                name: "rust-analyzer".into(),
                path: Some("/usr/bin/rust-analyzer".into()),
                probe_error: Some("exits with status 1: Unknown binary".into()),
                held_back: Some("/w/app/node_modules/.bin/rust-analyzer".into()),
            }],
        };
        let out = judge_languages(&facts(ServiceTools::Answered(reply)));
        assert!(
            out.iter().any(|c| c.level == Level::Warn
                && c.message.contains("the service does not use rust-analyzer at /usr/bin/rust-analyzer: exits with status 1")),
            "{out:#?}"
        );
        let held = out
            .iter()
            .find(|c| c.message.contains("present in the workspace"))
            .unwrap_or_else(|| panic!("{out:#?}"));
        assert_eq!(held.level, Level::Info);
        assert!(held
            .message
            .contains("/w/app/node_modules/.bin/rust-analyzer"));
        assert_eq!(held.hint.as_deref(), Some("openfiles trust /w/app"));
        assert!(
            out.iter()
                .any(|c| c.message.starts_with("Go types: none: install gopls")),
            "the service found no gopls; the shell's is not asked: {out:#?}"
        );
    }

    #[test]
    fn the_tests_line_names_the_runner_or_says_why_none_runs() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        assert!(judge_tests(&root, true)
            .message
            .starts_with("no test runner"));
        std::fs::write(root.join("go.mod"), "module m\n").unwrap();
        let trusted = judge_tests(&root, true).message;
        assert!(trusted.starts_with("go-test"), "{trusted}");
        let untrusted = judge_tests(&root, false).message;
        assert!(
            untrusted.starts_with("none run: the workspace is not trusted"),
            "{untrusted}"
        );
    }
}
