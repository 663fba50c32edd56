//! State for "why is my job pending": the selected pending job's rank/priority/limits, the partitions and :stats views,
//! the pending/running history, and the adaptive poll interval. Pure: no I/O.

use std::collections::VecDeque;
use std::time::Duration;

use chrono::NaiveDateTime;

use super::departures::Departures;
#[cfg(test)]
use super::App;
use crate::action::Cmd;
use crate::payload::PollExtra;
use crate::payload::RemoteStats;
use crate::slurm::model::{Job, JobId, JobState, Status};
use crate::slurm::pending::PendingInfo;

pub use super::adaptive::{choose_interval, queue_signature, Pace, PollBounds, PollFacts};
pub use super::partitions::PartitionsState;

/// A full-screen view over the dashboard, opened with a `:` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Partitions,
    Stats,
    /// `:usage`, the budget (state in `ClusterState::usage`).
    Usage,
}

#[derive(Debug, Clone, Default)]
pub struct PendingState {
    pub id: Option<JobId>,
    /// The job's reason when the info was asked for.
    pub reason: Option<String>,
    pub info: Option<PendingInfo>,
    pub loading: bool,
    pub error: Option<String>,
}

/// How many samples the history and :stats keep (one per refresh / per sample message).
pub const HISTORY: usize = 240;

#[derive(Debug, Clone)]
pub struct Insight {
    pub pending: PendingState,
    pub partitions: PartitionsState,
    /// (when, counters) samples of the transport, for :stats.
    pub stats: VecDeque<(NaiveDateTime, RemoteStats)>,
    /// Own (pending, running) counts, one per refresh.
    pub history: VecDeque<(u32, u32)>,
    pub view: Option<View>,
    pub bounds: PollBounds,
    /// The adaptive interval's memory (grows while the queue stays the same).
    pub pace: Pace,
    pub last_key: Option<NaiveDateTime>,
    /// Non-fatal problems of the last refresh (e.g. sacct failing), naming the command.
    pub problems: Vec<String>,
    /// What in the rows makes a refresh due sooner, worked out once per list.
    soon: Soon,
}

impl Insight {
    /// `now` counts as the last key press: the dashboard was just opened.
    pub fn new(poll: Duration, now: NaiveDateTime) -> Insight {
        Insight {
            pending: PendingState::default(),
            partitions: PartitionsState::default(),
            stats: VecDeque::new(),
            history: VecDeque::new(),
            view: None,
            bounds: PollBounds::fixed(poll),
            pace: Pace::new(&PollBounds::fixed(poll)),
            last_key: Some(now),
            problems: Vec::new(),
            soon: Soon::default(),
        }
    }

    /// A refresh's list (squeue's jobs): the adaptive interval's memory and the
    /// pending/running counts.
    /// A refresh's list; `same`: the very records of the last one (its signature then is
    /// the last one's, not hashed again).
    pub fn on_list(&mut self, jobs: &[Job], same: bool) {
        let sig = match self.pace.last_sig() {
            Some(last) if same => last,
            _ => queue_signature(jobs),
        };
        self.pace.refreshed(sig, &self.bounds);
        let (mut pend, mut run) = (0u32, 0u32);
        for j in jobs {
            match j.status() {
                Status::Pending => pend += 1,
                Status::Running => run += 1,
                _ => {}
            }
        }
        self.history.push_back((pend, run));
        while self.history.len() > HISTORY {
            self.history.pop_front();
        }
    }

    /// The sacct part of a refresh: its problems, shown until the next one.
    pub fn on_extra(&mut self, extra: &PollExtra) {
        self.problems = extra.problems.clone();
    }
}

/// Which rows make a refresh due sooner: one that is configuring or completing (always),
/// and the times (a pending job's estimated start, a running job's start) that do while
/// within a minute of now. Worked out once per list, not at every second's choice of the
/// interval: at 100,000 rows, going through them all each second was a quarter of the
/// dashboard's idle CPU.
#[derive(Debug, Clone, Default)]
struct Soon {
    /// The list it was worked out from (see [`Insight::interval`]).
    of: Option<(u64, u64, Option<u16>)>,
    always: bool,
    /// Sorted.
    times: Vec<NaiveDateTime>,
}

impl Soon {
    /// `jobs` are the cluster's rows on screen; kept rows of jobs that left do not count.
    fn new(jobs: &[Job], departures: &Departures) -> Soon {
        let mut s = Soon::default();
        for j in jobs.iter().filter(|j| !departures.is_kept(&j.id)) {
            if matches!(j.state, JobState::Configuring | JobState::Completing) {
                s.always = true;
            }
            // %S: the estimate of a pending job, the start of a running one. A held job's
            // %S is when it would be eligible, not an estimate: it starts only after a
            // release, and that is a change the next refresh sees anyway.
            let counts = match j.status() {
                Status::Running => true,
                Status::Pending => !crate::slurm::reason::is_held(j.reason.as_deref()),
                _ => false,
            };
            if let Some(t) = j.start_time.filter(|_| counts) {
                s.times.push(t);
            }
        }
        s.times.sort_unstable();
        s
    }

    /// A job is starting or completing at `now`.
    fn active(&self, now: NaiveDateTime) -> bool {
        let soon = |t: &NaiveDateTime| (*t - now).num_seconds().abs() <= 60;
        let from = now - chrono::Duration::seconds(61);
        let first = self.times.partition_point(|t| *t <= from);
        self.always || self.times.get(first).is_some_and(soon)
    }
}

impl Insight {
    /// The refresh interval for the cluster's rows as they are now. `list` names them: the
    /// queue's generation and which cluster's rows (see [`QueueView::generation`]); `jobs`
    /// gives them, and is called only when they changed since the last time.
    ///
    /// [`QueueView::generation`]: crate::queue::QueueView::generation
    pub fn interval<'a>(
        &mut self,
        list: (u64, Option<u16>),
        jobs: impl FnOnce() -> std::borrow::Cow<'a, [Job]>,
        departures: &Departures,
        now: NaiveDateTime,
    ) -> Duration {
        let of = Some((list.0, departures.generation, list.1));
        if self.soon.of != of {
            self.soon = Soon::new(&jobs(), departures);
            self.soon.of = of;
        }
        let f = PollFacts {
            active: self.soon.active(now),
        };
        self.pace.key(self.last_key, &self.bounds);
        choose_interval(&f, &self.pace, &self.bounds)
    }

    /// The pending-info fetch for the selected job (`job`), if it is pending and not
    /// already loaded.
    pub fn pending_for(&mut self, job: Option<&Job>) -> Vec<Cmd> {
        let Some(job) = job.filter(|j| j.status() == Status::Pending) else {
            self.pending = PendingState::default();
            return Vec::new();
        };
        if self.pending.id.as_ref() == Some(&job.id) {
            return Vec::new();
        }
        self.pending = PendingState {
            id: Some(job.id.clone()),
            reason: job.reason.as_deref().map(str::to_string),
            loading: true,
            ..PendingState::default()
        };
        vec![Cmd::FetchPending(Box::new(job.clone()))]
    }

    /// The selected pending job (`job`) now waits for a limit (a `QOS…` or `Assoc…`
    /// reason) other than when its info was fetched: ask again, for slurmctld's counts of
    /// now.
    pub fn limit_reason_appeared(&mut self, job: Option<&Job>) -> Vec<Cmd> {
        let Some(j) = job else {
            return Vec::new();
        };
        let p = &self.pending;
        let now = j
            .reason
            .as_deref()
            .filter(|r| crate::slurm::limits::names_a_limit(r));
        if p.id.as_ref() != Some(&j.id) || p.loading || now.is_none() || now == p.reason.as_deref()
        {
            return Vec::new();
        }
        self.refresh_pending(job)
    }

    /// Asks again for the selected pending job (the `r` key).
    pub fn refresh_pending(&mut self, job: Option<&Job>) -> Vec<Cmd> {
        self.pending.id = None;
        self.pending_for(job)
    }

    pub fn on_pending(
        &mut self,
        id: JobId,
        result: Result<PendingInfo, String>,
        now: NaiveDateTime,
    ) {
        if self.pending.id.as_ref() != Some(&id) {
            return;
        }
        self.pending.loading = false;
        match result {
            Ok(info) => {
                self.partitions.note_partitions(&info.partitions, now);
                self.pending.info = Some(info);
                self.pending.error = None;
            }
            Err(e) => self.pending.error = Some(e),
        }
    }

    pub fn on_stats(&mut self, stats: RemoteStats, at: NaiveDateTime) {
        self.stats.push_back((at, stats));
        while self.stats.len() > HISTORY {
            self.stats.pop_front();
        }
    }

    /// `:partitions` and `:stats`.
    pub fn open_view(&mut self, v: View, now: NaiveDateTime) -> Vec<Cmd> {
        self.view = Some(v);
        match v {
            View::Partitions => self.partitions_due(true, now),
            View::Stats | View::Usage => Vec::new(),
        }
    }

    /// Fetches partition data when the view is open and the cache is older than its TTL.
    pub fn partitions_due(&mut self, opening: bool, now: NaiveDateTime) -> Vec<Cmd> {
        if self.view != Some(View::Partitions) && !opening {
            return Vec::new();
        }
        if self.partitions.due(now) {
            self.partitions.loading = true;
            vec![Cmd::FetchPartitions]
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "insight_tests.rs"]
mod tests;
