//! Plugin host round trip: the cost openfiles adds to every check for running plugins in
//! supervised child processes (daemon → NDJSON → host thread → C ABI → plugin → back),
//! measured with the `instant` fixture, which answers at once.
//!
//! Run: `cargo bench --bench plugin_host` (builds the fixtures itself). Prints p50/p95/p99
//! of one-file checks, one at a time, and the throughput with 8 checks in flight.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use openfiles::config::Config;
use openfiles::plugin_host::{CheckRequest, ManagerOptions, PluginManager};
use tokio_util::sync::CancellationToken;

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let tmp = tempfile::tempdir().expect("tempdir");
        let ws = tmp.path().canonicalize().expect("canonical");
        let file = ws.join("a.txt");
        std::fs::write(&file, "x\n").expect("write");
        let token = CancellationToken::new();
        let opts = ManagerOptions {
            host_exe: PathBuf::from(env!("CARGO_BIN_EXE_openfiles")),
            env_path: Some(common::plugins::path_list(&[common::plugins::fixture(
                "instant",
            )])),
            exe_dir: None,
        };
        let t0 = Instant::now();
        let m =
            PluginManager::start_with(&Config::default(), &ws.join("state"), token.clone(), opts)
                .await;
        let startup = t0.elapsed();
        let id = m.ids()[0];
        let req = || CheckRequest {
            trusted: true,
            id: 0,
            workspace: ws.clone(),
            files: vec![file.clone()],
            also_report: Vec::new(),
            timeout_ms: 10_000,
            ..Default::default()
        };
        for _ in 0..200 {
            m.check(id, req()).await.expect("warm-up check");
        }
        let n = 5000;
        let mut lat = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            m.check(id, req()).await.expect("check");
            lat.push(t.elapsed());
        }
        lat.sort();
        println!("plugin host startup (spawn + load + create): {startup:?}");
        println!(
            "plugin check round trip, 1 file, sequential (n={n}): p50 {:?}  p95 {:?}  p99 {:?}",
            pct(&lat, 0.50),
            pct(&lat, 0.95),
            pct(&lat, 0.99)
        );
        let total = 8000;
        let t = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let m = m.clone();
            let mk = req();
            set.spawn(async move {
                for _ in 0..total / 8 {
                    m.check(id, mk.clone()).await.expect("check");
                }
            });
        }
        while set.join_next().await.is_some() {}
        let secs = t.elapsed().as_secs_f64();
        println!(
            "plugin checks with 8 in flight: {:.0} checks/s",
            total as f64 / secs
        );
        token.cancel();
        m.wait_stopped().await;
    });
}
