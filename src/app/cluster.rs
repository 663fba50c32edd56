//! One cluster's state: how it is reached, its refreshes, the jobs that left its queue, the
//! insight into its pending jobs, its job events, its launches and their retries. Each part
//! has its own update; a refresh's job list goes through [`ClusterState::on_jobs`], which
//! hands App what to show and tell.

use std::collections::HashMap;
use std::time::Duration;

use chrono::NaiveDateTime;

use super::departures::Departures;
use super::events::{Event, EventKind};
use super::retry::Retried;
use super::{Events, LaunchContext, RetryState};
use crate::action::Cmd;
use crate::payload::RetryEvent;
use crate::payload::{ConnState, PollExtra};
use crate::registry::Entry;
use crate::retry::Chain;
use crate::slurm::model::{Job, JobDetail, JobId, Partition};

/// One cluster's side of the status bar: its connection and its last refresh.
#[derive(Debug, Clone)]
pub struct Status {
    pub conn: ConnState,
    pub host: Option<String>,
    pub last_ok: Option<NaiveDateTime>,
    pub last_took: Option<Duration>,
    /// The last error, naming the command that failed.
    pub last_error: Option<String>,
    pub polling: bool,
    pub poll_interval: Duration,
    /// When the refresh timer asks next (from its last tick or the last interval set).
    pub next_refresh: Option<NaiveDateTime>,
}

/// What App knows of one cluster: how it is reached, its refreshes, the insight into its
/// pending jobs, its job events, its launches and their retries.
pub struct ClusterState {
    /// The dashboard's number for the cluster (job ids on it carry it).
    pub ix: u16,
    pub name: String,
    /// "your jobs", "all users", ...
    pub scope: String,
    pub status: Status,
    /// No action that changes jobs (`--read-only`, `read_only = true`).
    pub read_only: bool,
    /// Partitions with their limits, fetched the first time a form needs them.
    pub partitions: Option<Result<Vec<Partition>, String>>,
    /// Automatic retries: policy and whether a check runs.
    pub retry: RetryState,
    /// Launched jobs (by Slurm job id) and their place in their chain of attempts.
    pub chains: std::collections::HashMap<u64, crate::retry::Chain>,
    pub launch: LaunchContext,
    /// Changes of own jobs: the `:events` log and notifications.
    pub events: Events,
    /// Pending-job insight, partitions, :stats and the adaptive interval.
    pub insight: super::insight::Insight,
    /// Jobs that left squeue: kept rows, the sacct lookups, when to give up.
    pub departures: Departures,
    /// `:usage`: the budget read, cached until asked again.
    pub usage: super::usage::UsageState,
    /// The user's recent jobs' waits, for "similar jobs waited".
    pub waits: super::usage::WaitsState,
    /// The slurmctld RPC budget: what was spent, and the reads held until they fit.
    pub budget: super::budget::Budget,
    /// Running work sessions and how far their end-of-time warnings have gone.
    pub sessions: crate::launch::session::Sessions,
    /// The cheap state checks between full reads, where the cluster answers them.
    pub checks: super::checks::Checks,
    /// Maintenance windows (`scontrol show reservation`), read every ten minutes.
    pub maintenance: super::maintenance::MaintenanceState,
}

impl ClusterState {
    pub fn new(name: &str, scope: &str, poll_interval: Duration, now: NaiveDateTime) -> Self {
        ClusterState {
            ix: 0,
            name: name.to_string(),
            scope: scope.to_string(),
            status: Status {
                conn: ConnState::NotConnected,
                host: None,
                last_ok: None,
                last_took: None,
                last_error: None,
                polling: false,
                poll_interval,
                next_refresh: None,
            },
            read_only: false,
            partitions: None,
            retry: RetryState::default(),
            chains: std::collections::HashMap::new(),
            launch: LaunchContext::default(),
            events: Events::default(),
            insight: super::insight::Insight::new(poll_interval, now),
            departures: Departures::default(),
            usage: Default::default(),
            waits: Default::default(),
            budget: Default::default(),
            sessions: Default::default(),
            checks: Default::default(),
            maintenance: Default::default(),
        }
    }
}

/// What one refresh's job list comes to, for App's views.
#[derive(Debug, Default)]
pub struct Listed {
    /// The cluster's rows: squeue's jobs, launched jobs it no longer lists, and the kept
    /// rows of jobs that left it.
    pub rows: Vec<Job>,
    /// Changes of own jobs, for the log and notifications.
    pub events: Vec<Event>,
    /// Work the list calls for (the registry's jobs read again).
    pub cmds: Vec<Cmd>,
    /// Jobs running now.
    pub running: Vec<JobId>,
}

impl ClusterState {
    /// The refresh command (squeue, with sacct for jobs that left it); the refresh is out.
    pub fn poll_cmd(&mut self) -> Cmd {
        self.status.polling = true;
        let cmd = self.departures.poll_cmd();
        // Jobs a state check saw leave: their final state comes with this full read.
        let left = std::mem::take(&mut self.checks.left);
        if left.is_empty() {
            return cmd;
        }
        let mut sacct = match cmd {
            Cmd::PollWith { sacct } => sacct,
            _ => Vec::new(),
        };
        for id in left {
            let id = id.on(self.ix);
            if !sacct.contains(&id) {
                sacct.push(id);
            }
        }
        Cmd::PollWith { sacct }
    }

    /// A refresh's job list from squeue, replacing `previous` (this cluster's rows on
    /// screen), at `at` after `took`; `now` is the dashboard's clock.
    pub fn on_jobs(
        &mut self,
        jobs: Vec<Job>,
        previous: &[Job],
        at: NaiveDateTime,
        took: Duration,
        now: NaiveDateTime,
    ) -> Listed {
        self.status.polling = false;
        self.status.last_ok = Some(at);
        self.status.last_took = Some(took);
        self.status.last_error = None;
        self.checks.on_full(&jobs, now);
        let (jobs, mut cmds) = self.merge_registry(jobs);
        // The site's own rate limit, once the cluster answered (1 RPC per dashboard).
        cmds.extend(self.budget.site_due());
        let running = jobs
            .iter()
            .filter(|j| j.status() == crate::slurm::model::Status::Running)
            .map(|j| j.id.clone())
            .collect();
        // The very records of the last list (an idle queue): nothing changed to log, and
        // no signature to compute again. At 100,000 jobs that is most of what is left of
        // a refresh.
        let same = crate::slurm::model::same_list(&jobs, previous);
        let gone = self.departures.on_list(&jobs, previous);
        // sacct at once (slurmdbd alone) about jobs that just left without a final state,
        // so their end shows now, not a refresh later.
        let unsettled: Vec<JobId> = gone
            .iter()
            .filter(|g| !g.state.is_finished())
            .map(|g| g.id.clone())
            .collect();
        if !unsettled.is_empty() {
            cmds.push(Cmd::FinalStates(unsettled));
        }
        let events = if same && gone.is_empty() && self.events.has_baseline() {
            Vec::new()
        } else {
            self.events.on_jobs(&jobs, &gone, now)
        };
        self.insight.on_list(&jobs, same);
        Listed {
            rows: self.departures.shown(jobs),
            events,
            cmds,
            running,
        }
    }

    /// A refresh that failed: the rows stay, the error is shown.
    pub fn on_failed(&mut self, error: String) {
        self.status.polling = false;
        // It never reached slurmctld: not charged.
        if self.status.down() {
            self.budget.refund_refresh();
        }
        let error = if super::budget::is_throttled(&error) {
            format!(
                "slurmctld refused for its rate limit: slurmdash pauses its reads for {} s (r refreshes now) · {error}",
                super::budget::THROTTLE_PAUSE_SECS
            )
        } else {
            error
        };
        self.status.last_error = Some(error);
    }

    /// The sacct part of a refresh (after App has logged the final states it brought):
    /// the kept rows take their final state, and jobs sacct never settled are logged as
    /// having left the queue.
    pub fn on_poll_extra(&mut self, extra: &PollExtra, now: NaiveDateTime) -> Vec<Event> {
        self.insight.on_extra(extra);
        let given_up = self.departures.on_sacct(extra);
        self.events.given_up(&given_up, now)
    }

    /// Adds the launched jobs squeue no longer lists (with their last known state) and
    /// remembers the squeue row of those it does. True when one that was not finished is
    /// missing: sacct should be asked for its state.
    pub fn with_registry_jobs(&mut self, mut jobs: Vec<Job>) -> (Vec<Job>, bool) {
        let mut stale = false;
        for r in &mut self.launch.registry_jobs {
            match jobs.iter().find(|j| j.id == r.id) {
                Some(live) => *r = live.clone(),
                None => {
                    stale |= !r.state.is_finished();
                    jobs.push(r.clone());
                }
            }
        }
        (jobs, stale)
    }

    /// The list with the launched jobs, and a registry read when a launched job left
    /// squeue without a final state.
    fn merge_registry(&mut self, jobs: Vec<Job>) -> (Vec<Job>, Vec<Cmd>) {
        let (jobs, stale) = self.with_registry_jobs(jobs);
        if stale && !self.launch.reattaching {
            self.launch.reattaching = true;
            return (jobs, vec![Cmd::LoadRegistryJobs(self.name.clone())]);
        }
        (jobs, Vec::new())
    }

    /// Final states learned anywhere (sacct, a detail fetch) settle the jobs the events
    /// log waits for.
    pub fn finals_known(&mut self, details: &[JobDetail], now: NaiveDateTime) -> Vec<Event> {
        details
            .iter()
            .flat_map(|d| match (d.id.as_ref(), d.state.as_ref()) {
                (Some(id), Some(state)) => {
                    self.events.on_final(id, state, d.node_list.as_deref(), now)
                }
                _ => Vec::new(),
            })
            .collect()
    }

    /// Records events: the log, the status bar, and notifications for the dashboard.
    pub fn record(&mut self, events: Vec<Event>) -> Vec<Cmd> {
        self.events
            .record(events, &self.name)
            .into_iter()
            .map(Cmd::Notify)
            .collect()
    }

    /// Events from elsewhere in the App (e.g. "retry submitted", "cancelled by you"), at
    /// `now`: logged, shown on the status bar, notified as configured (one summary
    /// notification when there are many).
    pub fn push_events(
        &mut self,
        events: Vec<(Option<JobId>, String, EventKind, String)>,
        now: NaiveDateTime,
    ) -> Vec<Cmd> {
        let events = self.events.stamp(events, now);
        self.record(events)
    }

    /// One event from elsewhere (see `push_events`).
    pub fn push_event(
        &mut self,
        job: Option<&JobId>,
        name: &str,
        kind: EventKind,
        text: &str,
        now: NaiveDateTime,
    ) -> Vec<Cmd> {
        let event = (job.cloned(), name.to_string(), kind, text.to_string());
        self.push_events(vec![event], now)
    }

    /// The launches of this cluster (from the registry): their chains; returns the
    /// queue's badges for them.
    pub fn set_launches(&mut self, entries: &[Entry]) -> HashMap<u64, String> {
        self.chains = Chain::index(entries, &self.retry.policy)
            .into_iter()
            .collect();
        super::retry::badges(&self.chains)
    }

    /// A retry check's answer (at `now`): the chains read anew, the events logged, a
    /// refresh when a job was resubmitted or requeued.
    pub fn on_retries(
        &mut self,
        result: Result<(Vec<RetryEvent>, Vec<Entry>), String>,
        now: NaiveDateTime,
    ) -> Retried {
        self.retry.checking = false;
        let (events, entries) = match result {
            Ok(v) => v,
            Err(e) => {
                self.retry.error = Some(format!("retry check: {e}"));
                return Retried::default();
            }
        };
        self.retry.error = None;
        let badges = self.set_launches(&entries);
        let checked = self.retry.on_check(&events, self.ix);
        if let Some(e) = checked.error {
            self.status.last_error = Some(e);
        }
        let mut cmds = Vec::new();
        if checked.poll {
            cmds.push(self.poll_cmd());
        }
        if checked.resubmitted && !self.launch.reattaching {
            self.launch.reattaching = true;
            cmds.push(Cmd::LoadRegistryJobs(self.name.clone()));
        }
        let events = checked
            .events
            .into_iter()
            .map(|(id, kind, line)| (Some(id), String::new(), kind, line))
            .collect();
        cmds.extend(self.push_events(events, now));
        Retried {
            cmds,
            note: checked.note,
            quiet_note: checked.quiet_note,
            badges: Some(badges),
        }
    }

    /// Chooses the refresh interval from `jobs`, the queue's rows of this cluster; when it
    /// moved, the cluster's hub is told.
    /// `list` and `jobs`: the cluster's rows, as [`Insight::interval`] takes them.
    ///
    /// [`Insight::interval`]: super::insight::Insight::interval
    pub fn adapt_interval<'a>(
        &mut self,
        list: (u64, Option<u16>),
        jobs: impl FnOnce() -> std::borrow::Cow<'a, [Job]>,
        now: NaiveDateTime,
    ) -> Vec<Cmd> {
        let c = self;
        let every = c.insight.interval(list, jobs, &c.departures, now);
        // Never faster than the RPC budget allows (state checks between full reads are
        // cheaper: they may come more often).
        let floor = match c.checks.usable() {
            true => c.budget.check_floor(),
            false => c.budget.refresh_floor(),
        };
        let every = every.max(floor.unwrap_or_default());
        if every == c.status.poll_interval {
            return Vec::new();
        }
        c.status.poll_interval = every;
        c.status.next_refresh = chrono::Duration::from_std(every).ok().map(|d| now + d);
        vec![Cmd::SetPollInterval(every)]
    }
}

/// Every cluster of the dashboard, numbered in the order they were added: `clusters[ix]`
/// is the cluster whose job ids and messages carry `ix`. There is always at least one; an
/// unknown number (never handed out) reads as the first cluster rather than panicking.
pub struct Clusters(Vec<ClusterState>);

impl Clusters {
    /// The dashboard's first cluster (number 0).
    pub fn one(mut c: ClusterState) -> Clusters {
        c.ix = 0;
        Clusters(vec![c])
    }

    /// Adds a cluster; returns its number.
    pub fn push(&mut self, mut c: ClusterState) -> u16 {
        let ix = u16::try_from(self.0.len()).unwrap_or(u16::MAX);
        c.ix = ix;
        self.0.push(c);
        ix
    }

    /// Every cluster, by number.
    pub fn iter(&self) -> std::slice::Iter<'_, ClusterState> {
        self.0.iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, ClusterState> {
        self.0.iter_mut()
    }

    /// Cluster number `ix`, if there is one.
    pub fn get(&self, ix: u16) -> Option<&ClusterState> {
        self.0.get(usize::from(ix))
    }

    /// More than one cluster is shown.
    pub fn multi(&self) -> bool {
        self.0.len() > 1
    }

    /// Every cluster's number.
    pub fn numbers(&self) -> std::ops::Range<u16> {
        0..u16::try_from(self.0.len()).unwrap_or(u16::MAX)
    }

    fn at(&self, ix: u16) -> usize {
        let i = usize::from(ix);
        if i < self.0.len() {
            i
        } else {
            0
        }
    }
}

impl std::ops::Index<u16> for Clusters {
    type Output = ClusterState;

    fn index(&self, ix: u16) -> &ClusterState {
        &self.0[self.at(ix)]
    }
}

impl std::ops::IndexMut<u16> for Clusters {
    fn index_mut(&mut self, ix: u16) -> &mut ClusterState {
        let i = self.at(ix);
        &mut self.0[i]
    }
}
