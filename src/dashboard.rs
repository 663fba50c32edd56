//! The event loop: one `select!` over terminal events, worker messages and timers. It
//! hands messages to `App::update`, runs the commands that come back as background tasks,
//! and draws only when something changed. No remote call ever runs on this path.

use std::sync::Arc;
use std::time::{Duration, Instant};

use color_eyre::eyre::{Result, WrapErr};
use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

use crate::action::{Cmd, Msg};
use crate::app::App;
use crate::config::{Cluster, Loaded};
use crate::keymap::Keymap;
use crate::queue::QueueView;
use crate::remote::Remote;
use crate::slurm::command::SqueueQuery;
use crate::slurm::model::JobId;
use crate::tui;
use crate::theme::Theme;
use crate::worker::{fetch, ops, tailer};

/// What the dashboard shows and how it reaches the cluster.
pub struct Session {
    pub cluster: Cluster,
    pub remote: Arc<dyn Remote>,
    pub query: SqueueQuery,
    pub scope: String,
    pub columns: Option<Vec<crate::queue::Column>>,
    pub quick_cancel: bool,
    /// `--read-only`: kept when switching clusters.
    pub force_read_only: bool,
}

/// The transport's counters are sampled for :stats every this many clock ticks (seconds).
const STATS_EVERY_TICKS: u64 = 5;

fn now() -> chrono::NaiveDateTime {
    chrono::Local::now().naive_local()
}

/// Runs background work for the App, one queue poll and one detail fetch at a time.
struct Workers {
    tx: UnboundedSender<Msg>,
    remote: Arc<dyn Remote>,
    query: SqueueQuery,
    timeout: Duration,
    tails: Vec<JoinHandle<()>>,
    detail_busy: bool,
    detail_next: Option<JobId>,
    tail_every: Duration,
    patterns: Arc<crate::triage::Patterns>,
    registry: Arc<crate::registry::Registry>,
    cluster: String,
    retry: crate::retry::RetryPolicy,
    read_only: bool,
    notify: crate::notify::Settings,
    pending_busy: bool,
    pending_next: Option<Box<crate::slurm::model::Job>>,
}

impl Workers {
    fn run(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::PollQueue => self.poll(Vec::new()),
            Cmd::Reconnect => self.remote.retry_now(),
            Cmd::PollWith { sacct } => self.poll(sacct),
            Cmd::FetchPending(job) => {
                if self.pending_busy {
                    self.pending_next = Some(job);
                } else {
                    self.fetch_pending(job);
                }
            }
            Cmd::FetchPartitions => {
                let (tx, remote, timeout) = (self.tx.clone(), self.remote.clone(), self.timeout);
                tokio::spawn(async move {
                    let result = crate::worker::partitions::fetch(remote.as_ref(), timeout).await;
                    let _ = tx.send(Msg::Partitions { result, at: now() });
                });
            }
            Cmd::FetchDetail(id) => {
                if self.detail_busy {
                    self.detail_next = Some(id);
                } else {
                    self.fetch_detail(id);
                }
            }
            Cmd::Tail(targets) => {
                for t in self.tails.drain(..) {
                    t.abort();
                }
                for (job, stream, path) in targets {
                    self.tails.push(tailer::spawn_tailer(
                        self.remote.clone(),
                        job,
                        stream,
                        path,
                        self.tail_every,
                        self.tx.clone(),
                    ));
                }
            }
            Cmd::Op(op) => {
                let (tx, remote, timeout) = (self.tx.clone(), self.remote.clone(), self.timeout);
                tokio::spawn(async move {
                    let result = ops::run(remote.as_ref(), &op, timeout).await;
                    let _ = tx.send(Msg::OpDone { op, result });
                });
            }
            Cmd::Edit(id, edit) => {
                let (tx, remote, timeout) = (self.tx.clone(), self.remote.clone(), self.timeout);
                tokio::spawn(async move {
                    let result = ops::edit(remote.as_ref(), &id, &edit, timeout).await;
                    let _ = tx.send(Msg::Edited { id, edit, result });
                });
            }
            Cmd::FetchLimits => {
                let (tx, remote, timeout) = (self.tx.clone(), self.remote.clone(), self.timeout);
                tokio::spawn(async move {
                    let _ = tx.send(Msg::Limits(ops::partitions(remote.as_ref(), timeout).await));
                });
            }
            Cmd::CheckRetries => {
                let (tx, remote, patterns, registry) = (
                    self.tx.clone(),
                    self.remote.clone(),
                    self.patterns.clone(),
                    self.registry.clone(),
                );
                let (cluster, policy, timeout, read_only) = (
                    self.cluster.clone(),
                    self.retry,
                    self.timeout,
                    self.read_only,
                );
                tokio::spawn(async move {
                    let secret = |n: &str| std::env::var(n).ok();
                    let check = crate::worker::retry::RetryCheck {
                        remote: remote.as_ref(),
                        registry: &registry,
                        cluster: &cluster,
                        policy,
                        patterns: &patterns,
                        timeout,
                        secret: &secret,
                        allow_submit: !read_only,
                    };
                    let result = crate::worker::retry::check(&check).await;
                    let _ = tx.send(Msg::Retries(result));
                });
            }
            Cmd::Quit | Cmd::Suspend | Cmd::SwitchCluster(_) => {}
            Cmd::Triage {
                id,
                detail,
                source,
                results_dir,
            } => {
                let (tx, remote, patterns) =
                    (self.tx.clone(), self.remote.clone(), self.patterns.clone());
                tokio::spawn(async move {
                    let result = crate::worker::triage::triage_job(
                        remote.as_ref(),
                        &detail,
                        source,
                        results_dir.as_deref(),
                        &patterns,
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
                cmd,
                self.remote.clone(),
                self.tx.clone(),
                self.timeout,
            ),
            Cmd::Notify(n) => crate::notify::deliver(&n, &self.notify),
        }
    }

    fn fetch_detail(&mut self, id: JobId) {
        self.detail_busy = true;
        let (tx, remote, timeout) = (self.tx.clone(), self.remote.clone(), self.timeout);
        tokio::spawn(async move {
            let result = fetch::detail(remote.as_ref(), &id, timeout).await;
            let _ = tx.send(Msg::Detail {
                id,
                result: Box::new(result),
            });
        });
    }

    /// One refresh: squeue and sacct for `gone`, in one remote exec.
    fn poll(&mut self, gone: Vec<JobId>) {
        let (tx, remote, query, timeout) = (
            self.tx.clone(),
            self.remote.clone(),
            self.query.clone(),
            self.timeout,
        );
        tokio::spawn(async move {
            let started = Instant::now();
            let result = crate::worker::poll::poll(remote.as_ref(), &query, &gone, timeout).await;
            let _ = tx.send(Msg::Conn {
                state: remote.state(),
                host: remote.host(),
            });
            #[cfg(debug_assertions)]
            if std::env::var_os("SLURMDASH_TEST_PANIC").is_some_and(|v| v == "worker") {
                panic!("SLURMDASH_TEST_PANIC=worker: a deliberate panic in the queue worker (debug builds only, for the exit-path tests)");
            }
            let result = result.map(|(jobs, extra)| {
                let _ = tx.send(Msg::PollExtra(Box::new(extra)));
                jobs
            });
            let _ = tx.send(Msg::Queue {
                result,
                at: now(),
                took: started.elapsed(),
            });
        });
    }

    fn fetch_pending(&mut self, job: Box<crate::slurm::model::Job>) {
        self.pending_busy = true;
        let (tx, remote, timeout) = (self.tx.clone(), self.remote.clone(), self.timeout);
        tokio::spawn(async move {
            let result = crate::worker::pending::fetch(remote.as_ref(), &job, timeout).await;
            let _ = tx.send(Msg::Pending {
                id: job.id.clone(),
                result: Box::new(result),
            });
        });
    }

    /// A pending-info result arrived: start the newest request that waited behind it.
    fn pending_done(&mut self) {
        self.pending_busy = false;
        if let Some(job) = self.pending_next.take() {
            self.fetch_pending(job);
        }
    }

    /// A detail result arrived: start the newest request that waited behind it.
    fn detail_done(&mut self) {
        self.detail_busy = false;
        if let Some(id) = self.detail_next.take() {
            self.fetch_detail(id);
        }
    }

    fn stop(&mut self) {
        for t in self.tails.drain(..) {
            t.abort();
        }
    }
}

/// Runs the dashboard until `q`, a signal (SIGHUP when the terminal window closes,
/// SIGTERM, SIGINT), a terminal error or a panic in any task. Every way out restores the
/// terminal, closes the SSH master this session started and removes its temporary files.
pub async fn run(loaded: &Loaded, session: Session, keymap: Keymap) -> Result<()> {
    use futures_util::FutureExt;
    let mut session = session;
    tui::install_panic_hook();
    let mut term = tui::enter().wrap_err("opening the terminal")?;
    let result = std::panic::AssertUnwindSafe(event_loop(&mut term, loaded, &mut session, keymap))
        .catch_unwind()
        .await;
    tui::leave();
    session.remote.close().await;
    match result {
        Ok(r) => r,
        Err(_) => Err(color_eyre::eyre::eyre!(
            "slurmdash stopped after an internal error (the panic message is above); the terminal was restored and the SSH connection closed"
        )),
    }
}

fn new_app(session: &Session, loaded: &Loaded, keymap: Keymap, size: (u16, u16)) -> App {
    let theme = Theme::from_env();
    let queue = match &session.columns {
        Some(c) => QueueView::new(c.clone()),
        None => QueueView::default(),
    };
    let mut app = App::new(
        &session.cluster.name,
        &session.scope,
        keymap,
        theme,
        queue,
        session.cluster.settings.poll_interval(),
        now(),
    );
    app.size = size;
    app.read_only = session.force_read_only || session.cluster.settings.read_only;
    app.quick_cancel = session.quick_cancel;
    app.retry.policy = loaded.config.retry;
    app.events.own = own_jobs(session);
    let (base, min, max) = session.cluster.settings.poll_bounds();
    app.insight.bounds = crate::app::insight::PollBounds::new(base, min, max);
    app
}

/// Which listed jobs are the user's own, for job-change events.
fn own_jobs(session: &Session) -> crate::app::Own {
    use crate::slurm::command::Scope;
    let me = session
        .cluster
        .settings
        .user
        .clone()
        .or_else(|| std::env::var("USER").ok());
    match (&session.query.scope, me) {
        (Scope::Me, _) => crate::app::Own::Listed,
        (Scope::User(u), Some(me)) if *u == me => crate::app::Own::Listed,
        (Scope::All, Some(me)) => crate::app::Own::User(me),
        _ => crate::app::Own::Nobody,
    }
}

async fn event_loop(
    term: &mut tui::Term,
    loaded: &Loaded,
    session: &mut Session,
    keymap: Keymap,
) -> Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let size = term
        .size()
        .map(|s| (s.width, s.height))
        .unwrap_or((120, 40));
    let mut app = new_app(session, loaded, keymap.clone(), size);
    let mut workers = new_workers(session, tx.clone(), loaded);
    for cmd in crate::worker::launch::setup(&mut app, loaded, &session.cluster) {
        workers.run(cmd);
    }
    let mut events = EventStream::new();
    let mut clock = tokio::time::interval(Duration::from_secs(1));
    clock.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut poll = tokio::time::interval(session.cluster.settings.poll_interval());
    poll.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut stop = crate::signals::Stop::new()?;
    let (switch_tx, mut switch_rx) =
        mpsc::unbounded_channel::<(u64, Result<(Cluster, Arc<dyn Remote>)>)>();
    let mut switching: u64 = 0;
    let mut dirty = true;
    let mut ticks: u64 = 0;
    loop {
        if dirty {
            let _frame = tui::draw_guard();
            if tui::panicked() {
                return Err(color_eyre::eyre::eyre!(
                    "a background task panicked (the message is above)"
                ));
            }
            term.draw(|f| crate::ui::draw(f, &app))
                .wrap_err("drawing the screen")?;
            dirty = false;
        }
        let msg = tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) => Msg::Key(k),
                Some(Ok(Event::Mouse(m))) => Msg::Mouse(m),
                Some(Ok(Event::Resize(w, h))) => Msg::Resize(w, h),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e).wrap_err("reading the terminal"),
                None => return Ok(()),
            },
            Some(msg) = rx.recv() => msg,
            Some((generation, result)) = switch_rx.recv() => {
                if generation == switching {
                    match result {
                        Ok((cluster, remote)) => {
                            workers.stop();
                            let old = std::mem::replace(session, switched(loaded, session, cluster, remote));
                            tokio::spawn(async move { old.remote.close().await });
                            app = new_app(session, loaded, keymap.clone(), app.size);
                            workers = new_workers(session, tx.clone(), loaded);
                            for cmd in crate::worker::launch::setup(&mut app, loaded, &session.cluster) {
                                workers.run(cmd);
                            }
                            poll = tokio::time::interval(session.cluster.settings.poll_interval());
                            poll.set_missed_tick_behavior(MissedTickBehavior::Skip);
                        }
                        Err(e) => app.status.note = Some(format!("{e:#}")),
                    }
                }
                dirty = true;
                continue;
            }
            _ = clock.tick() => Msg::Tick(now()),
            _ = poll.tick() => Msg::PollDue,
            (name, _) = stop.recv() => {
                tracing::info!(signal = name, "stopping on a signal");
                return Ok(());
            }
            _ = tui::wait_for_panic() => {
                return Err(color_eyre::eyre::eyre!(
                    "a background task panicked (the message is above)"
                ))
            }
        };
        if matches!(msg, Msg::Detail { .. }) {
            workers.detail_done();
        }
        if matches!(msg, Msg::Pending { .. }) {
            workers.pending_done();
        }
        if let Msg::Tick(at) = &msg {
            ticks += 1;
            if ticks % STATS_EVERY_TICKS == 1 {
                let stats = session.remote.stats();
                let _ = tx.send(Msg::RemoteStats { stats, at: *at });
            }
            // The connection state as the transport sees it now (a countdown while it
            // waits to reconnect), without waiting for the next refresh to report it.
            let state = session.remote.state();
            if state != app.status.conn {
                let _ = tx.send(Msg::Conn { state, host: None });
            }
        }
        let interval_before = app.status.poll_interval;
        let error_before = app.status.last_error.clone();
        let queue_replaced = matches!(msg, Msg::Queue { .. });
        let cmds = app.update(msg);
        if queue_replaced {
            crate::memory::release_free();
        }
        for cmd in cmds {
            match cmd {
                Cmd::Quit => {
                    workers.stop();
                    return Ok(());
                }
                Cmd::Suspend => {
                    tui::suspend(term).wrap_err("resuming after ctrl-z")?;
                }
                Cmd::SwitchCluster(name) => {
                    match loaded.cluster(Some(&name), &crate::config::Env::from_process()) {
                        Ok(cluster) => {
                            // The new connection is checked on a worker (`ssh -O check` can
                            // hang on a stale socket); the answer comes back below.
                            switching += 1;
                            app.status.note = Some(format!("switching to cluster `{name}`…"));
                            let (stx, generation) = (switch_tx.clone(), switching);
                            tokio::spawn(async move {
                                let remote = crate::cli::connect_quiet(&cluster).await;
                                let _ = stx.send((generation, remote.map(|r| (cluster, r))));
                            });
                        }
                        Err(e) => app.status.note = Some(format!("{e:#}")),
                    }
                }
                other => workers.run(other),
            }
        }
        if app.status.last_error != error_before {
            if let Some(e) = &app.status.last_error {
                tracing::error!(cluster = %session.cluster.name, error = %e, "shown on the status bar");
            }
        }
        if app.status.poll_interval != interval_before {
            // Adaptive interval: the next refresh comes one new interval from now.
            let every = app.status.poll_interval;
            poll = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            poll.set_missed_tick_behavior(MissedTickBehavior::Skip);
        }
        dirty = true;
    }
}

fn new_workers(session: &Session, tx: UnboundedSender<Msg>, loaded: &Loaded) -> Workers {
    Workers {
        tx,
        remote: session.remote.clone(),
        query: session.query.clone(),
        timeout: session.cluster.settings.command_timeout(),
        tails: Vec::new(),
        detail_busy: false,
        detail_next: None,
        pending_busy: false,
        pending_next: None,
        tail_every: Duration::from_secs(2).min(session.cluster.settings.poll_interval()),
        // The config was validated at load; built-ins alone if it somehow was not.
        patterns: Arc::new(
            crate::triage::Patterns::new(&loaded.config.triage)
                .unwrap_or_else(|_| crate::triage::Patterns::builtin()),
        ),
        registry: Arc::new(crate::registry::Registry::open_default()),
        cluster: session.cluster.name.clone(),
        retry: loaded.config.retry,
        read_only: session.force_read_only || session.cluster.settings.read_only,
        notify: crate::notify::Settings::from_config(&loaded.config.notify),
    }
}

/// A session on another cluster, showing the same scope (own jobs, --all, filters).
fn switched(
    loaded: &Loaded,
    current: &Session,
    cluster: Cluster,
    remote: Arc<dyn Remote>,
) -> Session {
    Session {
        query: current.query.clone(),
        scope: current.scope.clone(),
        columns: loaded.config.ui.columns.clone(),
        quick_cancel: current.quick_cancel,
        force_read_only: current.force_read_only,
        cluster,
        remote,
    }
}
