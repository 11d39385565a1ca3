//! One running tool call as its handler sees it: the cancellation flag (set by the reader
//! thread on `notifications/cancelled`, polled by every blocking step), the progress token
//! (each `progress` sends a `notifications/progress` with a growing count), the shared
//! output, and [`Fail`], the ways a call ends without a normal result.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// Why a tool call produced no normal result.
#[derive(Debug, thiserror::Error)]
pub enum Fail {
    /// The client cancelled it: send nothing.
    #[error("cancelled")]
    Cancelled,
    /// Arguments the schema allows but the tool cannot use: a JSON-RPC invalid-params error.
    #[error("{0}")]
    Invalid(String),
    /// The tool ran and failed: a result with `isError: true` and this text.
    #[error("{0}")]
    Tool(String),
}

/// The shared, line-at-a-time output.
#[derive(Clone)]
pub struct Out(Arc<Mutex<Box<dyn Write + Send>>>);

impl Out {
    pub fn new(w: Box<dyn Write + Send>) -> Out {
        Out(Arc::new(Mutex::new(w)))
    }

    pub fn send(&self, msg: &Value) {
        let mut line = msg.to_string();
        line.push('\n');
        let mut w = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = w.write_all(line.as_bytes());
        let _ = w.flush();
    }
}

/// One running `tools/call`: its cancellation flag and progress token.
pub struct Call {
    cancel: Arc<AtomicBool>,
    progress: Option<Value>,
    steps: AtomicU64,
    out: Out,
}

impl Call {
    pub fn new(cancel: Arc<AtomicBool>, progress: Option<Value>, out: Out) -> Call {
        Call {
            cancel,
            progress,
            steps: AtomicU64::new(0),
            out,
        }
    }

    /// A call nobody waits for (a background watcher), stopped through `cancel`.
    pub fn detached(cancel: Arc<AtomicBool>) -> Call {
        Call {
            cancel,
            progress: None,
            steps: AtomicU64::new(0),
            out: Out::new(Box::new(std::io::sink())),
        }
    }

    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Acquire)
    }

    /// Sleep, waking early (with `Err(Cancelled)`) when the call is cancelled.
    pub fn sleep(&self, d: Duration) -> Result<(), Fail> {
        let end = std::time::Instant::now() + d;
        loop {
            if self.cancelled() {
                return Err(Fail::Cancelled);
            }
            let now = std::time::Instant::now();
            if now >= end {
                return Ok(());
            }
            std::thread::sleep((end - now).min(Duration::from_millis(50)));
        }
    }

    /// Tell the client the call is still working (when it asked for progress).
    pub fn progress(&self, message: &str) {
        if let Some(token) = &self.progress {
            let n = self.steps.fetch_add(1, Ordering::Relaxed) + 1;
            self.out.send(&json!({
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": n, "message": message},
            }));
        }
    }
}
