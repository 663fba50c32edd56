//! The cheap state check between full reads: `squeue --only-job-state --jobs=<ids>` (Slurm
//! 23.11.5+) asks slurmctld for the id and state of the jobs already known, in one RPC
//! (REQUEST_JOB_STATE, lock-free with `SchedulerParameters=enable_job_state_cache`) against
//! the full read's two. It cannot see a new job, a changed reason, estimate or time used:
//! it only says whether a known job changed state or left, which calls for a full read.
//! Pure: the argv, the parser, the comparison and the version rule.
//!
//! What the clusters print (tests/fixtures/slurm/<V>/state_check*, scripts/capture-state-check):
//! - only the jobs asked for that are still in the queue; a job that left, or an id that
//!   never existed, is simply absent (exit 0, an empty answer when none is left);
//! - asked by its array id, an array answers with each task and its collapsed pending
//!   record, whose id lacks the `%N` throttle the full read prints (`7_[1-3]` for
//!   `7_[1-3%1]`);
//! - 26.05 refuses it beside `--me` (24.11 answers nothing there), hence `--jobs`;
//! - 22.05 has no such option ("unrecognized option").

use std::collections::HashMap;

use super::model::{Job, JobId, JobState};
use super::ParseError;

/// The first release with `--only-job-state`.
pub const MIN_VERSION: Version = Version(23, 11, 5);
/// At most this many job ids in one check (about 4 KB of arguments); a queue with more
/// known jobs is read in full every time.
pub const MAX_IDS: usize = 500;

const SEP: char = '\x1f';

/// A Slurm release, as `SLURM_VERSION` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:02}.{}", self.0, self.1, self.2)
    }
}

impl Version {
    /// `24.11.5`, `23.11.10-1`, `26.05.0rc1`: the first three numbers.
    pub fn parse(s: &str) -> Option<Version> {
        let mut parts = s.trim().split('.').map(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u32>().ok()
        });
        Some(Version(parts.next()??, parts.next()??, parts.next()??))
    }

    /// Whether the release answers `--only-job-state`.
    pub fn has_state_check(self) -> bool {
        self >= MIN_VERSION
    }
}

/// `SLURM_VERSION = 24.11.5` from `scontrol show config` (read once anyway, for the site's
/// rate limit).
pub fn version_from_config(show_config: &str) -> Option<Version> {
    show_config.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "SLURM_VERSION").then(|| Version::parse(v))?
    })
}

/// The check of the jobs with these (array or plain) job ids.
pub fn argv(ids: &[u64]) -> Vec<String> {
    let list: Vec<String> = ids.iter().map(u64::to_string).collect();
    vec![
        "squeue".into(),
        "--only-job-state".into(),
        "--noheader".into(),
        format!("--format=%i{SEP}%T"),
        format!("--jobs={}", list.join(",")),
    ]
}

/// One record of the answer: the id as printed (see [`key`]) and its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub id: String,
    pub state: JobState,
}

/// The answer's records. A line that is not `id<US>state` is an error: a check that cannot
/// be read must not pass for "nothing changed".
pub fn parse(out: &str) -> Result<Vec<Seen>, ParseError> {
    let mut seen = Vec::new();
    for (n, line) in out.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Some((id, state)) = line.split_once(SEP) else {
            return Err(ParseError::new(
                "squeue --only-job-state",
                n + 1,
                "expected 2 fields",
                line,
            ));
        };
        let (id, state) = (id.trim(), state.trim());
        if id.is_empty() || state.contains(SEP) || !id.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(ParseError::new(
                "squeue --only-job-state",
                n + 1,
                "not a job id and a state",
                line,
            ));
        }
        seen.push(Seen {
            id: key(id),
            state: JobState::parse(state),
        });
    }
    Ok(seen)
}

/// A record's id as both reads print it: the full read's `7_[1-3%1]` is the check's
/// `7_[1-3]`.
pub fn key(id: &str) -> String {
    match (id.find('['), id.rfind('%')) {
        (Some(open), Some(pct)) if pct > open && id.ends_with(']') => {
            format!("{}]", &id[..pct])
        }
        _ => id.to_string(),
    }
}

/// What the last full read saw, for the checks until the next one: the ids to ask and
/// each record's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expected {
    /// The distinct job ids (an array's id once), in the full read's order; past
    /// [`MAX_IDS`] only one more, to say there are too many.
    pub ids: Vec<u64>,
    /// Each record's state, while a check can stand for the read (empty past [`MAX_IDS`]:
    /// a queue of 100,000 jobs would hold them all again for nothing).
    states: HashMap<String, JobState>,
    /// The records of the full read.
    records: usize,
}

impl Expected {
    /// From the full read's own rows (squeue's, not kept or launched rows it no longer
    /// lists).
    pub fn of(jobs: &[Job]) -> Expected {
        Expected::from_records(jobs.iter().map(|j| (&j.id, &j.state)))
    }

    pub fn from_records<'a>(records: impl Iterator<Item = (&'a JobId, &'a JobState)>) -> Expected {
        let mut ids = Vec::new();
        let mut asked = std::collections::HashSet::new();
        let mut states = HashMap::new();
        let mut count = 0;
        for (id, state) in records {
            count += 1;
            if ids.len() > MAX_IDS {
                continue;
            }
            if asked.insert(id.base()) {
                ids.push(id.base());
            }
            states.insert(key(id.as_str()), state.clone());
        }
        if ids.len() > MAX_IDS {
            states = HashMap::new();
        }
        Expected {
            ids,
            records: if states.is_empty() {
                count
            } else {
                states.len()
            },
            states,
        }
    }

    /// Whether a check can stand for a full read: some jobs to ask about, not too many.
    pub fn checkable(&self) -> bool {
        !self.ids.is_empty() && self.ids.len() <= MAX_IDS
    }

    pub fn len(&self) -> usize {
        self.records
    }

    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// The known jobs (not collapsed pending arrays, whose id changes as tasks start) the
    /// answer no longer lists: they left the queue.
    pub fn left(&self, seen: &[Seen]) -> Vec<JobId> {
        let now: std::collections::HashSet<&str> = seen.iter().map(|s| s.id.as_str()).collect();
        let mut left: Vec<JobId> = self
            .states
            .keys()
            .filter(|id| !id.contains('[') && !now.contains(id.as_str()))
            .filter_map(|id| id.parse().ok())
            .collect();
        left.sort();
        left
    }

    /// The first difference between the full read and a check's answer: a known record
    /// gone (ended, or its array's pending tasks started) or in another state. Records
    /// the full read did not show (tasks of a known array its filters left out) change
    /// nothing.
    pub fn changed(&self, seen: &[Seen]) -> Option<Change> {
        let now: HashMap<&str, &JobState> =
            seen.iter().map(|s| (s.id.as_str(), &s.state)).collect();
        let mut known: Vec<(&String, &JobState)> = self.states.iter().collect();
        known.sort_by(|a, b| a.0.cmp(b.0));
        known
            .into_iter()
            .find_map(|(id, was)| match now.get(id.as_str()) {
                None => Some(Change {
                    id: id.clone(),
                    was: was.clone(),
                    now: None,
                }),
                Some(s) if *s != was => Some(Change {
                    id: id.clone(),
                    was: was.clone(),
                    now: Some((*s).clone()),
                }),
                Some(_) => None,
            })
    }
}

/// A change a check saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub id: String,
    pub was: JobState,
    /// None: the job left the queue.
    pub now: Option<JobState>,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.now {
            Some(s) => write!(
                f,
                "{} {} → {}",
                self.id,
                self.was.long_name(),
                s.long_name()
            ),
            None => write!(f, "{} {} → left the queue", self.id, self.was.long_name()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "statecheck_tests.rs"]
mod tests;
