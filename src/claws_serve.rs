//! `openfiles claws serve DIR`: one folder's Claws server in the foreground, the Claws crate
//! alone, without the service (for development and tests). A server, not a client: it runs
//! `openfiles_claws::ClawsServer` in this process until SIGINT or SIGTERM.

use std::path::Path;

pub fn run(dir: &Path, config: Option<&Path>) -> anyhow::Result<u8> {
    let (cfg, _) = crate::config::Config::load(config)?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let token = tokio_util::sync::CancellationToken::new();
        let server = openfiles_claws::ClawsServer::start(dir, &cfg.claws, token.clone()).await?;
        for w in server.auth_warnings() {
            eprintln!("openfiles: {}", crate::visible::escape(w));
        }
        println!("claws socket ready: {}", server.socket_path().display());
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        server.stop().await;
        anyhow::Ok(0)
    })
}
