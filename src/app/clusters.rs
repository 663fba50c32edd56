//! Several clusters in one dashboard. Each cluster's state is a `ClusterState`, held by
//! number in `App::clusters`; a message about one comes as `Msg::Cluster(ix, ..)` and its
//! handlers are given `ix`. The queue shows every cluster's rows; job ids carry their
//! cluster's number, so the same id on two clusters is two rows.

use crate::action::{InsightMsg, JobMsg, PollMsg};
use std::borrow::Cow;

use super::budget::{is_throttled, read_cost, Kind, Who};
use super::{App, ClusterState};
use crate::action::{Cmd, Msg};
use crate::slurm::model::{Job, JobId};

impl App {
    /// What cluster `ix` says of its scheduling (pending jobs, partitions, reservations,
    /// the budget, waits, limits).
    pub(super) fn on_insight_msg(&mut self, ix: u16, msg: InsightMsg) -> Vec<Cmd> {
        match msg {
            InsightMsg::Limits(result) => {
                self.clusters[ix].partitions = Some(result);
                let parts = view!(self, ix).partitions();
                if let Some(form) = self.overlays.edit.as_mut() {
                    form.check(parts);
                }
                self.history.on_partitions(&view!(self, ix));
                // The check :sooner waited for is the user's read, as if typed now.
                let out = self.sooner.on_partitions(&view!(self, ix));
                self.selection_read |= !out.cmds.is_empty();
                self.apply(out)
            }
            InsightMsg::Pending { ask, result, at } => {
                self.clusters[ix].insight.on_pending(*ask, *result, at);
                Vec::new()
            }
            InsightMsg::Partitions { result, at } => {
                self.clusters[ix].insight.partitions.set(result, at);
                Vec::new()
            }
            InsightMsg::Reservations { result, at } => {
                self.clusters[ix].maintenance.on_read(*result, at);
                self.form_windows();
                Vec::new()
            }
            InsightMsg::Usage { days, result, at } => {
                self.clusters[ix].usage.on_read(days, *result, at);
                Vec::new()
            }
            InsightMsg::Waits { result, at } => {
                self.clusters[ix].waits.on_read(result, at);
                Vec::new()
            }
        }
    }

    /// Adds a cluster to the dashboard; its workers' messages come as `Msg::Cluster(n, ..)`
    /// with the number returned.
    pub fn add_cluster(&mut self, c: ClusterState) -> u16 {
        let n = self.clusters.push(c);
        // The queue's rows already listed say which cluster they are on from now.
        let names = self.cluster_names();
        let mut jobs = self.queue.jobs.jobs().to_vec();
        for j in &mut jobs {
            if let Some(name) = names.get(usize::from(j.id.cluster())) {
                j.cluster = crate::slurm::shared::SharedStr::from(name);
            }
        }
        self.queue.jobs.set_jobs(jobs);
        self.queue.jobs.set_cluster_names(names);
        if self.history.open {
            let v = view!(self, n, queue: &self.queue.jobs);
            self.history.show(&v, &mut self.queue.history);
        }
        self.derive();
        n
    }

    /// Every cluster, in the order they were added.
    pub fn clusters(&self) -> impl Iterator<Item = &ClusterState> {
        self.clusters.iter()
    }

    /// The cluster on screen (see [`App::view_cluster`]).
    pub fn shown(&self) -> &ClusterState {
        &self.clusters[self.view_cluster()]
    }

    /// The cluster on screen, to change.
    pub fn shown_mut(&mut self) -> &mut ClusterState {
        let ix = self.view_cluster();
        &mut self.clusters[ix]
    }

    /// Where the job's status.json lives, when slurmdash knows its results dir (the launch
    /// registry records it for jobs slurmdash submitted).
    pub fn results_dir(&self, id: &JobId) -> Option<String> {
        self.launch_of(id).map(|c| c.job_dir.clone())
    }

    /// The launch a Slurm job belongs to (see [`View::launch_of`](super::component::View)).
    pub fn launch_of(&self, id: &JobId) -> Option<&crate::retry::Chain> {
        view!(self, id.cluster()).launch_of(id)
    }

    /// The cluster numbered `ix`.
    pub fn cluster_by_ix(&self, ix: u16) -> Option<&ClusterState> {
        self.clusters.get(ix)
    }

    /// The names by number, for the queue's CLUSTER column (empty names for gaps).
    fn cluster_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for c in self.clusters() {
            let i = usize::from(c.ix);
            if names.len() <= i {
                names.resize(i + 1, String::new());
            }
            names[i] = c.name.clone();
        }
        names
    }

    /// Several clusters are shown.
    pub fn multi(&self) -> bool {
        self.clusters.multi()
    }

    /// The cluster the screen is about: the one of an open launch or edit form, else the
    /// selected job's, else the focused one.
    pub fn view_cluster(&self) -> u16 {
        if let Some(f) = &self.overlays.form {
            return f.cluster;
        }
        if let Some(e) = &self.overlays.edit {
            return e.id.cluster();
        }
        self.queue
            .shown()
            .selected_job()
            .map(|j| j.id.cluster())
            .unwrap_or(self.focus_cluster)
    }

    /// Focuses cluster `name` (the launch form and commands without a job go there).
    pub fn focus_cluster_named(&mut self, name: &str) -> bool {
        let Some(ix) = self.clusters().find(|c| c.name == name).map(|c| c.ix) else {
            return false;
        };
        self.focus_cluster = ix;
        if self
            .queue
            .shown()
            .selected_job()
            .is_some_and(|j| j.id.cluster() != ix)
        {
            // Select the cluster's first row, so what follows (detail, keys) is about it.
            if let Some(id) = self
                .queue
                .shown()
                .jobs()
                .iter()
                .find(|j| j.id.cluster() == ix)
                .map(|j| j.id.clone())
            {
                self.queue.shown_mut().select_id(&id);
            }
        }
        true
    }

    /// Handles `msg` and says which cluster's workers each command is for: the cluster of
    /// the jobs it names, else the cluster the message was about. A log tail goes to every
    /// cluster (each keeps the targets on it and stops the rest).
    ///
    /// The reads among the commands go through each cluster's RPC budget (`budget.rs`):
    /// those that do not fit are held, and each clock tick sends the held ones that fit now.
    pub fn handle(&mut self, msg: Msg) -> Vec<(u16, Cmd)> {
        let mut out = Vec::new();
        // A key (or the mouse) asked: its reads are the user's, and a refresh goes at once.
        let key = matches!(msg, Msg::Key(_) | Msg::Mouse(_));
        let tick = matches!(msg, Msg::Tick(_));
        self.throttle_seen(&msg);
        match msg {
            Msg::Tick(at) if self.multi() => {
                for ix in self.clusters.numbers() {
                    let cmds = self.on_msg(ix, Msg::Tick(at));
                    self.route(ix, cmds, &mut out);
                }
            }
            Msg::Cluster(ix, m) => {
                let cmds = self.dispatch(Msg::Cluster(ix, m));
                self.route(ix, cmds, &mut out);
            }
            other => {
                let ix = self.view_cluster();
                let cmds = self.dispatch(other);
                // A key may have moved the selection to another cluster's job: the
                // commands without job ids belong to the cluster it was about.
                self.route(ix, cmds, &mut out);
            }
        }
        // What the screen now shows is read as the user's, whatever moved the selection.
        let user = key || std::mem::take(&mut self.selection_read);
        let mut out = self.plan_reads(out, key, user);
        if tick {
            out.extend(self.release_held());
        }
        self.mark_stale();
        // Last: the budget may have held the selected job's detail read.
        self.derive();
        out
    }

    fn cluster_mut(&mut self, ix: u16) -> Option<&mut ClusterState> {
        self.clusters
            .get(ix)
            .is_some()
            .then(|| &mut self.clusters[ix])
    }

    /// Each read goes through its cluster's budget: sent (and charged) or held.
    /// `key`: a key asked (a refresh among the commands goes at once); `user`: the other
    /// reads are for what the user now looks at.
    fn plan_reads(&mut self, cmds: Vec<(u16, Cmd)>, key: bool, user: bool) -> Vec<(u16, Cmd)> {
        let now = self.now;
        let mut out = Vec::with_capacity(cmds.len());
        let mut replaced_samples = Vec::new();
        for (ix, cmd) in cmds {
            let kind = read_cost(&cmd).map(|(k, _)| k);
            let (Some(kind), Some(c)) = (kind, self.cluster_mut(ix)) else {
                out.push((ix, cmd));
                continue;
            };
            let who = match kind {
                // A state check saw a change: its full read may come sooner.
                Kind::Refresh if c.checks.change.is_some() => Who::Change,
                Kind::Refresh | Kind::Check => Who::Refresh,
                // A key asked (the selection moved to the job): the user's; a sample while
                // the job stays selected comes with the refresh, in the background.
                _ if user => Who::User,
                _ => Who::Background,
            };
            // A full read makes a state check the budget still holds pointless.
            if kind == Kind::Refresh && c.budget.take(Kind::Check).is_some() {
                c.checks.replaced();
            }
            // A held read this one replaces is never sent: what waited for it is freed (a
            // sample counted as out would hold its job's next one back).
            match c.budget.take(kind) {
                Some(Cmd::SampleLive(t)) => replaced_samples.push(t.id),
                Some(Cmd::FetchPending(ask)) => c.insight.pending.not_asked(&ask),
                _ => {}
            }
            let sent = if key && kind == Kind::Refresh {
                Some(c.budget.force(now, cmd))
            } else {
                c.budget.admit(now, cmd, who)
            };
            out.extend(sent.map(|cmd| (ix, cmd)));
        }
        for id in replaced_samples {
            let again = out
                .iter()
                .any(|(_, c)| matches!(c, Cmd::SampleLive(t) if t.id == id));
            let held = self.clusters().any(|c| {
                c.budget
                    .held()
                    .iter()
                    .any(|h| matches!(&h.cmd, Cmd::SampleLive(t) if t.id == id))
            });
            if !again && !held {
                self.live.clear_in_flight(&id);
            }
        }
        out
    }

    /// The held reads that fit now, on every cluster; those no longer wanted (another job
    /// selected since) are dropped.
    fn release_held(&mut self) -> Vec<(u16, Cmd)> {
        let now = self.now;
        let mut out = Vec::new();
        for ix in self.clusters.numbers() {
            let unwanted: Vec<Cmd> = match self.cluster_by_ix(ix) {
                Some(c) => c
                    .budget
                    .held()
                    .iter()
                    .filter(|h| !self.still_wanted(c, &h.cmd))
                    .map(|h| h.cmd.clone())
                    .collect(),
                None => continue,
            };
            if let Some(c) = self.cluster_mut(ix) {
                let (go, dropped) = c.budget.release(now, |cmd| !unwanted.contains(cmd));
                out.extend(go.into_iter().map(|cmd| (ix, cmd)));
                // A live sample never sent is not out: the next job's may go.
                for cmd in &dropped {
                    if let Cmd::FetchPending(ask) = cmd {
                        c.insight.pending.not_asked(ask);
                    }
                }
                for cmd in dropped {
                    match cmd {
                        Cmd::SampleLive(t) => self.live.clear_in_flight(&t.id),
                        Cmd::Top(_) => self.overlays.top.not_sent(),
                        _ => {}
                    }
                }
            }
        }
        out
    }

    /// Whether a held read is still what the screen waits for.
    fn still_wanted(&self, c: &ClusterState, cmd: &Cmd) -> bool {
        match cmd {
            Cmd::FetchDetail(id) => self.detail.id.as_ref() == Some(id),
            Cmd::FetchPending(ask) => c.insight.pending.job_covered(ask),
            Cmd::SampleLive(t) => {
                self.live.sampling(&t.id) && self.queue.shown().selected_id() == Some(&t.id)
            }
            Cmd::Top(t) => self.overlays.top.wants(&t.id),
            _ => true,
        }
    }

    /// slurmctld refused a read for its rate limit: that cluster's planned reads pause.
    fn throttle_seen(&mut self, msg: &Msg) {
        let Msg::Cluster(ix, m) = msg else {
            return;
        };
        let error = match &**m {
            Msg::Poll(PollMsg::Queue(r)) => r.result.as_ref().err(),
            Msg::Job(JobMsg::Detail { result, .. }) => result.as_ref().as_ref().err(),
            Msg::Insight(InsightMsg::Pending { result, .. }) => result.as_ref().as_ref().err(),
            Msg::Job(JobMsg::Live { result, .. }) => result.as_ref().as_ref().err(),
            Msg::Job(JobMsg::Top { result, .. }) => result.as_ref().as_ref().err(),
            Msg::Insight(InsightMsg::Partitions { result, .. }) => result.as_ref().err(),
            Msg::Poll(PollMsg::SiteLimit(result)) => result.as_ref().err(),
            Msg::Poll(PollMsg::StateCheck { result, .. }) => result.as_ref().err(),
            _ => None,
        };
        if error.is_some_and(|e| is_throttled(e)) {
            let now = self.now;
            if let Some(c) = self.cluster_mut(*ix) {
                c.budget.throttled(now);
            }
        }
    }

    /// With several clusters, the rows of one that could not be refreshed (or lost its
    /// connection) are marked as out of date; the status bar says why.
    fn mark_stale(&mut self) {
        let stale = if self.multi() {
            self.clusters()
                .filter(|c| {
                    c.status.last_error.is_some()
                        || matches!(
                            c.status.conn,
                            crate::payload::ConnState::Reconnecting { .. }
                                | crate::payload::ConnState::Failed { .. }
                                | crate::payload::ConnState::LoginNeeded { .. }
                        )
                })
                .map(|c| c.ix)
                .chain(
                    self.history
                        .open
                        .then(|| self.history.failed())
                        .into_iter()
                        .flatten(),
                )
                .collect()
        } else {
            Default::default()
        };
        self.queue.shown_mut().set_stale(stale);
    }

    pub(super) fn route(&self, about: u16, cmds: Vec<Cmd>, out: &mut Vec<(u16, Cmd)>) {
        for cmd in cmds {
            let mut cmd = cmd;
            if let Cmd::Tail(targets) = &cmd {
                for c in self.clusters() {
                    let mine = targets
                        .iter()
                        .filter(|(id, ..)| id.cluster() == c.ix)
                        .cloned()
                        .collect();
                    out.push((c.ix, Cmd::Tail(mine)));
                }
                continue;
            }
            let ix = cmd
                .addressed()
                .or_else(|| cmd.cluster_of_ids())
                .unwrap_or(about);
            out.push((ix, cmd));
        }
    }

    /// Cluster `ix`'s rows in the queue (all rows when there is one cluster).
    pub(super) fn own_jobs(&self, ix: u16) -> Cow<'_, [Job]> {
        self.queue.jobs.jobs_on(self.multi().then_some(ix))
    }

    /// Replaces cluster `ix`'s rows in the queue, keeping the other clusters'.
    pub(super) fn set_own_jobs(&mut self, ix: u16, jobs: Vec<Job>) {
        self.put_own_jobs(ix, jobs);
        self.refresh_progress();
    }

    /// The PROGRESS cells again: states and time limits moved, jobs left.
    pub(super) fn refresh_progress(&mut self) {
        let clusters = &self.clusters;
        super::progress::refresh(
            &mut self.progress,
            &mut self.queue.jobs,
            self.logs.job.as_ref(),
            |k| clusters.get(k).and_then(|c| c.status.last_ok),
        );
    }

    fn put_own_jobs(&mut self, ix: u16, jobs: Vec<Job>) {
        if !self.multi() {
            self.queue.jobs.set_jobs(jobs);
            return;
        }
        let mut all: Vec<Job> = self
            .queue
            .jobs
            .jobs()
            .iter()
            .filter(|j| j.id.cluster() != ix)
            .cloned()
            .collect();
        // Each cluster's rows stay together, in the order the clusters were added.
        let at = all
            .iter()
            .position(|j| j.id.cluster() > ix)
            .unwrap_or(all.len());
        all.splice(at..at, jobs);
        self.queue.jobs.set_jobs(all);
    }
}
