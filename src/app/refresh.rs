//! Rows landing: a refresh's answer in the order its parts happened (the connection, the
//! sacct records and estimates that came with it, then the queue) and what follows each
//! (the dependency chains, tunnels of ended jobs, live use, sessions' warnings, the events
//! log), the rows of launches (a submitted job at once, jobs re-attached from the launch
//! records), and the refresh interval chosen again from the rows.

use std::time::Duration;

use chrono::NaiveDateTime;

use super::{budget, checks, events, session, App};
use crate::action::Cmd;
use crate::action::PollMsg;
use crate::slurm::model::{Job, JobDetail};

impl App {
    /// A refresh's message about cluster `ix` (the queue, a state check, the link).
    pub(super) fn on_poll_msg(&mut self, ix: u16, msg: PollMsg) -> Vec<Cmd> {
        match msg {
            PollMsg::PollDue => {
                let every = chrono::Duration::from_std(self.clusters[ix].status.poll_interval);
                self.clusters[ix].status.next_refresh = every.ok().map(|d| self.now + d);
                if self.clusters[ix].checks.in_flight {
                    // A check the budget still holds is asked again: a full read may be
                    // due by now.
                    if self.clusters[ix].budget.take(budget::Kind::Check).is_none() {
                        return Vec::new();
                    }
                    self.clusters[ix].checks.replaced();
                }
                // Between full reads, a state check where the cluster answers one.
                let every = self.clusters[ix].status.poll_interval;
                if !self.clusters[ix].status.polling {
                    if let Some(check) = self.clusters[ix].checks.due(self.now, every) {
                        return vec![check];
                    }
                }
                self.poll(ix)
            }
            PollMsg::SlurmVersion(v) => {
                self.clusters[ix].checks.version = Some(v);
                self.adapt_interval(ix)
            }
            PollMsg::PriorityCalcPeriod(d) => {
                self.clusters[ix].insight.pending.set_calc_period(d);
                Vec::new()
            }
            PollMsg::StateCheck { result, at } => {
                match self.clusters[ix].checks.on_answer(result, at) {
                    checks::Outcome::Same => {
                        let c = &mut self.clusters[ix].insight;
                        c.pace.steady(&c.bounds);
                        self.adapt_interval(ix)
                    }
                    checks::Outcome::FullRead => self.poll(ix),
                }
            }
            PollMsg::Queue(refresh) => self.on_refresh(ix, *refresh),
            PollMsg::FinalStates(extra) => {
                let cmds = self.on_poll_extra(ix, extra);
                // The kept rows took their final state: shown now, not at the next refresh.
                let kept = &self.clusters[ix].departures.rows;
                let rows: Vec<crate::slurm::model::Job> = self
                    .queue
                    .jobs
                    .jobs_on(self.multi().then_some(ix))
                    .iter()
                    .map(|j| kept.iter().find(|r| r.id == j.id).unwrap_or(j).clone())
                    .collect();
                self.set_own_jobs(ix, rows);
                // The selected row among them: its detail (PENDING, say) is read again.
                let mut cmds = cmds;
                cmds.extend(self.refetch_if_state_changed());
                cmds
            }
            PollMsg::SiteLimit(result) => {
                self.clusters[ix].budget.set_site(result);
                self.adapt_interval(ix)
            }
            PollMsg::Conn { state, host } => self.clusters[ix].on_conn(state, host),
            PollMsg::RemoteStats { stats, at } => {
                self.clusters[ix].budget.observe(at, stats.rpcs.ctld);
                self.clusters[ix].insight.on_stats(stats, at);
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
        self.queue.jobs.set_listed_at(ix, at);
        self.set_own_jobs(ix, listed.rows);
        self.overlays.deps.refresh(&view!(self, ix), &self.history);
        let interval = self.adapt_interval(ix);
        let mut cmds = self.selection_changed();
        if cmds.is_empty() {
            cmds = self.refetch_if_state_changed();
            cmds.extend(self.clusters[ix].insight.limit_reason_appeared(
                self.queue.shown().selected_job(),
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
        let Some(job) = self.queue.shown().selected_job() else {
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
}
