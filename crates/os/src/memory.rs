//! Keeping resident memory close to what the process really holds (a leaf: no crate imports).
//!
//! glibc gives every thread that allocates its own arena and keeps freed memory in it, so a
//! service whose writer threads serialize multi-megabyte snapshots now and then would keep
//! those peaks resident forever. Two remedies, both no-ops on other C libraries: cap the
//! number of arenas at start, and hand free memory back after a large transient buffer.

/// Call once at start, before threads exist.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; called before other threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Return free heap memory to the system (after a large transient allocation was dropped).
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim is thread-safe and only releases free memory.
    unsafe {
        libc::malloc_trim(0);
    }
}
