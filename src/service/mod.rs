//! `openfiles serve`: the service's life from start to the one shutdown path.
//!
//! Order at start: config → logging → listener (inherited or bound) → the explicitly named
//! workspaces (`serve -w`, `service.workspaces`) and the first restored ones (up to
//! `workspace::pending::PRE_READY_STARTS` in all) → control server accepting → `READY=1`.
//! So READY means the control socket answers and every workspace named explicitly is
//! served; the registry then scans `service.roots` and starts the rest (discovered, further
//! restored) in batches, within about a second per thousand, and any request for one of
//! them starts it first (`workspace::pending`). Signals (SIGTERM/SIGINT), a `shutdown`
//! request and fatal errors all cancel the same token; then `STOPPING=1`, workspaces stop
//! (heartbeats and Claws sockets removed; pending ones are dropped), the control socket is
//! removed if we bound it, and `run` returns. SIGHUP reloads the config.

pub mod activation;
pub mod idle;
pub mod logfile;
pub mod logging;
pub mod notify;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::control::server::{self, Context};
use crate::diagnostics::Checker;
use crate::plugin_host::PluginManager;
use crate::workspace::instance::WorkspaceDeps;
use crate::workspace::Registry;

/// What `openfiles serve` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub socket: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub workspaces: Vec<PathBuf>,
    pub check_config: bool,
    /// Started by a client on first use (`crate::autostart`): exits when idle.
    pub autostarted: bool,
}

/// Run the service until it is told to stop. Returns the process exit code.
pub fn run(opts: Options) -> anyhow::Result<u8> {
    let started = Instant::now();
    let (config, config_path) = Config::load(opts.config.as_deref())?;
    if opts.check_config {
        return check_config(&config, config_path.as_deref(), &opts.workspaces);
    }
    // Autostarted, stderr is the log file already (`crate::autostart`): no second copy.
    logging::init(
        &config.service.log_level,
        &crate::paths::state_dir(),
        !opts.autostarted,
    );
    openfiles_os::memory::limit_arenas();
    raise_open_files_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("openfiles")
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(serve(opts, config, config_path, started));
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    result.map(|()| 0)
}

/// Most open files a service may want: one listening Claws socket per workspace, plus
/// terminals, watches and plugin pipes (`docs/costs.md`).
const WANTED_OPEN_FILES: u64 = 65_536;

/// Raise the soft limit on open files towards the hard one: the usual soft default (1 024)
/// is reached with about a thousand served workspaces, while the hard limit systemd and
/// launchd give a user service is far higher.
fn raise_open_files_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit for the duration of the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return;
    }
    let want = lim.rlim_max.min(WANTED_OPEN_FILES as libc::rlim_t);
    if want > lim.rlim_cur {
        let new = libc::rlimit {
            rlim_cur: want,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `new` is a valid rlimit read by the call; lowering nothing, raising the
        // soft limit within the hard one is always allowed.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } != 0 {
            tracing::debug!(
                "cannot raise the open files limit: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

async fn serve(
    opts: Options,
    config: Config,
    config_path: Option<PathBuf>,
    started: Instant,
) -> anyhow::Result<()> {
    quiet_sigio()?;
    let (control, listener) = listen(&opts)?;
    let shutdown = CancellationToken::new();
    let config = Arc::new(config);
    let parts = Parts::start(&opts, config.clone(), shutdown.clone(), started).await?;
    let reload_error: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let ctx = parts.context(&opts, &control, reload_error.clone(), started);
    // Handlers first: a client that sees the service answer may signal it at once (a reload
    // right after start must not meet SIGHUP's default action, which ends the process).
    let handlers = Handlers::install()?;
    let server = tokio::spawn(server::serve(listener, ctx));
    announce_ready(&parts.shared, started);
    parts.spawn_helpers(&opts, &config, &control, &shutdown);

    signals(
        handlers,
        &shutdown,
        &parts,
        opts.config.clone(),
        config_path,
        config.clone(),
        &reload_error,
    )
    .await?;

    parts.stop(server, &control).await;
    Ok(())
}

/// Leases on the queue file (see intake::queue) signal SIGIO, whose default action would end
/// the process; a handler (not SIG_IGN, which children would inherit) makes it harmless.
fn quiet_sigio() -> anyhow::Result<()> {
    let mut sigio = signal(SignalKind::io()).context("cannot install the SIGIO handler")?;
    tokio::spawn(async move { while sigio.recv().await.is_some() {} });
    Ok(())
}

/// The control socket: inherited or bound (`activation`), and the runtime's listener on it.
fn listen(
    opts: &Options,
) -> anyhow::Result<(activation::ControlListener, tokio::net::UnixListener)> {
    let socket_path = crate::paths::control_socket(opts.socket.as_deref())?;
    let control = activation::control_listener(&socket_path)?;
    let listener = tokio::net::UnixListener::from_std(
        control
            .listener
            .try_clone()
            .context("cannot use the control socket")?,
    )
    .context("cannot use the control socket")?;
    tracing::info!(
        socket = %control.path.display(),
        activation = control.activation.as_str(),
        "openfiles {} listening",
        env!("CARGO_PKG_VERSION")
    );
    Ok((control, listener))
}

/// `READY=1` and its log line: the control socket answers, the named workspaces are served.
fn announce_ready(shared: &WorkspaceDeps, started: Instant) {
    notify::ready(&format!(
        "serving {} workspace(s)",
        shared.workspace_count()
    ));
    tracing::info!(
        ready_ms = started.elapsed().as_millis() as u64,
        workspaces = shared.workspace_count(),
        "ready"
    );
}

/// What a running service is made of, started in order and stopped in reverse.
struct Parts {
    plugins: PluginManager,
    activity: Arc<crate::control::activity::Activity>,
    shared: Arc<WorkspaceDeps>,
    registry: crate::workspace::RegistryHandle,
}

impl Parts {
    /// The plugin hosts, the checker every pipeline sees (counted for the idle exit), the
    /// file watcher and the registry with its first workspaces.
    async fn start(
        opts: &Options,
        config: Arc<Config>,
        shutdown: CancellationToken,
        started: Instant,
    ) -> anyhow::Result<Parts> {
        let state_dir = crate::paths::state_dir();
        let plugins = PluginManager::start(&config, &state_dir, shutdown.clone()).await;
        let activity = crate::control::activity::Activity::new();
        let checker: Arc<dyn Checker> = Arc::new(plugins.clone());
        // Beside the plugins: the built-in source that names what hides a problem (issue 40.6).
        let checker = crate::diagnostics::silencing::Silencing::wrap(checker);
        let checker = crate::control::activity::Counting::wrap(checker, activity.clone());
        let fswatch = crate::fswatch::FsWatch::new().context("cannot start the file watcher")?;
        let shared = Arc::new(WorkspaceDeps::new(state_dir, shutdown, checker, fswatch));
        let registry = Registry::start(config, shared.clone(), &opts.workspaces, started).await;
        Ok(Parts {
            plugins,
            activity,
            shared,
            registry,
        })
    }

    /// What the control server's handlers see.
    fn context(
        &self,
        opts: &Options,
        control: &activation::ControlListener,
        reload_error: Arc<std::sync::Mutex<Option<String>>>,
        started: Instant,
    ) -> Arc<Context> {
        let binary = std::env::current_exe()
            .ok()
            .and_then(|p| p.canonicalize().ok())
            .and_then(|p| Some((p.clone(), openfiles_wire::spec::mtime_ms(&p)?)));
        let plugins = self.plugins.clone();
        Arc::new(Context {
            activity: self.activity.clone(),
            binary,
            reload_error,
            registry: self.registry.clone(),
            shutdown: self.shared.shutdown.clone(),
            started,
            // A service a client started on first use (`crate::autostart`) says so.
            activation: if opts.autostarted && control.activation == activation::Activation::Bound {
                activation::Activation::Autostarted
            } else {
                control.activation
            },
            socket: control.path.clone(),
            plugins: Box::new(move || plugins.status_rows()),
        })
    }

    /// The tasks beside the server: the status line, an autostarted service's idle exit,
    /// the watchdog.
    fn spawn_helpers(
        &self,
        opts: &Options,
        config: &Config,
        control: &activation::ControlListener,
        shutdown: &CancellationToken,
    ) {
        tokio::spawn(status_line(self.shared.clone(), shutdown.clone()));
        let idle_exit = config.service.idle_exit_seconds;
        if opts.autostarted && idle_exit > 0 {
            tokio::spawn(idle::exit_when_idle(
                self.activity.clone(),
                std::time::Duration::from_secs(idle_exit),
                self.shared.clone(),
                control.own_file(),
                shutdown.clone(),
            ));
        }
        if let Some(interval) = notify::watchdog_interval() {
            tokio::spawn(notify::watchdog(interval, shutdown.clone()));
        }
    }

    /// The one shutdown path, once the token is cancelled: `STOPPING=1`, the workspaces,
    /// the control server, the plugin hosts, then the socket file if we bound it.
    async fn stop(
        self,
        server: tokio::task::JoinHandle<()>,
        control: &activation::ControlListener,
    ) {
        notify::stopping();
        tracing::info!("shutting down");
        self.registry.stop().await;
        let _ = server.await;
        self.plugins.wait_stopped().await;
        control.cleanup();
        tracing::info!("stopped");
    }
}

/// Keep `systemctl status` current: workspace and terminal counts, sent when they change
/// (woken by the registry and the Claws servers, never by a timer).
async fn status_line(shared: Arc<WorkspaceDeps>, shutdown: CancellationToken) {
    let mut last = String::new();
    loop {
        let line = format!(
            "serving {} workspace(s), {} terminal(s)",
            shared.workspace_count(),
            shared.claws_registry.terminal_count()
        );
        if line != last {
            notify::status(&line);
            last = line;
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = shared.counts_changed() => {}
        }
    }
}

/// The stop and reload signals, caught from before the service answers anyone.
struct Handlers {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Handlers {
    fn install() -> anyhow::Result<Handlers> {
        Ok(Handlers {
            term: signal(SignalKind::terminate()).context("cannot install the SIGTERM handler")?,
            int: signal(SignalKind::interrupt()).context("cannot install the SIGINT handler")?,
            hup: signal(SignalKind::hangup()).context("cannot install the SIGHUP handler")?,
        })
    }
}

/// Wait for a reason to stop; reload the config on SIGHUP.
async fn signals(
    handlers: Handlers,
    shutdown: &CancellationToken,
    parts: &Parts,
    explicit: Option<PathBuf>,
    mut config_path: Option<PathBuf>,
    mut running: Arc<Config>,
    reload_error: &std::sync::Mutex<Option<String>>,
) -> anyhow::Result<()> {
    let set_error = |e: Option<String>| {
        *reload_error.lock().unwrap_or_else(|p| p.into_inner()) = e;
    };
    let Handlers {
        mut term,
        mut int,
        mut hup,
    } = handlers;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = term.recv() => { tracing::info!("SIGTERM"); shutdown.cancel(); }
            _ = int.recv() => { tracing::info!("SIGINT"); shutdown.cancel(); }
            _ = hup.recv() => match Config::load(explicit.as_deref()) {
                Ok((cfg, path)) => {
                    set_error(None);
                    tracing::info!("SIGHUP: configuration reloaded{}", path.as_ref().map(|p| format!(" from {}", p.display())).unwrap_or_default());
                    config_path = path;
                    logging::set_level(&cfg.service.log_level);
                    if cfg.plugins != running.plugins || cfg.plugin != running.plugin {
                        tracing::warn!("plugin settings changed: they apply when the service restarts (`systemctl --user restart openfiles`)");
                    }
                    parts.plugins.set_max_project_runs(cfg.service.max_project_runs);
                    running = Arc::new(cfg);
                    parts.registry.reload(running.clone()).await;
                }
                Err(e) => {
                    tracing::error!("SIGHUP: {e}; keeping the running configuration{}", config_path.as_ref().map(|p| format!(" ({})", p.display())).unwrap_or_default());
                    set_error(Some(e.to_string()));
                }
            },
        }
    }
}

/// `serve --check-config`: validate the user config and every known workspace's overrides.
fn check_config(
    config: &Config,
    path: Option<&std::path::Path>,
    cli: &[PathBuf],
) -> anyhow::Result<u8> {
    match path {
        Some(p) => println!("ok: {}", p.display()),
        None => println!("ok: no config file; using defaults"),
    }
    let mut roots: Vec<PathBuf> = crate::workspace::store::load(&crate::paths::state_dir())
        .into_iter()
        .map(|w| w.root)
        .collect();
    roots.extend(config.service.workspaces.iter().cloned());
    roots.extend(cli.iter().cloned());
    let mut bad = 0;
    for root in roots {
        let file = root.join(openfiles_wire::spec::DIR).join("config.toml");
        if !file.exists() {
            continue;
        }
        match config.for_workspace(&root) {
            Ok(_) => println!("ok: {}", file.display()),
            Err(e) => {
                bad += 1;
                println!("error: {e}");
            }
        }
    }
    Ok(if bad == 0 { 0 } else { 1 })
}
