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
//!
//! Every place a record may close is found once, in one pass over the output, and kept by
//! id ([`Closings`]): where a record ends is then a lookup, so reading stays linear in the
//! output whatever names hold (a name full of fake record starts once cost a scan of the
//! rest of the output per start; `cargo bench --bench worst_case` has the figures).

use std::collections::HashMap;

use super::work::scanned;
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
    scanned(end + 1);
    if !rest[end..].starts_with(FIELD_SEP) {
        return None;
    }
    let id = &rest[..end];
    id.parse::<JobId>().ok().map(|_| id)
}

/// A place where a record may close: `␟ID` + terminator, or `␟ID` (and the terminator's
/// first character) at the very end of the output.
#[derive(Debug, Clone, Copy)]
struct Closing {
    /// Offset of its `␟` in the output.
    at: usize,
    /// Separators in the output before `at`.
    seps: usize,
    /// The next closing of the same id (`usize::MAX`: none).
    next: usize,
}

/// Every place a record of `out` may close, by id, found in one pass; so finding where a
/// record ends is a lookup, never a scan of the rest of the output. (Scanning made a name
/// that closes its record early and then holds many fake record starts cost a scan of
/// the whole rest of the listing per fake start.)
struct Closings<'a> {
    out: &'a str,
    closings: Vec<Closing>,
    /// For each id: its first closing, and the first one not yet ruled out.
    ids: HashMap<&'a str, (usize, usize)>,
    /// Separators in `out[..sep_at.0]` (moved forward as records are read).
    sep_at: (usize, usize),
}

impl<'a> Closings<'a> {
    fn new(out: &'a str, term: &str) -> Closings<'a> {
        let mut c = Closings {
            out,
            closings: Vec::new(),
            ids: HashMap::new(),
            sep_at: (0, 0),
        };
        let mut last: HashMap<&str, usize> = HashMap::new();
        let mut floor = 0;
        scanned(out.len());
        for (t, _) in out.match_indices(term) {
            c.add(t, floor, &mut last);
            floor = t + term.len();
        }
        if floor < out.len() {
            let term_first = term.trim_end_matches(['\n', '\r']);
            let end = match out.strip_suffix(term_first) {
                Some(head) if !term_first.is_empty() => head.len(),
                _ => out.len(),
            };
            c.add(end.max(floor), floor, &mut last);
        }
        c.rewind();
        c
    }

    /// The closing whose id ends at `end`, if `out[floor..end]` ends with `␟ID`. An id
    /// holds no separator, terminator or newline, so it runs back to the last separator
    /// and no further than `floor` (the end of the previous terminator).
    fn add(&mut self, end: usize, floor: usize, last: &mut HashMap<&'a str, usize>) {
        let b = self.out.as_bytes();
        let Some(back) = b[floor..end]
            .iter()
            .rev()
            .position(|&c| c == FIELD_SEP as u8 || c == 0x1e || c == b'\n')
        else {
            scanned(end - floor);
            return;
        };
        scanned(back + 1);
        let at = end - back - 1;
        if b[at] != FIELD_SEP as u8 || back == 0 {
            return;
        }
        let id = &self.out[at + 1..end];
        let seps = self.seps_before(at);
        let i = self.closings.len();
        self.closings.push(Closing {
            at,
            seps,
            next: usize::MAX,
        });
        match last.insert(id, i) {
            Some(prev) => self.closings[prev].next = i,
            None => {
                self.ids.insert(id, (i, i));
            }
        }
    }

    /// Separators in `out[..pos]`: counted forward from the last position asked, so a pass
    /// that asks in order counts each byte once.
    fn seps_before(&mut self, pos: usize) -> usize {
        let (from, n) = if pos < self.sep_at.0 {
            (0, 0)
        } else {
            self.sep_at
        };
        let bytes = self.out.as_bytes().get(from..pos).unwrap_or_default();
        scanned(bytes.len());
        let n = n + bytes.iter().filter(|&&b| b == FIELD_SEP as u8).count();
        self.sep_at = (pos, n);
        n
    }

    /// Starts a new pass over the output: every closing may be found again.
    fn rewind(&mut self) {
        for (first, next) in self.ids.values_mut() {
            *next = *first;
        }
        self.sep_at = (0, 0);
    }

    /// Offset of the closing `␟id` + terminator (or end of output) of the record starting
    /// at `start`, with at least `min_seps` separators before it, when it lies before
    /// `limit`. Within a pass, records are asked for in order: a closing that is before
    /// a record's id, or has too few separators before it, is so for every later record,
    /// and is never looked at again.
    fn find_end(&mut self, start: usize, id: &str, min_seps: usize, limit: usize) -> Option<usize> {
        let base = self.seps_before(start);
        let from = start + id.len();
        let (_, next) = self.ids.get_mut(id)?;
        while let Some(c) = self.closings.get(*next) {
            scanned(1);
            if c.at >= from && c.seps.saturating_sub(base) >= min_seps {
                return (c.at < limit).then_some(c.at);
            }
            *next = c.next;
        }
        None
    }
}

/// Where the next complete record starts after the start of `rest` (which starts at
/// `start` in the output), or `rest.len()`.
fn resync(ix: &mut Closings, start: usize, rest: &str, term: &str, min_seps: usize) -> usize {
    let mut from = rest.chars().next().map_or(0, char::len_utf8);
    while let Some(i) = rest.get(from..).and_then(|r| r.find(term)) {
        scanned(i + term.len());
        let q = from + i + term.len();
        let next = &rest[q..];
        if next.trim().is_empty() {
            return rest.len();
        }
        if let Some(id) = start_id(next) {
            if ix.find_end(start + q, id, min_seps, usize::MAX).is_some() {
                return q;
            }
        }
        from = q;
    }
    rest.len()
}

/// Whether `out` is framed output: a record among its first few closes with the id it
/// opens with, within the first few dozen terminators. Checked first (and in that window
/// only) so that output of the older format, which never prints the closing id, is told
/// apart from framed output whose first records are odd.
fn looks_framed(ix: &mut Closings, term: &str) -> bool {
    let out = ix.out;
    let window = out
        .match_indices(term)
        .nth(32)
        .map_or(out.len(), |(i, _)| i + term.len());
    let w = &out[..window];
    let framed = std::iter::once(0)
        .chain(w.match_indices(term).map(|(i, _)| i + term.len()))
        .take(16)
        .any(|at| {
            let r = w[at..].trim_start();
            let start = window - r.len();
            start_id(r).is_some_and(|id| ix.find_end(start, id, 0, window).is_some())
        });
    ix.rewind();
    framed
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
    let mut ix = Closings::new(out, term);
    if !known && !out.trim().is_empty() && !looks_framed(&mut ix, term) {
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
            match id.and_then(|id| ix.find_end(pos, id, min_seps, usize::MAX).map(|e| (id, e))) {
                Some((id, end)) => {
                    let end = end - pos;
                    let used = (end + 1 + id.len() + term.len()).min(rest.len());
                    (&rest[..end], true, used)
                }
                None => {
                    let stop = resync(&mut ix, pos, rest, term, min_seps);
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
#[path = "frame_reference.rs"]
mod reference;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    /// `n` honest records of about 100 bytes, then one whose name closes it early and holds
    /// `fake` record starts (`9␟` + terminator) after that.
    fn hostile_listing(n: usize, fake: usize) -> String {
        let mut out = String::new();
        let name = format!("x\x1f5{T}{}", format!("9\x1f{T}").repeat(fake));
        out.push_str(&rec("5", &format!("a\x1f{name}")));
        for i in 0..n {
            out.push_str(&rec(&(1000 + i).to_string(), &format!("{:090}\x1fb", i)));
        }
        out
    }

    /// Bytes looked at while framing `out`, and the records.
    fn scan(out: &str) -> (usize, Vec<Framed<'_>>) {
        let (r, work) = super::super::work::scanned_by(|| framed_records(out, T, 4));
        (work, r.unwrap())
    }

    #[test]
    fn fake_record_starts_in_a_name_cost_no_rescans() {
        let honest = hostile_listing(2000, 0);
        let (work, r) = scan(&honest);
        assert_eq!(r.iter().filter(|x| x.complete).count(), 2001);
        assert!(work >= honest.len() / 2, "counter counts: {work}");
        // 300 fake starts: the honest records after them all stay whole, and framing
        // looks at each byte a few times, not once per fake start.
        let hostile = hostile_listing(2000, 300);
        let (work, r) = scan(&hostile);
        let whole: Vec<&str> = r
            .iter()
            .filter(|x| x.complete)
            .filter_map(|x| x.id)
            .collect();
        assert_eq!(whole.len(), 2001, "{:?}", &r[..3]);
        assert_eq!(whole[1], "1000");
        assert!(
            work <= 4 * hostile.len(),
            "{work} bytes looked at for {} bytes of output",
            hostile.len()
        );
    }

    /// Text of records, honest and odd: ids that close early, fake starts, stray bytes,
    /// cut-off ends.
    fn piece() -> impl Strategy<Value = String> {
        let id = prop_oneof![Just("5"), Just("6"), Just("7_[1-3]"), Just("x")];
        let bit = prop_oneof![
            Just("\x1f".to_string()),
            Just("\u{1e}".to_string()),
            Just("\n".to_string()),
            Just(T.to_string()),
            Just(" ".to_string()),
            Just("a".to_string()),
            Just("é".to_string()),
            id.clone().prop_map(|i| format!("\x1f{i}{T}")),
            id.clone().prop_map(|i| format!("{i}\x1f")),
        ];
        (id, prop::collection::vec(bit, 0..8), any::<bool>()).prop_map(|(id, bits, close)| {
            let mid = bits.concat();
            if close {
                format!("{id}\x1f{mid}\x1f{id}{T}")
            } else {
                format!("{id}\x1f{mid}")
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The records are those the framing gave before its closings were indexed.
        #[test]
        fn same_records_as_the_scanning_framing(
            pieces in prop::collection::vec(piece(), 0..8),
            cut in any::<prop::sample::Index>(),
            fields in 2usize..6,
            known: bool,
        ) {
            let full = pieces.concat();
            for term in [T, "\n"] {
                let ends: Vec<usize> = (0..=full.len()).filter(|&i| full.is_char_boundary(i)).collect();
                for out in [full.as_str(), &full[..*cut.get(&ends)]] {
                    prop_assert_eq!(
                        framed_records_known(out, term, fields, known),
                        reference::framed_records_known(out, term, fields, known),
                        "{:?} {:?}", out, term
                    );
                }
            }
        }
    }

    #[test]
    fn old_format_is_not_framed() {
        assert_eq!(framed_records("5\x1fa\x1fb\u{1e}\n", T, 4), None);
        assert_eq!(framed_records("", T, 4), Some(vec![]));
    }
}
