//! Progress and ETA of running jobs, read from the log stream the dashboard already tails
//! (the selected job's stdout and stderr): no command of its own, no RPC. A job's progress
//! is known once its log has been open this session; it is kept while the job is in the
//! queue, so the queue's PROGRESS column shows every job whose log was looked at, with the
//! estimate made from what was read then.

use std::collections::HashMap;

use chrono::NaiveDateTime;

use crate::logview::progress::{Patterns, Summary, Tracker};
use crate::logview::{TailEvent, TailKind};
use crate::queue::QueueView;
use crate::retry::Chain;
use crate::slurm::model::{Job, JobId};

/// Most jobs followed at once; the one read longest ago goes first.
const MAX_JOBS: usize = 256;

#[derive(Debug, Clone, Default)]
pub struct ProgressState {
    pub patterns: Patterns,
    jobs: HashMap<JobId, Tracker>,
}

impl ProgressState {
    pub fn new(patterns: Patterns) -> ProgressState {
        ProgressState {
            patterns,
            jobs: HashMap::new(),
        }
    }

    /// Takes in what the tailer read of a job's log at `now`; whether its progress changed.
    pub fn feed(&mut self, ev: &TailEvent, now: NaiveDateTime) -> bool {
        if self.patterns.is_empty() {
            return false;
        }
        match &ev.kind {
            TailKind::Reset { .. } | TailKind::Skipped { .. } => {
                if let Some(t) = self.jobs.get_mut(&ev.job) {
                    t.restart(ev.stream);
                }
                false
            }
            TailKind::Data { bytes, .. } if !bytes.is_empty() => {
                if !self.jobs.contains_key(&ev.job) && self.jobs.len() >= MAX_JOBS {
                    self.evict();
                }
                let t = self.jobs.entry(ev.job.clone()).or_default();
                let changed = t.feed(&self.patterns, ev.stream, bytes, now);
                if t.reading().is_none() {
                    // A log with no progress in it holds nothing here.
                    self.jobs.remove(&ev.job);
                }
                changed
            }
            _ => false,
        }
    }

    fn evict(&mut self) {
        let oldest = self
            .jobs
            .iter()
            .min_by_key(|(_, t)| t.seen_at())
            .map(|(id, _)| id.clone());
        if let Some(id) = oldest {
            self.jobs.remove(&id);
        }
    }

    pub fn tracker(&self, id: &JobId) -> Option<&Tracker> {
        self.jobs.get(id)
    }

    /// `job`'s progress against its time limit (its row read at `listed_at`).
    pub fn summary(&self, job: &Job, listed_at: Option<NaiveDateTime>) -> Option<Summary> {
        self.jobs.get(&job.id)?.summary(Some(job), listed_at)
    }

    /// Forgets the jobs no longer in `jobs` (except `keep`, the job whose log is open), and
    /// gives the cells of those that are.
    pub fn cells(
        &mut self,
        jobs: &[Job],
        keep: Option<&JobId>,
        listed_at: impl Fn(u16) -> Option<NaiveDateTime>,
    ) -> HashMap<JobId, Summary> {
        if self.jobs.is_empty() {
            return HashMap::new();
        }
        let mut cells = HashMap::new();
        for j in jobs {
            if let Some(s) = self
                .jobs
                .get(&j.id)
                .and_then(|t| t.summary(Some(j), listed_at(j.id.cluster())))
            {
                cells.insert(j.id.clone(), s);
            }
        }
        self.jobs
            .retain(|id, _| cells.contains_key(id) || Some(id) == keep);
        cells
    }
}

/// The open log's job read a new progress: its cell in the queue follows.
pub fn land(
    state: &ProgressState,
    queue: &mut QueueView,
    id: &JobId,
    listed_at: Option<NaiveDateTime>,
) {
    let job = match queue.selected_job().filter(|j| &j.id == id) {
        Some(j) => Some(j.clone()),
        None => queue.jobs().iter().find(|j| &j.id == id).cloned(),
    };
    let s = job.and_then(|j| state.summary(&j, listed_at));
    queue.set_job_progress(id, s);
}

/// A refresh landed: the cells again (time limits and states moved), the jobs that left
/// forgotten.
pub fn refresh(
    state: &mut ProgressState,
    queue: &mut QueueView,
    keep: Option<&JobId>,
    listed_at: impl Fn(u16) -> Option<NaiveDateTime>,
) {
    if state.jobs.is_empty() {
        return;
    }
    let cells = state.cells(queue.jobs(), keep, listed_at);
    queue.set_progress(cells);
}

/// What to do about a job that reaches its time limit before its progress does.
pub fn advice(job: &Job, chain: Option<&Chain>) -> String {
    if crate::launch::session::is_session(&job.name) {
        return ":extend adds 30 minutes to this session".into();
    }
    if chain
        .and_then(Chain::badge)
        .is_some_and(|b| b.contains("resumed after"))
    {
        return "auto-resume is on: its guard submits it again after TIMEOUT, and the program \
                goes on from its last checkpoint"
            .into();
    }
    "auto-resume (resume = timeout) and a checkpoint signal (signal = USR1@120) in its launch \
     let it go on from a checkpoint; or relaunch it (L, once it ends) with a longer time limit"
        .into()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "progress_tests.rs"]
mod tests;
