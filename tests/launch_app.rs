//! A job launched from the form, driven through App messages, with the real workers over
//! real SSH to the dev cluster: it runs and its main.out appears in the log pane.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::app_driver::Driver;
use common::*;
use slurmdash::launch::LaunchSpec;
use slurmdash::remote::Remote;

#[tokio::test]
async fn a_job_submitted_from_the_form_runs_and_its_output_shows_in_the_log_pane() {
    let r = remote();
    let base = scratch(&r, "launch-app").await;
    let state = tempfile::tempdir().expect("state");
    let remote: Arc<dyn Remote> = Arc::new(r);
    // The launch is recorded in a registry of this test's own.
    let mut d = Driver::with_registry(&remote, state.path());
    let marker = format!("form-launch-{}", std::process::id());
    d.open_form(
        LaunchSpec {
            name: "form-job".into(),
            partition: "short".into(),
            account: "research".into(),
            gpus: 1,
            cpus_per_task: 1,
            time: "2m".into(),
            command: format!("echo {marker} $SLURM_JOB_ID; sleep 2; echo done"),
            ..LaunchSpec::default()
        },
        format!("{base}/results"),
    );
    let (start, limit) = (Instant::now(), Duration::from_secs(120));
    let id = d.submit_form(start, limit, |_| {}).await;
    assert!(
        d.app
            .note
            .as_deref()
            .is_some_and(|n| n.contains(&format!("submitted job {id}"))),
        "{:?}",
        d.app.note
    );
    d.follow_log(start, limit, |text| {
        text.contains(&format!("{marker} {id}\ndone"))
    })
    .await;
    assert_eq!(
        d.app
            .queue
            .shown()
            .selected_id()
            .map(|i| i.as_str().to_string())
            .as_ref(),
        Some(&id)
    );
    d.hub.stop();
    let entries = slurmdash::registry::Registry::open(state.path())
        .load()
        .expect("registry");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].job_id.to_string(), id);
}
