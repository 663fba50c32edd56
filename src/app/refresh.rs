//! Rows landing: a refresh's answer in the order its parts happened (the connection, the
//! sacct records and estimates that came with it, then the queue) and what follows each
//! (the dependency chains, tunnels of ended jobs, live use, sessions' warnings, the events
//! log), the rows of launches (a submitted job at once, jobs re-attached from the launch
//! records), and the refresh interval chosen again from the rows.

use std::time::Duration;

use chrono::NaiveDateTime;

use super::form::placeholder_job;
use super::{events, session, App};
use crate::action::Cmd;
use crate::launch::submit::Submitted;
use crate::slurm::model::{Job, JobDetail, JobId};

impl App {
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
        let clusters = &self.clusters;
        super::progress::refresh(
            &mut self.progress,
            &mut self.queue.jobs,
            self.logs.job.as_ref(),
            |k| clusters.get(k).and_then(|c| c.status.last_ok),
        );
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

    /// Cluster `ix`'s launches were read anew (`badges` from their chains): the queue's
    /// retry badges and folded sweeps follow.
    pub(super) fn launches_shown(
        &mut self,
        ix: u16,
        badges: std::collections::HashMap<u64, String>,
    ) {
        self.queue.jobs.set_badges(ix, badges);
        let sweeps = super::retry::sweeps(&self.clusters[ix].chains);
        self.queue.jobs.set_sweeps(ix, sweeps);
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
}
