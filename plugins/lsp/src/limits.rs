//! What the limits on running servers measure and whom they stop.
//!
//! Owns the two decisions of `[plugin.lsp] max_servers` / `max_memory_mib`: which running
//! instances to stop (least recently used first, never one a check holds, never the last one
//! for memory), and how much memory an instance holds: the resident set (`VmRSS` in
//! `/proc/PID/status`) of its process and every descendant (typescript-language-server's
//! tsserver, a server's worker processes), found by one pass over `/proc/*/stat`. Elsewhere
//! than Linux (no `/proc`) memory reads as 0 and only the instance limit applies.
//! The registry (`lib.rs`) asks the slots for their [`crate::server::Status`] and stops the
//! chosen ones; nothing here talks to a server.

use std::collections::HashMap;
use tokio::time::Instant;

/// One running instance as the limits see it.
#[derive(Debug, Clone, Copy)]
pub struct Running<K> {
    pub key: K,
    pub last_used: Instant,
    pub busy: bool,
    /// Bytes of RSS of its process tree.
    pub rss: u64,
}

/// Instances to stop so that at most `max` run, counting `extra` about to start (`max` 0: no
/// limit). Least recently used first; busy ones are skipped, so the limit can be exceeded
/// while checks hold every instance.
pub fn over_count<K: Copy>(running: &[Running<K>], max: usize, extra: usize) -> Vec<K> {
    if max == 0 {
        return Vec::new();
    }
    let excess = (running.len() + extra).saturating_sub(max);
    lru_idle(running).into_iter().take(excess).collect()
}

/// Instances to stop so that their total RSS is at most `max_bytes` (0: no limit). Least
/// recently used first, busy ones skipped, and the most recently used one always kept.
pub fn over_memory<K: Copy>(running: &[Running<K>], max_bytes: u64) -> Vec<K> {
    let mut total: u64 = running.iter().map(|r| r.rss).sum();
    if max_bytes == 0 || total <= max_bytes {
        return Vec::new();
    }
    let newest = running.iter().map(|r| r.last_used).max();
    let mut out = Vec::new();
    let mut order: Vec<&Running<K>> = running.iter().filter(|r| !r.busy).collect();
    order.sort_by_key(|r| r.last_used);
    for r in order {
        if total <= max_bytes {
            break;
        }
        if Some(r.last_used) == newest {
            continue;
        }
        total = total.saturating_sub(r.rss);
        out.push(r.key);
    }
    out
}

fn lru_idle<K: Copy>(running: &[Running<K>]) -> Vec<K> {
    let mut idle: Vec<&Running<K>> = running.iter().filter(|r| !r.busy).collect();
    idle.sort_by_key(|r| r.last_used);
    idle.into_iter().map(|r| r.key).collect()
}

/// RSS in bytes of each process tree rooted at `pids` (0 for a pid that is gone).
pub fn tree_rss(pids: &[u32]) -> Vec<u64> {
    let children = children();
    pids.iter()
        .map(|&root| {
            let mut total = 0;
            let mut stack = vec![root];
            let mut seen = 0usize;
            while let Some(p) = stack.pop() {
                seen += 1;
                if seen > 100_000 {
                    break; // a pid cycle cannot happen, but never loop on bad data
                }
                total += rss(p);
                if let Some(kids) = children.get(&p) {
                    stack.extend(kids);
                }
            }
            total
        })
        .collect()
}

/// Parent pid → child pids, from `/proc/*/stat`.
fn children() -> HashMap<u32, Vec<u32>> {
    let mut map: HashMap<u32, Vec<u32>> = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return map;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(ppid) = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .as_deref()
            .and_then(parent_of)
        {
            map.entry(ppid).or_default().push(pid);
        }
    }
    map
}

/// The parent pid in a `/proc/PID/stat` line: the second field after the command, which is
/// in parentheses and may itself contain spaces and parentheses.
fn parent_of(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// `VmRSS` of one process, in bytes (0 if gone or unreadable).
fn rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn r(key: u8, age_s: u64, busy: bool, rss_mib: u64) -> Running<u8> {
        Running {
            key,
            last_used: Instant::now() - Duration::from_secs(age_s),
            busy,
            rss: rss_mib << 20,
        }
    }

    #[test]
    fn the_least_recently_used_idle_instances_stop_first() {
        let running = [r(1, 30, false, 10), r(2, 50, true, 10), r(3, 40, false, 10)];
        assert_eq!(over_count(&running, 3, 1), vec![3]);
        assert_eq!(over_count(&running, 1, 1), vec![3, 1], "busy 2 is kept");
        assert_eq!(over_count(&running, 0, 1), Vec::<u8>::new(), "0: no limit");
        assert_eq!(over_count(&running, 4, 1), Vec::<u8>::new());
    }

    #[test]
    fn memory_stops_the_oldest_until_under_and_keeps_the_newest() {
        let running = [
            r(1, 10, false, 300),
            r(2, 90, false, 200),
            r(3, 50, false, 100),
        ];
        assert_eq!(over_memory(&running, 550 << 20), vec![2]);
        assert_eq!(over_memory(&running, 250 << 20), vec![2, 3]);
        assert_eq!(over_memory(&running, 1), vec![2, 3], "the newest stays");
        assert_eq!(over_memory(&running, 0), Vec::<u8>::new());
    }

    #[test]
    fn a_process_tree_counts_its_children() {
        assert_eq!(parent_of("12 (a b) c) S 7 12 12 0"), Some(7));
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let end = std::time::Instant::now() + Duration::from_secs(10);
        // Wait (bounded) for the sleep to be forked; then the tree holds two processes.
        while children().get(&pid).is_none_or(|k| k.is_empty()) && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        let alone = rss(pid);
        let tree = tree_rss(&[pid])[0];
        for k in children().remove(&pid).unwrap_or_default() {
            let _ = std::process::Command::new("kill")
                .arg(k.to_string())
                .status();
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(alone > 0);
        assert!(
            tree > alone,
            "tree {tree} includes the child's RSS ({alone} alone)"
        );
        assert_eq!(tree_rss(&[u32::MAX]), vec![0]);
    }
}
