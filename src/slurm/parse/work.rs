//! The bytes the parsers look at, counted in tests only (other builds count nothing), for
//! the tests that check a parser stays linear in its input whatever the input holds.

#[cfg(test)]
thread_local! {
    static SCANNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts `n` bytes looked at.
#[inline]
pub(crate) fn scanned(_n: usize) {
    #[cfg(test)]
    SCANNED.with(|c| c.set(c.get() + _n));
}

/// What `f` returns, and the bytes it looked at.
#[cfg(test)]
pub(crate) fn scanned_by<T>(f: impl FnOnce() -> T) -> (T, usize) {
    SCANNED.with(|c| c.set(0));
    let r = f();
    (r, SCANNED.with(std::cell::Cell::get))
}
