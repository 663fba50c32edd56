//! Which rows of which lines are on screen. Only the lines that can be visible are looked
//! at, so the cost does not depend on how much the buffer holds.

use std::ops::Range;

use unicode_width::UnicodeWidthChar;

use super::buffer::{LogBuffer, LogLine};

/// Size of the text area in cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Viewport {
    pub width: u16,
    pub height: u16,
}

impl Viewport {
    /// The text area of a log pane drawn in `area` (inside its border).
    pub fn of_pane(area: ratatui::layout::Rect) -> Viewport {
        Viewport {
            width: area.width.saturating_sub(2),
            height: area.height.saturating_sub(2),
        }
    }
}

/// One screen row: a slice of a line, or the "… [N bytes more]" marker of a capped line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub seq: u64,
    pub range: Range<usize>,
    /// Draw the capped-line marker on this row (after the text, if any).
    pub marker: bool,
}

pub fn marker_text(dropped: u64) -> String {
    format!("… [{dropped} bytes more]")
}

/// Rows of one line at `width` columns.
pub fn line_rows(seq: u64, line: &LogLine, width: usize, wrap: bool) -> Vec<Row> {
    let text = line.text();
    let capped = line.dropped() > 0;
    if !wrap || width == 0 {
        return vec![Row {
            seq,
            range: 0..text.len(),
            marker: capped,
        }];
    }
    let mut rows = Vec::new();
    let (mut start, mut w) = (0, 0);
    for (i, c) in text.char_indices() {
        let cw = c.width().unwrap_or(0);
        if w + cw > width && i > start {
            rows.push(Row {
                seq,
                range: start..i,
                marker: false,
            });
            start = i;
            w = 0;
        }
        w += cw;
    }
    if start < text.len() || rows.is_empty() {
        rows.push(Row {
            seq,
            range: start..text.len(),
            marker: false,
        });
    }
    if capped {
        rows.push(Row {
            seq,
            range: text.len()..text.len(),
            marker: true,
        });
    }
    rows
}

/// The rows on screen: from line `top` down when paused, or the last rows when `top` is
/// `None` (following). A buffer shorter than the screen starts at the top.
pub fn visible_rows(buf: &LogBuffer, top: Option<u64>, vp: Viewport, wrap: bool) -> Vec<Row> {
    let (h, w) = (usize::from(vp.height), usize::from(vp.width));
    if h == 0 || buf.is_empty() {
        return Vec::new();
    }
    let (first, end) = (buf.first_seq(), buf.end_seq());
    let mut rows = Vec::with_capacity(h);
    match top {
        Some(top) => {
            let mut seq = top.clamp(first, end - 1);
            while rows.len() < h && seq < end {
                if let Some(line) = buf.get(seq) {
                    rows.extend(line_rows(seq, line, w, wrap));
                }
                seq += 1;
            }
            rows.truncate(h);
        }
        None => {
            let mut seq = end;
            while rows.len() < h && seq > first {
                seq -= 1;
                if let Some(line) = buf.get(seq) {
                    let mut r = line_rows(seq, line, w, wrap);
                    r.reverse();
                    rows.extend(r);
                }
            }
            rows.truncate(h);
            rows.reverse();
        }
    }
    rows
}

/// The first line at least partly shown when following.
pub fn follow_top(buf: &LogBuffer, vp: Viewport, wrap: bool) -> u64 {
    visible_rows(buf, None, vp, wrap)
        .first()
        .map_or(buf.first_seq(), |r| r.seq)
}

#[cfg(test)]
mod tests {
    use super::super::buffer::Caps;
    use super::*;

    fn buf(s: &str) -> LogBuffer {
        let mut b = LogBuffer::new(Caps::default());
        b.push(s.as_bytes());
        b
    }

    #[test]
    fn wrap_splits_by_display_width() {
        let b = buf("abcdefghij\n日本語日本\n\n");
        let rows = line_rows(0, b.get(0).expect("l"), 4, true);
        let ranges: Vec<_> = rows.iter().map(|r| r.range.clone()).collect();
        assert_eq!(ranges, vec![0..4, 4..8, 8..10]);
        // 2-column chars never straddle a row end.
        let rows = line_rows(1, b.get(1).expect("l"), 5, true);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].range, 0..6);
        assert_eq!(line_rows(2, b.get(2).expect("l"), 5, true).len(), 1);
    }

    #[test]
    fn follow_shows_last_rows_and_paused_starts_at_top() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let b = buf(&text);
        let vp = Viewport {
            width: 20,
            height: 5,
        };
        let rows = visible_rows(&b, None, vp, false);
        assert_eq!(
            rows.iter().map(|r| r.seq).collect::<Vec<_>>(),
            [95, 96, 97, 98, 99]
        );
        assert_eq!(follow_top(&b, vp, false), 95);
        let rows = visible_rows(&b, Some(10), vp, true);
        assert_eq!(rows[0].seq, 10);
        let short = buf("a\nb\n");
        assert_eq!(visible_rows(&short, None, vp, false).len(), 2);
    }

    #[test]
    fn wrapped_follow_counts_rows_from_the_bottom() {
        let b = buf(&format!("old\n{}\nlast", "x".repeat(25)));
        let vp = Viewport {
            width: 10,
            height: 4,
        };
        let rows = visible_rows(&b, None, vp, true);
        let seqs: Vec<_> = rows.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [1, 1, 1, 2]);
    }
}
