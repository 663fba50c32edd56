//! The framing as it was before closings were indexed (each record's end found by scanning
//! the rest of the output), kept as the reference the indexed one must agree with.

use super::Framed;
use crate::slurm::command::FIELD_SEP;
use crate::slurm::jobid::JobId;

/// The id a record starting at `rest` opens with: text before the first separator that
/// parses as a job id (no terminator or newline before it).
fn start_id(rest: &str) -> Option<&str> {
    let end = rest.find([FIELD_SEP, '\u{1e}', '\n'])?;
    if !rest[end..].starts_with(FIELD_SEP) {
        return None;
    }
    let id = &rest[..end];
    id.parse::<JobId>().ok().map(|_| id)
}

/// Offset in `rest` of the closing `␟id` + `term` (or end of output) with at least
/// `min_seps` separators before it.
fn find_end(rest: &str, id: &str, term: &str, min_seps: usize) -> Option<usize> {
    let mut marker = String::with_capacity(id.len() + 1);
    marker.push(FIELD_SEP);
    marker.push_str(id);
    let term_first = term.trim_end_matches(['\n', '\r']);
    let mut from = id.len();
    let mut seps = 0;
    let mut counted_to = 0;
    while let Some(i) = rest.get(from..)?.find(&marker) {
        let at = from + i;
        let after = &rest[at + marker.len()..];
        let closes = after.starts_with(term)
            || after.is_empty()
            || (!term_first.is_empty() && after == term_first);
        if closes {
            seps += rest[counted_to..at]
                .bytes()
                .filter(|&b| b == FIELD_SEP as u8)
                .count();
            counted_to = at;
            if seps >= min_seps {
                return Some(at);
            }
        }
        // The separator is ASCII: the next byte is a char boundary.
        from = at + 1;
    }
    None
}

/// Where the next complete record starts after the start of `rest`, or `rest.len()`.
fn resync(rest: &str, term: &str, min_seps: usize) -> usize {
    let mut from = rest.chars().next().map_or(0, char::len_utf8);
    while let Some(i) = rest.get(from..).and_then(|r| r.find(term)) {
        let q = from + i + term.len();
        let next = &rest[q..];
        if next.trim().is_empty() {
            return rest.len();
        }
        if let Some(id) = start_id(next) {
            if find_end(next, id, term, min_seps).is_some() {
                return q;
            }
        }
        from = q;
    }
    rest.len()
}

/// Whether `out` is framed output: a record among its first few closes with the id it
/// opens with, within the first few dozen terminators. Checked first (and in that window
/// only) because looking for a closing id that the older format never prints would scan
/// the rest of the output once per record.
fn looks_framed(out: &str, term: &str) -> bool {
    let window = out
        .match_indices(term)
        .nth(32)
        .map_or(out.len(), |(i, _)| i + term.len());
    let w = &out[..window];
    std::iter::once(0)
        .chain(w.match_indices(term).map(|(i, _)| i + term.len()))
        .take(16)
        .any(|at| {
            let r = w[at..].trim_start();
            start_id(r).is_some_and(|id| find_end(r, id, term, 0).is_some())
        })
}

/// The framing: `known`: the output is known to be framed (the rest of an answer
/// whose beginning was), so its records are given even when none is complete.
pub(super) fn framed_records_known<'a>(
    out: &'a str,
    term: &str,
    fields: usize,
    known: bool,
) -> Option<Vec<Framed<'a>>> {
    if !known && !out.trim().is_empty() && !looks_framed(out, term) {
        return None;
    }
    let min_seps = fields.saturating_sub(2);
    let mut recs = Vec::new();
    let mut pos = 0;
    let mut line = 1;
    let mut any_complete = false;
    loop {
        let skipped = out[pos..].len() - out[pos..].trim_start().len();
        line += out[pos..pos + skipped].matches('\n').count();
        pos += skipped;
        if pos >= out.len() {
            break;
        }
        let rest = &out[pos..];
        let id = start_id(rest);
        let (text, complete, used) =
            match id.and_then(|id| find_end(rest, id, term, min_seps).map(|e| (id, e))) {
                Some((id, end)) => {
                    let used = (end + 1 + id.len() + term.len()).min(rest.len());
                    (&rest[..end], true, used)
                }
                None => {
                    let stop = resync(rest, term, min_seps);
                    let text = &rest[..stop];
                    let text = text.strip_suffix(term).unwrap_or(text);
                    (text, false, stop)
                }
            };
        any_complete |= complete;
        recs.push(Framed {
            line,
            text,
            id,
            complete,
        });
        line += rest[..used].matches('\n').count();
        pos += used;
    }
    (known || any_complete || recs.is_empty()).then_some(recs)
}
