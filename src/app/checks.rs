//! One cluster's cheap state checks between full reads (`slurm::statecheck`): whether the
//! cluster answers them, what the last full read saw, when a check stands in for a full
//! read, and what an answer calls for. Pure: no I/O, the time is passed in.
//!
//! The refresh timer asks at the poll interval; each time, a full read is due when none
//! came for one and a half intervals (so checks and full reads take turns), else a check
//! asks about the jobs the last full read listed. A check that sees a known job in another
//! state, or missing, calls for a full read at once (the budget's [`Who::Change`]); one
//! that sees nothing changed lets the interval grow as an unchanged full read would.
//! Clusters before Slurm 23.11.5, a queue with no job or more than
//! `statecheck::MAX_IDS` jobs, and a release not known yet get full reads only, as before.
//!
//! [`Who::Change`]: super::budget::Who::Change

use std::time::Duration;

use chrono::NaiveDateTime;

use crate::action::Cmd;
use crate::slurm::model::Job;
use crate::slurm::statecheck::{Change, Expected, Seen, Version};

/// What a check's answer calls for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every known job is as the full read saw it.
    Same,
    /// A full read, as soon as the budget allows: a job changed, or the check failed.
    FullRead,
}

#[derive(Debug, Clone, Default)]
pub struct Checks {
    /// The cluster's Slurm release, once `scontrol show config` was read.
    pub version: Option<Version>,
    /// The checks stopped: a check was refused as an unknown option.
    pub off: Option<String>,
    expected: Expected,
    /// When the last full read answered.
    last_full: Option<NaiveDateTime>,
    /// A check is out (sent or held by the budget).
    pub in_flight: bool,
    /// What the last check saw change, until the full read it called for answers.
    pub change: Option<Change>,
    /// Jobs the last check saw leave the queue: the full read it calls for asks sacct about
    /// them at once.
    pub left: Vec<crate::slurm::model::JobId>,
    /// Checks sent, and those that saw a change.
    pub sent: u64,
    pub changes: u64,
    /// When the last check answered, and what it said.
    pub last: Option<(NaiveDateTime, String)>,
}

impl Checks {
    /// Whether the cluster's release answers the check (unknown until read: no).
    pub fn supported(&self) -> bool {
        self.off.is_none() && self.version.is_some_and(Version::has_state_check)
    }

    /// Whether polls take turns between checks and full reads now.
    pub fn usable(&self) -> bool {
        self.supported() && self.expected.checkable()
    }

    /// A full read answered at `at` with squeue's own rows: the checks compare with it.
    pub fn on_full(&mut self, jobs: &[Job], at: NaiveDateTime) {
        self.expected = Expected::of(jobs);
        self.last_full = Some(at);
        self.change = None;
        self.left.clear();
    }

    /// The refresh timer asked at `now` (polls every `every`): the check that stands in
    /// for a full read, or `None` when a full read is due.
    pub fn due(&mut self, now: NaiveDateTime, every: Duration) -> Option<Cmd> {
        if !self.usable() || self.change.is_some() {
            return None;
        }
        let last = self.last_full?;
        let half = chrono::Duration::from_std(every * 3 / 2).ok()?;
        if now - last >= half {
            return None;
        }
        self.in_flight = true;
        self.sent += 1;
        Some(Cmd::CheckStates(self.expected.ids.clone()))
    }

    /// A check's answer at `at`.
    pub fn on_answer(&mut self, result: Result<Vec<Seen>, String>, at: NaiveDateTime) -> Outcome {
        self.in_flight = false;
        match result {
            Ok(seen) => match self.expected.changed(&seen) {
                None => {
                    self.last = Some((at, format!("no change in {} jobs", self.expected.len())));
                    Outcome::Same
                }
                Some(c) => {
                    self.changes += 1;
                    self.left = self.expected.left(&seen);
                    self.last = Some((at, c.to_string()));
                    self.change = Some(c);
                    Outcome::FullRead
                }
            },
            Err(e) => {
                // A release that does not know the option after all: full reads only.
                let unknown = ["unrecognized option", "invalid option", "only works alone"];
                if unknown.iter().any(|u| e.contains(u)) {
                    self.off = Some(e.clone());
                }
                self.last = Some((at, format!("failed: {e}")));
                Outcome::FullRead
            }
        }
    }

    /// A full read went out instead of the check the budget held.
    pub fn replaced(&mut self) {
        self.in_flight = false;
    }

    /// For :stats: why checks are or are not used.
    pub fn describe(&self) -> String {
        match (self.version, &self.off) {
            (_, Some(e)) => format!("off: {e}"),
            (None, _) => "not yet: the Slurm release is read once after the first refresh".into(),
            (Some(v), _) if !v.has_state_check() => format!(
                "none: Slurm {v} has no squeue --only-job-state (23.11.5+); full reads only"
            ),
            (Some(v), _) if !self.expected.checkable() => format!(
                "Slurm {v}; none now: {} (full reads only)",
                if self.expected.is_empty() {
                    "no job to ask about".to_string()
                } else {
                    format!("more than {} jobs", crate::slurm::statecheck::MAX_IDS)
                }
            ),
            (Some(v), _) => format!(
                "Slurm {v}: {} sent, {} saw a change (squeue --only-job-state, 1 RPC)",
                self.sent, self.changes
            ),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::slurm::model::JobState;
    use crate::slurm::statecheck::Seen;

    fn t(s: i64) -> NaiveDateTime {
        chrono::DateTime::from_timestamp(1_700_000_000 + s, 0)
            .unwrap()
            .naive_utc()
    }

    fn jobs() -> Vec<Job> {
        let mut v = crate::app::tests::jobs();
        v.truncate(3);
        v
    }

    fn seen(jobs: &[Job]) -> Vec<Seen> {
        jobs.iter()
            .map(|j| Seen {
                id: j.id.as_str().to_string(),
                state: j.state.clone(),
            })
            .collect()
    }

    #[test]
    fn checks_and_full_reads_take_turns_once_the_release_is_known() {
        let mut c = Checks::default();
        let every = Duration::from_secs(31);
        c.on_full(&jobs(), t(0));
        assert_eq!(c.due(t(31), every), None, "release not known: full reads");
        c.version = Some(Version(22, 5, 8));
        assert_eq!(c.due(t(31), every), None, "22.05: full reads");
        c.version = Some(Version(24, 11, 5));
        let Some(Cmd::CheckStates(ids)) = c.due(t(31), every) else {
            panic!("a check")
        };
        assert_eq!(ids.len(), 3);
        assert!(c.in_flight);
        assert_eq!(c.on_answer(Ok(seen(&jobs())), t(32)), Outcome::Same);
        assert_eq!(c.due(t(62), every), None, "a full read 62 s after the last");
        c.on_full(&jobs(), t(62));
        assert!(c.due(t(93), every).is_some());
        assert_eq!(c.sent, 2);
    }

    #[test]
    fn a_change_or_a_failure_calls_for_a_full_read() {
        let mut c = Checks {
            version: Some(Version(26, 5, 5)),
            ..Checks::default()
        };
        c.on_full(&jobs(), t(0));
        let mut now = jobs();
        now.remove(0);
        assert_eq!(c.on_answer(Ok(seen(&now)), t(31)), Outcome::FullRead);
        assert!(c.change.is_some());
        assert_eq!(
            c.due(t(32), Duration::from_secs(31)),
            None,
            "the full read goes first"
        );
        c.on_full(&now, t(33));
        assert!(c.change.is_none());
        now[0].state = JobState::Completing;
        assert_eq!(c.on_answer(Ok(seen(&now)), t(64)), Outcome::FullRead);
        assert_eq!(c.changes, 2);
        assert_eq!(
            c.on_answer(Err("ssh: connection refused".into()), t(90)),
            Outcome::FullRead
        );
        assert!(
            c.supported(),
            "a failed connection does not stop the checks"
        );
        c.on_answer(
            Err(
                "squeue --only-job-state failed: squeue: unrecognized option '--only-job-state'"
                    .into(),
            ),
            t(120),
        );
        assert!(!c.supported());
        assert!(c.describe().starts_with("off: "), "{}", c.describe());
    }

    #[test]
    fn an_empty_queue_gets_full_reads() {
        let mut c = Checks {
            version: Some(Version(24, 11, 5)),
            ..Checks::default()
        };
        c.on_full(&[], t(0));
        assert!(!c.usable());
        assert_eq!(c.due(t(31), Duration::from_secs(31)), None);
        assert_eq!(
            c.describe(),
            "Slurm 24.11.5; none now: no job to ask about (full reads only)"
        );
    }

    /// Past `MAX_IDS` jobs every refresh is a full read, and the states of the jobs are not
    /// kept for a check that cannot come (100,000 of them would be held again, and built
    /// anew at each refresh); a queue back under the limit is checked again.
    #[test]
    fn past_the_limit_full_reads_and_no_states_kept() {
        use crate::slurm::statecheck::MAX_IDS;
        let mut c = Checks {
            version: Some(Version(24, 11, 5)),
            ..Checks::default()
        };
        let one = jobs().remove(0);
        let many: Vec<Job> = (0..MAX_IDS + 100)
            .map(|i| {
                let mut j = one.clone();
                j.id = (9000 + i).to_string().parse().unwrap();
                j
            })
            .collect();
        c.on_full(&many, t(0));
        assert!(!c.usable());
        assert_eq!(c.due(t(31), Duration::from_secs(31)), None);
        assert_eq!(c.expected.ids.len(), MAX_IDS + 1);
        assert_eq!(c.expected.len(), MAX_IDS + 100);
        assert_eq!(
            c.describe(),
            format!("Slurm 24.11.5; none now: more than {MAX_IDS} jobs (full reads only)")
        );
        assert!(c.expected.changed(&[]).is_none(), "no state kept");
        c.on_full(&many[..MAX_IDS], t(40));
        assert!(c.usable());
        let Some(Cmd::CheckStates(ids)) = c.due(t(71), Duration::from_secs(31)) else {
            panic!("a check")
        };
        assert_eq!(ids.len(), MAX_IDS);
    }
}
