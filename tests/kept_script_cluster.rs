//! A job slurmdash did not launch, selected while it runs, has its batch script kept on this
//! machine; after it ended and slurmctld forgot it (MinJobAge), `L` still recovers the script
//! from that copy, where before only `sacct -B` could (and the dev cluster, like most, does
//! not store scripts in slurmdbd).

use crate::common;

use slurmdash::action::{JobMsg, LaunchMsg};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use slurmdash::action::{Cmd, Msg};
use slurmdash::io::history;
use slurmdash::remote::Remote;
use slurmdash::slurm::model::JobId;

const SCRIPT: &str = r#"#!/bin/bash
#SBATCH -J NAME
#SBATCH -c 1
#SBATCH --mem=60M
#SBATCH --time=3
#SBATCH --output=/dev/null
# odd bytes and quotes stay as written: 'it''s' "$HOME" ü
for i in 1 2; do echo "line $i"; done
sleep 120
"#;

/// Waits for the message `pick` takes from the hub's channel (every message comes as
/// `Msg::Cluster(0, ..)`).
async fn next_msg<T>(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Msg>,
    what: &str,
    mut pick: impl FnMut(Msg) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let m = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("no {what} within 90 s"))
            .unwrap_or_else(|| panic!("the hub stopped before {what}"));
        let m = match m {
            Msg::Cluster(_, m) => *m,
            m => m,
        };
        if let Some(v) = pick(m) {
            return v;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selected_job_s_script_is_kept_and_recovered_after_slurmctld_forgot_it() {
    let state = tempfile::tempdir().unwrap();
    let remote: Arc<dyn Remote> = Arc::new(remote());
    let r = remote.as_ref();
    let dir = scratch(r, "kept").await;
    let name = format!("kept{}", common::tmux::rand_suffix() % 100_000);
    let path = format!("{dir}/job.sh");
    let text = SCRIPT.replace("NAME", &name);
    put(r, &path, &text).await;
    let id = sbatch(r, &["--chdir", &dir, &path]).await;
    let job = JobId::new(id);

    // Selecting it (the detail pane's read) keeps its script.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Msg>();
    let mut hub = common::app_driver::hub_with_registry(&remote, &tx, state.path());
    hub.run(Cmd::FetchDetail(job.clone()));
    let detail = next_msg(&mut rx, "detail", |m| match m {
        Msg::Job(JobMsg::Detail { result, .. }) => Some(*result),
        _ => None,
    })
    .await;
    let (d, _) = detail.expect("detail from slurmctld");
    assert_eq!(d.name, name);
    let kept_dir = state.path().join("scripts").join("dev");
    let kept = wait_for("the kept script", Duration::from_secs(60), || {
        let kept_dir = kept_dir.clone();
        async move {
            let f = std::fs::read_dir(&kept_dir).ok()?.flatten().find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{id}-"))
            })?;
            std::fs::read_to_string(f.path()).ok()
        }
    })
    .await;
    assert_eq!(kept, text, "kept byte for byte");

    // It ends, and slurmctld forgets it.
    run(r, &["scancel", &id.to_string()]).await;
    wait_for(
        "slurmctld to forget the job",
        Duration::from_secs(180),
        || async {
            let out = run(r, &["scontrol", "-o", "show", "job", &id.to_string()]).await;
            (!out.success()).then_some(())
        },
    )
    .await;
    // Without the copy: nothing to relaunch from.
    let bare = history::recover(r, &job, T, None).await.expect("recover");
    assert_eq!(bare.script, None, "{}", bare.script_from);

    // `L` asks the hub: the script comes from the copy.
    hub.run(Cmd::Recover(job.clone()));
    let rec = next_msg(&mut rx, "the recovered job", |m| match m {
        Msg::Launch(LaunchMsg::Recovered { result, .. }) => Some(*result),
        _ => None,
    })
    .await
    .expect("recovered");
    hub.stop();
    println!("job {id}: script from {}", rec.script_from);
    assert!(
        rec.script_from.starts_with("the copy slurmdash kept on "),
        "{}",
        rec.script_from
    );
    assert_eq!(rec.script.as_deref(), Some(text.as_str()));
    assert_eq!(rec.used.detail.name, name);
}
