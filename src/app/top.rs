//! Job top (`t`, `:jobtop`): a running job's processes on each of its nodes, read by one
//! remote command (`slurm::top`). Opening it and `r` are the user's reads; while it stays
//! open it is read again every [`EVERY_SECS`] seconds, those repeats being background reads
//! that the RPC budget may hold. Closing it stops them. Pure: no I/O.

use chrono::NaiveDateTime;
use crossterm::event::{KeyCode, KeyEvent};

use super::component::{Out, View};
use crate::action::Cmd;
use crate::slurm::model::{Job, JobId, Status};
use crate::slurm::state::JobState;
use crate::slurm::top::{TopSample, TopTarget, MAX_NODES};

/// While open, the pane is read again this long after its last answer.
pub const EVERY_SECS: i64 = 5;
/// A read not answered after this long no longer holds the next one back.
const STUCK_SECS: i64 = 120;

#[derive(Debug, Clone, Default)]
pub struct TopState {
    pub open: bool,
    /// The job shown and its nodes.
    pub target: Option<TopTarget>,
    /// The job's name, for the title.
    pub name: String,
    pub sample: Option<TopSample>,
    /// When the shown sample was answered.
    pub at: Option<NaiveDateTime>,
    /// The last read failed: why (the sample before it, if any, stays shown).
    pub error: Option<String>,
    /// A read was asked for (sent, or held by the budget) at this time.
    pub in_flight: Option<NaiveDateTime>,
    /// The first row shown.
    pub scroll: usize,
    /// The queue no longer lists the job as running: it is not read again by itself.
    pub ended: bool,
}

/// What to read for `job`: its nodes (at most [`MAX_NODES`]).
pub fn target(job: &Job) -> TopTarget {
    let nodes = job.nodes();
    TopTarget {
        id: job.id.clone(),
        nodes_skipped: nodes.len().saturating_sub(MAX_NODES),
        nodes: nodes.into_iter().take(MAX_NODES).collect(),
        timeout_secs: 0,
    }
}

impl TopState {
    /// `t`: opens over the selected job, if it runs, and reads it at once.
    pub fn open(&mut self, v: &View) -> Out {
        let Some(job) = v.queue.selected_job() else {
            return Out::note("job top: select a running job first");
        };
        if job.status() != Status::Running {
            return Out::note(format!(
                "job top shows a running job's processes: job {} is {}",
                job.id,
                job.state.long_name().to_lowercase()
            ));
        }
        if job.nodes().is_empty() {
            return Out::note(format!("job top: squeue names no node for job {}", job.id));
        }
        let same = self.target.as_ref().is_some_and(|t| t.id == job.id);
        if !same {
            self.sample = None;
            self.at = None;
            self.error = None;
            self.scroll = 0;
        }
        self.open = true;
        self.ended = false;
        self.name = job.name.to_string();
        let t = target(job);
        self.target = Some(t.clone());
        self.ask(v.now, t)
    }

    fn ask(&mut self, now: NaiveDateTime, t: TopTarget) -> Out {
        self.in_flight = Some(now);
        Out::cmds(vec![Cmd::Top(Box::new(t))])
    }

    /// Whether a read of the job is out (or held by the budget), and not stuck.
    pub fn reading(&self, now: NaiveDateTime) -> bool {
        self.in_flight
            .is_some_and(|since| (now - since).num_seconds() < STUCK_SECS)
    }

    /// A key while the pane is on top; `page`: rows on a page.
    pub fn on_key(&mut self, k: &KeyEvent, page: usize, now: NaiveDateTime) -> Out {
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('t') => {
                self.open = false;
                self.in_flight = None;
                return Out::close();
            }
            KeyCode::Char('r') => {
                if let Some(t) = self.target.clone() {
                    return self.ask(now, t).with_note("job top: reading…");
                }
            }
            KeyCode::Down | KeyCode::Char('j') => self.scroll = self.scroll.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => {
                self.scroll = self.scroll.saturating_add(page)
            }
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(page),
            KeyCode::Char('g') | KeyCode::Home => self.scroll = 0,
            KeyCode::Char('G') | KeyCode::End => self.scroll = usize::MAX / 2,
            _ => {}
        }
        Out::none()
    }

    /// Once a second: the next automatic read, [`EVERY_SECS`] after the last answer, while
    /// the pane is open, nothing is out and the queue (`v`) still lists the job as RUNNING (not
    /// completing).
    pub fn due(&mut self, v: &View) -> Out {
        let now = v.now;
        if !self.open || self.reading(now) {
            return Out::none();
        }
        let runs = self.target.as_ref().is_some_and(|t| {
            v.queue
                .jobs()
                .iter()
                .any(|j| j.id == t.id && j.state == JobState::Running)
        });
        self.ended = !runs;
        if self.ended {
            return Out::none();
        }
        let Some(t) = self.target.clone() else {
            return Out::none();
        };
        match self.at {
            // An answer that failed counts as one (its time is kept in `at`).
            Some(at) if (now - at).num_seconds() < EVERY_SECS => Out::none(),
            _ => self.ask(now, t),
        }
    }

    /// Whether a held read of `id` is still wanted: the pane is open on that job.
    pub fn wants(&self, id: &JobId) -> bool {
        self.open && self.target.as_ref().is_some_and(|t| &t.id == id)
    }

    /// A held read was dropped (never sent).
    pub fn not_sent(&mut self) {
        self.in_flight = None;
    }

    /// A sample's answer.
    pub fn on_sample(&mut self, id: &JobId, result: Result<TopSample, String>, at: NaiveDateTime) {
        if self.target.as_ref().is_none_or(|t| &t.id != id) {
            return;
        }
        self.in_flight = None;
        self.at = Some(at);
        match result {
            Ok(s) => {
                self.sample = Some(s);
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
    }
}

impl super::component::Overlaid for TopState {
    fn is_open(&self) -> bool {
        self.open
    }

    fn close(&mut self) {
        self.open = false;
    }
}

impl super::component::OverlayKeys for TopState {
    fn overlay_key(&mut self, k: &KeyEvent, cx: &super::component::Keys) -> Out {
        // A page: the screen less the frame, the title lines and the status bar.
        self.on_key(k, cx.page(6), cx.view.now)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "top_tests.rs"]
mod tests;
