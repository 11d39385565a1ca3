//! The warm server's memory: the bound on its Node heap (see [`crate::server`]'s "Heap")
//! and its process tree's resident memory, read after each check.

/// The smallest V8 heap bound a server is given (a smaller `max_memory_mib` stops the server
/// after its checks; the heap bound must still let it answer them).
const MIN_HEAP_MIB: u64 = 256;

/// The V8 old-generation bound (MiB) of a server whose process tree may hold
/// `max_memory_mib` after a check: three quarters of it (the rest is Node's code, its young
/// generation and the garbage V8 holds above the used heap), at least [`MIN_HEAP_MIB`];
/// none (V8's own limit) without a memory bound.
pub fn heap_mib(max_memory_mib: u64) -> Option<u64> {
    (max_memory_mib > 0).then(|| (max_memory_mib / 4 * 3).max(MIN_HEAP_MIB))
}

/// The `NODE_OPTIONS` of a server with the heap bound `heap_mib`: the bound first, then the
/// user's own `NODE_OPTIONS` (`user`), kept whole — V8 takes the last of a repeated option,
/// so theirs wins.
pub fn node_options(heap_mib: u64, user: Option<&std::ffi::OsStr>) -> std::ffi::OsString {
    let mut out = std::ffi::OsString::from(format!("--max-old-space-size={heap_mib}"));
    if let Some(user) = user.filter(|u| !u.is_empty()) {
        out.push(" ");
        out.push(user);
    }
    out
}

/// Resident memory of `pid` and its children, in bytes.
pub fn tree_rss(pid: u32) -> u64 {
    let rss = |p: &str| {
        std::fs::read_to_string(format!("/proc/{p}/status"))
            .ok()
            .and_then(|s| {
                let v = s.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
                v.split_whitespace().next()?.parse::<u64>().ok()
            })
            .map_or(0, |kib| kib * 1024)
    };
    let kids =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    rss(&pid.to_string()) + kids.split_whitespace().map(rss).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 42.3: the heap bound follows `max_memory_mib`, with a floor, and none without a
    /// memory bound.
    #[test]
    fn the_heap_bound_is_three_quarters_of_the_memory_bound() {
        assert_eq!(heap_mib(1024), Some(768));
        assert_eq!(heap_mib(4096), Some(3072));
        assert_eq!(heap_mib(1), Some(MIN_HEAP_MIB));
        assert_eq!(heap_mib(0), None);
    }

    /// The user's `NODE_OPTIONS` are kept, after the bound (so their own bound wins).
    #[test]
    fn the_users_node_options_come_after_the_heap_bound() {
        use std::ffi::OsStr;
        assert_eq!(node_options(768, None), "--max-old-space-size=768");
        assert_eq!(
            node_options(768, Some(OsStr::new(""))),
            "--max-old-space-size=768"
        );
        assert_eq!(
            node_options(
                768,
                Some(OsStr::new("--max-old-space-size=4096 --trace-warnings"))
            ),
            "--max-old-space-size=768 --max-old-space-size=4096 --trace-warnings"
        );
    }
}
