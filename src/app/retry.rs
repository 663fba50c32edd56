//! The App's side of automatic retries: when to ask for a retry check, and what its answer
//! changes (the attempt chains shown in the queue and detail pane, a line for the user).

use std::collections::HashMap;

use chrono::NaiveDateTime;

use super::App;
use crate::action::Cmd;
use crate::payload::RetryEvent;
use crate::registry::Entry;
use crate::retry::{Chain, RetryPolicy};

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
        let mut cmds = Vec::new();
        let mut notify = Vec::new();
        for ev in &events {
            let line = ev.line();
            match ev {
                RetryEvent::NotRetried { job_id, .. } => {
                    if self.cluster.retry.told.insert(*job_id) {
                        self.cluster.status.last_error = Some(line);
                    }
                }
                RetryEvent::Resubmitted { new, .. } => {
                    // The log, a notification, and the status bar (below).
                    notify.push((
                        Some(crate::slurm::model::JobId::new(*new).on(self.cluster.ix)),
                        String::new(),
                        super::EventKind::Retried,
                        line.clone(),
                    ));
                    self.note = Some(line);
                    if cmds.is_empty() {
                        cmds = self.poll_now();
                    }
                }
                RetryEvent::Requeued { job_id, times, .. } => {
                    if self.cluster.retry.requeues_told.insert((*job_id, *times)) {
                        notify.push((
                            Some(crate::slurm::model::JobId::new(*job_id).on(self.cluster.ix)),
                            String::new(),
                            super::EventKind::Requeued,
                            line.clone(),
                        ));
                        self.note = Some(line);
                    }
                }
                RetryEvent::Recovered { job_id, .. } => {
                    notify.push((
                        Some(crate::slurm::model::JobId::new(*job_id).on(self.cluster.ix)),
                        String::new(),
                        super::EventKind::Retried,
                        line.clone(),
                    ));
                    self.note = Some(line);
                    if cmds.is_empty() {
                        cmds = self.poll_now();
                    }
                }
                RetryEvent::Finished { .. } => {
                    if self.note.is_none() {
                        self.note = Some(line);
                    }
                }
            }
        }
        // Attempts a cluster guard submitted while nobody watched may have finished already:
        // look the launches up again so they have rows.
        let resubmitted = events
            .iter()
            .any(|e| matches!(e, RetryEvent::Resubmitted { .. }));
        if resubmitted && !self.cluster.launch.reattaching {
            self.cluster.launch.reattaching = true;
            cmds.push(Cmd::LoadRegistryJobs(self.cluster.name.clone()));
        }
        cmds.extend(self.push_events(notify));
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
