//! What a preview shows of a file's first bytes: JSON read whole indented, CSV and TSV in
//! aligned columns, anything else as it is. Pure.

use unicode_width::UnicodeWidthStr;

/// A column is padded to at most this many cells; a longer value is shown whole and
/// pushes the rest of its row along.
const MAX_CELL: usize = 40;
/// Columns are aligned from this many rows (the rest follow the same widths).
const SAMPLE_ROWS: usize = 2_000;

/// Text that is not worth showing as text: a NUL in its first 8 KiB.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8 << 10).any(|b| *b == 0)
}

/// The text a preview shows of `bytes`, the first bytes of the file at `path` whose size is
/// `size`.
pub fn preview_text(path: &[u8], size: u64, bytes: Vec<u8>) -> Vec<u8> {
    let lower = path.to_ascii_lowercase();
    let whole = size == bytes.len() as u64;
    if lower.ends_with(b".json") && whole {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) {
            if let Ok(s) = serde_json::to_string_pretty(&v) {
                return s.into_bytes();
            }
        }
    }
    let sep = if lower.ends_with(b".csv") {
        Some(',')
    } else if lower.ends_with(b".tsv") {
        Some('\t')
    } else {
        None
    };
    if let (Some(sep), Ok(text)) = (sep, std::str::from_utf8(&bytes)) {
        if let Some(aligned) = align(text, sep, whole) {
            return aligned.into_bytes();
        }
    }
    bytes
}

/// `text` as aligned columns, or `None` when it does not read as a table (a quoted field
/// over several lines, fewer than two columns, rows of different lengths). The last line
/// of a cut-off file may be partial: it is shown as it is.
pub fn align(text: &str, sep: char, whole: bool) -> Option<String> {
    let mut lines: Vec<&str> = text.lines().collect();
    let partial = (!whole && !text.ends_with('\n'))
        .then(|| lines.pop())
        .flatten();
    let rows: Vec<Vec<String>> = lines.iter().map(|l| split(l, sep)).collect::<Option<_>>()?;
    let cols = rows.first()?.len();
    if cols < 2 || rows.iter().any(|r| r.len() != cols && !r.is_empty()) {
        return None;
    }
    let mut widths = vec![0usize; cols];
    for r in rows.iter().take(SAMPLE_ROWS) {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.width().min(MAX_CELL));
        }
    }
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for r in &rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < r.len() {
                let pad = widths[i].saturating_sub(cell.width()) + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if let Some(p) = partial {
        out.push_str(p);
    }
    Some(out)
}

/// One CSV/TSV line's fields, with quotes removed (`""` is a quote); `None` when a quoted
/// field does not end on the line.
fn split(line: &str, sep: char) -> Option<Vec<String>> {
    if line.is_empty() {
        return Some(Vec::new());
    }
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' if quoted => quoted = false,
            '"' if cur.is_empty() => quoted = true,
            c if c == sep && !quoted => fields.push(std::mem::take(&mut cur)),
            '\r' if !quoted && chars.peek().is_none() => {}
            c => cur.push(c),
        }
    }
    if quoted {
        return None;
    }
    fields.push(cur);
    Some(fields)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn csv_columns_line_up_with_quotes_and_wide_characters() {
        let csv = "epoch,loss,note\n1,0.9312,\"warm, up\"\n10,0.41,ок\n";
        let out = String::from_utf8(preview_text(b"m/metrics.CSV", 52, csv.into())).unwrap();
        assert_eq!(
            out,
            "epoch  loss    note\n1      0.9312  warm, up\n10     0.41    ок\n"
        );
    }

    #[test]
    fn tsv_and_a_cut_off_last_line() {
        let tsv = "a\tbb\n1\t2\n333\t4\n55";
        let out = align(tsv, '\t', false).unwrap();
        assert_eq!(out, "a    bb\n1    2\n333  4\n55");
    }

    #[test]
    fn what_is_not_a_table_is_shown_as_it_is() {
        let ragged = "a,b\n1,2,3\n";
        assert_eq!(
            preview_text(b"x.csv", ragged.len() as u64, ragged.into()),
            ragged.as_bytes()
        );
        let multiline = "a,b\n\"two\nlines\",2\n";
        assert_eq!(
            preview_text(b"x.csv", multiline.len() as u64, multiline.into()),
            multiline.as_bytes()
        );
        let one = "just\none\n";
        assert_eq!(preview_text(b"x.csv", 9, one.into()), one.as_bytes());
        let bad = b"a,b\n\xff,1\n".to_vec();
        assert_eq!(preview_text(b"x.csv", 9, bad.clone()), bad);
        assert_eq!(
            preview_text(b"x.txt", 9, b"a,b\n1,2\n".to_vec()),
            b"a,b\n1,2\n"
        );
    }

    #[test]
    fn a_long_value_does_not_widen_its_column_past_the_cap() {
        let long = "x".repeat(100);
        let csv = format!("k,v\n{long},1\na,2\n");
        let out = align(&csv, ',', true).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[2], format!("a{}2", " ".repeat(MAX_CELL + 1)));
    }

    #[test]
    fn json_read_whole_is_indented() {
        let j = br#"{"a":1}"#.to_vec();
        assert_eq!(preview_text(b"r.json", 7, j.clone()), b"{\n  \"a\": 1\n}");
        assert_eq!(
            preview_text(b"r.json", 99, j.clone()),
            j,
            "cut off: as it is"
        );
    }
}
