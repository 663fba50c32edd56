//! The dashboard's workers for App messages, minus the terminal: tests drive `App::update`
//! and hand each returned command to the real workers over real SSH.
#![allow(dead_code)]

use slurmdash::action::PollMsg;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Local;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::mpsc;

use slurmdash::action::{Cmd, Msg};
use slurmdash::app::{App, FormState, LaunchContext};
use slurmdash::launch::LaunchSpec;
use slurmdash::remote::Remote;
use slurmdash::worker::hub::{Hub, HubSettings};

use super::T;

/// The dashboard's own worker hub for `remote` (the default registry, logs read every
/// half second).
pub fn hub(remote: &Arc<dyn Remote>, tx: &mpsc::UnboundedSender<Msg>) -> Hub {
    Hub::new(remote.clone(), settings(), tx.clone())
}

/// The same, recording launches in a registry at `dir`.
pub fn hub_with_registry(
    remote: &Arc<dyn Remote>,
    tx: &mpsc::UnboundedSender<Msg>,
    dir: &std::path::Path,
) -> Hub {
    let mut settings = settings();
    settings.registry = Arc::new(slurmdash::registry::Registry::open(dir));
    Hub::new(remote.clone(), settings, tx.clone())
}

fn settings() -> HubSettings {
    let mut settings = HubSettings::new("dev", T);
    settings.tail_every = Duration::from_millis(500);
    settings
}

/// The dashboard's App for cluster `dev` (own jobs, a refresh every 2 s), started now.
pub fn new_app() -> App {
    let now = Local::now().naive_local();
    App::new(
        slurmdash::app::ClusterState::new("dev", "your jobs", Duration::from_secs(2), now),
        slurmdash::keymap::Keymap::default(),
        slurmdash::ui::theme::Theme::new(false),
        slurmdash::queue::QueueView::default(),
        now,
    )
}

/// The stdout log pane's text, one line per line.
pub fn log_text(app: &App) -> String {
    super::logpane::texts(&app.logs.stdout)
        .into_iter()
        .map(|l| l + "\n")
        .collect()
}

/// An App ([`new_app`]) and the real workers: messages go to `App::update`, the commands it
/// returns to the hub, and the hub's answers come back as messages.
pub struct Driver {
    pub app: App,
    pub hub: Hub,
    rx: mpsc::UnboundedReceiver<Msg>,
    /// Messages for the next [`Driver::update`].
    pub pending: Vec<Msg>,
    /// When [`Driver::next`] last made a refresh due.
    poll_at: Instant,
}

impl Driver {
    /// With the default hub ([`hub`]).
    pub fn new(remote: &Arc<dyn Remote>) -> Driver {
        Driver::with_hub(|tx| hub(remote, tx))
    }

    /// With launches recorded in a registry at `dir` ([`hub_with_registry`]).
    pub fn with_registry(remote: &Arc<dyn Remote>, dir: &std::path::Path) -> Driver {
        Driver::with_hub(|tx| hub_with_registry(remote, tx, dir))
    }

    fn with_hub(make: impl FnOnce(&mpsc::UnboundedSender<Msg>) -> Hub) -> Driver {
        let (tx, rx) = mpsc::unbounded_channel::<Msg>();
        Driver {
            hub: make(&tx),
            app: new_app(),
            rx,
            pending: Vec::new(),
            poll_at: Instant::now(),
        }
    }

    /// Hands every pending message to `App::update` and each command it returns to the hub.
    pub fn update(&mut self) {
        self.update_seeing(|_| {}, |_| {});
    }

    /// [`Driver::update`], showing `msg` each message before the App gets it and `cmd` each
    /// command before the hub runs it.
    pub fn update_seeing(&mut self, mut msg: impl FnMut(&Msg), mut cmd: impl FnMut(&Cmd)) {
        for m in std::mem::take(&mut self.pending) {
            msg(&m);
            for c in self.app.update(m) {
                cmd(&c);
                self.hub.run(c);
            }
        }
    }

    /// Waits for the next message from the workers; every 2 s a refresh is due, however
    /// many messages came between (a log tail answers faster than that). The App's clock
    /// moves on as the dashboard's does (its once-a-second tick sets it): what is due when
    /// (a full read or a state check, a live sample) follows the clock.
    pub async fn next(&mut self) {
        let due = self.poll_at + Duration::from_secs(2);
        tokio::select! {
            Some(m) = self.rx.recv() => self.pending.push(m),
            _ = tokio::time::sleep_until(due.into()) => {
                self.pending.push(Msg::Poll(PollMsg::PollDue));
                self.poll_at = Instant::now();
            }
        }
        self.app.now = Local::now().naive_local();
    }

    /// Sets the launch form's defaults (results under `results_root`) and asks for a
    /// refresh and the form (`n`).
    pub fn open_form(&mut self, defaults: LaunchSpec, results_root: String) {
        self.app.clusters[0].launch = LaunchContext {
            defaults,
            results_root: Some(results_root),
            ..LaunchContext::default()
        };
        self.pending.push(Msg::Poll(PollMsg::PollDue));
        self.pending.push(Msg::Key(KeyEvent::new(
            KeyCode::Char('n'),
            KeyModifiers::NONE,
        )));
    }

    /// Submits the launch form: once its values validate (the partitions arrived), goes to
    /// Submit and presses Enter. `check` sees the App once, when the form first validates.
    /// Returns the new job's id (selected at once) when the form has closed. Panics on a
    /// form error, or `limit` after `start`.
    pub async fn submit_form(
        &mut self,
        start: Instant,
        limit: Duration,
        check: impl FnOnce(&App),
    ) -> String {
        let mut check = Some(check);
        let mut submitted = false;
        loop {
            self.update();
            let ready = self
                .app
                .overlays
                .form
                .as_ref()
                .is_some_and(|f| f.prepared.is_some() && f.busy.is_none());
            if ready && !submitted {
                if let Some(check) = check.take() {
                    check(&self.app);
                }
                if let Some(f) = self.app.overlays.form.as_mut() {
                    f.row = FormState::submit_row();
                }
                self.pending
                    .push(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
                submitted = true;
                continue;
            }
            if let Some(e) = self
                .app
                .overlays
                .form
                .as_ref()
                .and_then(|f| f.error.clone())
            {
                panic!("form error: {e}");
            }
            if submitted && self.app.overlays.form.is_none() {
                return self
                    .app
                    .queue
                    .shown()
                    .selected_id()
                    .map(|i| i.as_str().to_string())
                    .unwrap_or_else(|| {
                        panic!("the new job is selected at once; note {:?}", self.app.note)
                    });
            }
            self.assert_in_time(start, limit, "the form's submission");
            self.next().await;
        }
    }

    /// Follows the selected job's stdout in the log pane until `done` holds for the pane's
    /// text, and returns that text. Panics `limit` after `start`.
    pub async fn follow_log(
        &mut self,
        start: Instant,
        limit: Duration,
        done: impl Fn(&str) -> bool,
    ) -> String {
        loop {
            self.update();
            let text = log_text(&self.app);
            if done(&text) {
                return text;
            }
            self.assert_in_time(start, limit, "the job's output in the log pane");
            self.next().await;
        }
    }

    /// Fails the test when `limit` has passed since `start`, with what the App shows.
    fn assert_in_time(&self, start: Instant, limit: Duration, what: &str) {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}; note {:?}, form {:?}, log {:?}",
            self.app.note,
            self.app.overlays.form.as_ref().map(|f| (
                &f.error,
                &f.problems,
                &f.spec.time,
                &f.spec.command,
                f.spec.batch_script.len()
            )),
            log_text(&self.app)
        );
    }
}

/// Opens the launch form with `defaults` (results under `results_root`), submits it once its
/// values validate, and follows the new job's stdout in the log pane until `done` holds for
/// the pane's text (or `limit` passes). Returns the job id and the pane's text.
pub async fn submit_from_form(
    remote: Arc<dyn Remote>,
    defaults: LaunchSpec,
    results_root: String,
    limit: Duration,
    done: impl Fn(&str) -> bool,
) -> (String, String) {
    let mut d = Driver::new(&remote);
    d.open_form(defaults, results_root);
    let start = Instant::now();
    let id = d.submit_form(start, limit, |_| {}).await;
    let text = d.follow_log(start, limit, done).await;
    d.hub.stop();
    (id, text)
}
