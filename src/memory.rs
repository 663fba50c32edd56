//! The allocator, set for a program that stays open for days and holds little.
//!
//! glibc's malloc gives each thread that allocates its own arena, keeps freed memory at the
//! top of each heap until it passes a threshold, and raises its mmap threshold after large
//! buffers are freed (so the next refresh's output buffer comes from the heap and stays
//! there). For a dashboard whose live data is a few megabytes and whose one large
//! allocation per refresh is transient, that is most of the resident memory. Elsewhere
//! (musl, macOS) these are no-ops.

/// Called once at start, before any thread exists.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes malloc's parameters; called before other threads start.
    unsafe {
        // One arena: threads here allocate rarely (the terminal reader, blocking file reads).
        libc::mallopt(libc::M_ARENA_MAX, 1);
        // A fixed threshold (setting it turns the adaptive one off): outputs and parse
        // buffers above 256 KiB are mapped and unmapped, never left in the heap.
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 * 1024);
    }
}

/// Gives freed heap pages back to the system; called after a refresh replaced the queue
/// (the old queue's memory is free then). Measured here: 0.2 ms on a 65 MB heap with half
/// its small blocks free, microseconds when there is nothing to give back.
pub fn release_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
