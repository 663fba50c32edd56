//! The worker hub: the only place a `Cmd` becomes a task. It owns the single-flight rules
//! (one refresh, one detail fetch, one pending-job lookup at a time; the newest waiting
//! request wins; each frees its own slot), answers each refresh with one message, and
//! samples the transport for the status bar and :stats.

use crate::action::{InsightMsg, JobMsg, LaunchMsg, PollMsg};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use crate::action::{Cmd, Msg};
use crate::io;
use crate::payload::Why;
use crate::payload::{ConnState, DetailSource, Refresh, Request, Tunnel};
use crate::remote::Remote;
use crate::slurm::command::SqueueQuery;
use crate::slurm::live::LiveTarget;
use crate::slurm::model::{JobDetail, JobId, JobRecord, SharedStr};
use crate::slurm::ops::{JobEdit, JobOp};
use crate::worker::flight::Flight;
use crate::worker::recorder::Recording;
use crate::worker::tailer;

/// Why `cmd`'s remote commands run, as the command log (`@`) says.
fn why(cmd: &Cmd) -> Why {
    match cmd {
        Cmd::PollQueue | Cmd::PollWith { .. } | Cmd::FinalStates(_) | Cmd::CheckStates(_) => {
            Why::Refresh
        }
        Cmd::FetchDetail(_) | Cmd::FetchPending(_) | Cmd::Triage { .. } => Why::Selection,
        Cmd::SampleLive(_) => Why::Live,
        Cmd::Top(_) => Why::Top,
        Cmd::CheckRetries => Why::Guard,
        Cmd::Tail(_) => Why::Tail,
        Cmd::Files(_) => Why::Files,
        Cmd::FetchLaunchFacts
        | Cmd::TestOnly(_)
        | Cmd::Submit { .. }
        | Cmd::LoadRegistryJobs(_) => Why::Launch,
        Cmd::FetchPartitions
        | Cmd::FetchReservations
        | Cmd::FetchSiteLimit
        | Cmd::FetchLimits(_) => Why::Background,
        _ => Why::Key,
    }
}

fn now() -> chrono::NaiveDateTime {
    chrono::Local::now().naive_local()
}

/// A form submission gets the cluster guard that `[retry]` asks for.
fn with_guard(
    cmd: Cmd,
    policy: &crate::retry::RetryPolicy,
    patterns: &crate::triage::Patterns,
) -> Cmd {
    match cmd {
        Cmd::Submit {
            cluster,
            mut prepared,
        } => {
            if prepared.guard.is_err() {
                prepared.guard = prepared.guard_plan(policy, patterns, None);
            }
            Cmd::Submit { cluster, prepared }
        }
        other => other,
    }
}

/// The transport's counters are sampled for :stats every this many clock ticks (seconds).
const STATS_EVERY_TICKS: u64 = 5;

/// What the hub needs to know about its cluster and the user's settings.
pub struct HubSettings {
    /// The dashboard's number for the cluster: every message is sent as
    /// `Msg::Cluster(ix, ..)`.
    pub ix: u16,
    /// The cluster's name, as the launch registry records it.
    pub cluster: String,
    pub query: SqueueQuery,
    /// Limit for each remote command.
    pub timeout: Duration,
    /// How often a tailed log is read.
    pub tail_every: Duration,
    pub patterns: Arc<crate::triage::Patterns>,
    pub registry: Arc<crate::registry::Registry>,
    pub retry: crate::retry::RetryPolicy,
    pub read_only: bool,
    pub notify: crate::notify::Settings,
    /// Keep the batch scripts of selected jobs slurmdash did not launch (`[ui] keep_scripts`).
    pub keep_scripts: bool,
    /// The dashboard shows several clusters (read at each refresh: a cluster may be added
    /// while it runs): each queue record carries the cluster's name from the worker on (as
    /// App would label it), so a record reused from one refresh to the next is never copied
    /// to be labelled.
    pub named: Arc<AtomicBool>,
}

impl HubSettings {
    /// Defaults for `cluster`: own jobs, built-in triage patterns, the default registry.
    pub fn new(cluster: &str, timeout: Duration) -> HubSettings {
        HubSettings {
            ix: 0,
            cluster: cluster.to_string(),
            query: SqueueQuery::default(),
            timeout,
            tail_every: Duration::from_secs(2),
            patterns: Arc::new(crate::triage::Patterns::builtin()),
            registry: Arc::new(crate::registry::Registry::open_default()),
            retry: crate::retry::RetryPolicy::default(),
            read_only: false,
            notify: crate::notify::Settings::from_config(&crate::notify::NotifyConfig::default()),
            keep_scripts: true,
            named: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Runs background work for one cluster's App state.
pub struct Hub {
    /// Labels this hub's messages with its cluster and passes them on.
    forward: JoinHandle<()>,
    tx: UnboundedSender<Msg>,
    remote: Arc<dyn Remote>,
    s: Arc<HubSettings>,
    tails: Vec<JoinHandle<()>>,
    refresh: Flight<Vec<JobId>>,
    detail: Flight<JobId>,
    pending: Flight<Box<crate::slurm::pending::Ask>>,
    live: Flight<Box<LiveTarget>>,
    /// The connection state last reported to App (by a refresh or by `tick`).
    reported: Arc<Mutex<Option<ConnState>>>,
    ticks: u64,
    /// Sends `Msg::Poll(PollMsg::PollDue)` at the refresh interval, once started.
    timer: Option<JoinHandle<()>>,
    /// The timer has asked at least once (a new interval set before then keeps the first
    /// refresh at once: the first clock tick may set one before the timer task ran).
    asked_once: Arc<std::sync::atomic::AtomicBool>,
    /// The files view's copy under way.
    files: crate::worker::files::FilesWorker,
    /// The jobs whose batch script was asked to be kept (once each).
    asked: Arc<io::keep::Asked>,
    /// Submissions under way, by launch id: the dashboard finishes them before it leaves.
    submits: Vec<(String, JoinHandle<()>)>,
    /// The last refresh's records, reused by the next where their text did not change.
    reuse: Arc<Mutex<io::poll::Reuse>>,
    /// Why the command being started runs: the tasks it starts record their remote
    /// commands under it (the command log, `worker/recorder.rs`).
    why: Why,
}

impl Hub {
    /// A hub whose messages reach `out` as `Msg::Cluster(settings.ix, ..)`. Needs a tokio
    /// runtime (it starts the task that labels them).
    pub fn new(remote: Arc<dyn Remote>, settings: HubSettings, out: UnboundedSender<Msg>) -> Hub {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Msg>();
        let ix = settings.ix;
        let forward = tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if out.send(Msg::Cluster(ix, Box::new(m))).is_err() {
                    break;
                }
            }
        });
        Hub {
            forward,
            tx,
            remote,
            s: Arc::new(settings),
            tails: Vec::new(),
            refresh: Flight::default(),
            detail: Flight::default(),
            pending: Flight::default(),
            live: Flight::default(),
            reported: Arc::new(Mutex::new(None)),
            ticks: 0,
            timer: None,
            asked_once: Default::default(),
            files: Default::default(),
            asked: Default::default(),
            submits: Vec::new(),
            reuse: Default::default(),
            why: Why::Background,
        }
    }

    pub fn remote(&self) -> &Arc<dyn Remote> {
        &self.remote
    }

    /// Starts the work `cmd` asks for. Commands for the event loop itself (quit, suspend,
    /// switching clusters, the refresh timer) are not the hub's and are ignored here.
    pub fn run(&mut self, mut cmd: Cmd) {
        // Workers see job ids as Slurm prints them; App labels them again on the way back.
        cmd.for_each_id(&mut |id| id.set_cluster(0));
        self.why = why(&cmd);
        match cmd {
            Cmd::PollQueue => self.refresh(Vec::new()),
            Cmd::PollWith { sacct } => self.refresh(sacct),
            Cmd::FinalStates(ids) => self.spawn(|t| finals(t, ids)),
            Cmd::Reconnect => self.remote.retry_now(),
            Cmd::FetchDetail(id) => {
                let asked = self.asked.clone();
                self.fly(&self.detail, id, move |t, id| detail(t, id, asked.clone()));
            }
            Cmd::FetchPending(job) => self.fly(&self.pending, job, pending),
            Cmd::SampleLive(target) => self.fly(&self.live, target, live),
            Cmd::Top(target) => self.spawn(|t| top(t, target)),
            Cmd::FetchPartitions => self.spawn(partitions),
            Cmd::FetchReservations => self.spawn(reservations),
            Cmd::CheckSooner { id, alternatives } => {
                self.spawn(|t| check_sooner(t, id, alternatives))
            }
            Cmd::ApplySooner { id, change } => self.spawn(|t| apply_sooner(t, id, change)),
            Cmd::FetchSiteLimit => self.spawn(site_limit),
            Cmd::CheckStates(ids) => self.spawn(|t| state_check(t, ids)),
            Cmd::FetchUsage { days } => self.spawn(|t| usage(t, days)),
            Cmd::FetchWaits => self.spawn(waits),
            Cmd::Op(op) => self.spawn(|t| job_op(t, op)),
            Cmd::Edit(id, edit) => self.spawn(|t| edit_job(t, id, edit)),
            Cmd::FetchLimits(_) => self.spawn(limits),
            Cmd::CheckRetries => self.spawn(check_retries),
            Cmd::Triage {
                id,
                detail,
                source,
                results_dir,
            } => self.spawn(|t| triage(t, id, detail, source, results_dir)),
            Cmd::Forward {
                id,
                node,
                port,
                path,
            } => self.spawn(|t| forward(t, id, node, port, path)),
            Cmd::Unforward(tunnel) => self.spawn(|t| unforward(t, tunnel)),
            Cmd::History(req) => self.spawn(|t| history(t, req)),
            Cmd::Relaunch { id, job_dir } => self.spawn(|t| relaunch(t, id, job_dir)),
            Cmd::Adopt {
                id,
                results_root,
                job_dir_mode,
            } => self.spawn(|t| adopt(t, id, results_root, job_dir_mode)),
            Cmd::Recover(id) => self.spawn(|t| recover(t, id)),
            Cmd::Rerun { id, job_dir } => self.spawn(|t| rerun(t, id, job_dir)),
            Cmd::Grep(req) => self.spawn(|t| grep(t, *req)),
            Cmd::Tail(targets) => {
                self.stop_tails();
                for (job, stream, path) in targets {
                    self.tails.push(tailer::spawn_tailer(
                        self.recorded(),
                        job,
                        stream,
                        path,
                        self.s.tail_every,
                        self.tx.clone(),
                    ));
                }
            }
            cmd @ (Cmd::FetchLaunchFacts
            | Cmd::TestOnly(_)
            | Cmd::Submit { .. }
            | Cmd::LoadRegistryJobs(_)) => {
                let launch = match &cmd {
                    Cmd::Submit { prepared, .. } => Some(prepared.layout.local_id.clone()),
                    _ => None,
                };
                let task = crate::worker::launch::spawn(
                    with_guard(cmd, &self.s.retry, &self.s.patterns),
                    self.recorded(),
                    self.s.registry.clone(),
                    self.tx.clone(),
                    self.s.timeout,
                );
                if let Some(id) = launch {
                    self.submits.retain(|(_, t)| !t.is_finished());
                    self.submits.push((id, task));
                }
            }
            Cmd::Notify(n) => crate::notify::deliver(&n, &self.s.notify),
            Cmd::SetPollInterval(every) => {
                // The next refresh comes one new interval from now (the first still at once).
                if self.timer.is_some() {
                    let now = tokio::time::Instant::now();
                    let first = match self.asked_once.load(std::sync::atomic::Ordering::SeqCst) {
                        true => now + every,
                        false => now,
                    };
                    self.start_timer(first, every);
                }
            }
            Cmd::Files(c) => {
                let t = self.task();
                self.files.run(c, t.remote, t.tx, t.s.timeout);
            }
            Cmd::Custom(run) => self.spawn(|t| custom(t, *run)),
            Cmd::Quit
            | Cmd::Suspend
            | Cmd::AddCluster(_)
            | Cmd::Shell { .. }
            | Cmd::Clipboard(_)
            | Cmd::SaveColumns(_)
            | Cmd::SaveTemplate { .. }
            | Cmd::ReadScript(_)
            | Cmd::Pager(_) => {}
        }
    }

    fn task(&self) -> Task {
        Task {
            tx: self.tx.clone(),
            remote: self.recorded(),
            s: self.s.clone(),
        }
    }

    /// The cluster's remote, recording each command for the command log under `self.why`.
    fn recorded(&self) -> Arc<dyn Remote> {
        Recording::wrap(self.remote.clone(), self.why, self.tx.clone())
    }

    /// Runs `work` on a task of its own and sends the message it answers with.
    fn spawn<F>(&self, work: impl FnOnce(Task) -> F)
    where
        F: Future + Send + 'static,
        F::Output: Answer,
    {
        let t = self.task();
        let answer = work(t.clone());
        tokio::spawn(async move { answer.await.send_to(&t) });
    }

    /// Like [`spawn`](Self::spawn), through `flight`: one at a time, the newest waiting
    /// request next.
    fn fly<T, F>(&self, flight: &Flight<T>, req: T, work: impl Fn(Task, T) -> F + Send + 'static)
    where
        T: Send + 'static,
        F: Future + Send + 'static,
        F::Output: Answer,
    {
        let t = self.task();
        flight.request(req, move |req| {
            let answer = work(t.clone(), req);
            let t = t.clone();
            async move { answer.await.send_to(&t) }
        });
    }

    /// One refresh (squeue, start estimates, sacct for `gone`) in one remote exec, answered
    /// by one message.
    fn refresh(&mut self, gone: Vec<JobId>) {
        let reported = self.reported.clone();
        let reuse = self.reuse.clone();
        self.fly(&self.refresh, gone, move |t, gone| {
            poll(t, gone, reported.clone(), reuse.clone())
        });
    }

    /// Once a second: the transport's counters every few seconds, and its connection state
    /// when it changed since last reported (a countdown while it waits to reconnect), without
    /// waiting for the next refresh to report it.
    pub fn tick(&mut self, at: chrono::NaiveDateTime) {
        self.ticks += 1;
        if self.ticks % STATS_EVERY_TICKS == 1 {
            let stats = self.remote.stats();
            let _ = self.tx.send(Msg::Poll(PollMsg::RemoteStats { stats, at }));
        }
        let state = self.remote.state();
        let mut reported = self.reported.lock().unwrap_or_else(PoisonError::into_inner);
        if reported.as_ref() != Some(&state) {
            *reported = Some(state.clone());
            let _ = self.tx.send(Msg::Poll(PollMsg::Conn { state, host: None }));
        }
    }

    /// Asks for a refresh now and then every `every` (`Msg::Poll(PollMsg::PollDue)`); the adaptive
    /// interval moves it with `Cmd::SetPollInterval`.
    pub fn start_refresh_timer(&mut self, every: Duration) {
        self.start_timer(tokio::time::Instant::now(), every);
    }

    fn start_timer(&mut self, first: tokio::time::Instant, every: Duration) {
        if let Some(t) = self.timer.take() {
            t.abort();
        }
        let tx = self.tx.clone();
        let asked = self.asked_once.clone();
        self.timer = Some(tokio::spawn(async move {
            let mut iv = tokio::time::interval_at(first, every);
            iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                iv.tick().await;
                if tx.send(Msg::Poll(PollMsg::PollDue)).is_err() {
                    return;
                }
                asked.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }));
    }

    fn stop_tails(&mut self) {
        for t in self.tails.drain(..) {
            t.abort();
        }
    }

    /// The submissions still under way (launch id and task), taken out of the hub: a
    /// dashboard that is leaving waits for them, so that each launch ends up queued and
    /// recorded or not queued at all.
    pub fn take_submissions(&mut self) -> Vec<(String, JoinHandle<()>)> {
        std::mem::take(&mut self.submits)
            .into_iter()
            .filter(|(_, t)| !t.is_finished())
            .collect()
    }

    /// Stops the log tails (the other tasks end by themselves; their answers are dropped
    /// with the channel).
    pub fn stop(&mut self) {
        self.stop_tails();
        if let Some(t) = self.timer.take() {
            t.abort();
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.stop();
        self.forward.abort();
    }
}

/// What a command's task works with: the hub's outbox, its cluster's remote and settings.
#[derive(Clone)]
struct Task {
    tx: UnboundedSender<Msg>,
    remote: Arc<dyn Remote>,
    s: Arc<HubSettings>,
}

impl Task {
    fn r(&self) -> &dyn Remote {
        self.remote.as_ref()
    }

    fn send(&self, m: Msg) {
        let _ = self.tx.send(m);
    }
}

/// What a task ends with: its message, or nothing (it sent its own, or has none).
trait Answer {
    fn send_to(self, t: &Task);
}

impl Answer for Msg {
    fn send_to(self, t: &Task) {
        t.send(self);
    }
}

impl Answer for () {
    fn send_to(self, _: &Task) {}
}

// Each command's task: its round trip (`io::`) and the message it answers with.

/// One of the user's own commands; it always answers, ran or not.
async fn custom(t: Task, mut run: crate::slurm::custom::CustomRun) -> Msg {
    run.timeout.get_or_insert(t.s.timeout);
    Msg::Custom(Box::new(io::custom::run(t.r(), run).await))
}

async fn poll(
    t: Task,
    gone: Vec<JobId>,
    reported: Arc<Mutex<Option<ConnState>>>,
    reuse: Arc<Mutex<io::poll::Reuse>>,
) -> Msg {
    let started = Instant::now();
    let (ix, name) = (t.s.ix, SharedStr::from(&t.s.cluster));
    let named = t.s.named.load(Ordering::Relaxed);
    reuse
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .labelled(u64::from(named));
    let label = move |j: &mut JobRecord| {
        j.id.set_cluster(ix);
        if named {
            j.cluster = name.clone();
        }
    };
    let s = &t.s;
    let result = io::poll::poll_reusing(t.r(), &s.query, &gone, s.timeout, &reuse, &label).await;
    #[cfg(debug_assertions)]
    if std::env::var_os("SLURMDASH_TEST_PANIC").is_some_and(|v| v == "worker") {
        panic!("SLURMDASH_TEST_PANIC=worker: a deliberate panic in the queue worker (debug builds only, for the exit-path tests)");
    }
    if let Err(e) = &result {
        tracing::error!(cluster = %t.s.cluster, error = %e, "refresh failed");
    }
    let state = t.remote.state();
    *reported.lock().unwrap_or_else(PoisonError::into_inner) = Some(state.clone());
    let (result, extra) = match result {
        Ok((jobs, extra)) => (Ok(jobs), Some(extra)),
        Err(e) => (Err(e), None),
    };
    Msg::Poll(PollMsg::Queue(Box::new(Refresh {
        result,
        extra,
        conn: Some((state, t.remote.host())),
        at: now(),
        took: started.elapsed(),
    })))
}

async fn detail(t: Task, id: JobId, asked: Arc<io::keep::Asked>) {
    // A finished job's detail comes from one sacct read that also gives its use figures.
    let (result, used) = io::history::detail(t.r(), &id, t.s.timeout).await;
    let to_keep = io::keep::to_keep(&result, t.s.keep_scripts);
    t.send(Msg::Job(JobMsg::Detail {
        id: id.clone(),
        result: Box::new(result),
    }));
    if let Some(u) = used {
        t.send(Msg::Job(JobMsg::JobUse {
            id,
            result: Box::new(u),
        }));
    }
    // While slurmctld has it: the script of a job slurmdash did not launch, for a relaunch
    // after it ended (on its own task: the next selection's read does not wait for it).
    if let Some(d) = to_keep {
        tokio::spawn(async move {
            let s = &t.s;
            let r = io::keep::keep(t.r(), &s.registry, &s.cluster, &asked, &d, s.timeout).await;
            tracing::debug!(cluster = %s.cluster, job = ?d.id, outcome = ?r, "batch script");
        });
    }
}

async fn finals(t: Task, ids: Vec<JobId>) -> Msg {
    Msg::Poll(PollMsg::FinalStates(
        io::poll::finals(t.r(), &ids, t.s.timeout).await,
    ))
}

async fn pending(t: Task, ask: Box<crate::slurm::pending::Ask>) -> Msg {
    let result = io::pending::fetch_batch(t.r(), &ask, t.s.timeout).await;
    Msg::Insight(InsightMsg::Pending {
        ask,
        result: Box::new(result),
        at: now(),
    })
}

async fn live(t: Task, target: Box<LiveTarget>) -> Msg {
    let result = io::live::sample(t.r(), &target, t.s.timeout).await;
    Msg::Job(JobMsg::Live {
        id: target.id.clone(),
        result: Box::new(result),
        at: now(),
    })
}

async fn top(t: Task, target: Box<crate::slurm::top::TopTarget>) -> Msg {
    let result = io::top::sample(t.r(), &target, t.s.timeout).await;
    Msg::Job(JobMsg::Top {
        id: target.id.clone(),
        result: Box::new(result),
        at: now(),
    })
}

async fn partitions(t: Task) -> Msg {
    let result = io::partitions::fetch(t.r(), t.s.timeout).await;
    Msg::Insight(InsightMsg::Partitions { result, at: now() })
}

async fn reservations(t: Task) -> Msg {
    let result = io::reservation::read(t.r(), t.s.timeout).await;
    Msg::Insight(InsightMsg::Reservations {
        result: Box::new(result),
        at: now(),
    })
}

async fn check_sooner(
    t: Task,
    id: JobId,
    mut alternatives: Vec<crate::slurm::why::Alternative>,
) -> Msg {
    let result = io::why::check(t.r(), &mut alternatives, t.s.timeout)
        .await
        .map(|()| alternatives);
    Msg::Job(JobMsg::SoonerChecked {
        id,
        result,
        at: now(),
    })
}

async fn apply_sooner(t: Task, id: JobId, change: crate::slurm::why::Change) -> Msg {
    let result = io::why::apply(t.r(), &id, &change, t.s.timeout).await;
    Msg::Job(JobMsg::SoonerApplied {
        id,
        words: change.words(),
        result,
    })
}

async fn site_limit(t: Task) -> Msg {
    let site = io::site_limit::read(t.r(), t.s.timeout).await;
    if let Some(v) = site.version {
        t.send(Msg::Poll(PollMsg::SlurmVersion(v)));
    }
    if let Some(d) = site.priority_calc {
        t.send(Msg::Poll(PollMsg::PriorityCalcPeriod(d)));
    }
    Msg::Poll(PollMsg::SiteLimit(site.limit))
}

async fn state_check(t: Task, ids: Vec<u64>) -> Msg {
    let result = io::poll::check(t.r(), &ids, t.s.timeout).await;
    if let Err(e) = &result {
        tracing::warn!(cluster = %t.s.cluster, error = %e, "state check failed");
    }
    Msg::Poll(PollMsg::StateCheck { result, at: now() })
}

async fn usage(t: Task, days: u32) -> Msg {
    let result = io::usage::read(t.r(), days, t.s.timeout).await;
    Msg::Insight(InsightMsg::Usage {
        days,
        result: Box::new(result),
        at: now(),
    })
}

async fn waits(t: Task) -> Msg {
    let result = io::usage::waits(t.r(), t.s.timeout).await;
    Msg::Insight(InsightMsg::Waits { result, at: now() })
}

async fn job_op(t: Task, op: JobOp) -> Msg {
    let result = io::ops::run(t.r(), &op, t.s.timeout).await;
    if let Err(e) = &result {
        tracing::error!(cluster = %t.s.cluster, error = %e, "job action failed");
    }
    Msg::Job(JobMsg::OpDone { op, result })
}

async fn edit_job(t: Task, id: JobId, edit: JobEdit) -> Msg {
    let result = io::ops::edit(t.r(), &id, &edit, t.s.timeout).await;
    Msg::Job(JobMsg::Edited { id, edit, result })
}

async fn limits(t: Task) -> Msg {
    Msg::Insight(InsightMsg::Limits(
        io::ops::partitions(t.r(), t.s.timeout).await,
    ))
}

async fn check_retries(t: Task) -> Msg {
    let s = &t.s;
    let secret = |n: &str| std::env::var(n).ok();
    let check = io::retry::RetryCheck {
        remote: t.r(),
        registry: &s.registry,
        cluster: &s.cluster,
        policy: s.retry.clone(),
        patterns: &s.patterns,
        timeout: s.timeout,
        secret: &secret,
        allow_submit: !s.read_only,
    };
    Msg::Launch(LaunchMsg::Retries(io::retry::check(&check).await))
}

async fn triage(
    t: Task,
    id: JobId,
    detail: Box<JobDetail>,
    source: DetailSource,
    results_dir: Option<String>,
) -> Msg {
    let result = io::triage::triage_job(
        t.r(),
        &detail,
        source,
        results_dir.as_deref(),
        &t.s.patterns,
    )
    .await;
    Msg::Job(JobMsg::Triaged {
        id,
        result: Box::new(result),
    })
}

async fn forward(t: Task, id: JobId, node: String, port: u16, path: String) -> Msg {
    let want = if port > 1023 { port } else { 8000 };
    let result = match crate::remote::free_local_port(want) {
        None => Err(format!("no free local port from {want} on")),
        Some(local) => t
            .remote
            .forward(local, &node, port, false)
            .await
            .map(|()| local)
            .map_err(|e| e.to_string()),
    };
    Msg::Job(JobMsg::Forwarded {
        id,
        node,
        port,
        path,
        result,
    })
}

async fn unforward(t: Task, tunnel: Tunnel) {
    if let Err(e) = t
        .remote
        .forward(tunnel.local, &tunnel.node, tunnel.port, true)
        .await
    {
        tracing::warn!(error = %e, "closing a tunnel");
    }
}

async fn history(t: Task, req: Request) {
    let generation = req.generation;
    let send = |p| {
        let _ = t.tx.send(Msg::Job(JobMsg::History {
            generation,
            result: Box::new(Ok(p)),
        }));
    };
    if let Err(e) = io::history::run(t.r(), &req, t.s.timeout, &send).await {
        t.send(Msg::Job(JobMsg::History {
            generation,
            result: Box::new(Err(e)),
        }));
    }
}

/// `A`: the job adopted with `[retry]`'s retries (no resumes), or why not.
async fn adopt(t: Task, id: JobId, results_root: String, job_dir_mode: u32) -> Msg {
    let s = &t.s;
    let result = async {
        let n = crate::launch::adopt::parse_id(&id.to_string())?;
        if s.read_only {
            return Err("read-only session: adopting jobs is off".to_string());
        }
        if !s.retry.guard {
            return Err("[retry] guard = false: adopting a job means a guard on the cluster".into());
        }
        let plan = crate::launch::guard::GuardPlan::resuming(
            s.retry.max_retries,
            &[],
            0,
            &[],
            &s.patterns,
            s.retry.webhook.as_deref(),
        )?;
        let plan = crate::launch::guard::GuardPlan {
            webhook_plain_http: s.retry.webhook_plain_http,
            ..plan
        };
        let target = io::adopt::Target {
            remote: t.r(),
            cluster: &s.cluster,
            registry: &s.registry,
            results_root: &results_root,
            job_dir_mode,
            timeout: s.timeout,
        };
        let a = io::adopt::adopt(&target, n, plan.clone()).await?;
        Ok(format!(
            "job {n} adopted as launch {}: guard {} resubmits Slurm's copy of its script after an infrastructure failure (up to {}×); a resubmission writes to slurm-logs/ in {}",
            a.local_id,
            a.guard,
            plan.max_attempts - 1,
            a.job_dir
        ))
    }
    .await;
    if result.is_ok() {
        crate::worker::launch::send_launches(&s.registry, &s.cluster, &t.tx);
    }
    Msg::Launch(LaunchMsg::Adopted { id, result })
}

async fn relaunch(t: Task, id: JobId, job_dir: String) -> Msg {
    let result = io::history::relaunch(t.r(), &id, &job_dir, t.s.timeout).await;
    if result.is_err() {
        // An adopted launch has no spec: its own script, as adopt kept it.
        let adopted = match io::history::recover_adopted(t.r(), &id, &job_dir, t.s.timeout).await {
            Ok(None) => None,
            Ok(Some(r)) => Some(Ok(r)),
            Err(e) => Some(Err(e)),
        };
        if let Some(result) = adopted {
            return Msg::Launch(LaunchMsg::Recovered {
                id,
                result: Box::new(result),
            });
        }
    }
    Msg::Launch(LaunchMsg::Relaunch {
        id,
        result: Box::new(result),
    })
}

/// `:grep` / `:errors`: the jobs' log paths, then one grep over them.
async fn grep(t: Task, req: crate::logview::found::GrepRequest) -> Msg {
    Msg::Grep(Box::new(io::grep::search(t.r(), req, t.s.timeout).await))
}

/// `L` on an array: its tasks, with the launch's spec and the selected task's use, or what
/// can be recovered of the selected task, read at the same time.
async fn rerun(t: Task, id: JobId, job_dir: Option<String>) -> Msg {
    use crate::launch::relaunch::{RerunRead, RerunSource};
    let array = io::rerun::read(t.r(), id.base(), t.s.timeout);
    let source = async {
        match job_dir {
            Some(dir) => RerunSource::Launch {
                result: Box::new(io::history::relaunch(t.r(), &id, &dir, t.s.timeout).await),
                job_dir: dir,
            },
            None => RerunSource::Recovered(Box::new(recovered(&t, &id).await)),
        }
    };
    let (array, source) = tokio::join!(array, source);
    Msg::Launch(LaunchMsg::Rerun {
        id,
        result: Box::new(RerunRead { array, source }),
    })
}

async fn recover(t: Task, id: JobId) -> Msg {
    let result = recovered(&t, &id).await;
    Msg::Launch(LaunchMsg::Recovered {
        id,
        result: Box::new(result),
    })
}

async fn recovered(t: &Task, id: &JobId) -> Result<crate::launch::relaunch::Recovered, String> {
    let s = &t.s;
    let kept = crate::kept_scripts::KeptScripts::under(s.registry.dir());
    io::history::recover(
        t.r(),
        id,
        s.timeout,
        // Off (`[ui] keep_scripts = false`): no copy is read or mentioned.
        s.keep_scripts.then_some((&kept, s.cluster.as_str())),
    )
    .await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every remote command a task runs reaches App as one `Msg::Ran`, labelled with why:
    /// the refresh's batch as the refresh, a cancel as the user's key.
    #[tokio::test]
    async fn each_task_records_its_commands_with_why_they_ran() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let remote = Arc::new(crate::remote::fake::FakeRemote::new("login1"));
        let mut hub = Hub::new(remote, HubSettings::new("dev", Duration::from_secs(5)), tx);
        hub.run(Cmd::PollQueue);
        let op = JobOp::new(crate::slurm::ops::OpKind::Cancel, ["4242".parse().unwrap()]);
        hub.run(Cmd::Op(op));
        let mut ran = Vec::new();
        while ran.len() < 2 {
            let m = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
            let Ok(Some(Msg::Cluster(0, m))) = m else {
                panic!("{m:?}")
            };
            if let Msg::Ran(r) = *m {
                ran.push(*r);
            }
        }
        let refresh = ran.iter().find(|r| r.why == Why::Refresh).unwrap();
        assert!(refresh.rpcs.ctld >= 2, "{refresh:?}");
        let cancel = ran.iter().find(|r| r.why == Why::Key).unwrap();
        assert!(cancel.argv.iter().any(|a| a == "4242"), "{cancel:?}");
    }

    /// The dashboard's first clock tick may set a new interval (the RPC budget's) before
    /// the timer task ever ran: the first refresh still goes at once, the next one interval
    /// later.
    #[tokio::test(start_paused = true)]
    async fn a_new_interval_before_the_first_refresh_keeps_it_at_once() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let remote = Arc::new(crate::remote::fake::FakeRemote::new("login1"));
        let mut hub = Hub::new(remote, HubSettings::new("dev", Duration::from_secs(5)), tx);
        hub.start_refresh_timer(Duration::from_secs(5));
        hub.run(Cmd::SetPollInterval(Duration::from_secs(40)));
        let first = tokio::time::timeout(Duration::from_secs(1), rx.recv()).await;
        assert!(
            matches!(first, Ok(Some(Msg::Cluster(0, ref m))) if matches!(**m, Msg::Poll(PollMsg::PollDue))),
            "{first:?}"
        );
        // Asked once: a new interval now moves the next refresh one interval away.
        hub.run(Cmd::SetPollInterval(Duration::from_secs(40)));
        let early = tokio::time::timeout(Duration::from_secs(39), rx.recv()).await;
        assert!(early.is_err(), "{early:?}");
        let next = tokio::time::timeout(Duration::from_secs(2), rx.recv()).await;
        assert!(matches!(next, Ok(Some(_))), "{next:?}");
    }
}
