//! The event loop: one `select!` over terminal events, worker messages and timers. It
//! hands messages to `App::update`, runs the commands that come back as background tasks,
//! and draws only when something changed. No remote call ever runs on this path.

use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::{Result, WrapErr};
use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::time::MissedTickBehavior;

use crate::action::{Cmd, Msg};
use crate::app::App;
use crate::config::{Cluster, Loaded};
use crate::keymap::Keymap;
use crate::queue::QueueView;
use crate::remote::Remote;
use crate::slurm::command::SqueueQuery;
use crate::theme::Theme;
use crate::tui;
use crate::worker::hub::{Hub, HubSettings};

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

fn now() -> chrono::NaiveDateTime {
    chrono::Local::now().naive_local()
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
    app.cluster.read_only = session.force_read_only || session.cluster.settings.read_only;
    app.quick_cancel = session.quick_cancel;
    app.cluster.retry.policy = loaded.config.retry;
    app.cluster.events.own = own_jobs(session);
    let (base, min, max) = session.cluster.settings.poll_bounds();
    app.cluster.insight.bounds = crate::app::insight::PollBounds::new(base, min, max);
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
                        Err(e) => app.note = Some(format!("{e:#}")),
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
        if let Msg::Tick(at) = &msg {
            workers.tick(*at);
        }
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
                            app.note = Some(format!("switching to cluster `{name}`…"));
                            let (stx, generation) = (switch_tx.clone(), switching);
                            tokio::spawn(async move {
                                let remote = crate::cli::connect_quiet(&cluster).await;
                                let _ = stx.send((generation, remote.map(|r| (cluster, r))));
                            });
                        }
                        Err(e) => app.note = Some(format!("{e:#}")),
                    }
                }
                Cmd::SetPollInterval(every) => {
                    // Adaptive interval: the next refresh comes one new interval from now.
                    poll = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                    poll.set_missed_tick_behavior(MissedTickBehavior::Skip);
                }
                other => workers.run(other),
            }
        }
        dirty = true;
    }
}

fn new_workers(session: &Session, tx: UnboundedSender<Msg>, loaded: &Loaded) -> Hub {
    let settings = HubSettings {
        cluster: session.cluster.name.clone(),
        query: session.query.clone(),
        timeout: session.cluster.settings.command_timeout(),
        tail_every: Duration::from_secs(2).min(session.cluster.settings.poll_interval()),
        // The config was validated at load; built-ins alone if it somehow was not.
        patterns: Arc::new(
            crate::triage::Patterns::new(&loaded.config.triage)
                .unwrap_or_else(|_| crate::triage::Patterns::builtin()),
        ),
        registry: Arc::new(crate::registry::Registry::open_default()),
        retry: loaded.config.retry,
        read_only: session.force_read_only || session.cluster.settings.read_only,
        notify: crate::notify::Settings::from_config(&loaded.config.notify),
    };
    Hub::new(session.remote.clone(), settings, tx)
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
