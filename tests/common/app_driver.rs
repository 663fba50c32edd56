//! The dashboard's workers for App messages, minus the terminal: tests drive `App::update`
//! and hand each returned command to the real workers over real SSH.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use chrono::Local;
use tokio::sync::mpsc;

use slurmdash::action::{Cmd, Msg};
use slurmdash::app::App;
use slurmdash::remote::Remote;
use slurmdash::slurm::command::SqueueQuery;
use slurmdash::worker::{fetch, launch, tailer};

use super::T;

/// What the dashboard's workers do for each command.
pub fn run_cmd(
    cmd: Cmd,
    remote: &Arc<dyn Remote>,
    tx: &mpsc::UnboundedSender<Msg>,
    tails: &mut Vec<tokio::task::JoinHandle<()>>,
) {
    let (r, tx) = (remote.clone(), tx.clone());
    match cmd {
        Cmd::PollQueue => {
            tokio::spawn(async move {
                let result = fetch::queue(r.as_ref(), &SqueueQuery::default(), T).await;
                let _ = tx.send(Msg::Queue {
                    result,
                    at: Local::now().naive_local(),
                    took: Duration::ZERO,
                });
            });
        }
        Cmd::FetchDetail(id) => {
            tokio::spawn(async move {
                let result = fetch::detail(r.as_ref(), &id, T).await;
                let _ = tx.send(Msg::Detail {
                    id,
                    result: Box::new(result),
                });
            });
        }
        Cmd::Tail(targets) => {
            for t in tails.drain(..) {
                t.abort();
            }
            for (job, stream, path) in targets {
                tails.push(tailer::spawn_tailer(
                    r.clone(),
                    job,
                    stream,
                    path,
                    Duration::from_millis(500),
                    tx.clone(),
                ));
            }
        }
        other => launch::spawn(other, r, tx, T),
    }
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
    app.launch = LaunchContext {
        defaults,
        results_root: Some(results_root),
        ..LaunchContext::default()
    };
    let mut tails = Vec::new();
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
                run_cmd(cmd, &remote, &tx, &mut tails);
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
                for t in tails {
                    t.abort();
                }
                return (id.clone(), text);
            }
        }
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?}; note {:?}, form {:?}, log {:?}",
            app.status.note,
            app.form.as_ref().map(|f| (&f.error, &f.problems)),
            log_text(&app)
        );
        tokio::select! {
            Some(m) = rx.recv() => pending.push(m),
            _ = tokio::time::sleep(Duration::from_secs(2)) => pending.push(Msg::PollDue),
        }
    }
}
