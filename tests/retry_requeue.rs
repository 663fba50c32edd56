//! Slurm's requeue and slurmdash's retry never both run: a launch submitted with
//! `--requeue` whose node goes down is requeued by Slurm under the same id, and the retry
//! check, run again and again from the moment the node fails, resubmits nothing.
//!
//! Sets the node the job runs on DOWN (which ends every job on it): a node of partition
//! `spare`, which no other test uses, one such test at a time (test group `spare-nodes`).
//! Runs `scontrol update nodename=...` on this machine, which hosts the dev cluster (as root).

use crate::common;

use std::time::{Duration, Instant};

use common::launch::{launch, no_secret, retry_check};
use common::*;
use slurmdash::io::retry::RetryEvent;
use slurmdash::launch::spec::LaunchSpec;
use slurmdash::registry::Registry;
use slurmdash::triage::Class;

#[tokio::test(flavor = "multi_thread")]
async fn a_node_failure_of_a_requeue_launch_is_left_to_slurm() {
    let r = remote();
    let base = scratch(&r, "retry-requeue").await;
    let root = format!("{base}/results");
    let state = tempfile::tempdir().expect("state dir");
    let registry = Registry::open(state.path());

    // The first run waits for the node to fail; the run Slurm requeues finishes at once.
    let spec = LaunchSpec {
        name: "requeue-victim".into(),
        gpus: 0,
        cpus_per_task: 1,
        mem: "50M".into(),
        time: "5m".into(),
        command: r#"f="$TAO_API_RESULTS_DIR/$TAO_JOB_ID/ran-once"
if [ -e "$f" ]; then echo "requeued run done"; exit 0; fi
touch "$f"; sleep 300"#
            .into(),
        requeue: true,
        ..LaunchSpec::default()
    }
    .with_cluster_defaults(Some(SPARE), None);
    spare_nodes(&r).await;
    let (job, _) = launch(&r, &registry, &root, &spec, &[]).await;
    assert!(job.entry.requeue);
    let id = job.job_id.to_string();
    let node = wait_for("the job to run", Duration::from_secs(120), || async {
        let ran = run(&r, &["test", "-e", &format!("{}/ran-once", job.job_dir)]).await;
        let out = run(
            &r,
            &["squeue", "--noheader", "--jobs", &id, "--format=%T|%N"],
        )
        .await;
        let text = out.stdout_lossy();
        let (st, node) = text.trim().split_once('|')?;
        (ran.success() && st == "RUNNING" && !node.is_empty()).then(|| node.to_string())
    })
    .await;

    let _resume = Resume(node.clone());
    let out = scontrol_node(&node, &["state=down", "reason=slurmdash requeue test"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Check from the first moment (while sacct may still show only NODE_FAIL) until sacct
    // has both records: the failed run and the requeued one.
    let mut events = Vec::new();
    let mut saw_node_fail = false;
    let start = Instant::now();
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "sacct never showed the requeue; events: {events:?}"
        );
        let recs = run(
            &r,
            &["sacct", "-n", "-X", "-P", "-D", "-o", "State", "-j", &id],
        )
        .await;
        assert!(recs.success(), "sacct: {}", recs.stderr_lossy());
        let recs = recs.stdout_lossy();
        saw_node_fail |= recs.lines().any(|l| l == "NODE_FAIL");
        events.extend(retry_check(&r, &registry, true, &no_secret).await.0);
        if recs.lines().count() >= 2 {
            break;
        }
    }
    assert!(saw_node_fail, "the job did not fail on the node");
    assert!(
        !events.iter().any(|e| matches!(
            e,
            RetryEvent::Resubmitted { .. } | RetryEvent::Recovered { .. }
        )),
        "slurmdash resubmitted a job Slurm requeues: {events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RetryEvent::Requeued { job_id, state, .. }
            if *job_id == job.job_id && state == "NODE_FAIL")),
        "{events:?}"
    );
    let entries = registry.load().expect("registry");
    assert_eq!(entries[0].attempts.len(), 1, "{entries:?}");
    assert_eq!(entries[0].attempts[0].state, None);

    // Back in service, the requeued run (same id) completes, and that is recorded.
    let _ = scontrol_node(&node, &["state=resume"]);
    // Slurm holds a requeued batch job for about two minutes (its BeginTime) before it may
    // start again.
    let done = final_state(&r, job.job_id, Duration::from_secs(300)).await;
    assert_eq!(done, "COMPLETED");
    let events = retry_check(&r, &registry, true, &no_secret).await.0;
    assert!(
        events.iter().any(|e| matches!(e, RetryEvent::Finished { job_id, class: Some(Class::Complete), .. } if *job_id == job.job_id)),
        "{events:?}"
    );
    let entries = registry.load().expect("registry");
    assert_eq!(entries[0].attempts.len(), 1, "{entries:?}");
    let out = run(
        &r,
        &[
            "cat",
            &format!(
                "{}/slurm-logs/requeue-victim-{}/main.out",
                job.job_dir, job.job_id
            ),
        ],
    )
    .await;
    assert_eq!(out.stdout_lossy().trim(), "requeued run done");
}
