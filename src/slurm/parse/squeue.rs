use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use super::frame::{framed_records_known, Framed};
use super::{Record, Row};
use crate::slurm::command::{FIELD_SEP, RECORD_END, SQUEUE_FIELDS, SQUEUE_START_FIELDS};
use crate::slurm::error::ParseError;
use crate::slurm::model::{Job, JobRecord, StartEstimate};
use crate::slurm::shared::Interner;
use crate::slurm::state::JobState;
use crate::slurm::time::SlurmDuration;

const CMD: &str = "squeue";
const TERM: &str = "\u{1e}\n";
/// Fields before the free text (work dir, id, name, id) in records of
/// `command::SQUEUE_FIELDS`, `Dependency` the last of them.
const FIXED: usize = 21;
/// The same in records of the older `-o` format of captured fixtures (`%i %F … %Q %E %Z %i
/// %j %i`), which print the same fields without `tres-alloc` (see [`has_tres`]).
const FIXED_OLD: usize = 20;
/// The same in the still older unframed output of captured fixtures, which has no `%E`.
const FIXED_UNFRAMED: usize = 19;
/// Fields a framed record holds at least: those of the older `-o` format, one fewer.
const FRAMED_FIELDS: usize = SQUEUE_FIELDS.len() - 1;

/// What a squeue listing gave: every record that named its job, and what went wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed<T> {
    /// A record that did not read cleanly is here too when its job id could be read, with
    /// what could be read and its `problem` set.
    pub items: Vec<T>,
    /// One entry per record that did not read cleanly (with or without a row).
    pub problems: Vec<ParseError>,
}

impl<T> Default for Parsed<T> {
    fn default() -> Self {
        Parsed {
            items: Vec::new(),
            problems: Vec::new(),
        }
    }
}

impl<T> Parsed<T> {
    /// The items, or the first problem.
    pub fn strict(self) -> Result<Vec<T>, ParseError> {
        match self.problems.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(self.items),
        }
    }
}

/// One record: its line, its text without the closing id, and whether it was framed.
struct Piece<'a> {
    line: usize,
    text: &'a str,
    framed: bool,
    complete: bool,
}

/// Records of `command::squeue`-style output: framed (`ID␟…␟ID␞`), or the older
/// unframed output of captured fixtures, split at each terminator. `known`: already known
/// to be framed (the rest of a streamed answer).
fn pieces(out: &str, fields: usize, known: bool) -> Vec<Piece<'_>> {
    if let Some(recs) = framed_records_known(out, TERM, fields, known) {
        return recs
            .into_iter()
            .map(
                |Framed {
                     line,
                     text,
                     complete,
                     ..
                 }| Piece {
                    line,
                    text,
                    framed: true,
                    complete,
                },
            )
            .collect();
    }
    let mut v = Vec::new();
    let mut line = 1;
    let mut rest = out;
    loop {
        let (text, more) = match rest.find(RECORD_END) {
            Some(end) => (&rest[..end], Some(&rest[end + RECORD_END.len_utf8()..])),
            None => (rest, None),
        };
        let lead = text.len() - text.trim_start_matches(['\r', '\n']).len();
        line += text[..lead].matches('\n').count();
        let body = &text[lead..];
        if more.is_some() || !body.trim().is_empty() {
            v.push(Piece {
                line,
                text: body,
                framed: false,
                complete: more.is_some(),
            });
        }
        line += body.matches('\n').count();
        match more {
            Some(m) => rest = m,
            None => break,
        }
    }
    v
}

/// Reads the fields of one record, keeping the first problem and a default for a field
/// that does not read.
struct Lenient {
    problem: Option<ParseError>,
}

impl Lenient {
    fn take<T>(&mut self, r: Result<T, ParseError>, default: T) -> T {
        r.unwrap_or_else(|e| {
            self.problem.get_or_insert(e);
            default
        })
    }
}

/// Whether a framed record is one of `command::SQUEUE_FIELDS`, with `tres-alloc` second:
/// the older `-o` format had `%F` there, the array's job id, which is digits (`tres-alloc`
/// is a list of `key=value`, or `N/A`).
fn has_tres(text: &str) -> bool {
    !text
        .split(FIELD_SEP)
        .nth(1)
        .is_some_and(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

/// Splits the free text after the fixed fields: framed `DIR␟ID␟NAME`, or `DIR␟NAME`.
fn free_text<'a>(tail: &'a str, id: &str, framed: bool) -> Result<(&'a str, &'a str), String> {
    if framed {
        let mid = format!("{FIELD_SEP}{id}{FIELD_SEP}");
        if let Some(i) = tail.find(&mid) {
            return Ok((&tail[..i], &tail[i + mid.len()..]));
        }
        // The work dir may be empty: the tail then starts with `ID␟`.
        if let Some(name) = tail.strip_prefix(&mid[1..]) {
            return Ok(("", name));
        }
        return Err("work dir and name not separated by the job id".into());
    }
    match tail.split_once(FIELD_SEP) {
        Some(x) => Ok(x),
        None => Err("no name after the work dir".into()),
    }
}

/// Output of `command::squeue`. A record that does not read cleanly spoils only itself:
/// it is a row with what could be read and `problem` set when its job id reads, else only
/// a problem.
pub fn read_squeue(out: &str) -> Parsed<Job> {
    read_squeue_reusing(out, &mut Reuse::default(), &|_| {})
}

/// The clean records of the last answer, by their text: a record that reads exactly as it
/// did is that same `Job` again, neither parsed nor allocated anew. An idle queue (held or
/// pending jobs whose line did not change) then costs a hash of each line, and the list
/// before and the list after share their records. Holds only the last answer's records.
#[derive(Debug, Default)]
pub struct Reuse {
    /// Each record with the answer that last listed it: one map, updated in place (a
    /// second one beside it would cost as much again at the peak).
    by_text: HashMap<u64, (Job, u64)>,
    answers: u64,
    /// Records of the last answer that were reused (for the tests).
    pub reused: usize,
    /// The labelling the records were read with (see [`Reuse::labelled`]).
    label: u64,
}

impl Reuse {
    /// The records are labelled as `label` says from now on (the worker names them once the
    /// dashboard shows several clusters): those read under another labelling are let go.
    pub fn labelled(&mut self, label: u64) {
        if label != self.label {
            self.by_text.clear();
            self.label = label;
        }
    }
}

fn text_key(text: &str, framed: bool) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (framed, text).hash(&mut h);
    h.finish()
}

/// Like [`read_squeue`], reusing the records of `last` whose text did not change, and
/// leaving this answer's clean records in it. `label` is applied once to each record read
/// anew (which cluster it is on), so a reused record needs no change.
pub fn read_squeue_reusing(
    out: &str,
    last: &mut Reuse,
    label: &(dyn Fn(&mut JobRecord) + Sync),
) -> Parsed<Job> {
    let mut r = Reader::new(last, label);
    let pieces = pieces(out, FRAMED_FIELDS, false);
    r.parsed.items.reserve_exact(pieces.len());
    for p in pieces {
        r.piece(p, 0);
    }
    r.finish()
}

/// Reads records one by one into a listing, reusing those of the last answer.
struct Reader<'a> {
    last: &'a mut Reuse,
    label: &'a (dyn Fn(&mut JobRecord) + Sync),
    shared: Interner,
    this: u64,
    reused: usize,
    parsed: Parsed<Job>,
}

impl<'a> Reader<'a> {
    fn new(last: &'a mut Reuse, label: &'a (dyn Fn(&mut JobRecord) + Sync)) -> Self {
        last.answers += 1;
        Reader {
            this: last.answers,
            last,
            label,
            shared: Interner::default(),
            reused: 0,
            parsed: Parsed::default(),
        }
    }

    /// One record; `lines` is how many lines came before the text it was cut from.
    fn piece(&mut self, p: Piece<'_>, lines: usize) {
        // Only a whole record is reused, and only by the job its text names first (a
        // 64-bit hash of another record's text would also have to name the same job).
        let key = p.complete.then(|| text_key(p.text, p.framed));
        if let Some((job, seen)) = key.and_then(|k| self.last.by_text.get_mut(&k)) {
            let id = p.text.split(FIELD_SEP).next().unwrap_or_default();
            if job.id.as_str() == id {
                self.reused += 1;
                *seen = self.this;
                self.parsed.items.push(job.clone());
                return;
            }
        }
        let rec = Record {
            line: lines + p.line,
            text: p.text,
        };
        let shared = &mut self.shared;
        let tres = p.framed && has_tres(p.text);
        let fixed = match (p.framed, tres) {
            (true, true) => FIXED,
            (true, false) => FIXED_OLD,
            (false, _) => FIXED_UNFRAMED,
        };
        // Fields after the id are one further on in records with `tres-alloc`.
        let at = |i: usize| i + usize::from(tres);
        let r = Row::lenient(CMD, &rec, FIELD_SEP, fixed + 1);
        let id = match r.job_id(0, "job id (JobArrayId)") {
            Ok(id) => id,
            Err(e) => {
                self.parsed.problems.push(e);
                return;
            }
        };
        let mut l = Lenient {
            problem: r.error.clone(),
        };
        if !p.complete {
            l.problem.get_or_insert(r.err(if p.framed {
                "record not closed by its job id (output cut off, or a field holds a separator)"
            } else {
                "record without terminator (output cut off, or format not applied)"
            }));
        }
        let (work_dir, name) = match free_text(r.str(fixed), id.as_str(), p.framed) {
            Ok(x) => x,
            Err(what) => {
                l.problem.get_or_insert(r.err(what));
                (r.str(fixed), "")
            }
        };
        let array_job_id = l.take(r.opt_num::<u64>(at(1), "array job id (ArrayJobId)"), None);
        let time_used = l.take(
            r.duration(at(8), "time used (TimeUsed)"),
            SlurmDuration::Unknown,
        );
        let time_limit = l.take(
            r.duration(at(9), "time limit (TimeLimit)"),
            SlurmDuration::Unknown,
        );
        let nodes = l.take(r.num(at(10), "nodes (NumNodes)"), 0);
        let cpus = l.take(r.num(at(11), "cpus (NumCPUs)"), 0);
        let submit_time = l.take(r.time(at(15), "submit time (SubmitTime)"), None);
        let start_time = l.take(r.time(at(16), "start time (StartTime)"), None);
        let priority = l.take(r.opt_num(at(18), "priority (PriorityLong)"), None);
        let problem = l.problem.take();
        let mut job = Job::new(JobRecord {
            id,
            cluster: "".into(),
            array_job_id,
            array_task: r.opt_str(at(2)).map(Into::into),
            user: shared.get(r.str(at(3))),
            account: shared.get(r.str(at(4))),
            partition: shared.get(r.str(at(5))),
            state: JobState::parse(r.str(at(6))),
            reason: r.opt_str(at(7)).map(|s| shared.get(s)),
            time_used,
            time_limit,
            nodes,
            cpus,
            min_memory: r.opt_str(at(12)).map(|s| shared.get(s)),
            tres_per_node: r.opt_str(at(13)).map(|s| shared.get(s)),
            tres: if tres {
                r.opt_str(1).map(|s| shared.get(s))
            } else {
                None
            },
            node_list: r.opt_str(at(14)).map(Into::into),
            submit_time,
            start_time,
            qos: shared.get(r.str(at(17))),
            priority,
            dependency: if p.framed {
                r.opt_str(at(19)).map(Into::into)
            } else {
                None
            },
            work_dir: shared.get(work_dir),
            name: shared.get(name),
            problem: problem.as_ref().map(|e| e.to_string().into()),
        });
        (self.label)(&mut job);
        match problem {
            Some(e) => self.parsed.problems.push(e),
            None => {
                if let Some(k) = key {
                    self.last.by_text.insert(k, (job.clone(), self.this));
                }
            }
        }
        self.parsed.items.push(job);
    }

    /// The listing; the records the last answer had and this one does not are let go.
    fn finish(self) -> Parsed<Job> {
        self.last.by_text.retain(|_, (_, seen)| *seen == self.this);
        self.last.reused = self.reused;
        self.parsed
    }
}

/// How much of a streamed answer gathers before the records it completes are read.
const STREAM_STEP: usize = 256 << 10;

/// [`read_squeue_reusing`] of an answer that arrives in pieces ([`SqueueStream::push`]):
/// each complete record is read as soon as the record after it has begun, and its text let
/// go, so a large answer (about 14 MB for 100,000 jobs) is never held whole. The listing is
/// the one the whole answer would give.
pub struct SqueueStream<'a> {
    reader: Reader<'a>,
    /// Bytes not read yet: an undecided tail.
    buf: Vec<u8>,
    /// Lines before `buf`.
    lines: usize,
    /// The answer is framed: found by its first cut.
    framed: bool,
    /// The answer is not framed, or a cut was not valid UTF-8: the rest is gathered and read
    /// whole at the end.
    whole: bool,
    /// `buf`'s length at the last cut.
    tried: usize,
}

impl<'a> SqueueStream<'a> {
    pub fn new(last: &'a mut Reuse, label: &'a (dyn Fn(&mut JobRecord) + Sync)) -> Self {
        SqueueStream {
            reader: Reader::new(last, label),
            buf: Vec::new(),
            lines: 0,
            framed: false,
            whole: false,
            tried: 0,
        }
    }

    /// The next bytes of the answer.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        if !self.whole && self.buf.len() >= self.tried + STREAM_STEP {
            self.cut();
            self.tried = self.buf.len();
        }
    }

    /// Reads the records of `buf` up to its last complete one, when the records after it
    /// can no longer change them (see `parse::frame`: a record and the text before the next
    /// complete record are decided once that record is complete).
    fn cut(&mut self) {
        let term = TERM.as_bytes();
        let Some(end) = crate::marker::rfind(&self.buf, term).map(|i| i + term.len()) else {
            return;
        };
        let Ok(text) = std::str::from_utf8(&self.buf[..end]) else {
            self.whole = true;
            return;
        };
        let Some(recs) = framed_records_known(text, TERM, FRAMED_FIELDS, self.framed) else {
            self.whole = true;
            return;
        };
        self.framed = true;
        let Some(k) = recs.iter().rposition(|r| r.complete) else {
            return;
        };
        let used = {
            let r = &recs[k];
            let at = r.text.as_ptr() as usize - text.as_ptr() as usize;
            let id = r.id.unwrap_or_default();
            (at + r.text.len() + FIELD_SEP.len_utf8() + id.len() + TERM.len()).min(text.len())
        };
        for f in recs.into_iter().take(k + 1) {
            self.reader.piece(
                Piece {
                    line: f.line,
                    text: f.text,
                    framed: true,
                    complete: f.complete,
                },
                self.lines,
            );
        }
        self.lines += text[..used].matches('\n').count();
        self.buf.drain(..used);
    }

    /// Bytes of the answer held, not read yet.
    pub fn held(&self) -> usize {
        self.buf.len()
    }

    /// The listing, once the answer has ended.
    pub fn finish(mut self) -> Parsed<Job> {
        let rest = std::mem::take(&mut self.buf);
        let text = String::from_utf8(rest)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        for p in pieces(&text, FRAMED_FIELDS, self.framed && !self.whole) {
            self.reader.piece(p, self.lines);
        }
        self.reader.finish()
    }

    /// The answer is not used (its command failed): the records it read are kept beside
    /// the last answer's, which stay for the next.
    pub fn abandon(self) {
        self.reader.last.reused = 0;
    }
}

/// Output of `command::squeue`, failing on the first record that does not read cleanly.
pub fn parse_squeue(out: &str) -> Result<Vec<Job>, ParseError> {
    read_squeue(out).strict()
}

/// Output of `command::squeue_start`. A record that does not read is left out and named
/// in `problems`.
pub fn read_squeue_start(out: &str) -> Parsed<StartEstimate> {
    let mut parsed = Parsed::default();
    let n = SQUEUE_START_FIELDS.len();
    for p in pieces(out, n, false) {
        let rec = Record {
            line: p.line,
            text: p.text,
        };
        let one = || -> Result<StartEstimate, ParseError> {
            let r = Row::split(CMD, &rec, FIELD_SEP, n - 1, true)?;
            if !p.complete {
                return Err(r.err("record not closed (output cut off)"));
            }
            Ok(StartEstimate {
                id: r.job_id(0, "job id (%i)")?,
                partition: r.string(1),
                user: r.string(2),
                state: JobState::parse(r.str(3)),
                start_time: r.time(4, "start time (%S)")?,
                nodes: r.num(5, "nodes (%D)")?,
                sched_nodes: r.opt(6),
                reason: r.opt(7),
                name: r.string(8),
            })
        };
        match one() {
            Ok(s) => parsed.items.push(s),
            Err(e) => parsed.problems.push(e),
        }
    }
    parsed
}

/// Output of `command::squeue_start`, failing on the first record that does not read.
pub fn parse_squeue_start(out: &str) -> Result<Vec<StartEstimate>, ParseError> {
    read_squeue_start(out).strict()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "squeue_tests.rs"]
mod tests;
