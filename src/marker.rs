//! Markers in output that arrives in pieces (the frame around a remote command, the
//! sections of a batch): where one is, and how much of a piece's end may be the start of
//! one, held back until the next piece says.

/// Where `needle` first is in `hay` (never, for an empty needle).
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    memchr::memmem::find(hay, needle)
}

/// Where `needle` last is in `hay` (never, for an empty needle).
pub fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    memchr::memmem::rfind(hay, needle)
}

/// How many of `buf`'s last bytes are the first bytes of `marker` (not all of it): what to
/// hold back when `buf` may end inside a marker.
pub fn partial_at_end(buf: &[u8], marker: &[u8]) -> usize {
    (1..marker.len().min(buf.len() + 1))
        .rev()
        .find(|&n| buf.ends_with(&marker[..n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_cut_at_a_pieces_end_is_held_back() {
        assert_eq!(partial_at_end(b"data\nMAR", b"\nMARK end"), 4);
        assert_eq!(partial_at_end(b"data", b"\nMARK end"), 0);
        assert_eq!(partial_at_end(b"", b"\nMARK"), 0);
        assert_eq!(
            partial_at_end(b"x\nMARK", b"\nMARK"),
            0,
            "a whole marker is found, not held"
        );
        assert_eq!(find(b"a MARK b MARK", b"MARK"), Some(2));
        assert_eq!(rfind(b"a MARK b MARK", b"MARK"), Some(9));
        assert_eq!(find(b"abc", b""), None);
    }
}
