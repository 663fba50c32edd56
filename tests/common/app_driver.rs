//! The dashboard's workers for App messages, minus the terminal: tests drive `App::update`
//! and hand each returned command to the real workers over real SSH.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use chrono::Local;
use tokio::sync::mpsc;

use slurmdash::action::Msg;
use slurmdash::app::App;
use slurmdash::remote::Remote;
use slurmdash::worker::hub::{Hub, HubSettings};

use super::T;

/// The dashboard's own worker hub for `remote` (the default registry, logs read every
/// half second).
pub fn hub(remote: &Arc<dyn Remote>, tx: &mpsc::UnboundedSender<Msg>) -> Hub {
    let mut settings = HubSettings::new("dev", T);
    settings.tail_every = Duration::from_millis(500);
    Hub::new(remote.clone(), settings, tx.clone())
}

/// The same, recording launches in a registry at `dir`.
pub fn hub_with_registry(
    remote: &Arc<dyn Remote>,
    tx: &mpsc::UnboundedSender<Msg>,
    dir: &std::path::Path,
) -> Hub {
    let mut settings = HubSettings::new("dev", T);
    settings.tail_every = Duration::from_millis(500);
    settings.registry = Arc::new(slurmdash::registry::Registry::open(dir));
    Hub::new(remote.clone(), settings, tx.clone())
}

/// The stdout log pane's text, one line per line.
pub fn log_text(app: &App) -> String {
    let b = app.logs.stdout.buffer();
    (b.first_seq()..b.end_seq())
        .filter_map(|s| b.get(s))
        .map(|l| format!("{}\n", l.text()))
        .collect()
}

/// Opens the launch form with `defaults` (results under `results_root`), submits it once its
/// values validate, and follows the new job's stdout in the log pane until `done` holds for
/// the pane's text (or `limit` passes). Returns the job id and the pane's text.
pub async fn submit_from_form(
    remote: Arc<dyn Remote>,
    defaults: slurmdash::launch::LaunchSpec,
    results_root: String,
    limit: Duration,
    done: impl Fn(&str) -> bool,
) -> (String, String) {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use slurmdash::app::{FormState, LaunchContext};
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let mut app = App::new(
        "dev",
        "your jobs",
        slurmdash::keymap::Keymap::default(),
        slurmdash::ui::theme::Theme::new(false),
        slurmdash::queue::QueueView::default(),
        Duration::from_secs(2),
        Local::now().naive_local(),
    );
    app.cluster.launch = LaunchContext {
        defaults,
        results_root: Some(results_root),
        ..LaunchContext::default()
    };
    let mut hub = hub(&remote, &tx);
    let mut pending: Vec<Msg> = vec![
        Msg::PollDue,
        Msg::Key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE)),
    ];
    let start = std::time::Instant::now();
    let mut submitted = false;
    let mut job_id: Option<String> = None;
    loop {
        for msg in pending.drain(..) {
            for cmd in app.update(msg) {
                hub.run(cmd);
            }
        }
        if !submitted
            && app
                .form
                .as_ref()
                .is_some_and(|f| f.prepared.is_some() && f.busy.is_none())
        {
            if let Some(f) = app.form.as_mut() {
                f.row = FormState::submit_row();
            }
            pending.push(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
            submitted = true;
            continue;
        }
        if let Some(e) = app.form.as_ref().and_then(|f| f.error.clone()) {
            panic!("form error: {e}");
        }
        if submitted && app.form.is_none() && job_id.is_none() {
            job_id = app.queue.selected_id().map(|i| i.as_str().to_string());
            assert!(job_id.is_some(), "the new job is selected at once");
        }
        if let Some(id) = &job_id {
            let text = log_text(&app);
            if done(&text) {
                hub.stop();
                return (id.clone(), text);
            }
        }
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?}; note {:?}, form {:?}, log {:?}",
            app.note,
            app.form.as_ref().map(|f| (&f.error, &f.problems)),
            log_text(&app)
        );
        tokio::select! {
            Some(m) = rx.recv() => pending.push(m),
            _ = tokio::time::sleep(Duration::from_secs(2)) => pending.push(Msg::PollDue),
        }
    }
}
