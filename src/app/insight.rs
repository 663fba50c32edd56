//! State for "why is my job pending": the selected pending job's rank/priority/limits, the partitions and :stats views,
//! the pending/running history, and the adaptive poll interval. Pure: no I/O.

use std::collections::VecDeque;
use std::time::Duration;

use chrono::NaiveDateTime;

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
        }
    }

    /// A refresh's list (squeue's jobs): the adaptive interval's memory and the
    /// pending/running counts.
    pub fn on_list(&mut self, jobs: &[Job]) {
        self.pace.refreshed(queue_signature(jobs), &self.bounds);
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

/// Facts for the adaptive interval, read from the App.
fn facts(app: &App) -> PollFacts {
    let jobs = app.own_jobs();
    let live: Vec<&Job> = jobs
        .iter()
        .filter(|j| !app.cluster.departures.is_kept(&j.id))
        .collect();
    let now = app.now;
    let soon = |t: Option<NaiveDateTime>| t.is_some_and(|t| (t - now).num_seconds().abs() <= 60);
    let active = live.iter().any(|j| {
        matches!(j.state, JobState::Configuring | JobState::Completing)
            // %S: the estimate of a pending job, the start of a running one.
            || (j.status() == Status::Running && soon(j.start_time))
            // A held job's %S is when it would be eligible, not an estimate: it starts
            // only after a release, and that is a change the next refresh sees anyway.
            || (j.status() == Status::Pending
                && !crate::slurm::reason::is_held(j.reason.as_deref())
                && soon(j.start_time))
    });
    PollFacts { active }
}

impl App {
    /// Chooses the refresh interval; when it moved, the event loop's timer is told.
    pub(super) fn adapt_interval(&mut self) -> Vec<Cmd> {
        let f = facts(self);
        let ins = &mut self.cluster.insight;
        ins.pace.key(ins.last_key, &ins.bounds);
        let every = choose_interval(&f, &ins.pace, &ins.bounds);
        if every == self.cluster.status.poll_interval {
            return Vec::new();
        }
        self.cluster.status.poll_interval = every;
        vec![Cmd::SetPollInterval(every)]
    }

    /// The pending-info fetch for the selected job, if it is pending and not already loaded.
    pub(super) fn pending_for_selection(&mut self) -> Vec<Cmd> {
        let Some(job) = self.queue.selected_job() else {
            self.cluster.insight.pending = PendingState::default();
            return Vec::new();
        };
        if job.status() != Status::Pending {
            self.cluster.insight.pending = PendingState::default();
            return Vec::new();
        }
        if self.cluster.insight.pending.id.as_ref() == Some(&job.id) {
            return Vec::new();
        }
        self.cluster.insight.pending = PendingState {
            id: Some(job.id.clone()),
            reason: job.reason.clone(),
            loading: true,
            ..PendingState::default()
        };
        vec![Cmd::FetchPending(Box::new(job.clone()))]
    }

    /// The selected pending job now waits for a limit (a `QOS…` or `Assoc…` reason) other
    /// than when its info was fetched: ask again, for slurmctld's counts of now.
    pub(super) fn pending_if_limit_reason_appeared(&mut self) -> Vec<Cmd> {
        let Some(job) = self.queue.selected_job() else {
            return Vec::new();
        };
        let p = &self.cluster.insight.pending;
        let now = job
            .reason
            .as_deref()
            .filter(|r| crate::slurm::limits::names_a_limit(r));
        if p.id.as_ref() != Some(&job.id)
            || p.loading
            || now.is_none()
            || now == p.reason.as_deref()
        {
            return Vec::new();
        }
        self.refresh_pending()
    }

    /// Asks again for the selected pending job (the `r` key).
    pub(super) fn refresh_pending(&mut self) -> Vec<Cmd> {
        self.cluster.insight.pending.id = None;
        self.pending_for_selection()
    }

    pub(super) fn on_pending(&mut self, id: JobId, result: Result<PendingInfo, String>) {
        if self.cluster.insight.pending.id.as_ref() != Some(&id) {
            return;
        }
        self.cluster.insight.pending.loading = false;
        match result {
            Ok(info) => {
                self.cluster
                    .insight
                    .partitions
                    .note_partitions(&info.partitions, self.now);
                self.cluster.insight.pending.info = Some(info);
                self.cluster.insight.pending.error = None;
            }
            Err(e) => self.cluster.insight.pending.error = Some(e),
        }
    }

    pub(super) fn on_stats(&mut self, stats: RemoteStats, at: NaiveDateTime) {
        let s = &mut self.cluster.insight.stats;
        s.push_back((at, stats));
        while s.len() > HISTORY {
            s.pop_front();
        }
    }

    /// `:partitions` and `:stats`.
    pub(super) fn open_view(&mut self, v: View) -> Vec<Cmd> {
        self.cluster.insight.view = Some(v);
        match v {
            View::Partitions => self.partitions_due(true),
            View::Stats => Vec::new(),
        }
    }

    /// Fetches partition data when the view is open and the cache is older than its TTL.
    pub(super) fn partitions_due(&mut self, opening: bool) -> Vec<Cmd> {
        if self.cluster.insight.view != Some(View::Partitions) && !opening {
            return Vec::new();
        }
        if self.cluster.insight.partitions.due(self.now) {
            self.cluster.insight.partitions.loading = true;
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
