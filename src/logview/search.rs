//! Case-insensitive substring search over the buffer, kept up to date as lines arrive.

use std::ops::Range;

use super::buffer::LogBuffer;

/// Byte ranges of `needle` in `hay`, ignoring case, not overlapping.
pub fn find_ci(hay: &str, needle: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    scan(hay, needle, |r| {
        out.push(r);
        true
    });
    out
}

pub fn contains_ci(hay: &str, needle: &str) -> bool {
    let mut found = false;
    scan(hay, needle, |_| {
        found = true;
        false
    });
    found
}

/// Calls `hit` for each match until it returns false.
fn scan(hay: &str, needle: &str, mut hit: impl FnMut(Range<usize>) -> bool) {
    if needle.is_empty() {
        return;
    }
    if needle.is_ascii() {
        // ASCII bytes are always char boundaries, so byte ranges are valid str ranges.
        let (h, n) = (hay.as_bytes(), needle.as_bytes());
        let first = n[0].to_ascii_lowercase();
        let mut i = 0;
        while i + n.len() <= h.len() {
            if h[i].to_ascii_lowercase() == first && h[i..i + n.len()].eq_ignore_ascii_case(n) {
                if !hit(i..i + n.len()) {
                    return;
                }
                i += n.len();
            } else {
                i += 1;
            }
        }
        return;
    }
    let fold = |c: char| c.to_lowercase().next().unwrap_or(c);
    let chars: Vec<(usize, char)> = hay.char_indices().map(|(i, c)| (i, fold(c))).collect();
    let n: Vec<char> = needle.chars().map(fold).collect();
    let mut i = 0;
    while i + n.len() <= chars.len() {
        if chars[i..i + n.len()]
            .iter()
            .map(|p| p.1)
            .eq(n.iter().copied())
        {
            let end = chars.get(i + n.len()).map_or(hay.len(), |p| p.0);
            if !hit(chars[i].0..end) {
                return;
            }
            i += n.len();
        } else {
            i += 1;
        }
    }
}

/// An active search: which lines match, and which match is current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    query: String,
    /// Sequence numbers of matching lines, ascending.
    matches: Vec<u64>,
    current: Option<usize>,
    /// Lines before this are complete and already scanned.
    scanned: u64,
}

impl Search {
    pub fn new(query: &str, buf: &LogBuffer) -> Self {
        let mut s = Search {
            query: query.to_string(),
            matches: Vec::new(),
            current: None,
            scanned: 0,
        };
        s.update(buf);
        s
    }

    pub fn query(&self) -> &str {
        &self.query
    }

    /// Number of matching lines.
    pub fn count(&self) -> usize {
        self.matches.len()
    }

    /// 1-based index of the current match.
    pub fn position(&self) -> Option<usize> {
        self.current.map(|c| c + 1)
    }

    pub fn current_seq(&self) -> Option<u64> {
        self.current.and_then(|c| self.matches.get(c).copied())
    }

    pub fn is_match(&self, seq: u64) -> bool {
        self.matches.binary_search(&seq).is_ok()
    }

    /// Accounts for dropped, cleared and new lines.
    pub fn update(&mut self, buf: &LogBuffer) {
        let first = buf.first_seq();
        let gone = self.matches.partition_point(|&s| s < first);
        self.matches.drain(..gone);
        self.current = self.current.map(|c| c.saturating_sub(gone));
        self.scanned = self.scanned.max(first);
        // The unfinished line may have changed: scan it again.
        let keep = self.matches.partition_point(|&s| s < self.scanned);
        self.matches.truncate(keep);
        for seq in self.scanned..buf.end_seq() {
            if buf
                .get(seq)
                .is_some_and(|l| contains_ci(l.text(), &self.query))
            {
                self.matches.push(seq);
            }
        }
        self.scanned = buf.complete_end();
        self.current = match (self.current, self.matches.len()) {
            (_, 0) => None,
            (Some(c), n) => Some(c.min(n - 1)),
            (None, _) => None,
        };
    }

    /// Makes the first match at or after `seq` current (wrapping to the first match).
    pub fn select_from(&mut self, seq: u64) -> Option<u64> {
        if self.matches.is_empty() {
            return None;
        }
        let i = self.matches.partition_point(|&s| s < seq);
        self.current = Some(if i < self.matches.len() {
            i
        } else {
            self.matches.len() - 1
        });
        self.current_seq()
    }

    pub fn next_match(&mut self) -> Option<u64> {
        let n = self.matches.len();
        if n == 0 {
            return None;
        }
        self.current = Some(self.current.map_or(0, |c| (c + 1) % n));
        self.current_seq()
    }

    pub fn prev_match(&mut self) -> Option<u64> {
        let n = self.matches.len();
        if n == 0 {
            return None;
        }
        self.current = Some(self.current.map_or(n - 1, |c| (c + n - 1) % n));
        self.current_seq()
    }
}

#[cfg(test)]
mod tests {
    use super::super::buffer::Caps;
    use super::*;

    #[test]
    fn finds_ignoring_case() {
        assert_eq!(
            find_ci("Error: ERROR error", "error"),
            vec![0..5, 7..12, 13..18]
        );
        assert_eq!(find_ci("ÉTÉ été", "été"), vec![0..5, 6..11]);
        assert_eq!(find_ci("日本 x", "X"), vec![7..8]);
        assert!(find_ci("abc", "").is_empty());
        assert!(!contains_ci("abc", "abcd"));
    }

    #[test]
    fn follows_new_and_dropped_lines() {
        let caps = Caps {
            max_lines: 4,
            ..Caps::default()
        };
        let mut b = LogBuffer::new(caps);
        b.push(b"loss 1\nacc\nloss 2\nlo");
        let mut s = Search::new("LOSS", &b);
        assert_eq!(s.count(), 2);
        assert_eq!(s.next_match(), Some(0));
        b.push(b"ss 3\n");
        s.update(&b);
        assert_eq!(s.count(), 3);
        b.push(b"x\ny\n");
        s.update(&b);
        assert_eq!(s.count(), 2, "lines 0 and 1 dropped");
        assert_eq!(s.current_seq(), Some(2));
        assert_eq!(s.prev_match(), Some(3));
        b.clear();
        s.update(&b);
        assert_eq!(s.count(), 0);
        assert_eq!(s.next_match(), None);
    }
}
