//! The small client commands: `status`, `add`, `forget`. Each makes one call on the control
//! socket and prints the answer for a person (or JSON for a script).

use std::path::Path;

use anyhow::Context as _;

use crate::control::client::{connect_default, Client, ClientError};
use openfiles_gate::trust::{Keyed, TrustStore};
use openfiles_wire::control::{
    Add, Forget, PathArg, SessionClear, SessionCleared, Status, StatusReply, TrustArg, TrustReply,
    WorkspaceSource, WorkspaceStatus, WorkspacesReply,
};

fn connect(socket: Option<&Path>) -> anyhow::Result<Client> {
    connect_default(socket)
}

/// `openfiles status [--json]`.
pub fn status(socket: Option<&Path>, json: bool) -> anyhow::Result<u8> {
    let mut client = crate::control::client::connect_existing(socket)?;
    let st: StatusReply = client.call(&Status)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&st)?);
        return Ok(0);
    }
    println!(
        "openfiles {} (pid {}), up {}s, {} activation, socket {}",
        st.version,
        st.pid,
        st.uptime_ms / 1000,
        st.activation,
        st.socket.display()
    );
    if let Some(advice) = st.outdated() {
        println!("warning: {advice}");
    }
    if let Some(e) = &st.last_reload_error {
        println!("last config reload failed (the running settings are kept): {e}");
    }
    println!(
        "{} workspace(s), {} terminal(s); programs the service started: {} for workspaces, \
         {} for none (plugin hosts) (`status --json`: which, and why)",
        st.workspaces.len(),
        st.terminals,
        st.workspaces.iter().map(|w| w.ran_total).sum::<usize>(),
        st.ran_total
    );
    for w in &st.workspaces {
        print_workspace(w);
    }
    Ok(0)
}

/// A workspace's lines of `status`: its trust, session, hook deadlines, programs, warm-up.
fn print_workspace(w: &WorkspaceStatus) {
    let root = w.root.display().to_string();
    println!(
        "  {}  [{}{}]",
        crate::visible::escape(&root),
        w.source,
        if w.trusted {
            ", trusted"
        } else {
            ", not trusted"
        }
    );
    if !w.trusted {
        println!(
            "    its own tools and cargo check do not run: `openfiles trust {}` turns them on",
            crate::visible::escape(&root)
        );
    }
    println!(
        "    session files {}, pending {}, queue lines {} ({} malformed), watches {}{}",
        w.session_files,
        w.pending,
        w.queue_lines,
        w.malformed_queue_lines,
        w.watches,
        if w.standing_back {
            ", standing back (the editor extension serves it)"
        } else {
            ""
        }
    );
    if w.deadline_notes > 0 || w.late_deliveries > 0 || w.owed > 0 {
        println!(
            "    hook deadlines passed {}, late results delivered {}, owed {}",
            w.deadline_notes, w.late_deliveries, w.owed
        );
    }
    if let Some(last) = w.ran.last() {
        let name = last
            .program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        println!(
            "    started {} program(s) for it; last {} ({}: {})",
            w.ran_total,
            crate::visible::escape(&name),
            last.trust,
            crate::visible::escape(&last.why)
        );
    }
    if let Some(warm) = &w.warm {
        let names = warm
            .sources
            .iter()
            .map(|s| crate::visible::escape(s))
            .collect::<Vec<_>>()
            .join(", ");
        if warm.done_at == 0 {
            println!("    warming the checkers for an agent session");
        } else {
            println!("    warmed for an agent session: {names}");
        }
    }
}

/// `openfiles add DIR`.
pub fn add(socket: Option<&Path>, dir: &Path, force: bool) -> anyhow::Result<u8> {
    let path = absolute(dir)?;
    let reply: WorkspacesReply = connect(socket)?.call(&Add(PathArg { path, force }))?;
    for w in reply.workspaces {
        println!("serving {}", w.root.display());
    }
    Ok(0)
}

/// `openfiles trust [--revoke] DIR`.
pub fn trust(socket: Option<&Path>, dir: &Path, trusted: bool) -> anyhow::Result<u8> {
    let path = absolute(dir)?;
    let request = TrustArg {
        path: path.clone(),
        trusted,
    };
    let unreachable = |e: &anyhow::Error| {
        e.downcast_ref::<ClientError>()
            .is_some_and(|c| matches!(c, ClientError::Unreachable { .. }))
    };
    let r: TrustReply = match connect_default(socket) {
        Ok(mut c) => c.call(&request)?,
        // No service (and no socket activation): recorded for when it starts.
        Err(e) if unreachable(&e) => {
            let root = openfiles_gate::resolve::workspace_dir(&path, true)?;
            let mut store = TrustStore::load(&crate::paths::state_dir());
            if let Some(p) = store.problem() {
                tracing::error!("{p}");
            }
            let keyed = store
                .set(&root, trusted)
                .with_context(|| format!("cannot record the trust of {}", root.display()))?;
            TrustReply {
                root,
                trusted,
                served: false,
                named: false,
                inode_only: keyed.is_some_and(Keyed::inode_only),
            }
        }
        Err(e) => return Err(e),
    };
    let shown = r.root.display().to_string();
    let root = crate::visible::escape(&shown);
    match (trusted, r.trusted) {
        (true, _) => println!(
            "trusted {root}: its checks may run its own tools (node_modules/.bin, its tsc/tsgo) \
             and cargo check (build scripts, proc macros){}",
            if r.served { "" } else { " once it is served" }
        ),
        (false, false) => println!(
            "no longer trusted {root}: only tools installed outside it run, and nothing that \
             runs its code"
        ),
        (false, true) => println!(
            "{root} stays trusted: you named it yourself (command line, config or `openfiles \
             add`); `openfiles forget` it to serve it only when an agent edits it"
        ),
    }
    if trusted && r.inode_only {
        println!(
            "note: this filesystem keeps no birth time and no extended attribute for {root}, so \
             the trust is keyed to its inode only: a folder re-created at the same path could \
             get that inode and be trusted too (revoke with `openfiles trust --revoke` before \
             replacing the folder)"
        );
    }
    Ok(0)
}

/// `openfiles forget DIR`.
pub fn forget(socket: Option<&Path>, dir: &Path) -> anyhow::Result<u8> {
    let path = absolute(dir)?;
    let reply: WorkspacesReply = connect(socket)?.call(&Forget(PathArg { path, force: false }))?;
    for w in reply.workspaces {
        if matches!(w.source, WorkspaceSource::Cli | WorkspaceSource::Config) {
            println!(
                "forgot {} for now (it is listed in the {}, so it returns at the next start)",
                w.root.display(),
                if w.source == WorkspaceSource::Cli {
                    "command line"
                } else {
                    "config"
                }
            );
        } else {
            println!("forgot {}", w.root.display());
        }
    }
    Ok(0)
}

fn absolute(dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    dir.canonicalize()
        .with_context(|| format!("{}: no such directory", dir.display()))
}

/// `openfiles session clear [DIR]`.
pub fn session_clear(socket: Option<&Path>, dir: Option<&Path>) -> anyhow::Result<u8> {
    let path = absolute(dir.unwrap_or(Path::new(".")))?;
    let reply: SessionCleared =
        connect(socket)?.call(&SessionClear(PathArg { path, force: false }))?;
    println!(
        "cleared {} session file(s) of {}",
        reply.cleared,
        reply.root.display()
    );
    Ok(0)
}
