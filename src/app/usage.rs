//! `:usage` (the budget overlay) and the waits of similar jobs beside a pending job's
//! estimate: one cluster's cached reads, each with its own update. Neither reads anything
//! per refresh: the budget when the overlay opens with nothing cached, or on `r` in it; the
//! waits when a pending job is selected and their read is older than
//! [`waits::TTL_SECS`]. Components (see `component.rs`) kept per cluster; App opens the
//! overlay and routes its keys.

use chrono::NaiveDateTime;
use crossterm::event::{KeyCode, KeyEvent};

use crate::action::Cmd;
use crate::slurm::model::{Job, Status};
use crate::slurm::usage::waits::{self, Size, Waited};
use crate::slurm::usage::{AcctJob, UsageReport, DEFAULT_DAYS};

#[derive(Debug, Clone, Default)]
pub struct UsageState {
    /// The window of the report shown (or being read).
    pub days: u32,
    pub report: Option<UsageReport>,
    /// When the report shown was read (the dashboard's clock).
    pub at: Option<NaiveDateTime>,
    pub loading: bool,
    pub error: Option<String>,
}

impl UsageState {
    /// The overlay opens: read only when nothing is cached (or being read) for this window.
    /// Another window is read even while one is out; the older answer is then dropped.
    pub fn open(&mut self, days: Option<u32>) -> Vec<Cmd> {
        let days = days.unwrap_or(if self.days == 0 {
            DEFAULT_DAYS
        } else {
            self.days
        });
        if self.days == days && (self.loading || self.report.is_some()) {
            return Vec::new();
        }
        self.days = days;
        self.loading = false;
        self.read()
    }

    /// Read again (`r` in the overlay); one read at a time.
    pub fn read(&mut self) -> Vec<Cmd> {
        if self.loading {
            return Vec::new();
        }
        if self.days == 0 {
            self.days = DEFAULT_DAYS;
        }
        self.loading = true;
        vec![Cmd::FetchUsage { days: self.days }]
    }

    /// The answer of a read of `days` days; one for a window no longer shown is dropped.
    pub fn on_read(&mut self, days: u32, result: Result<UsageReport, String>, at: NaiveDateTime) {
        if days != self.days {
            return;
        }
        self.loading = false;
        match result {
            Ok(r) => {
                self.report = Some(r);
                self.at = Some(at);
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
    }
}

/// The user's recent jobs with their waits, read at most every [`waits::TTL_SECS`].
#[derive(Debug, Clone, Default)]
pub struct WaitsState {
    pub jobs: Vec<AcctJob>,
    pub at: Option<NaiveDateTime>,
    pub loading: bool,
    /// Why the last read failed; the read is tried again after the TTL, not before.
    pub error: Option<String>,
}

impl WaitsState {
    /// A read when `job` (the selection) is pending and the last read is missing or old.
    pub fn due(&mut self, job: Option<&Job>, now: NaiveDateTime) -> Vec<Cmd> {
        let pending = job.is_some_and(|j| j.status() == Status::Pending);
        let fresh = self
            .at
            .is_some_and(|t| (now - t).num_seconds() < waits::TTL_SECS);
        if !pending || fresh || self.loading {
            return Vec::new();
        }
        self.loading = true;
        vec![Cmd::FetchWaits]
    }

    pub fn on_read(&mut self, result: Result<Vec<AcctJob>, String>, at: NaiveDateTime) {
        self.loading = false;
        self.at = Some(at);
        match result {
            Ok(j) => {
                self.jobs = j;
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// How long the user's jobs like `job` waited; None when none did.
    pub fn for_job(&self, job: &Job) -> Option<Waited> {
        let size = Size {
            partition: job.partition.as_str(),
            cpus: job.cpus,
            gpus: job.gpus(),
        };
        waits::similar(&self.jobs, size, Some(job.id.as_str()))
    }
}

impl UsageState {
    /// A key while the `:usage` overlay is open: `r` reads again (the read and a note for
    /// the status bar); None lets the key through. (Not an `Out`: this state lives in
    /// `ClusterState`, which `component.rs` names.)
    pub fn on_key(&mut self, k: &KeyEvent) -> Option<super::out::Out> {
        match k.code {
            KeyCode::Char('r') => {
                let note = format!("reading {} days of use again…", self.days);
                Some(super::out::Out::cmds(self.read()).with_note(note))
            }
            _ => None,
        }
    }
}

/// The window of `:usage [DAYS]`: none (the last one, or the default), or 1 to 3650 days;
/// otherwise the note saying so.
pub(super) fn days_arg(arg: Option<&str>) -> Result<Option<u32>, String> {
    let Some(days) = arg else {
        return Ok(None);
    };
    match days.parse::<u32>() {
        Ok(d) if (1..=3650).contains(&d) => Ok(Some(d)),
        _ => Err(format!(
            ":usage takes a number of days, e.g. :usage 30 (not `{days}`)"
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "usage_tests.rs"]
mod tests;
