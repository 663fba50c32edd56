//! The event loop: one `select!` over terminal events, worker messages and timers. It
//! hands messages to `App::update`, runs the commands that come back as background tasks,
//! and draws only when something changed. No remote call ever runs on this path.

use crate::action::PollMsg;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::{Result, WrapErr};
use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::time::MissedTickBehavior;

use crate::action::{Cmd, Msg};
use crate::app::{App, ClusterState, LaunchContext};
use crate::config::{Cluster, Loaded};
use crate::keymap::Keymap;
use crate::queue::QueueView;
use crate::remote::Remote;
use crate::slurm::command::SqueueQuery;
use crate::theme::Theme;
use crate::tui;
use crate::worker::hub::{Hub, HubSettings};

/// One cluster on the dashboard and how it is reached.
pub struct Site {
    pub cluster: Cluster,
    pub remote: Arc<dyn Remote>,
}

/// What the dashboard shows and how it reaches the clusters.
pub struct Session {
    /// The clusters shown (at least one); the first is in focus at start.
    pub sites: Vec<Site>,
    pub query: SqueueQuery,
    pub scope: String,
    pub columns: Option<Vec<crate::queue::Column>>,
    pub quick_cancel: bool,
    /// `--read-only`: applies to every cluster, also those added later.
    pub force_read_only: bool,
}

fn now() -> chrono::NaiveDateTime {
    chrono::Local::now().naive_local()
}

/// Runs the dashboard until `q`, a signal (SIGHUP when the terminal window closes,
/// SIGTERM, SIGINT), a terminal error or a panic in any task. Every way out restores the
/// terminal, closes the SSH masters this session started and removes its temporary files.
pub async fn run(loaded: &Loaded, session: Session, keymap: Keymap) -> Result<()> {
    use futures_util::FutureExt;
    let mut session = session;
    tui::install_panic_hook();
    let mut term = tui::enter().wrap_err("opening the terminal")?;
    let size = term
        .size()
        .map(|s| (s.width, s.height))
        .unwrap_or((120, 40));
    let mut app = new_app(&session, loaded, keymap, size);
    let mut hubs = Vec::new();
    let result = std::panic::AssertUnwindSafe(event_loop(
        &mut term,
        loaded,
        &mut session,
        &mut app,
        &mut hubs,
    ))
    .catch_unwind()
    .await;
    tui::leave();
    finish_submissions(&mut hubs).await;
    // Tunnels still open are closed: the shared master outlives the dashboard, and so
    // would they.
    for t in app.tunnels.iter() {
        if let Some(site) = session.sites.get(usize::from(t.job.cluster())) {
            let _ = site.remote.forward(t.local, &t.node, t.port, true).await;
        }
    }
    for site in &session.sites {
        site.remote.close().await;
    }
    match result {
        Ok(r) => r,
        Err(_) => Err(color_eyre::eyre::eyre!(
            "slurmdash stopped after an internal error (the panic message is above); the terminal was restored and the SSH connection closed"
        )),
    }
}

/// The App for the session's first cluster; the others are added with [`cluster_state`].
fn new_app(session: &Session, loaded: &Loaded, keymap: Keymap, size: (u16, u16)) -> App {
    let theme = Theme::from_env().with_palette(loaded.config.ui.theme);
    let queue = match &session.columns {
        Some(c) => QueueView::new(c.clone()),
        None => QueueView::default(),
    };
    let first = &session.sites[0].cluster;
    // Checked when the config was loaded (a bad entry stops slurmdash there, named).
    let own = crate::config::commands::check(&loaded.config.commands, &keymap).unwrap_or_default();
    let mut app = App::new(
        cluster_state(session, loaded, first),
        keymap,
        theme,
        queue,
        now(),
    );
    app.size = size;
    app.quick_cancel = session.quick_cancel;
    app.live.idle_minutes = loaded.config.ui.idle_gpu_minutes;
    app.live.low_cpu_percent = loaded.config.ui.low_cpu_percent;
    app.live.low_mem_percent = loaded.config.ui.low_mem_percent;
    app.live.min_gap_secs = loaded.config.ui.live_sample_secs;
    app.overlays.files.download_dir = loaded.config.files.download_dir();
    // Checked when the config was loaded.
    if let Ok(p) = crate::logview::progress::Patterns::new(&loaded.config.progress) {
        app.progress = crate::app::progress::ProgressState::new(p);
    }
    if let Ok(p) = crate::triage::Patterns::new(&loaded.config.triage) {
        app.overlays.grep.preset = crate::app::grep::first_error_pattern(&p);
    }
    app.overlays.custom = crate::app::custom::CustomCommands::new(own);
    app
}

/// A cluster's state as the config and the command line set it up: read-only, retry
/// policy, whose jobs count as own, refresh bounds, launch defaults and last-used values.
fn cluster_state(session: &Session, loaded: &Loaded, cluster: &Cluster) -> ClusterState {
    let s = &cluster.settings;
    let mut c = ClusterState::new(&cluster.name, &session.scope, s.poll_interval(), now());
    c.read_only = session.force_read_only || s.read_only;
    c.retry.policy = loaded.config.retry.clone();
    c.events.own = own_jobs(&session.query, cluster);
    let (base, min, max) = s.poll_bounds();
    c.insight.bounds = crate::app::insight::PollBounds::new(base, min, max);
    c.budget = crate::app::budget::Budget::new(loaded.config.rpc_budget(s));
    c.launch = launch_context(loaded, cluster);
    c
}

/// The launch form's defaults and templates for `cluster`, from the config and the registry.
fn launch_context(loaded: &Loaded, cluster: &Cluster) -> LaunchContext {
    let s = &cluster.settings;
    let with = |spec: crate::launch::LaunchSpec| {
        spec.with_cluster_defaults(s.partition.as_deref(), s.account.as_deref())
    };
    let templates = loaded
        .config
        .templates
        .keys()
        .filter_map(|name| {
            loaded
                .config
                .launch_spec(Some(name))
                .ok()
                .map(|t| (name.clone(), with(t)))
        })
        .collect();
    let origins = loaded
        .config
        .templates
        .keys()
        .map(|n| (n.clone(), loaded.config.template_origin(n)))
        .collect();
    LaunchContext {
        defaults: with(loaded.config.launch.clone()),
        templates,
        origins,
        template_problems: loaded
            .config
            .template_problems
            .iter()
            .map(|p| p.1.clone())
            .collect(),
        last_used: crate::registry::Registry::open_default().load_last(),
        results_root: s.results_root.clone(),
        facts: None,
        registry_jobs: Vec::new(),
        reattaching: true,
        jump: s.hosts.first().map(|h| crate::launch::session::Jump {
            host: h.clone(),
            user: s.user.clone(),
            port: s.port,
        }),
    }
}

/// Which listed jobs are the user's own, for job-change events.
fn own_jobs(query: &SqueueQuery, cluster: &Cluster) -> crate::app::Own {
    use crate::slurm::command::Scope;
    let me = cluster
        .settings
        .user
        .clone()
        .or_else(|| std::env::var("USER").ok());
    match (&query.scope, me) {
        (Scope::Me, _) => crate::app::Own::Listed,
        (Scope::User(u), Some(me)) if *u == me => crate::app::Own::Listed,
        (Scope::All, Some(me)) => crate::app::Own::User(me),
        _ => crate::app::Own::Nobody,
    }
}

/// The workers of cluster number `ix`: its refresh timer runs from now, and the registry
/// jobs of its launches are looked up. `several`: the flag every hub of the dashboard
/// shares, set once it shows more than one cluster (a cluster added later included).
fn start_hub(
    session: &Session,
    loaded: &Loaded,
    ix: u16,
    tx: &UnboundedSender<Msg>,
    several: &Arc<AtomicBool>,
) -> Hub {
    several.store(session.sites.len() > 1, Ordering::Relaxed);
    let site = &session.sites[usize::from(ix)];
    let s = &site.cluster.settings;
    let settings = HubSettings {
        ix,
        cluster: site.cluster.name.clone(),
        query: session.query.clone(),
        timeout: s.command_timeout(),
        tail_every: Duration::from_secs(2).min(s.poll_interval()),
        // The config was validated at load; built-ins alone if it somehow was not.
        patterns: Arc::new(
            crate::triage::Patterns::new(&loaded.config.triage)
                .unwrap_or_else(|_| crate::triage::Patterns::builtin()),
        ),
        registry: Arc::new(crate::registry::Registry::open_default()),
        retry: loaded.config.retry.clone(),
        read_only: session.force_read_only || s.read_only,
        notify: crate::notify::Settings::from_config(&loaded.config.notify),
        keep_scripts: loaded.config.ui.keep_scripts,
        named: several.clone(),
    };
    let mut hub = Hub::new(site.remote.clone(), settings, tx.clone());
    // The first refresh goes at once; the next no sooner than the RPC budget allows.
    let budget = crate::app::budget::Budget::new(loaded.config.rpc_budget(s));
    hub.start_refresh_timer(
        s.poll_interval()
            .max(budget.refresh_floor().unwrap_or_default()),
    );
    hub.run(Cmd::LoadRegistryJobs(site.cluster.name.clone()));
    hub
}

/// Submissions the dashboard started and that are still under way when it leaves (by `q`,
/// a signal, a closed terminal, an error) are finished first, so that each launch ends up
/// queued and recorded, or not queued at all: the SSH connection they run on closes
/// after. A signal while waiting leaves at once; the launch then stays recorded as being
/// submitted, and the next dashboard adopts its job (or submits it).
async fn finish_submissions(hubs: &mut [Hub]) {
    use std::io::Write;
    let pending: Vec<(String, tokio::task::JoinHandle<()>)> =
        hubs.iter_mut().flat_map(Hub::take_submissions).collect();
    if pending.is_empty() {
        return;
    }
    let ids: Vec<&str> = pending.iter().map(|(id, _)| id.as_str()).collect();
    let ids = ids.join(", ");
    // The terminal may be gone (SIGHUP): a failed write is not an error here.
    let say = |text: String| {
        let _ = writeln!(std::io::stderr(), "slurmdash: {text}");
    };
    say(format!(
        "finishing the submission of launch {ids} first, so that it is either queued and recorded or not queued at all (ctrl-c leaves at once)"
    ));
    let Ok(mut stop) = crate::signals::Stop::new() else {
        for (_, t) in pending {
            let _ = t.await;
        }
        return;
    };
    let all = futures_util::future::join_all(pending.into_iter().map(|(_, t)| t));
    tokio::select! {
        _ = all => say("submission finished; `slurmdash jobs` lists it".into()),
        (name, _) = stop.recv() => say(format!(
            "stopped by {name}: leaving mid-submission; launch {ids} stays recorded as being submitted, and the next dashboard adopts its job (or submits it)"
        )),
    }
}

/// The next terminal event; a stopped reader is started again first.
async fn next_event(events: &mut Option<EventStream>) -> Option<std::io::Result<Event>> {
    events.get_or_insert_with(EventStream::new).next().await
}

/// Stops the terminal's event reader before the terminal is lent out. The old stream goes
/// first: while its reader thread waits for a key it holds crossterm's reader lock, which a
/// new stream takes when it is made, so making one first would wait for a key (a command
/// whose answer came from a worker, `$PAGER` after the user's own command, hung until then).
/// The wake-up that stops the thread is used up here rather than by the next read of the
/// terminal (the cursor query when the dashboard comes back would take it as a failure).
async fn stop_events(events: &mut Option<EventStream>) {
    drop(events.take());
    tokio::time::sleep(Duration::from_millis(20)).await;
    let _ = crossterm::event::poll(Duration::ZERO);
}

async fn event_loop(
    term: &mut tui::Term,
    loaded: &Loaded,
    session: &mut Session,
    app: &mut App,
    hubs: &mut Vec<Hub>,
) -> Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let several = Arc::new(AtomicBool::new(false));
    hubs.push(start_hub(session, loaded, 0, &tx, &several));
    for i in 1..session.sites.len() {
        let ix = u16::try_from(i).unwrap_or(u16::MAX);
        let state = cluster_state(session, loaded, &session.sites[i].cluster);
        app.add_cluster(state);
        hubs.push(start_hub(session, loaded, ix, &tx, &several));
    }
    // `None` only while the terminal is lent to a shell or $PAGER.
    let mut events = Some(EventStream::new());
    let mut clock = tokio::time::interval(Duration::from_secs(1));
    clock.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut stop = crate::signals::Stop::new()?;
    // Clusters being added (`:cluster NAME`): connected by the local worker, the answer
    // comes here.
    let (add_tx, mut add_rx) = mpsc::unbounded_channel::<crate::worker::local::Added>();
    let local = crate::worker::local::Local::new(tx.clone(), add_tx, loaded.clone());
    let mut dirty = true;
    // `SLURMDASH_FRAME_LOG`: keys received and frames drawn, for benchmarks; off: `None`.
    let mut trace = crate::frame_log::FrameLog::from_env().unwrap_or_else(|why| {
        app.say(why);
        None
    });
    loop {
        if dirty {
            let began = trace.as_ref().map(|_| crate::frame_log::now_us());
            let _frame = tui::draw_guard();
            if tui::panicked() {
                return Err(color_eyre::eyre::eyre!(
                    "a background task panicked (the message is above)"
                ));
            }
            term.draw(|f| crate::ui::draw(f, app))
                .wrap_err("drawing the screen")?;
            if let (Some(t), Some(began)) = (trace.as_mut(), began) {
                t.frame(began);
            }
            dirty = false;
        }
        let msg = tokio::select! {
            ev = next_event(&mut events) => match ev {
                Some(Ok(Event::Key(k))) => {
                    if let Some(t) = trace.as_mut() {
                        t.key(&k);
                    }
                    Msg::Key(k)
                }
                Some(Ok(Event::Mouse(m))) => Msg::Mouse(m),
                Some(Ok(Event::Resize(w, h))) => Msg::Resize(w, h),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e).wrap_err("reading the terminal"),
                None => return Ok(()),
            },
            Some(msg) = rx.recv() => msg,
            Some((name, result)) = add_rx.recv() => {
                match result {
                    Ok((cluster, remote)) if !session.sites.iter().any(|s| s.cluster.name == name) => {
                        session.sites.push(Site { cluster, remote });
                        let i = session.sites.len() - 1;
                        let state = cluster_state(session, loaded, &session.sites[i].cluster);
                        let ix = app.add_cluster(state);
                        hubs.push(start_hub(session, loaded, ix, &tx, &several));
                        Msg::ClusterAdded(name)
                    }
                    Ok((_, remote)) => {
                        tokio::spawn(async move { remote.close().await });
                        continue;
                    }
                    Err(e) => Msg::Note(format!("{e:#}")),
                }
            }
            _ = clock.tick() => Msg::Tick(now()),
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
            for hub in hubs.iter_mut() {
                hub.tick(*at);
            }
        }
        let queue_replaced =
            matches!(&msg, Msg::Cluster(_, m) if matches!(**m, Msg::Poll(PollMsg::Queue(_))));
        let cmds = app.handle(msg);
        if queue_replaced {
            crate::memory::release_free();
        }
        for (ix, cmd) in cmds {
            // The laptop's own work (files, connecting an added cluster) is the local
            // worker's; what needs the terminal is run here; the rest is the cluster's.
            let Some(cmd) = local.run(cmd) else {
                continue;
            };
            match cmd {
                Cmd::Quit => {
                    for hub in hubs.iter_mut() {
                        hub.stop();
                    }
                    return Ok(());
                }
                Cmd::Suspend => {
                    tui::suspend(term).wrap_err("resuming after ctrl-z")?;
                }
                Cmd::Clipboard(text) => {
                    use std::io::Write;
                    let bytes = crate::clipboard::osc52(&text, std::env::var_os("TMUX").is_some());
                    let mut out = std::io::stdout();
                    let _ = out.write_all(bytes.as_bytes()).and_then(|()| out.flush());
                }
                Cmd::Pager(text) => {
                    // As for the shell: nothing of ours reads the keys meant for the pager.
                    stop_events(&mut events).await;
                    let note = match tui::page(term, &text).await {
                        Ok(note) => note,
                        Err(e) => return Err(e).wrap_err("taking the terminal back after $PAGER"),
                    };
                    let _ = tx.send(Msg::Note(note));
                }
                Cmd::Shell { id, node } => {
                    let remote = &session.sites[usize::from(ix)].remote;
                    let argv = crate::slurm::shell::shell_argv(&id, node.as_deref());
                    let Some(local) = remote.terminal_argv(&argv) else {
                        let _ = tx.send(Msg::Note(format!(
                            "no shell in job {id} yet: not connected to the cluster (r reconnects)"
                        )));
                        continue;
                    };
                    // Nothing of ours may read the keys meant for the shell.
                    stop_events(&mut events).await;
                    let on = node.as_deref().unwrap_or("its first node");
                    let banner = format!(
                        "slurmdash: a shell in job {id} on {on}; exit it to return to the dashboard"
                    );
                    let status = tui::hand_over(term, &local, &banner)
                        .await
                        .wrap_err("taking the terminal back after the shell")?;
                    let note = match status.map(|s| s.code()) {
                        Ok(Some(0)) => format!("back from the shell in job {id}"),
                        Ok(Some(code)) => format!(
                            "the shell in job {id} ended with exit code {code} (`{}`)",
                            argv.last().map(String::as_str).unwrap_or("")
                        ),
                        Ok(None) => format!("the shell in job {id} was ended by a signal"),
                        Err(e) => format!("could not run `{}`: {e}", local[0]),
                    };
                    let _ = tx.send(Msg::Note(note));
                }
                other => {
                    if let Some(hub) = hubs.get_mut(usize::from(ix)) {
                        hub.run(other);
                    }
                }
            }
        }
        dirty = true;
    }
}
