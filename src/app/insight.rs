//! State for "why is my job pending": the selected pending job's rank/priority/limits, the partitions and :stats views,
//! the pending/running history, and the adaptive poll interval. Pure: no I/O.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDateTime;

use super::departures::Departures;
#[cfg(test)]
use super::App;
use crate::action::Cmd;
use crate::payload::PollExtra;
use crate::payload::RemoteStats;
use crate::slurm::model::{Job, JobId, JobState, Status};
use crate::slurm::pending::{Ask, Batch, PendingInfo};

pub use super::adaptive::{choose_interval, queue_signature, Pace, PollBounds, PollFacts};
pub use super::partitions::PartitionsState;

/// A full-screen view over the dashboard, opened with a `:` command (`Stats` stands for
/// the three in the overlay tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum View {
    Partitions,
    #[default]
    Stats,
    /// `:usage`, the budget (state in `ClusterState::usage`).
    Usage,
}

/// A kept answer older than this is read again when a pending job is selected (and shown
/// meanwhile, with its age), unless the site's `PriorityCalcPeriod` is longer: sprio's
/// figures move only that often (5 minutes by default), and the answer is kept that long,
/// up to [`PARTITIONS_KEEP_SECS`].
pub const PENDING_KEEP_SECS: i64 = 120;
/// The partitions' limits are static facts: read again after this long.
pub const PARTITIONS_KEEP_SECS: i64 = 600;
/// A read not answered after this long no longer holds the next one back.
const PENDING_STUCK_SECS: i64 = 60;

/// The last answer about a user's pending jobs, kept for every job it covers.
#[derive(Debug, Clone)]
pub struct KeptPending {
    pub at: NaiveDateTime,
    pub ask: Ask,
    pub batch: Arc<Batch>,
}

/// Why the selected pending job waits, from the kept answer about all of its user's
/// pending jobs: selecting another one shows at once what that answer says of it.
#[derive(Debug, Clone, Default)]
pub struct PendingState {
    pub id: Option<JobId>,
    /// The job's reason when it was shown.
    pub reason: Option<String>,
    pub info: Option<PendingInfo>,
    /// A read is out that covers the shown job.
    pub loading: bool,
    pub error: Option<String>,
    /// When the shown answer was read.
    pub as_of: Option<NaiveDateTime>,
    pub kept: Option<KeptPending>,
    /// The read out, and since when.
    asked: Option<(NaiveDateTime, Ask)>,
    /// The shown job, to work its view out again when an answer comes.
    job: Option<Job>,
    /// When the partitions' limits were last read.
    partitions_at: Option<NaiveDateTime>,
    /// How long an answer is kept: [`PENDING_KEEP_SECS`] until the site's
    /// `PriorityCalcPeriod` is known.
    keep_secs: Option<i64>,
}

impl PendingState {
    /// Shows `job` (a pending job, else nothing) from the kept answer, and asks again when
    /// that answer does not cover it, is older than [`PENDING_KEEP_SECS`], was read before
    /// the job was submitted, or `force`. `jobs`: the queue's rows (the read covers every
    /// pending job of the job's user on its cluster).
    pub fn show(
        &mut self,
        job: Option<&Job>,
        jobs: &[Job],
        now: NaiveDateTime,
        force: bool,
    ) -> Vec<Cmd> {
        let Some(job) = job.filter(|j| j.status() == Status::Pending) else {
            self.id = None;
            self.info = None;
            self.job = None;
            self.loading = false;
            self.error = None;
            self.as_of = None;
            return Vec::new();
        };
        if self.id.as_ref() == Some(&job.id) && !force {
            return Vec::new();
        }
        self.id = Some(job.id.clone());
        self.reason = job.reason.as_deref().map(str::to_string);
        self.job = Some(job.clone());
        self.error = None;
        let kept = self.kept.as_ref().filter(|k| k.ask.covers(job));
        self.info = kept.map(|k| k.batch.info_for(job));
        self.as_of = kept.map(|k| k.at);
        let fresh = kept.is_some_and(|k| {
            (now - k.at).num_seconds() < self.keep_secs()
                && job.submit_time.is_none_or(|s| s <= k.at)
        });
        if fresh && !force {
            self.loading = false;
            return Vec::new();
        }
        self.ask(job, jobs, now)
    }

    /// The site's `PriorityCalcPeriod`: a kept answer is read again only after it (at least
    /// [`PENDING_KEEP_SECS`], at most [`PARTITIONS_KEEP_SECS`]).
    pub fn set_calc_period(&mut self, d: std::time::Duration) {
        let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
        self.keep_secs = Some(secs.clamp(PENDING_KEEP_SECS, PARTITIONS_KEEP_SECS));
    }

    /// How long an answer is kept before a selection reads it again.
    pub fn keep_secs(&self) -> i64 {
        self.keep_secs.unwrap_or(PENDING_KEEP_SECS)
    }

    /// A held read was dropped, never sent: the next selection may ask again.
    pub fn not_asked(&mut self, ask: &Ask) {
        if self.asked.as_ref().is_some_and(|(_, a)| a == ask) {
            self.asked = None;
        }
    }

    /// Whether a held read still serves the shown job.
    pub fn job_covered(&self, ask: &Ask) -> bool {
        self.job.as_ref().is_some_and(|j| ask.covers(j))
    }

    fn ask(&mut self, job: &Job, jobs: &[Job], now: NaiveDateTime) -> Vec<Cmd> {
        if let Some((since, a)) = &self.asked {
            if a.covers(job) && (now - *since).num_seconds() < PENDING_STUCK_SECS {
                self.loading = true;
                return Vec::new();
            }
        }
        let with_partitions = self
            .partitions_at
            .is_none_or(|t| (now - t).num_seconds() >= PARTITIONS_KEEP_SECS);
        let cluster = job.id.cluster();
        let mine = jobs
            .iter()
            .filter(|j| j.id.cluster() == cluster)
            .chain(std::iter::once(job));
        let Some(ask) = Ask::of(job.user.as_str(), mine, with_partitions) else {
            return Vec::new();
        };
        self.asked = Some((now, ask.clone()));
        self.loading = true;
        vec![Cmd::FetchPending(Box::new(ask))]
    }

    /// A read's answer: kept for every job it covers, and shown if it covers the shown job.
    /// Returns the partitions read, if any.
    pub fn on_answer(
        &mut self,
        ask: Ask,
        result: Result<Batch, String>,
        at: NaiveDateTime,
    ) -> Option<Vec<crate::slurm::model::Partition>> {
        if self.asked.as_ref().is_some_and(|(_, a)| *a == ask) {
            self.asked = None;
        }
        let shown = self.job.clone().filter(|j| ask.covers(j));
        match result {
            Ok(mut b) => {
                let read = ask.with_partitions.then(|| b.partitions.clone());
                if ask.with_partitions {
                    self.partitions_at = Some(at);
                } else if let Some(k) = &self.kept {
                    b.partitions = k.batch.partitions.clone();
                }
                let batch = Arc::new(b);
                if let Some(job) = &shown {
                    self.info = Some(batch.info_for(job));
                    self.as_of = Some(at);
                    self.loading = false;
                    self.error = None;
                }
                self.kept = Some(KeptPending { at, ask, batch });
                read
            }
            Err(e) => {
                if shown.is_some() {
                    self.loading = false;
                    self.error = Some(e);
                }
                None
            }
        }
    }
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

    /// Why the selected job (`job`) waits, if it is pending: at once from the kept answer,
    /// read again when that does not cover it or is old (see [`PendingState::show`]).
    pub fn pending_for(&mut self, job: Option<&Job>, jobs: &[Job], now: NaiveDateTime) -> Vec<Cmd> {
        self.pending.show(job, jobs, now, false)
    }

    /// The selected pending job (`job`) now waits for a limit (a `QOS…` or `Assoc…`
    /// reason) other than when its info was fetched: ask again, for slurmctld's counts of
    /// now.
    pub fn limit_reason_appeared(
        &mut self,
        job: Option<&Job>,
        jobs: &[Job],
        now: NaiveDateTime,
    ) -> Vec<Cmd> {
        let Some(j) = job else {
            return Vec::new();
        };
        let p = &self.pending;
        let reason = j
            .reason
            .as_deref()
            .filter(|r| crate::slurm::limits::names_a_limit(r));
        if p.id.as_ref() != Some(&j.id)
            || p.loading
            || reason.is_none()
            || reason == p.reason.as_deref()
        {
            return Vec::new();
        }
        self.pending.show(job, jobs, now, true)
    }

    /// Asks again for the selected pending job (the `r` key).
    pub fn refresh_pending(
        &mut self,
        job: Option<&Job>,
        jobs: &[Job],
        now: NaiveDateTime,
    ) -> Vec<Cmd> {
        self.pending.show(job, jobs, now, true)
    }

    pub fn on_pending(&mut self, ask: Ask, result: Result<Batch, String>, at: NaiveDateTime) {
        if let Some(parts) = self.pending.on_answer(ask, result, at) {
            self.partitions.note_partitions(&parts, at);
        }
    }

    pub fn on_stats(&mut self, stats: RemoteStats, at: NaiveDateTime) {
        self.stats.push_back((at, stats));
        while self.stats.len() > HISTORY {
            self.stats.pop_front();
        }
    }

    /// Fetches partition data when `:partitions` shows this cluster (`shown`) and the cache
    /// is older than its TTL.
    pub fn partitions_due(&mut self, shown: bool, now: NaiveDateTime) -> Vec<Cmd> {
        if !shown {
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
