//! [`LogBuffer`]: bytes of a log in, styled lines out. Pure and streaming: any split of the
//! input into pushes gives the same lines as one push (UTF-8 sequences, escape sequences and
//! `\r` overwrites may straddle reads).

use std::collections::VecDeque;
use std::ops::Range;

use ratatui::style::Style;
use unicode_width::UnicodeWidthStr;

use super::ansi::{apply_sgr, EscState, Step};

/// Shown for a control character or C1 code (NUL in a binary log, a stray BEL...).
pub const CONTROL_GLYPH: &str = "·";
const TAB_STOP: usize = 8;

/// Memory bounds. Older lines are dropped first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub max_lines: usize,
    /// Approximate heap bytes of all complete lines.
    pub max_bytes: usize,
    /// Text kept per line; the rest is only counted (shown as "… [N bytes more]").
    pub max_line_bytes: usize,
}

/// Per pane. Two panes (stdout and stderr in files of their own) at these caps plus what the
/// tailers may hold (`worker::tailer::IN_FLIGHT` each) stay well under 100 MB resident, however
/// fast and long-lined the job's logs.
impl Default for Caps {
    fn default() -> Self {
        Caps {
            max_lines: 20_000,
            max_bytes: 16 << 20,
            max_line_bytes: 16 << 10,
        }
    }
}

/// One line, control characters already replaced and tabs expanded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogLine {
    text: String,
    /// (byte start, style) where the style changes; before the first run: default style.
    runs: Vec<(u32, Style)>,
    width: usize,
    dropped: u64,
}

impl LogLine {
    pub fn text(&self) -> &str {
        &self.text
    }
    /// Display width of `text` in columns.
    pub fn width(&self) -> usize {
        self.width
    }
    /// Bytes of this line beyond the per-line cap that were not kept.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.dropped == 0
    }

    /// Style runs covering `range` (byte offsets into `text`), in order.
    pub fn styled(&self, range: Range<usize>) -> Vec<(Range<usize>, Style)> {
        let mut out = Vec::new();
        let mut style = Style::default();
        let mut pos = range.start;
        for &(start, s) in &self.runs {
            let start = start as usize;
            if start > pos && pos < range.end {
                let end = start.min(range.end);
                out.push((pos..end, style));
                pos = end;
            }
            style = s;
        }
        if pos < range.end {
            out.push((pos..range.end, style));
        }
        out
    }

    fn mem(&self) -> usize {
        std::mem::size_of::<LogLine>()
            + self.text.capacity()
            + self.runs.capacity() * std::mem::size_of::<(u32, Style)>()
    }

    fn clear(&mut self) {
        self.text.clear();
        self.runs.clear();
        self.width = 0;
        self.dropped = 0;
    }

    fn append(&mut self, s: &str, style: Style, cap: usize) {
        if s.is_empty() {
            return;
        }
        if self.dropped > 0 {
            self.dropped += s.len() as u64;
            return;
        }
        let room = cap.saturating_sub(self.text.len());
        let cut = if s.len() > room {
            floor_char_boundary(s, room)
        } else {
            s.len()
        };
        self.dropped += (s.len() - cut) as u64;
        let kept = &s[..cut];
        if kept.is_empty() {
            return;
        }
        let current = self.runs.last().map_or(Style::default(), |r| r.1);
        if current != style {
            self.runs.push((self.text.len() as u32, style));
        }
        self.text.push_str(kept);
        self.width += kept.width();
    }

    /// Backspace: the previous char is overwritten by whatever comes next; dropping it is the
    /// closest a line-based view gets.
    fn backspace(&mut self) {
        if self.dropped > 0 {
            return;
        }
        if let Some(c) = self.text.pop() {
            self.width = self.width.saturating_sub(c.to_string().width());
            let len = self.text.len() as u32;
            while self.runs.last().is_some_and(|r| r.0 >= len) {
                self.runs.pop();
            }
        }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Number of trailing bytes that may be the start of a UTF-8 sequence completed by the next
/// read.
pub(super) fn incomplete_suffix(b: &[u8]) -> usize {
    let n = b.len();
    for back in 1..=n.min(3) {
        let byte = b[n - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let need = match byte {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if need > back { back } else { 0 };
    }
    0
}

pub(super) fn is_special(c: char) -> bool {
    c < ' ' || c == '\x7f' || ('\u{80}'..='\u{9f}').contains(&c)
}

#[derive(Debug, Clone, Default)]
pub struct LogBuffer {
    caps: Caps,
    lines: VecDeque<LogLine>,
    /// Sequence number of `lines[0]`. Numbers only grow, also across `clear`, so a position
    /// held by the pane stays meaningful when old lines are dropped.
    first_seq: u64,
    bytes: usize,
    cur: LogLine,
    /// A `\r` was seen: the next printed char replaces the current line.
    cr: bool,
    style: Style,
    esc: EscState,
    carry: Vec<u8>,
}

impl LogBuffer {
    pub fn new(caps: Caps) -> Self {
        LogBuffer {
            caps,
            ..LogBuffer::default()
        }
    }

    pub fn caps(&self) -> Caps {
        self.caps
    }

    /// Forgets all lines and parser state (the file was truncated or the tail restarted).
    pub fn clear(&mut self) {
        let next = self.end_seq();
        *self = LogBuffer {
            caps: self.caps,
            first_seq: next,
            ..LogBuffer::default()
        };
    }

    pub fn push(&mut self, bytes: &[u8]) {
        let mut data = std::mem::take(&mut self.carry);
        data.extend_from_slice(bytes);
        let keep = incomplete_suffix(&data);
        let (body, tail) = data.split_at(data.len() - keep);
        for chunk in body.utf8_chunks() {
            self.feed(chunk.valid());
            if !chunk.invalid().is_empty() {
                self.print("\u{FFFD}");
            }
        }
        self.carry = tail.to_vec();
    }

    /// Adds a line of our own (`text` in `style`, not parsed), e.g. where bytes were left
    /// out: a line left unfinished ends before it, and escape or UTF-8 sequences cut short
    /// there are forgotten.
    pub fn push_note(&mut self, text: &str, style: Style) {
        if !self.cur.is_empty() {
            self.finish_line();
        }
        self.carry.clear();
        self.esc = EscState::Ground;
        self.cr = false;
        self.style = Style::default();
        self.cur.append(text, style, self.caps.max_line_bytes);
        self.finish_line();
    }

    fn feed(&mut self, s: &str) {
        let mut rest = s;
        while let Some(c) = rest.chars().next() {
            if self.esc == EscState::Ground {
                let end = rest
                    .char_indices()
                    .find(|&(_, c)| is_special(c))
                    .map_or(rest.len(), |(i, _)| i);
                if end > 0 {
                    self.print(&rest[..end]);
                    rest = &rest[end..];
                    continue;
                }
            }
            rest = &rest[c.len_utf8()..];
            match self.esc.step(c) {
                Step::Char(c) => self.control(c),
                Step::Sgr(p) => self.style = apply_sgr(self.style, &p),
                Step::Nothing => {}
            }
        }
    }

    fn control(&mut self, c: char) {
        match c {
            '\n' => self.finish_line(),
            '\r' => self.cr = true,
            '\t' => {
                let col = if self.cr { 0 } else { self.cur.width };
                let n = TAB_STOP - col % TAB_STOP;
                self.print(&" ".repeat(n));
            }
            '\x08' => {
                if !self.cr {
                    self.cur.backspace();
                }
            }
            '\x07' => {}
            c if is_special(c) => self.print(CONTROL_GLYPH),
            c => self.print(c.encode_utf8(&mut [0; 4])),
        }
    }

    fn print(&mut self, s: &str) {
        if self.cr {
            self.cur.clear();
            self.cr = false;
        }
        self.cur.append(s, self.style, self.caps.max_line_bytes);
    }

    fn finish_line(&mut self) {
        self.cr = false;
        let mut line = std::mem::take(&mut self.cur);
        line.text.shrink_to_fit();
        line.runs.shrink_to_fit();
        self.bytes += line.mem();
        self.lines.push_back(line);
        while self.lines.len() > self.caps.max_lines.max(1)
            || (self.bytes > self.caps.max_bytes && self.lines.len() > 1)
        {
            if let Some(old) = self.lines.pop_front() {
                self.bytes -= old.mem();
                self.first_seq += 1;
            }
        }
    }

    /// Sequence number of the oldest line kept.
    pub fn first_seq(&self) -> u64 {
        self.first_seq
    }

    /// One past the last line, counting the unfinished line if it has text.
    pub fn end_seq(&self) -> u64 {
        self.complete_end() + u64::from(!self.cur.is_empty())
    }

    /// Sequence number the unfinished line has (and keeps once it ends).
    pub fn complete_end(&self) -> u64 {
        self.first_seq + self.lines.len() as u64
    }

    pub fn len(&self) -> usize {
        (self.end_seq() - self.first_seq) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The line with sequence number `seq`; the unfinished line is the last one.
    pub fn get(&self, seq: u64) -> Option<&LogLine> {
        let idx = usize::try_from(seq.checked_sub(self.first_seq)?).ok()?;
        match idx.cmp(&self.lines.len()) {
            std::cmp::Ordering::Less => self.lines.get(idx),
            std::cmp::Ordering::Equal if !self.cur.is_empty() => Some(&self.cur),
            _ => None,
        }
    }

    /// Approximate heap bytes held by complete lines.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ratatui::style::{Color, Modifier};

    fn texts(b: &LogBuffer) -> Vec<String> {
        (b.first_seq()..b.end_seq())
            .map(|s| b.get(s).expect("line").text().to_string())
            .collect()
    }

    fn one(input: &[u8]) -> LogBuffer {
        let mut b = LogBuffer::new(Caps::default());
        b.push(input);
        b
    }

    #[test]
    fn lines_and_partial_line() {
        let mut b = one(b"one\ntwo\nthr");
        assert_eq!(texts(&b), ["one", "two", "thr"]);
        b.push(b"ee\n");
        assert_eq!(texts(&b), ["one", "two", "three"]);
        assert_eq!(b.len(), 3);
    }

    #[test]
    fn carriage_return_keeps_latest_state() {
        let mut b = one(b"10%\r20%\r30%\nnext\r\n");
        assert_eq!(texts(&b), ["30%", "next"]);
        b.push(b"epoch 1 [##  ]\repoch 1 [### ]");
        assert_eq!(texts(&b)[2], "epoch 1 [### ]");
        b.push(b"\repoch 1 [####]");
        assert_eq!(texts(&b)[2], "epoch 1 [####]");
        // A lone \r at the end shows the previous state until new text arrives.
        b.push(b"\r");
        assert_eq!(texts(&b)[2], "epoch 1 [####]");
        b.push(b"done\n");
        assert_eq!(texts(&b), ["30%", "next", "done"]);
    }

    #[test]
    fn utf8_split_across_pushes_is_not_replaced() {
        let s = "naïve → 日本 🚀\n".as_bytes();
        for cut in 0..s.len() {
            let mut b = LogBuffer::new(Caps::default());
            b.push(&s[..cut]);
            b.push(&s[cut..]);
            assert_eq!(texts(&b), ["naïve → 日本 🚀"], "cut at {cut}");
        }
    }

    #[test]
    fn invalid_utf8_and_binary_are_safe() {
        let b = one(b"a\xffb\x00c\x1b\x07d\x7fe\xc2\x85f\n");
        assert_eq!(texts(&b), ["a\u{FFFD}b·cd·e·f"]);
        for c in texts(&b)[0].chars() {
            assert!(!c.is_control(), "{c:?}");
        }
    }

    #[test]
    fn tabs_expand_and_backspace_erases() {
        let b = one(b"a\tb\tc\nab\x08c\n");
        assert_eq!(texts(&b), ["a       b       c", "ac"]);
    }

    #[test]
    fn sgr_becomes_styles_and_other_escapes_vanish() {
        let b = one(b"\x1b[1;31mERROR\x1b[0m plain \x1b[38;5;208morange\x1b[K\x1b[m\n");
        let line = b.get(0).expect("line");
        assert_eq!(line.text(), "ERROR plain orange");
        let runs = line.styled(0..line.text().len());
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[0].0, 0..5);
        assert_eq!(runs[0].1.fg, Some(Color::Red));
        assert!(runs[0].1.add_modifier.contains(Modifier::BOLD));
        assert_eq!(runs[1], (5..12, Style::default()));
        assert_eq!(runs[2].1.fg, Some(Color::Indexed(208)));
        assert_eq!(line.styled(2..8).len(), 2);
    }

    #[test]
    fn long_line_is_capped_and_counted() {
        let caps = Caps {
            max_line_bytes: 100,
            ..Caps::default()
        };
        let mut b = LogBuffer::new(caps);
        let big = vec![b'x'; 5 << 20];
        b.push(&big);
        b.push(b"\nshort\n");
        let line = b.get(0).expect("line");
        assert_eq!(line.text().len(), 100);
        assert_eq!(line.dropped(), (5 << 20) - 100);
        assert_eq!(texts(&b)[1], "short");
    }

    #[test]
    fn a_note_ends_the_unfinished_line_and_forgets_cut_sequences() {
        let mut b = one(b"done\nhalf a li\x1b[1;3");
        let dim = Style::new().add_modifier(Modifier::DIM);
        b.push_note("… skipped 3.0 MiB …", dim);
        b.push(b"1mred\x1b[0m\n");
        assert_eq!(
            texts(&b),
            ["done", "half a li", "… skipped 3.0 MiB …", "1mred"]
        );
        let note = b.get(2).expect("note");
        assert_eq!(note.styled(0..note.text().len())[0].1, dim);
        let after = b.get(3).expect("line");
        assert_eq!(after.styled(0..after.text().len())[0].1, Style::default());
        // At a line start, no empty line is added before the note.
        let mut b = one(b"a\n");
        b.push_note("n", dim);
        assert_eq!(texts(&b), ["a", "n"]);
    }

    #[test]
    fn oldest_lines_dropped_at_caps() {
        let caps = Caps {
            max_lines: 3,
            ..Caps::default()
        };
        let mut b = LogBuffer::new(caps);
        b.push(b"1\n2\n3\n4\n5\n");
        assert_eq!(texts(&b), ["3", "4", "5"]);
        assert_eq!(b.first_seq(), 2);
        let caps = Caps {
            max_bytes: 2000,
            ..Caps::default()
        };
        let mut b = LogBuffer::new(caps);
        for _ in 0..1000 {
            b.push(&[b'y'; 50]);
            b.push(b"\n");
        }
        assert!(b.bytes() <= 2000, "{}", b.bytes());
        assert!(b.len() >= 10);
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.first_seq(), 1000);
    }

    fn snapshot(b: &LogBuffer) -> Vec<LogLine> {
        (b.first_seq()..b.end_seq())
            .map(|s| b.get(s).expect("line").clone())
            .collect()
    }

    fn interesting_bytes() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"\x1b[1;31m".to_vec()),
            Just(b"\x1b[0m".to_vec()),
            Just(b"\x1b]0;t\x07".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\t".to_vec()),
            Just(b"\x08".to_vec()),
            Just("é日🚀".as_bytes().to_vec()),
            proptest::collection::vec(any::<u8>(), 0..8),
            "[a-z ]{0,12}".prop_map(|s| s.into_bytes()),
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn any_chunking_gives_the_same_lines(
            input in interesting_bytes(),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let caps = Caps { max_lines: 50, max_bytes: 1 << 20, max_line_bytes: 24 };
            let mut whole = LogBuffer::new(caps);
            whole.push(&input);
            let mut points: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            points.sort_unstable();
            let mut parts = LogBuffer::new(caps);
            let mut at = 0;
            for p in points {
                parts.push(&input[at..p]);
                at = p;
            }
            parts.push(&input[at..]);
            prop_assert_eq!(snapshot(&whole), snapshot(&parts));
        }

        #[test]
        fn never_panics_and_never_keeps_controls(input in proptest::collection::vec(any::<u8>(), 0..512)) {
            let caps = Caps { max_lines: 10, max_bytes: 4096, max_line_bytes: 32 };
            let b = one_with(&input, caps);
            prop_assert!(b.len() <= 11);
            for s in b.first_seq()..b.end_seq() {
                let line = b.get(s).expect("line");
                prop_assert!(line.text().len() <= 32);
                prop_assert!(!line.text().chars().any(|c| c.is_control()));
            }
        }
    }

    fn one_with(input: &[u8], caps: Caps) -> LogBuffer {
        let mut b = LogBuffer::new(caps);
        b.push(input);
        b
    }
}
