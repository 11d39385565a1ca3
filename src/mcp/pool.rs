//! Threads for tool calls, reused: a call goes to an idle thread when there is one, else to
//! a new one; a thread that finished its call waits for the next (at most [`IDLE_MAX`] wait,
//! the others end). Starting a thread per call cost a measurable part of a short call's
//! overhead; a call still never waits for another to finish.

use std::sync::{mpsc, Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// Idle threads kept for the next calls.
const IDLE_MAX: usize = 8;

#[derive(Default)]
pub struct Pool {
    idle: Arc<Mutex<Vec<mpsc::Sender<Job>>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pool {
    /// Run `job` on a thread of its own.
    pub fn run(&self, job: Job) -> std::io::Result<()> {
        let mut job = job;
        loop {
            let Some(tx) = lock(&self.idle).pop() else {
                break;
            };
            match tx.send(job) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(back)) => job = back, // that thread is gone: try another
            }
        }
        let (tx, rx) = mpsc::channel::<Job>();
        let idle = self.idle.clone();
        std::thread::Builder::new()
            .name("mcp-call".into())
            .spawn(move || {
                let mut next = Some(job);
                while let Some(j) = next.take() {
                    j();
                    {
                        let mut waiting = lock(&idle);
                        if waiting.len() >= IDLE_MAX {
                            return;
                        }
                        waiting.push(tx.clone());
                    }
                    next = rx.recv().ok();
                }
            })
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::time::Duration;

    /// Calls never wait for each other: two jobs that each wait for the other both finish,
    /// and a later job reuses an idle thread.
    #[test]
    fn jobs_run_side_by_side_and_threads_are_reused() {
        let pool = Pool::default();
        let barrier = Arc::new(Barrier::new(2));
        let (tx, rx) = mpsc::channel();
        for _ in 0..2 {
            let (b, tx) = (barrier.clone(), tx.clone());
            pool.run(Box::new(move || {
                b.wait();
                let _ = tx.send(std::thread::current().id());
            }))
            .expect("start a thread");
        }
        let bound = Duration::from_secs(30);
        let first = rx.recv_timeout(bound).expect("job 1 finished");
        let second = rx.recv_timeout(bound).expect("job 2 finished");
        assert_ne!(first, second);
        // Both threads park as idle; the next job runs on one of them.
        let deadline = std::time::Instant::now() + bound;
        while lock(&pool.idle).len() < 2 && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        pool.run(Box::new(move || {
            let _ = tx.send(std::thread::current().id());
        }))
        .expect("run");
        let third = rx.recv_timeout(bound).expect("job 3 finished");
        assert!(
            third == first || third == second,
            "a new thread was started"
        );
    }
}
