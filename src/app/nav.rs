//! The queue's rows and the selection: a refresh's rows (what changed, the selected job's
//! detail and logs fetched again), moving around: the arrow/page keys in the focused pane, and the mouse (a click selects a
//! queue row or focuses a pane, the wheel scrolls the pane under it); copying what is
//! selected to the clipboard; acting on the selected or marked jobs (d, D, h, u, R, T and
//! `:cancel ...`), the question first, then the rows' "cancelling…" and the report; the
//! rows of launches (a submitted job at once, jobs re-attached from the launch records).

use crossterm::event::{KeyEvent, MouseEvent, MouseEventKind};

use super::component::Out;
use super::form::placeholder_job;
use super::Answer;
use std::time::Duration;

use chrono::NaiveDateTime;

use super::{events, session, triage, App, DetailState};
use crate::action::Cmd;
use crate::keymap::{Action, Pane};
use crate::launch::submit::Submitted;
use crate::payload::DetailSource;
use crate::slurm::model::{CancelOutcome, Job, JobDetail, JobId};
use crate::slurm::ops::{JobOp, OpKind, OpReport};

impl App {
    pub(super) fn move_in_focus(&mut self, a: Action, page: usize) -> Vec<Cmd> {
        match self.focus {
            Pane::Queue => {
                match a {
                    Action::Up => self.queue.select_prev(),
                    Action::Down => self.queue.select_next(),
                    Action::Top => self.queue.select_first(),
                    Action::Bottom => self.queue.select_last(),
                    Action::PageUp => self.queue.page_up(page),
                    _ => self.queue.page_down(page),
                }
                self.selection_changed()
            }
            Pane::Detail => {
                let s = &mut self.detail.scroll;
                let p = u16::try_from(page).unwrap_or(u16::MAX);
                *s = match a {
                    Action::Up => s.saturating_sub(1),
                    Action::Down => s.saturating_add(1),
                    Action::Top => 0,
                    Action::Bottom => u16::MAX / 2,
                    Action::PageUp => s.saturating_sub(p),
                    _ => s.saturating_add(p),
                };
                Vec::new()
            }
            Pane::Log => {
                let vp = self.log_viewport();
                let log = self.logs.current_mut();
                match a {
                    Action::Up => log.scroll_up(1, vp),
                    Action::Down => log.scroll_down(1, vp),
                    Action::Top => log.top(),
                    Action::Bottom => log.bottom_and_follow(),
                    Action::PageUp => log.page_up(vp),
                    _ => log.page_down(vp),
                }
                Vec::new()
            }
        }
    }

    pub(super) fn on_mouse(&mut self, m: MouseEvent) -> Vec<Cmd> {
        if self.covered() {
            return Vec::new();
        }
        let areas = self.areas();
        let hit = |r: ratatui::layout::Rect| {
            m.column >= r.x && m.column < r.x + r.width && m.row >= r.y && m.row < r.y + r.height
        };
        let pane = if hit(areas.queue) {
            Pane::Queue
        } else if areas.detail.is_some_and(hit) {
            Pane::Detail
        } else if areas.log.is_some_and(hit) {
            Pane::Log
        } else {
            return Vec::new();
        };
        match m.kind {
            MouseEventKind::Down(_) => {
                self.focus = pane;
                if pane == Pane::Queue {
                    let body = areas.queue.height.saturating_sub(3);
                    let row = m.row.saturating_sub(areas.queue.y + 2);
                    if row < body {
                        self.queue.click(usize::from(row), usize::from(body));
                        return self.selection_changed();
                    }
                }
                Vec::new()
            }
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let prev = self.focus;
                self.focus = pane;
                let a = if m.kind == MouseEventKind::ScrollDown {
                    Action::Down
                } else {
                    Action::Up
                };
                let cmds = self.move_in_focus(a, 3);
                self.focus = prev;
                cmds
            }
            _ => Vec::new(),
        }
    }

    /// `Y`: the selected job's id to the clipboard; from the detail pane its directory, from
    /// the log pane the shown log's path (each falls back to the id when unknown).
    pub(super) fn copy(&mut self) -> Vec<Cmd> {
        let Some(job) = self.queue.selected_job() else {
            self.note = Some("nothing to copy: no job selected".into());
            return Vec::new();
        };
        let id = job.id.as_str().to_string();
        let path = match self.focus {
            Pane::Queue => None,
            Pane::Detail => Some(job.work_dir.to_string()).filter(|d| !d.is_empty()),
            Pane::Log => {
                self.logs
                    .paths
                    .as_ref()
                    .map(|(out, err)| match self.logs.shown_stream() {
                        crate::logview::Stream::Stdout => out.clone(),
                        crate::logview::Stream::Stderr => err.clone(),
                    })
            }
        };
        let text = path.unwrap_or(id);
        // (a name or path may hold control bytes: never sent to the screen as they are)
        let shown: String = text
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        if shown != text {
            // Pasted into a shell, a newline or an escape in it would run or do something
            // else than the path says; an escaped copy would name another path.
            self.note = Some(format!(
                "not copied: {shown} holds control characters (shown as ?); copy it from a shell on the cluster"
            ));
            return Vec::new();
        }
        self.note = Some(format!(
            "copied {shown} to the clipboard (through the terminal: OSC 52)"
        ));
        vec![Cmd::Clipboard(text)]
    }
    /// d, D, h, u, R, T: asks first, or runs at once (`D` with quick_cancel).
    pub(super) fn on_job_action(&mut self, a: Action) -> Vec<Cmd> {
        let out = super::ops::ask(&view!(self, self.view_cluster()), a, self.quick_cancel);
        self.apply(out)
    }

    /// The answer to the question on the bottom line.
    pub(super) fn on_confirm_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        let Some(confirm) = self.confirm.take() else {
            return Vec::new();
        };
        match confirm.pick(&k) {
            Some(Answer::Op(op)) => self.apply(Out::op(op)),
            Some(Answer::Extend(id)) => self.apply(super::session::extend(id)),
            Some(Answer::Ask(next)) => self.apply(Out::confirm(*next)),
            None => self.apply(Out::note("nothing changed")),
        }
    }

    /// `:cancel 123 124`, `:hold` (marks or selection), ...: typed, so no question.
    pub(super) fn run_op_command(&mut self, kind: OpKind, args: &[&str]) -> Vec<Cmd> {
        match super::ops::typed(&view!(self, self.view_cluster()), kind, args) {
            Ok(op) => self.apply(Out::op(op)),
            Err(why) => self.apply(Out::note(why)),
        }
    }

    /// An action's report: the rows lose their "cancelling…", the status bar says what
    /// happened (a failure stays as the cluster's last error), cancelled jobs are unmarked
    /// and logged as yours, and the queue is read again at once.
    pub(super) fn on_op_done(
        &mut self,
        ix: u16,
        op: JobOp,
        result: Result<OpReport, String>,
    ) -> Vec<Cmd> {
        self.queue.clear_busy(&op.ids);
        let mut events = Vec::new();
        match result {
            Ok(report) => {
                let failed = !report.failed().is_empty();
                let line = report.summary();
                if failed {
                    self.clusters[ix].status.last_error = Some(line);
                    self.note = None;
                } else {
                    self.note = Some(line);
                }
                if op.kind == OpKind::Cancel {
                    let done: Vec<JobId> = report
                        .outcomes
                        .iter()
                        .filter(|(_, o)| !matches!(o, CancelOutcome::Failed(_)))
                        .map(|(id, _)| id.clone())
                        .collect();
                    for id in &done {
                        self.queue.unmark(id);
                    }
                    let pushed = super::events::cancelled_by_you(self.queue.jobs(), &done);
                    events = self.clusters[ix].push_events(pushed, self.now);
                }
            }
            Err(e) => {
                self.clusters[ix].status.last_error =
                    Some(format!("could not {}: {e}", op.describe()));
                self.note = None;
            }
        }
        // Show the new states now rather than at the next poll.
        events.extend(self.poll_now(ix));
        events
    }

    /// A submission's answer: the form closes, the queue shows the job at once (a
    /// placeholder row until squeue lists it) and selects it; or the form says why not.
    pub(super) fn on_submitted(&mut self, ix: u16, r: Result<Submitted, String>) -> Vec<Cmd> {
        match r {
            Err(e) => {
                if let Some(form) = self.form.as_mut() {
                    form.on_refused(e);
                } else {
                    self.note = Some(e);
                }
                Vec::new()
            }
            Ok(s) => {
                let form = self.form.take();
                if let Some(p) = form.as_ref().and_then(|f| f.prepared.as_ref()) {
                    self.clusters[ix].launch.last_used = Some(p.spec.clone());
                    // The queue shows it at once; the poll below brings the real row.
                    // A queue poll already in flight does not list it yet: the row stays
                    // (as a registry job) until squeue or sacct says more.
                    let mut placeholder = placeholder_job(&s, p, ix);
                    if self.multi() {
                        placeholder.cluster =
                            crate::slurm::shared::SharedStr::from(&self.clusters[ix].name);
                    }
                    self.clusters[ix]
                        .launch
                        .registry_jobs
                        .retain(|j| j.id != placeholder.id);
                    self.clusters[ix].launch.registry_jobs.push(placeholder);
                    let own = self.own_jobs(ix).into_owned();
                    let (jobs, _) = self.clusters[ix].with_registry_jobs(own);
                    self.set_own_jobs(ix, jobs);
                }
                // The new job's row is the queue's: shown, with nothing filtering it out.
                if self.history.open {
                    self.queue.show_history(false);
                    self.history.close();
                }
                self.queue.set_filter("");
                self.queue.select_id(&JobId::new(s.job_id).on(ix));
                self.focus = crate::keymap::Pane::Queue;
                let mut note = format!("submitted job {} · logs {}", s.job_id, s.stdout);
                for w in &s.warnings {
                    note.push_str(" · ");
                    note.push_str(w);
                }
                self.note = Some(note);
                let mut cmds = self.selection_changed();
                cmds.extend(self.poll_now(ix));
                cmds
            }
        }
    }

    pub(super) fn on_registry_jobs(&mut self, ix: u16, r: Result<Vec<Job>, String>) -> Vec<Cmd> {
        match r {
            Ok(jobs) => {
                self.clusters[ix].launch.on_registry_jobs(jobs);
                // sacct's answer is newer than the rows on screen.
                let rows = self.clusters[ix]
                    .launch
                    .over(self.own_jobs(ix).into_owned());
                self.set_own_jobs(ix, rows);
                let mut cmds = self.selection_changed();
                if cmds.is_empty() {
                    cmds = self.refetch_if_state_changed();
                }
                cmds
            }
            Err(e) => {
                self.clusters[ix].launch.reattaching = false;
                self.note = Some(format!("re-attaching launched jobs: {e}"));
                Vec::new()
            }
        }
    }

    /// A refresh, unless one is already out (the timer, `r`, reconnecting).
    pub(super) fn poll(&mut self, ix: u16) -> Vec<Cmd> {
        self.clusters[ix].poll()
    }

    /// A refresh that must see a change made just now (an action, a submission): asked for
    /// even while one is out, which may predate the change; the worker hub runs it after
    /// that one.
    pub(super) fn poll_now(&mut self, ix: u16) -> Vec<Cmd> {
        vec![self.clusters[ix].poll_cmd()]
    }

    /// One refresh's answer, in the order its parts happened: the connection, the sacct
    /// records and estimates that came with the queue, then the queue.
    pub(super) fn on_refresh(&mut self, ix: u16, r: crate::payload::Refresh) -> Vec<Cmd> {
        let mut cmds = Vec::new();
        if let Some((state, host)) = r.conn {
            cmds.extend(self.clusters[ix].on_conn(state, host));
        }
        let mut finished = Vec::new();
        if let Some(extra) = r.extra {
            finished = extra.finished.clone();
            cmds.extend(self.on_poll_extra(ix, extra));
        }
        cmds.extend(self.on_queue(ix, r.result, r.at, r.took));
        // A job a state check saw leave has its final state in this very refresh, before
        // its list showed it gone: the events log waits for it only now, so it is settled
        // (logged, a failure triaged) now.
        if !finished.is_empty() {
            cmds.extend(self.final_states_known(ix, &finished));
        }
        cmds
    }

    /// The sacct part of a refresh: final states are logged (failures triaged), then the
    /// cluster settles the jobs that left its queue.
    pub(super) fn on_poll_extra(&mut self, ix: u16, extra: crate::payload::PollExtra) -> Vec<Cmd> {
        let mut cmds = self.final_states_known(ix, &extra.finished);
        let left = self.clusters[ix].on_poll_extra(&extra, self.now);
        cmds.extend(self.clusters[ix].record(left));
        cmds
    }

    pub(super) fn on_queue(
        &mut self,
        ix: u16,
        result: Result<Vec<Job>, String>,
        at: NaiveDateTime,
        took: Duration,
    ) -> Vec<Cmd> {
        let jobs = match result {
            Ok(jobs) => jobs,
            Err(e) => {
                self.clusters[ix].on_failed(e);
                return Vec::new();
            }
        };
        let previous = self.queue.jobs.jobs_on(self.multi().then_some(ix));
        let listed = self.clusters[ix].on_jobs(jobs, &previous, at, took, self.now);
        drop(previous);
        self.set_own_jobs(ix, listed.rows);
        self.deps.refresh(&view!(self, ix), &self.history);
        let interval = self.adapt_interval(ix);
        let mut cmds = self.selection_changed();
        if cmds.is_empty() {
            cmds = self.refetch_if_state_changed();
            cmds.extend(self.clusters[ix].insight.limit_reason_appeared(
                self.queue.selected_job(),
                self.queue.jobs.jobs(),
                self.now,
            ));
        }
        cmds.extend(interval);
        cmds.extend(listed.cmds);
        let out = self.tunnels.close_ended(ix, &listed.running);
        cmds.extend(self.apply(out));
        let out = self.live.on_refresh(&view!(self, ix), &listed.running);
        self.live.mark(&mut self.queue.jobs);
        cmds.extend(self.apply(out));
        cmds.extend(self.clusters[ix].record(listed.events));
        let sessions = session::launched_here(&view!(self, ix, queue: &self.queue.jobs));
        let due = self.clusters[ix].sessions.on_jobs(&sessions);
        let (events, out) = session::warnings(&view!(self, ix), &due, self.top_overlay().is_none());
        cmds.extend(self.clusters[ix].push_events(events, self.now));
        cmds.extend(self.apply(out));
        cmds
    }

    /// The selected job moved on (e.g. PENDING to RUNNING): its detail and log paths may have
    /// changed, so fetch them again.
    pub(super) fn refetch_if_state_changed(&mut self) -> Vec<Cmd> {
        let Some(job) = self.queue.selected_job() else {
            return Vec::new();
        };
        if self.detail.loading || self.detail.id.as_ref() != Some(&job.id) {
            return Vec::new();
        }
        let changed =
            (self.detail.detail.as_ref()).is_some_and(|d| d.state.as_ref() != Some(&job.state));
        // A read that failed (the connection was lost, a login was needed) is tried once
        // more when the cluster answers again: the pane never keeps an error that no
        // longer holds.
        let failed = self.detail.error.is_some() && !self.detail.retried;
        if !changed && !failed {
            return Vec::new();
        }
        self.detail.retried |= failed;
        self.logs.set_job_state(Some(job.state.clone()));
        self.detail.loading = true;
        self.selection_read = true;
        vec![Cmd::FetchDetail(job.id.clone())]
    }

    /// Called after anything that may move the selection: fetch the new job's detail and
    /// stop tailing the old one's logs.
    pub(super) fn selection_changed(&mut self) -> Vec<Cmd> {
        let selected = self.queue.selected_id().cloned();
        if selected == self.detail.id {
            return Vec::new();
        }
        // The selected job's cluster (the focused one when nothing is selected).
        let ix = selected.as_ref().map_or(self.focus_cluster, JobId::cluster);
        let state = self.queue.selected_job().map(|j| j.state.clone());
        self.selection_read = true;
        self.detail = DetailState {
            id: selected.clone(),
            loading: selected.is_some(),
            kept: std::mem::take(&mut self.detail.kept),
            ..DetailState::default()
        };
        self.logs.reset(selected.clone(), state.clone());
        let mut cmds = vec![Cmd::Tail(Vec::new())];
        if let Some(id) = selected {
            let kept = state.as_ref().and_then(|s| self.detail.kept.get(&id, s));
            match self.history.shown_detail(&id).or(kept) {
                Some(known) => cmds.extend(self.on_detail(id, Ok(known))),
                None => cmds.push(Cmd::FetchDetail(id)),
            }
        }
        cmds.extend(self.clusters[ix].insight.pending_for(
            self.queue.selected_job(),
            self.queue.jobs(),
            self.now,
        ));
        cmds.extend(
            self.clusters[ix]
                .waits
                .due(self.queue.selected_job(), self.now),
        );
        let out = self.live.on_select(&view!(self, ix));
        cmds.extend(self.apply(out));
        self.deps.on_select(&view!(self, ix), &self.history);
        cmds
    }

    pub(super) fn on_detail(
        &mut self,
        id: JobId,
        result: Result<(JobDetail, DetailSource), String>,
    ) -> Vec<Cmd> {
        if self.detail.id.as_ref() != Some(&id) {
            // No longer selected: kept for when it is again.
            if let Ok((d, source)) = &result {
                self.detail.kept.keep(&id, d, *source);
            }
            return Vec::new();
        }
        self.detail.loading = false;
        match result {
            Ok((mut detail, source)) => {
                // sacct does not record where a launched job's logs went; the job dir does.
                if detail.stdout.is_none() {
                    if let Some(c) = self.launch_of(&id) {
                        let (out, err) = c.log_paths(id.base());
                        detail.stdout = Some(out);
                        detail.stderr = Some(err);
                        if detail.work_dir.as_deref().is_none_or(str::is_empty) {
                            detail.work_dir = Some(c.job_dir.clone());
                        }
                    }
                }
                let tails = self.logs.targets(&id, &detail, source);
                let dir = self.results_dir(&id);
                let triage = triage::ask(&mut self.detail.triage, &id, &detail, source, dir);
                let refined = self.final_states_known(id.cluster(), std::slice::from_ref(&detail));
                self.detail.kept.keep(&id, &detail, source);
                self.detail.detail = Some(detail);
                self.detail.source = Some(source);
                self.detail.error = None;
                let mut cmds = tails.map(|t| vec![Cmd::Tail(t)]).unwrap_or_default();
                cmds.extend(triage);
                cmds.extend(refined);
                cmds
            }
            Err(e) => {
                self.detail.error = Some(e);
                Vec::new()
            }
        }
    }

    /// Refines "left the queue" events with final states from anywhere (sacct rows,
    /// details). Failures are then triaged (a few per batch) so the log can say why.
    pub fn final_states_known(&mut self, ix: u16, details: &[JobDetail]) -> Vec<Cmd> {
        let events = self.clusters[ix].finals_known(details, self.now);
        let triaging = self
            .detail
            .id
            .as_ref()
            .filter(|_| self.detail.triage.is_some());
        let triage = events::auto_triage(&events, details, triaging, |id| self.results_dir(id));
        let mut cmds = self.clusters[ix].record(events);
        cmds.extend(triage);
        cmds
    }

    /// The refresh interval chosen again from the queue's rows (`ClusterState::adapt_interval`).
    pub(super) fn adapt_interval(&mut self, ix: u16) -> Vec<Cmd> {
        let only = self.multi().then_some(ix);
        let queue = &self.queue.jobs;
        self.clusters[ix].adapt_interval(
            (queue.generation(), only),
            || queue.jobs_on(only),
            self.now,
        )
    }
}
