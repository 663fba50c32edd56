//! A job launched from the form, driven through App messages, with the real workers over
//! real SSH to the dev cluster: it runs and its main.out appears in the log pane.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Local;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::mpsc;

use common::app_driver::{hub, log_text};
use common::*;
use slurmdash::action::Msg;
use slurmdash::app::{App, FormState, LaunchContext};
use slurmdash::keymap::Keymap;
use slurmdash::launch::LaunchSpec;
use slurmdash::queue::QueueView;
use slurmdash::remote::Remote;
use slurmdash::ui::theme::Theme;

#[tokio::test]
async fn a_job_submitted_from_the_form_runs_and_its_output_shows_in_the_log_pane() {
    let r = remote();
    let base = scratch(&r, "launch-app").await;
    let state = tempfile::tempdir().expect("state");
    std::env::set_var("SLURMDASH_STATE_DIR", state.path());
    let remote: Arc<dyn Remote> = Arc::new(r);
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let mut app = App::new(
        "dev",
        "your jobs",
        Keymap::default(),
        Theme::new(false),
        QueueView::default(),
        Duration::from_secs(2),
        Local::now().naive_local(),
    );
    let marker = format!("form-launch-{}", std::process::id());
    app.cluster.launch = LaunchContext {
        defaults: LaunchSpec {
            name: "form-job".into(),
            partition: "short".into(),
            account: "research".into(),
            gpus: 1,
            cpus_per_task: 1,
            time: "2m".into(),
            command: format!("echo {marker} $SLURM_JOB_ID; sleep 2; echo done"),
            ..LaunchSpec::default()
        },
        results_root: Some(format!("{base}/results")),
        ..LaunchContext::default()
    };
    let mut hub = hub(&remote, &tx);
    let mut pending: Vec<Msg> = vec![
        Msg::PollDue,
        Msg::Key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE)),
    ];
    let start = Instant::now();
    let mut submitted = false;
    let mut job_id = None;
    loop {
        for msg in pending.drain(..) {
            for cmd in app.update(msg) {
                hub.run(cmd);
            }
        }
        // Once the partitions arrived and the values validate, go to Submit and press enter.
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
            let id = app
                .queue
                .selected_id()
                .map(|i| i.as_str().to_string())
                .expect("the new job is selected at once");
            assert!(
                app.note
                    .as_deref()
                    .is_some_and(|n| n.contains(&format!("submitted job {id}"))),
                "{:?}",
                app.note
            );
            job_id = Some(id);
        }
        if let Some(id) = &job_id {
            let text = log_text(&app);
            if text.contains(&format!("{marker} {id}\ndone")) {
                assert_eq!(
                    app.queue
                        .selected_id()
                        .map(|i| i.as_str().to_string())
                        .as_ref(),
                    Some(id)
                );
                break;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out; note {:?}, form {:?}, log {:?}",
            app.note,
            app.form.as_ref().map(|f| (&f.error, &f.problems)),
            log_text(&app)
        );
        tokio::select! {
            Some(m) = rx.recv() => pending.push(m),
            _ = tokio::time::sleep(Duration::from_secs(2)) => pending.push(Msg::PollDue),
        }
    }
    hub.stop();
    let entries = slurmdash::registry::Registry::open(state.path())
        .load()
        .expect("registry");
    assert_eq!(entries.len(), 1);
    assert_eq!(Some(entries[0].job_id.to_string()), job_id);
}
