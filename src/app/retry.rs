//! The App's side of automatic retries: when to ask for a retry check, and what its answer
//! changes (the attempt chains shown in the queue and detail pane, a line for the user).

use std::collections::HashMap;

use chrono::NaiveDateTime;

use super::EventKind;
use crate::action::Cmd;
use crate::payload::RetryEvent;
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
                RetryEvent::RecordFailed { job_id, .. } => {
                    out.events
                        .push((id(*job_id), EventKind::Note, line.clone()));
                    out.error = Some(line);
                }
                RetryEvent::Finished { .. } => {
                    out.quiet_note.get_or_insert(line);
                }
            }
        }
        out
    }
}

/// What a retry check's answer comes to for the rest of the App.
#[derive(Debug, Default)]
pub struct Retried {
    pub cmds: Vec<Cmd>,
    /// For the status bar.
    pub note: Option<String>,
    /// For the status bar only when nothing else is noted.
    pub quiet_note: Option<String>,
    /// The queue's badges of the cluster's launches, when its chains were read anew.
    pub badges: Option<HashMap<u64, String>>,
}

/// The queue's badges of these chains (by job id).
/// The sweeps among the launches: array job id -> its number of runs.
pub fn sweeps(chains: &HashMap<u64, Chain>) -> HashMap<u64, u32> {
    chains
        .iter()
        .filter(|(_, c)| !c.sweep.is_empty())
        .map(|(&id, c)| (id, u32::try_from(c.sweep_tasks()).unwrap_or(u32::MAX)))
        .collect()
}

pub fn badges(chains: &HashMap<u64, Chain>) -> HashMap<u64, String> {
    chains
        .iter()
        .filter_map(|(id, c)| c.badge().map(|b| (*id, b)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::app;
    use super::*;
    use crate::action::LaunchMsg;
    use crate::action::Msg;
    use crate::registry::Entry;

    fn finished(job_id: u64) -> RetryEvent {
        RetryEvent::Finished {
            local_id: "L1".into(),
            job_id,
            state: "COMPLETED".into(),
            class: None,
        }
    }

    /// A check answered while `:history` shows badges the queue's rows, seen on return.
    #[test]
    fn badges_go_on_the_queue_s_rows_while_the_history_shows() {
        use super::super::tests::{jobs, loaded};
        use crate::registry::Attempt;
        let mut a = app();
        a.update(loaded(jobs()));
        a.run_command("history");
        let at = chrono::Utc::now();
        let attempt = |job_id: u64, state: Option<&str>| Attempt {
            job_id,
            submitted_at: at,
            state: state.map(str::to_string),
        };
        let entry = Entry {
            local_id: "L1".into(),
            cluster: "dev".into(),
            job_id: 248,
            job_dir: "/r/results/L1".into(),
            name: "train".into(),
            submitted_at: at,
            script: "/r/results/L1/sbatch/job_L1.sbatch".into(),
            attempts: vec![
                attempt(237, Some("NODE_FAIL ERR_INFRA")),
                attempt(248, None),
            ],
            ..Entry::default()
        };
        a.update(Msg::Launch(LaunchMsg::Retries(Ok((
            Vec::new(),
            vec![entry],
        )))));
        a.update(Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Esc,
            crossterm::event::KeyModifiers::NONE,
        )));
        assert!(!a.history.open);
        let id: JobId = "248".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.queue.shown().badge(&id), Some("↻2/11"));
    }

    #[test]
    fn a_finished_launch_is_said_only_on_an_empty_status_bar() {
        let mut a = app();
        a.update(Msg::Launch(LaunchMsg::Retries(Ok((
            vec![finished(237)],
            Vec::new(),
        )))));
        assert_eq!(a.note.as_deref(), Some("launched job 237 ended COMPLETED"));
        a.note = Some("marks cleared".into());
        a.update(Msg::Launch(LaunchMsg::Retries(Ok((
            vec![finished(238)],
            Vec::new(),
        )))));
        assert_eq!(
            a.note.as_deref(),
            Some("marks cleared"),
            "the note shown stays"
        );
    }
}
