//! Framing that one odd record cannot break. A job name or work directory may hold any
//! byte but NUL, our separators included, so a separator alone cannot say where a record
//! ends. The formats of `command` therefore print the job id first and last:
//! `ID␟ ... ␟ID` + terminator. A record ends at the first `␟ID` + terminator (its own id)
//! with at least the format's separators before it; text that does not start such a
//! record (output cut off, a record whose id is unreadable) runs to the next point where a
//! complete record starts, and is handed back as one incomplete record. So a stray
//! separator, terminator or newline anywhere spoils at most its own record.
//!
//! Only a name written on purpose to hold `␟` + its own job id + terminator can end its
//! record early; that costs its own row, as the rest of that name is then read as an
//! incomplete record.

use crate::slurm::command::FIELD_SEP;
use crate::slurm::jobid::JobId;

/// One record of framed output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Framed<'a> {
    /// 1-based line the record starts on.
    pub line: usize,
    /// The record without its closing `␟ID` and terminator.
    pub text: &'a str,
    /// The id it starts with, when that reads as a job id.
    pub id: Option<&'a str>,
    /// Closed by its own `␟ID` + terminator.
    pub complete: bool,
}

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

/// Splits `out` into records `ID␟…␟ID` + `term` holding at least `fields` fields (the
/// closing id counted). None when the output holds no such record at all: output of the
/// older format without the closing id, which the caller splits the old way.
pub(crate) fn framed_records<'a>(
    out: &'a str,
    term: &str,
    fields: usize,
) -> Option<Vec<Framed<'a>>> {
    framed_records_known(out, term, fields, false)
}

/// [`framed_records`]; `known`: the output is known to be framed (the rest of an answer
/// whose beginning was), so its records are given even when none is complete.
pub(crate) fn framed_records_known<'a>(
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const T: &str = "\u{1e}\n";

    fn rec(id: &str, mid: &str) -> String {
        format!("{id}\x1f{mid}\x1f{id}{T}")
    }

    #[test]
    fn records_close_on_their_own_id() {
        let out = format!("{}{}", rec("5", "a\x1fb"), rec("6_[1-3]", "c\x1fd"));
        let r = framed_records(&out, T, 4).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].text, "5\x1fa\x1fb");
        assert_eq!(r[1].text, "6_[1-3]\x1fc\x1fd");
        assert_eq!(r[1].line, 2);
        assert!(r.iter().all(|x| x.complete));
    }

    #[test]
    fn terminators_and_separators_inside_free_text_stay_in_it() {
        let odd = "w\u{1e}\nx\x1f\x1f6\u{1e}y\n7\x1fz";
        let out = format!("{}{}", rec("5", &format!("a\x1f{odd}")), rec("6", "c\x1fd"));
        let r = framed_records(&out, T, 4).unwrap();
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0].text, format!("5\x1fa\x1f{odd}"));
        assert_eq!(r[1].text, "6\x1fc\x1fd");
        assert_eq!(r[1].line, 4);
    }

    #[test]
    fn an_unreadable_record_is_one_incomplete_piece() {
        let out = format!("x7\x1fa\u{1e}\nb\x1fx7{T}{}", rec("6", "c\x1fd"));
        let r = framed_records(&out, T, 4).unwrap();
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(!r[0].complete && r[0].id.is_none());
        assert_eq!(r[1].text, "6\x1fc\x1fd");
        // Cut off at the end: the last record is incomplete, with its id.
        let out = format!("{}7\x1fa\x1fb", rec("6", "c\x1fd"));
        let r = framed_records(&out, T, 4).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[1].id, r[1].complete), (Some("7"), false));
    }

    #[test]
    fn old_format_is_not_framed() {
        assert_eq!(framed_records("5\x1fa\x1fb\u{1e}\n", T, 4), None);
        assert_eq!(framed_records("", T, 4), Some(vec![]));
    }
}
