//! The refresh interval: it grows while the queue stays the same and shrinks when something
//! happens (a job starts or ends, a key is pressed, a quiet log wakes up). Following a log
//! does not speed the queue up: the log streams on its own channel. Pure: no I/O.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use chrono::NaiveDateTime;

use crate::slurm::model::Job;

/// Bounds from the cluster's config: the usual interval and how far it may move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollBounds {
    pub base: Duration,
    pub min: Duration,
    pub max: Duration,
}

impl PollBounds {
    /// No adapting: always `d`.
    pub fn fixed(d: Duration) -> PollBounds {
        PollBounds {
            base: d,
            min: d,
            max: d,
        }
    }

    /// The bounds widen to include `base`, so a configured interval is always honoured.
    pub fn new(base: Duration, min: Duration, max: Duration) -> PollBounds {
        let min = min.min(base);
        PollBounds {
            base,
            min,
            max: max.max(base).max(min),
        }
    }
}

/// What the interval depends on besides its own history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PollFacts {
    /// A job is starting (configuring, estimated to start within a minute, or started less
    /// than a minute ago) or completing: refresh at the fastest rate.
    pub active: bool,
}

/// Each refresh that finds the queue unchanged multiplies the interval by this (3/2).
const GROW_NUM: u32 = 3;
const GROW_DEN: u32 = 2;
/// A log counts as waking up when it writes after this long without a byte.
pub const LOG_QUIET_SECS: i64 = 30;

/// The interval's memory: the current pace, the last queue's fingerprint, the last key seen
/// and the last log write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pace {
    pub every: Duration,
    sig: Option<u64>,
    key_seen: Option<NaiveDateTime>,
    log_seen: Option<NaiveDateTime>,
}

impl Pace {
    pub fn new(b: &PollBounds) -> Pace {
        Pace {
            every: b.base,
            sig: None,
            key_seen: None,
            log_seen: None,
        }
    }

    /// After a refresh: slower when the queue's jobs and states are as before; back to the
    /// fastest rate when a job appeared, left or changed state.
    /// The signature of the last list (None before the first).
    pub fn last_sig(&self) -> Option<u64> {
        self.sig
    }

    pub fn refreshed(&mut self, sig: u64, b: &PollBounds) {
        self.every = match self.sig {
            None => b.base,
            Some(old) if old != sig => b.min,
            Some(_) => (self.every * GROW_NUM / GROW_DEN).clamp(b.min, b.max),
        };
        self.sig = Some(sig);
    }

    /// A state check found every known job as it was: slower, as after an unchanged
    /// refresh.
    pub fn steady(&mut self, b: &PollBounds) {
        if self.sig.is_some() {
            self.every = (self.every * GROW_NUM / GROW_DEN).clamp(b.min, b.max);
        }
    }

    /// The user is here: no slower than the usual interval. Returns whether it changed.
    pub fn key(&mut self, at: Option<NaiveDateTime>, b: &PollBounds) -> bool {
        if at.is_none() || at == self.key_seen {
            return false;
        }
        let first = self.key_seen.is_none();
        self.key_seen = at;
        if first {
            return false;
        }
        self.every = self.every.min(b.base);
        true
    }

    /// A followed log wrote bytes at `at`. A log that writes steadily changes nothing; one
    /// that wakes up after [`LOG_QUIET_SECS`] (a job reaching a new phase, or ending) brings
    /// the interval back to the usual one.
    pub fn log_wrote(&mut self, at: NaiveDateTime, b: &PollBounds) {
        let woke = self
            .log_seen
            .is_none_or(|t| (at - t).num_seconds() >= LOG_QUIET_SECS);
        self.log_seen = Some(at);
        if woke {
            self.every = self.every.min(b.base);
        }
    }
}

/// What the refresh interval reacts to in a queue: each job's id and state, nothing that
/// moves on its own (elapsed time, start estimates, priorities).
pub fn queue_signature(jobs: &[Job]) -> u64 {
    let mut h = DefaultHasher::new();
    jobs.len().hash(&mut h);
    for j in jobs {
        j.id.as_str().hash(&mut h);
        j.state.long_name().hash(&mut h);
    }
    h.finish()
}

pub fn choose_interval(f: &PollFacts, pace: &Pace, b: &PollBounds) -> Duration {
    if f.active {
        b.min
    } else {
        pace.every.clamp(b.min, b.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b() -> PollBounds {
        PollBounds::new(
            Duration::from_secs(5),
            Duration::from_secs(2),
            Duration::from_secs(30),
        )
    }

    fn t(s: i64) -> NaiveDateTime {
        chrono::DateTime::from_timestamp(1_700_000_000 + s, 0)
            .expect("time")
            .naive_utc()
    }

    #[test]
    fn grows_while_nothing_changes_and_snaps_back_when_a_job_changes() {
        let b = b();
        let mut p = Pace::new(&b);
        let secs = |p: &Pace| p.every.as_millis();
        p.refreshed(1, &b);
        assert_eq!(secs(&p), 5000, "first answer: the usual interval");
        let mut seen = vec![];
        for _ in 0..8 {
            p.refreshed(1, &b);
            seen.push(secs(&p));
        }
        assert_eq!(
            seen,
            [7500, 11250, 16875, 25312, 30000, 30000, 30000, 30000]
        );
        p.refreshed(2, &b);
        assert_eq!(secs(&p), 2000, "a job started or ended");
        p.refreshed(2, &b);
        assert_eq!(secs(&p), 3000);
    }

    #[test]
    fn a_key_brings_it_back_to_the_usual_interval_but_not_faster() {
        let b = b();
        let mut p = Pace::new(&b);
        assert!(!p.key(Some(t(0)), &b), "the opening 'key' is not a press");
        for _ in 0..10 {
            p.refreshed(1, &b);
        }
        assert_eq!(p.every, Duration::from_secs(30));
        assert!(!p.key(Some(t(0)), &b), "same press seen twice");
        assert!(p.key(Some(t(5)), &b));
        assert_eq!(p.every, Duration::from_secs(5));
        p.refreshed(1, &b);
        p.refreshed(2, &b);
        assert!(p.key(Some(t(6)), &b));
        assert_eq!(
            p.every,
            Duration::from_secs(2),
            "never slower because of a key"
        );
    }

    #[test]
    fn a_steady_log_changes_nothing_and_a_waking_one_shortens_it() {
        let b = b();
        let mut p = Pace::new(&b);
        for _ in 0..10 {
            p.refreshed(1, &b);
        }
        p.log_wrote(t(0), &b);
        assert_eq!(p.every, Duration::from_secs(5), "first bytes seen");
        for _ in 0..10 {
            p.refreshed(1, &b);
        }
        for s in 1..100 {
            p.log_wrote(t(s), &b);
        }
        assert_eq!(p.every, Duration::from_secs(30), "a line a second");
        p.log_wrote(t(99 + LOG_QUIET_SECS), &b);
        assert_eq!(p.every, Duration::from_secs(5), "woke up");
    }

    #[test]
    fn an_active_job_means_the_fastest_rate() {
        let b = b();
        let mut p = Pace::new(&b);
        for _ in 0..10 {
            p.refreshed(1, &b);
        }
        let f = PollFacts { active: true };
        assert_eq!(choose_interval(&f, &p, &b), Duration::from_secs(2));
        assert_eq!(
            choose_interval(&PollFacts::default(), &p, &b),
            Duration::from_secs(30)
        );
    }

    #[test]
    fn bounds_are_ordered() {
        let p = PollBounds::new(
            Duration::from_secs(60),
            Duration::from_secs(2),
            Duration::from_secs(1),
        );
        assert_eq!(p.max, Duration::from_secs(60));
        assert_eq!(p.base, Duration::from_secs(60));
        assert_eq!(p.min, Duration::from_secs(2));
        let f = PollBounds::fixed(Duration::from_secs(5));
        let mut pace = Pace::new(&f);
        pace.refreshed(1, &f);
        pace.refreshed(1, &f);
        assert_eq!(
            choose_interval(&PollFacts::default(), &pace, &f),
            Duration::from_secs(5)
        );
    }
}
