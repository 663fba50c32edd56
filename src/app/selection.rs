//! The selection and what follows it: moving in the focused pane (the arrow and page keys,
//! the mouse: a click selects a queue row or focuses a pane, the wheel scrolls the pane
//! under it), the selected job's detail (fetched, or shown at once from what was read
//! before) and its logs.

use crossterm::event::{MouseEvent, MouseEventKind};

use super::{component, edit, progress, triage, App, DetailState};
use crate::action::{Cmd, JobMsg};
use crate::keymap::{Action, Pane};
use crate::payload::DetailSource;
use crate::slurm::model::{JobDetail, JobId};

impl App {
    /// A message about one job of cluster `ix` (its detail, logs, use, an action on it).
    pub(super) fn on_job_msg(&mut self, ix: u16, msg: JobMsg) -> Vec<Cmd> {
        match msg {
            JobMsg::Detail { id, result } => self.on_detail(id, *result),
            JobMsg::Tail(ev) => {
                if matches!(&ev.kind, crate::logview::TailKind::Data { bytes, .. } if !bytes.is_empty())
                {
                    let insight = &mut self.clusters[ix].insight;
                    insight.pace.log_wrote(self.now, &insight.bounds);
                }
                // Only the open log's events are taken in (a stopped tail's last ones are not).
                if self.logs.job.as_ref() == Some(&ev.job) && self.progress.feed(&ev, self.now) {
                    let listed = self
                        .cluster_by_ix(ev.job.cluster())
                        .and_then(|c| c.status.last_ok);
                    progress::land(&self.progress, &mut self.queue.jobs, &ev.job, listed);
                }
                self.logs.apply(ev);
                Vec::new()
            }
            JobMsg::OpDone { op, result } => self.on_op_done(ix, op, result),
            JobMsg::Edited { id, edit, result } => {
                self.queue.shown_mut().clear_busy(std::slice::from_ref(&id));
                let done = edit::on_edited(&mut self.overlays.edit, &id, &edit, result);
                if let Some(line) = done.error {
                    self.clusters[ix].status.last_error = Some(line);
                }
                self.apply(component::Out {
                    note: done.note,
                    ..Default::default()
                });
                self.poll_now(ix)
            }
            JobMsg::JobUse { id, result } => {
                let out = self.history.on_job_use(&view!(self, ix), id, *result);
                self.apply(out)
            }
            JobMsg::History { generation, result } => {
                let v = view!(self, ix, queue: &self.queue.jobs);
                let out = self
                    .history
                    .on_page(&v, &mut self.queue.history, generation, *result);
                self.history_out(out)
            }
            JobMsg::Triaged { id, result } => {
                if let Ok(Some(r)) = result.as_ref() {
                    self.clusters[ix].events.annotate_failure(&id, r);
                }
                let selected = self.detail.id.as_ref() == Some(&id);
                triage::land(&mut self.detail.triage, selected, *result);
                Vec::new()
            }
            JobMsg::Forwarded {
                id,
                node,
                port,
                path,
                result,
            } => {
                let out = self.tunnels.on_forwarded(id, node, port, path, result);
                self.apply(out)
            }
            JobMsg::SoonerChecked { id, result, at } => {
                self.sooner.on_checked(&id, result, at);
                Vec::new()
            }
            JobMsg::SoonerApplied { id, words, result } => {
                self.queue.shown_mut().clear_busy(std::slice::from_ref(&id));
                let out = self.sooner.on_applied(&id, &words, result);
                let mut cmds = self.apply(out);
                cmds.extend(self.poll_now(ix));
                cmds
            }
            JobMsg::Live { id, result, at } => {
                let out = self.live.on_sample(&view!(self, ix), id, *result, at);
                self.live.mark(&mut self.queue.jobs);
                self.apply(out)
            }
            JobMsg::Top { id, result, at } => {
                self.overlays.top.on_sample(&id, *result, at);
                Vec::new()
            }
        }
    }

    pub(super) fn move_in_focus(&mut self, a: Action, page: usize) -> Vec<Cmd> {
        match self.focus {
            Pane::Queue => {
                match a {
                    Action::Up => self.queue.shown_mut().select_prev(),
                    Action::Down => self.queue.shown_mut().select_next(),
                    Action::Top => self.queue.shown_mut().select_first(),
                    Action::Bottom => self.queue.shown_mut().select_last(),
                    Action::PageUp => self.queue.shown_mut().page_up(page),
                    _ => self.queue.shown_mut().page_down(page),
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
                        self.queue
                            .shown_mut()
                            .click(usize::from(row), usize::from(body));
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

    /// Called after anything that may move the selection: fetch the new job's detail and
    /// stop tailing the old one's logs.
    pub(super) fn selection_changed(&mut self) -> Vec<Cmd> {
        let selected = self.queue.shown().selected_id().cloned();
        if selected == self.detail.id {
            return Vec::new();
        }
        // The selected job's cluster (the focused one when nothing is selected).
        let ix = selected.as_ref().map_or(self.focus_cluster, JobId::cluster);
        let state = self.queue.shown().selected_job().map(|j| j.state.clone());
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
            self.queue.shown().selected_job(),
            self.queue.shown().jobs(),
            self.now,
        ));
        cmds.extend(
            self.clusters[ix]
                .waits
                .due(self.queue.shown().selected_job(), self.now),
        );
        cmds.extend(
            self.clusters[ix]
                .maintenance
                .for_selected(self.queue.shown().selected_job(), self.now),
        );
        let out = self.live.on_select(&view!(self, ix));
        cmds.extend(self.apply(out));
        self.overlays
            .deps
            .on_select(&view!(self, ix), &self.history);
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
                        let (out, err) = c.log_paths_of(&id);
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
                if row_from_detail(&mut self.queue.jobs, &id, &detail, self.now) {
                    self.refresh_progress();
                }
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
}

/// The selected job's row says what its detail, read after the list, says: a job that
/// ended (or started) since the last refresh does not show PENDING beside a detail that
/// says FAILED until the next full read. Whether the row changed.
fn row_from_detail(
    jobs: &mut crate::queue::QueueView,
    id: &JobId,
    d: &JobDetail,
    at: chrono::NaiveDateTime,
) -> bool {
    let Some(state) = d.state.clone() else {
        return false;
    };
    let stale = jobs
        .jobs()
        .iter()
        .find(|j| &j.id == id)
        .is_some_and(|j| j.state != state);
    if !stale {
        return false;
    }
    jobs.patch_job(id, at, |r| {
        r.state = state;
        r.reason = d.reason.as_deref().map(Into::into);
        if let Some(n) = d
            .node_list
            .as_deref()
            .filter(|n| !n.is_empty() && *n != "(null)")
        {
            r.node_list = Some(n.into());
        }
        if d.start_time.is_some() {
            r.start_time = d.start_time;
        }
        if let Some(e) = d.elapsed {
            r.time_used = e;
        }
    })
}
