//! Small text helpers the panes share.

/// `s` cut to `width` characters, the last one `…` when anything was cut.
pub fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn cut_keeps_what_fits_and_marks_what_does_not() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "ab…");
        assert_eq!(cut("äöüß", 2), "ä…");
        assert_eq!(cut("abc", 0), "…");
    }
}
