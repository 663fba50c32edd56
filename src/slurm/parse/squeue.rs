use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use super::frame::{framed_records, Framed};
use super::{Record, Row};
use crate::slurm::command::{FIELD_SEP, RECORD_END, SQUEUE_FIELDS, SQUEUE_START_FIELDS};
use crate::slurm::error::ParseError;
use crate::slurm::model::{Job, JobRecord, StartEstimate};
use crate::slurm::shared::Interner;
use crate::slurm::state::JobState;
use crate::slurm::time::SlurmDuration;

const CMD: &str = "squeue";
const TERM: &str = "\u{1e}\n";
/// Fields before the free text (work dir, id, name, id), `%E` the last of them.
const FIXED: usize = 20;
/// The same in the older unframed output of captured fixtures, which has no `%E`.
const FIXED_UNFRAMED: usize = 19;

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
/// unframed output of captured fixtures, split at each terminator.
fn pieces(out: &str, fields: usize) -> Vec<Piece<'_>> {
    if let Some(recs) = framed_records(out, TERM, fields) {
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
    /// Records of the last answer that were reused (for the tests and `:stats`).
    pub reused: usize,
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
    label: &dyn Fn(&mut JobRecord),
) -> Parsed<Job> {
    let mut parsed = Parsed::default();
    let mut shared = Interner::default();
    let pieces = pieces(out, SQUEUE_FIELDS.len());
    last.answers += 1;
    let this = last.answers;
    parsed.items.reserve_exact(pieces.len());
    let mut reused = 0;
    for p in pieces {
        // Only a whole record is reused, and only by the job its text names first (a
        // 64-bit hash of another record's text would also have to name the same job).
        let key = p.complete.then(|| text_key(p.text, p.framed));
        if let Some((job, seen)) = key.and_then(|k| last.by_text.get_mut(&k)) {
            let id = p.text.split(FIELD_SEP).next().unwrap_or_default();
            if job.id.as_str() == id {
                reused += 1;
                *seen = this;
                parsed.items.push(job.clone());
                continue;
            }
        }
        let rec = Record {
            line: p.line,
            text: p.text,
        };
        let fixed = if p.framed { FIXED } else { FIXED_UNFRAMED };
        let r = Row::lenient(CMD, &rec, FIELD_SEP, fixed + 1);
        let id = match r.job_id(0, "job id (%i)") {
            Ok(id) => id,
            Err(e) => {
                parsed.problems.push(e);
                continue;
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
        let array_job_id = l.take(r.opt_num::<u64>(1, "array job id (%F)"), None);
        let time_used = l.take(r.duration(8, "time used (%M)"), SlurmDuration::Unknown);
        let time_limit = l.take(r.duration(9, "time limit (%l)"), SlurmDuration::Unknown);
        let nodes = l.take(r.num(10, "nodes (%D)"), 0);
        let cpus = l.take(r.num(11, "cpus (%C)"), 0);
        let submit_time = l.take(r.time(15, "submit time (%V)"), None);
        let start_time = l.take(r.time(16, "start time (%S)"), None);
        let priority = l.take(r.opt_num(18, "priority (%Q)"), None);
        let problem = l.problem.take();
        let job = Job::new(JobRecord {
            id,
            cluster: "".into(),
            array_job_id,
            array_task: r.opt_str(2).map(Into::into),
            user: shared.get(r.str(3)),
            account: shared.get(r.str(4)),
            partition: shared.get(r.str(5)),
            state: JobState::parse(r.str(6)),
            reason: r.opt_str(7).map(|s| shared.get(s)),
            time_used,
            time_limit,
            nodes,
            cpus,
            min_memory: r.opt_str(12).map(|s| shared.get(s)),
            tres_per_node: r.opt_str(13).map(|s| shared.get(s)),
            node_list: r.opt_str(14).map(Into::into),
            submit_time,
            start_time,
            qos: shared.get(r.str(17)),
            priority,
            dependency: if p.framed {
                r.opt_str(19).map(Into::into)
            } else {
                None
            },
            work_dir: shared.get(work_dir),
            name: shared.get(name),
            problem: problem.as_ref().map(|e| e.to_string().into()),
        });
        let mut job = job;
        label(&mut job);
        match problem {
            Some(e) => parsed.problems.push(e),
            None => {
                if let Some(k) = key {
                    last.by_text.insert(k, (job.clone(), this));
                }
            }
        }
        parsed.items.push(job);
    }
    last.by_text.retain(|_, (_, seen)| *seen == this);
    last.reused = reused;
    parsed
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
    for p in pieces(out, n) {
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
