//! The App's side of automatic retries: when to ask for a retry check, and what its answer
//! changes (the attempt chains shown in the queue and detail pane, a line for the user).

use std::collections::HashMap;

use chrono::NaiveDateTime;

use super::{App, EventKind};
use crate::action::Cmd;
use crate::payload::RetryEvent;
use crate::registry::Entry;
use crate::retry::{Chain, RetryPolicy};
use crate::slurm::model::JobId;

/// Seconds between two retry checks (the first runs at start).
pub const RETRY_CHECK_SECS: i64 = 30;

#[derive(Debug, Clone, Default)]
pub struct RetryState {
    pub policy: RetryPolicy,
    pub checking: bool,
    pub last: Option<NaiveDateTime>,
    /// The last check's error (e.g. sacct unreachable), shown in the status bar.
    pub error: Option<String>,
    /// Jobs whose "not resubmitted" was already said (a read-only session sees it each check).
    pub told: std::collections::HashSet<u64>,
    /// (job, requeue count) already said: Slurm's requeue is reported once per requeue.
    pub requeues_told: std::collections::HashSet<(u64, usize)>,
    /// (launch, job) of chain lines already reported as ignored (they stay in the file).
    pub ignored_told: std::collections::HashSet<(String, u64)>,
}

impl RetryState {
    /// On every clock tick: start a check when one is due and none is running.
    pub fn tick(&mut self, now: NaiveDateTime) -> Vec<Cmd> {
        if self.checking {
            return Vec::new();
        }
        let due = self
            .last
            .is_none_or(|t| (now - t).num_seconds() >= RETRY_CHECK_SECS);
        if !due {
            return Vec::new();
        }
        self.checking = true;
        self.last = Some(now);
        vec![Cmd::CheckRetries]
    }
}

/// What one retry check comes to, for App to show and log.
#[derive(Debug, Default)]
pub struct Checked {
    /// Events for the log and notifications: (job, kind, line).
    pub events: Vec<(JobId, EventKind, String)>,
    /// For the status bar's note (the last that says something new).
    pub note: Option<String>,
    /// A line only when nothing else is noted (a launch that finished).
    pub quiet_note: Option<String>,
    /// For the status bar's error line: a failure that is not retried, said once.
    pub error: Option<String>,
    /// A job was submitted again or recovered: refresh now.
    pub poll: bool,
    /// A job was submitted again: read the launches again, so attempts a guard submitted
    /// while nobody watched have rows.
    pub resubmitted: bool,
}

impl RetryState {
    /// A retry check's answer about cluster number `ix`: what is new to say. Each
    /// "not retried" and each requeue is said once.
    pub fn on_check(&mut self, events: &[RetryEvent], ix: u16) -> Checked {
        let mut out = Checked::default();
        let id = |n: u64| JobId::new(n).on(ix);
        for ev in events {
            let line = ev.line();
            match ev {
                RetryEvent::NotRetried { job_id, .. } => {
                    if self.told.insert(*job_id) {
                        out.error = Some(line);
                    }
                }
                RetryEvent::Resubmitted { new, .. } => {
                    out.events
                        .push((id(*new), EventKind::Retried, line.clone()));
                    out.note = Some(line);
                    out.poll = true;
                    out.resubmitted = true;
                }
                RetryEvent::Requeued { job_id, times, .. } => {
                    if self.requeues_told.insert((*job_id, *times)) {
                        out.events
                            .push((id(*job_id), EventKind::Requeued, line.clone()));
                        out.note = Some(line);
                    }
                }
                RetryEvent::Recovered { job_id, .. } => {
                    out.events
                        .push((id(*job_id), EventKind::Retried, line.clone()));
                    out.note = Some(line);
                    out.poll = true;
                }
                RetryEvent::Ignored {
                    local_id, job_id, ..
                } => {
                    if self.ignored_told.insert((local_id.clone(), *job_id)) {
                        out.events
                            .push((id(*job_id), EventKind::Note, line.clone()));
                        out.error = Some(line);
                    }
                }
                RetryEvent::Finished { .. } => {
                    out.quiet_note.get_or_insert(line);
                }
            }
        }
        out
    }
}

impl App {
    pub(super) fn on_retries(
        &mut self,
        result: Result<(Vec<RetryEvent>, Vec<Entry>), String>,
    ) -> Vec<Cmd> {
        self.cluster.retry.checking = false;
        let (events, entries) = match result {
            Ok(v) => v,
            Err(e) => {
                self.cluster.retry.error = Some(format!("retry check: {e}"));
                return Vec::new();
            }
        };
        self.cluster.retry.error = None;
        self.set_launches(&entries);
        let ix = self.cluster.ix;
        let checked = self.cluster.retry.on_check(&events, ix);
        if let Some(e) = checked.error {
            self.cluster.status.last_error = Some(e);
        }
        if checked.note.is_some() {
            self.note = checked.note;
        } else if self.note.is_none() {
            self.note = checked.quiet_note;
        }
        let mut cmds = Vec::new();
        if checked.poll {
            cmds.extend(self.poll_now());
        }
        if checked.resubmitted && !self.cluster.launch.reattaching {
            self.cluster.launch.reattaching = true;
            cmds.push(Cmd::LoadRegistryJobs(self.cluster.name.clone()));
        }
        let events = checked
            .events
            .into_iter()
            .map(|(id, kind, line)| (Some(id), String::new(), kind, line))
            .collect();
        cmds.extend(self.cluster.push_events(events, self.now));
        cmds
    }

    /// The launches of this cluster (from the registry): chains and queue badges.
    pub fn set_launches(&mut self, entries: &[Entry]) {
        self.cluster.chains = Chain::index(entries, &self.cluster.retry.policy)
            .into_iter()
            .collect();
        let badges: HashMap<u64, String> = self
            .cluster
            .chains
            .iter()
            .filter_map(|(id, c)| c.badge().map(|b| (*id, b)))
            .collect();
        self.queue.set_badges(self.cluster.ix, badges);
    }
}
