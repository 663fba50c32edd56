//! Field splitting for the line parsers, without a heap allocation per
//! record: fields live in an inline array (every format here has fewer
//! than `INLINE` fields) and an ASCII separator is found a word at a time.

use std::ops::Deref;

const INLINE: usize = 32;

/// The fields of one record, in order.
pub(crate) struct Fields<'a> {
    len: usize,
    inline: [&'a str; INLINE],
    /// Used only past `INLINE` fields (separator soup in a `split` record).
    heap: Vec<&'a str>,
}

impl<'a> Fields<'a> {
    fn new() -> Fields<'a> {
        Fields {
            len: 0,
            inline: [""; INLINE],
            heap: Vec::new(),
        }
    }

    fn push(&mut self, s: &'a str) {
        match self.inline.get_mut(self.len) {
            Some(slot) if self.heap.is_empty() => *slot = s,
            _ => {
                if self.heap.is_empty() {
                    self.heap.extend_from_slice(&self.inline);
                }
                self.heap.push(s);
            }
        }
        self.len += 1;
    }
}

impl<'a> Deref for Fields<'a> {
    type Target = [&'a str];

    fn deref(&self) -> &[&'a str] {
        if self.heap.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }
}

/// `text.splitn(n, sep)` when `last_is_free`, else `text.split(sep)`.
pub(crate) fn split_on(text: &str, sep: char, n: usize, last_is_free: bool) -> Fields<'_> {
    let mut fields = Fields::new();
    let byte = u8::try_from(sep).ok().filter(u8::is_ascii);
    let Some(sep) = byte.filter(|_| n > 0 || !last_is_free) else {
        if last_is_free {
            text.splitn(n, sep).for_each(|f| fields.push(f));
        } else {
            text.split(sep).for_each(|f| fields.push(f));
        }
        return fields;
    };
    let bytes = text.as_bytes();
    let mut start = 0;
    while !(last_is_free && fields.len + 1 == n) {
        let Some(i) = find_byte(bytes, start, sep) else {
            break;
        };
        // `sep` is ASCII, so both ends are char boundaries.
        fields.push(&text[start..i]);
        start = i + 1;
    }
    fields.push(&text[start..]);
    fields
}

/// Index of the first `needle` at or after `from`, eight bytes at a time.
fn find_byte(hay: &[u8], from: usize, needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO * u64::from(needle);
    let mut i = from;
    while let Some(chunk) = hay.get(i..i + 8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let x = u64::from_le_bytes(word) ^ pattern;
        // Exact for the lowest zero byte of `x`, the first match.
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(i + found.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    hay.get(i..)?
        .iter()
        .position(|&b| b == needle)
        .map(|p| i + p)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn std_split(text: &str, sep: char, n: usize, free: bool) -> Vec<&str> {
        if free {
            text.splitn(n, sep).collect()
        } else {
            text.split(sep).collect()
        }
    }

    #[test]
    fn matches_std_split() {
        let texts = [
            "",
            "a",
            "\x1f",
            "a\x1fb",
            "ab\x1f\x1fcdefghijklmnop\x1fq\x1f",
            "ünï\x1fcödé\x1f\x1f|x|y||z",
            "0123456789abcdef\x1f0123456789abcdef\x1f\x1f\x1f\x1f\x1f\x1f\x1f\x1f\x1f",
        ];
        let soup = "\x1f".repeat(40);
        let pipes = "a|".repeat(40);
        let all = texts.iter().copied().chain([soup.as_str(), pipes.as_str()]);
        for t in all {
            for sep in ['\x1f', '|', 'é'] {
                for n in [0, 1, 2, 3, 5, 21, 40, 45] {
                    for free in [true, false] {
                        let got: Vec<&str> = split_on(t, sep, n, free).to_vec();
                        assert_eq!(got, std_split(t, sep, n, free), "{t:?} {sep:?} {n} {free}");
                    }
                }
            }
        }
    }

    #[test]
    fn finds_bytes_at_every_offset() {
        let hay: Vec<u8> = (0..40u8).collect();
        for from in 0..=40 {
            for needle in [0u8, 7, 8, 9, 31, 39, 200] {
                let want = hay[from..]
                    .iter()
                    .position(|&b| b == needle)
                    .map(|p| p + from);
                assert_eq!(find_byte(&hay, from, needle), want, "{from} {needle}");
            }
        }
    }
}
