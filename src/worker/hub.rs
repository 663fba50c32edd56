//! The worker hub: the only place a `Cmd` becomes a task. It owns the single-flight rules
//! (one refresh, one detail fetch, one pending-job lookup at a time; the newest waiting
//! request wins; each frees its own slot), answers each refresh with one message, and
//! samples the transport for the status bar and :stats.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use crate::action::{Cmd, Msg};
use crate::io::ops;
use crate::payload::{ConnState, Refresh};
use crate::remote::Remote;
use crate::slurm::command::SqueueQuery;
use crate::slurm::model::{Job, JobId};
use crate::worker::flight::Flight;
use crate::worker::tailer;

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
    pending: Flight<Box<Job>>,
    live: Flight<Box<crate::slurm::live::LiveTarget>>,
    /// The connection state last reported to App (by a refresh or by `tick`).
    reported: Arc<Mutex<Option<ConnState>>>,
    ticks: u64,
    /// Sends `Msg::PollDue` at the refresh interval, once started.
    timer: Option<JoinHandle<()>>,
    /// The files view's copy under way.
    files: crate::worker::files::FilesWorker,
    /// The jobs whose batch script was asked to be kept (once each).
    asked: Arc<crate::io::keep::Asked>,
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
            files: Default::default(),
            asked: Default::default(),
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
        match cmd {
            Cmd::PollQueue => self.refresh(Vec::new()),
            Cmd::PollWith { sacct } => self.refresh(sacct),
            Cmd::Reconnect => self.remote.retry_now(),
            Cmd::FetchDetail(id) => {
                let (tx, remote, s) = self.parts();
                let asked = self.asked.clone();
                self.detail.request(id, move |id| {
                    let (tx, remote, s) = (tx.clone(), remote.clone(), s.clone());
                    let asked = asked.clone();
                    async move {
                        // A finished job's detail comes from one sacct read that also
                        // gives its use figures.
                        let (result, used) =
                            crate::io::history::detail(remote.as_ref(), &id, s.timeout).await;
                        let to_keep = crate::io::keep::to_keep(&result, s.keep_scripts);
                        let _ = tx.send(Msg::Detail {
                            id: id.clone(),
                            result: Box::new(result),
                        });
                        if let Some(u) = used {
                            let _ = tx.send(Msg::JobUse {
                                id,
                                result: Box::new(u),
                            });
                        }
                        // While slurmctld has it: the script of a job slurmdash did not
                        // launch, for a relaunch after it ended (on its own task: the next
                        // selection's read does not wait for it).
                        if let Some(d) = to_keep {
                            tokio::spawn(async move {
                                let r = crate::io::keep::keep(
                                    remote.as_ref(),
                                    &s.registry,
                                    &s.cluster,
                                    &asked,
                                    &d,
                                    s.timeout,
                                )
                                .await;
                                tracing::debug!(cluster = %s.cluster, job = ?d.id, outcome = ?r, "batch script");
                            });
                        }
                    }
                });
            }
            Cmd::FetchPending(job) => {
                let (tx, remote, s) = self.parts();
                self.pending.request(job, move |job| {
                    let (tx, remote, s) = (tx.clone(), remote.clone(), s.clone());
                    async move {
                        let result =
                            crate::io::pending::fetch(remote.as_ref(), &job, s.timeout).await;
                        let _ = tx.send(Msg::Pending {
                            id: job.id.clone(),
                            result: Box::new(result),
                        });
                    }
                });
            }
            Cmd::FetchPartitions => {
                let (tx, remote, s) = self.parts();
                tokio::spawn(async move {
                    let result = crate::io::partitions::fetch(remote.as_ref(), s.timeout).await;
                    let _ = tx.send(Msg::Partitions { result, at: now() });
                });
            }
            Cmd::FetchUsage { days } => {
                let (tx, remote, s) = self.parts();
                tokio::spawn(async move {
                    let result = crate::io::usage::read(remote.as_ref(), days, s.timeout).await;
                    let _ = tx.send(Msg::Usage {
                        days,
                        result: Box::new(result),
                        at: now(),
                    });
                });
            }
            Cmd::FetchWaits => {
                let (tx, remote, s) = self.parts();
                tokio::spawn(async move {
                    let result = crate::io::usage::waits(remote.as_ref(), s.timeout).await;
                    let _ = tx.send(Msg::Waits { result, at: now() });
                });
            }
            Cmd::Tail(targets) => {
                self.stop_tails();
                for (job, stream, path) in targets {
                    self.tails.push(tailer::spawn_tailer(
                        self.remote.clone(),
                        job,
                        stream,
                        path,
                        self.s.tail_every,
                        self.tx.clone(),
                    ));
                }
            }
            Cmd::Op(op) => {
                let (tx, remote, s) = self.parts();
                tokio::spawn(async move {
                    let result = ops::run(remote.as_ref(), &op, s.timeout).await;
                    if let Err(e) = &result {
                        tracing::error!(cluster = %s.cluster, error = %e, "job action failed");
                    }
                    let _ = tx.send(Msg::OpDone { op, result });
                });
            }
            Cmd::Edit(id, edit) => {
                let (tx, remote, s) = self.parts();
                tokio::spawn(async move {
                    let result = ops::edit(remote.as_ref(), &id, &edit, s.timeout).await;
                    let _ = tx.send(Msg::Edited { id, edit, result });
                });
            }
            Cmd::FetchLimits => {
                let (tx, remote, s) = self.parts();
                tokio::spawn(async move {
                    let _ = tx.send(Msg::Limits(
                        ops::partitions(remote.as_ref(), s.timeout).await,
                    ));
                });
            }
            Cmd::CheckRetries => {
                let (tx, remote, s) = self.parts();
                tokio::spawn(async move {
                    let secret = |n: &str| std::env::var(n).ok();
                    let check = crate::io::retry::RetryCheck {
                        remote: remote.as_ref(),
                        registry: &s.registry,
                        cluster: &s.cluster,
                        policy: s.retry.clone(),
                        patterns: &s.patterns,
                        timeout: s.timeout,
                        secret: &secret,
                        allow_submit: !s.read_only,
                    };
                    let result = crate::io::retry::check(&check).await;
                    let _ = tx.send(Msg::Retries(result));
                });
            }
            Cmd::Triage {
                id,
                detail,
                source,
                results_dir,
            } => {
                let (tx, remote, s) = self.parts();
                tokio::spawn(async move {
                    let result = crate::io::triage::triage_job(
                        remote.as_ref(),
                        &detail,
                        source,
                        results_dir.as_deref(),
                        &s.patterns,
                    )
                    .await;
                    let _ = tx.send(Msg::Triaged {
                        id,
                        result: Box::new(result),
                    });
                });
            }
            cmd @ (Cmd::FetchLaunchFacts
            | Cmd::TestOnly(_)
            | Cmd::Submit { .. }
            | Cmd::LoadRegistryJobs(_)) => crate::worker::launch::spawn(
                with_guard(cmd, &self.s.retry, &self.s.patterns),
                self.remote.clone(),
                self.s.registry.clone(),
                self.tx.clone(),
                self.s.timeout,
            ),
            Cmd::Notify(n) => crate::notify::deliver(&n, &self.s.notify),
            Cmd::SetPollInterval(every) => {
                // The next refresh comes one new interval from now.
                if self.timer.is_some() {
                    self.start_timer(tokio::time::Instant::now() + every, every);
                }
            }
            Cmd::Forward {
                id,
                node,
                port,
                path,
            } => {
                let (tx, remote, _) = self.parts();
                tokio::spawn(async move {
                    let want = if port > 1023 { port } else { 8000 };
                    let result = match crate::remote::free_local_port(want) {
                        None => Err(format!("no free local port from {want} on")),
                        Some(local) => remote
                            .forward(local, &node, port, false)
                            .await
                            .map(|()| local)
                            .map_err(|e| e.to_string()),
                    };
                    let _ = tx.send(Msg::Forwarded {
                        id,
                        node,
                        port,
                        path,
                        result,
                    });
                });
            }
            Cmd::Unforward(t) => {
                let remote = self.remote.clone();
                tokio::spawn(async move {
                    if let Err(e) = remote.forward(t.local, &t.node, t.port, true).await {
                        tracing::warn!(error = %e, "closing a tunnel");
                    }
                });
            }
            Cmd::History(req) => {
                let (tx, remote, s) = self.parts();
                tokio::spawn(async move {
                    let generation = req.generation;
                    let send = |p| {
                        let _ = tx.send(Msg::History {
                            generation,
                            result: Box::new(Ok(p)),
                        });
                    };
                    let r = crate::io::history::run(remote.as_ref(), &req, s.timeout, &send).await;
                    if let Err(e) = r {
                        let _ = tx.send(Msg::History {
                            generation,
                            result: Box::new(Err(e)),
                        });
                    }
                });
            }
            Cmd::Relaunch { id, job_dir } => {
                let (tx, remote, s) = self.parts();
                tokio::spawn(async move {
                    let result =
                        crate::io::history::relaunch(remote.as_ref(), &id, &job_dir, s.timeout)
                            .await;
                    let _ = tx.send(Msg::Relaunch {
                        id,
                        result: Box::new(result),
                    });
                });
            }
            Cmd::Recover(id) => {
                let (tx, remote, s) = self.parts();
                tokio::spawn(async move {
                    let kept = crate::kept_scripts::KeptScripts::under(s.registry.dir());
                    let result = crate::io::history::recover(
                        remote.as_ref(),
                        &id,
                        s.timeout,
                        // Off (`[ui] keep_scripts = false`): no copy is read or mentioned.
                        s.keep_scripts.then_some((&kept, s.cluster.as_str())),
                    )
                    .await;
                    let _ = tx.send(Msg::Recovered {
                        id,
                        result: Box::new(result),
                    });
                });
            }
            Cmd::SampleLive(t) => crate::worker::live::spawn(
                &self.live,
                t,
                self.remote.clone(),
                self.tx.clone(),
                self.s.timeout,
            ),
            Cmd::Files(c) => {
                let (tx, remote, s) = self.parts();
                self.files.run(c, remote, tx, s.timeout);
            }
            Cmd::ToCluster(_, c) => self.run(*c),
            Cmd::Quit | Cmd::Suspend | Cmd::AddCluster(_) | Cmd::Shell { .. } => {}
        }
    }

    fn parts(&self) -> (UnboundedSender<Msg>, Arc<dyn Remote>, Arc<HubSettings>) {
        (self.tx.clone(), self.remote.clone(), self.s.clone())
    }

    /// One refresh (squeue, start estimates, sacct for `gone`) in one remote exec, answered
    /// by one message.
    fn refresh(&mut self, gone: Vec<JobId>) {
        let (tx, remote, s) = self.parts();
        let reported = self.reported.clone();
        self.refresh.request(gone, move |gone| {
            let (tx, remote, s) = (tx.clone(), remote.clone(), s.clone());
            let reported = reported.clone();
            async move {
                let started = Instant::now();
                let result =
                    crate::io::poll::poll(remote.as_ref(), &s.query, &gone, s.timeout).await;
                #[cfg(debug_assertions)]
                if std::env::var_os("SLURMDASH_TEST_PANIC").is_some_and(|v| v == "worker") {
                    panic!("SLURMDASH_TEST_PANIC=worker: a deliberate panic in the queue worker (debug builds only, for the exit-path tests)");
                }
                if let Err(e) = &result {
                    tracing::error!(cluster = %s.cluster, error = %e, "refresh failed");
                }
                let state = remote.state();
                *reported.lock().unwrap_or_else(PoisonError::into_inner) = Some(state.clone());
                let (result, extra) = match result {
                    Ok((jobs, extra)) => (Ok(jobs), Some(extra)),
                    Err(e) => (Err(e), None),
                };
                let _ = tx.send(Msg::Queue(Box::new(Refresh {
                    result,
                    extra,
                    conn: Some((state, remote.host())),
                    at: now(),
                    took: started.elapsed(),
                })));
            }
        });
    }

    /// Once a second: the transport's counters every few seconds, and its connection state
    /// when it changed since last reported (a countdown while it waits to reconnect), without
    /// waiting for the next refresh to report it.
    pub fn tick(&mut self, at: chrono::NaiveDateTime) {
        self.ticks += 1;
        if self.ticks % STATS_EVERY_TICKS == 1 {
            let stats = self.remote.stats();
            let _ = self.tx.send(Msg::RemoteStats { stats, at });
        }
        let state = self.remote.state();
        let mut reported = self.reported.lock().unwrap_or_else(PoisonError::into_inner);
        if reported.as_ref() != Some(&state) {
            *reported = Some(state.clone());
            let _ = self.tx.send(Msg::Conn { state, host: None });
        }
    }

    /// Asks for a refresh now and then every `every` (`Msg::PollDue`); the adaptive
    /// interval moves it with `Cmd::SetPollInterval`.
    pub fn start_refresh_timer(&mut self, every: Duration) {
        self.start_timer(tokio::time::Instant::now(), every);
    }

    fn start_timer(&mut self, first: tokio::time::Instant, every: Duration) {
        if let Some(t) = self.timer.take() {
            t.abort();
        }
        let tx = self.tx.clone();
        self.timer = Some(tokio::spawn(async move {
            let mut iv = tokio::time::interval_at(first, every);
            iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                iv.tick().await;
                if tx.send(Msg::PollDue).is_err() {
                    return;
                }
            }
        }));
    }

    fn stop_tails(&mut self) {
        for t in self.tails.drain(..) {
            t.abort();
        }
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
