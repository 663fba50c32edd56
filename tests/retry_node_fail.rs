//! A real infrastructure failure: the node goes down under a launched job. The job ends
//! NODE_FAIL, the retry check re-submits it once, the chain shows two attempts, and the
//! second attempt completes once the node is back.
//!
//! This test sets the node the job runs on DOWN, which kills every job on it: a node of
//! partition `spare`, which no other test uses (never its only node), one such test at a time
//! (test group `spare-nodes`). It runs `scontrol update nodename=...` on this machine, which
//! hosts the dev cluster (as root).

use crate::common;

use std::time::Duration;

use common::launch::{launch, no_secret, retry_check};
use common::*;
use slurmdash::io::retry::RetryEvent;
use slurmdash::launch::spec::LaunchSpec;
use slurmdash::registry::Registry;
use slurmdash::retry::{Chain, RetryPolicy};
use slurmdash::triage::Class;

#[tokio::test(flavor = "multi_thread")]
async fn a_node_failure_is_retried_and_the_second_attempt_completes() {
    let r = remote();
    let base = scratch(&r, "retry-nodefail").await;
    let root = format!("{base}/results");
    let state = tempfile::tempdir().expect("state dir");
    let registry = Registry::open(state.path());
    let spare_nodes = spare_nodes(&r).await;

    // Runs long the first time; the retry finds the marker and finishes after 15 s (Slurm
    // still shows it then, for `scontrol show job`). The script excludes a node of its own.
    let spec = LaunchSpec {
        name: "node-victim".into(),
        partition: SPARE.into(),
        gpus: 1,
        cpus_per_task: 1,
        mem: "50M".into(),
        time: "5m".into(),
        command: r#"f="$TAO_API_RESULTS_DIR/$TAO_JOB_ID/ran-once"
if [ -e "$f" ]; then sleep 15; echo "second attempt done"; exit 0; fi
touch "$f"; sleep 300"#
            .into(),
        // Slurm would requeue the job itself on a node failure; slurmdash's retry is
        // what is tested here.
        requeue: false,
        extra_sbatch: vec!["--exclude=cpu01".into()],
        ..LaunchSpec::default()
    };
    let (first, local) = launch(&r, &registry, &root, &spec, &[]).await;
    wait_for("the job to run", Duration::from_secs(120), || async {
        let out = run(&r, &["test", "-e", &format!("{}/ran-once", first.job_dir)]).await;
        out.success().then_some(())
    })
    .await;

    // The node the first attempt runs on goes down; the others stay up.
    let node = job_nodes(&r, first.job_id).await;
    assert!(
        spare_nodes.contains(&node),
        "job {} runs on {node:?}, not one of {spare_nodes:?}",
        first.job_id
    );
    let _resume = Resume(node.clone());
    let out = scontrol_node(&node, &["state=down", "reason=slurmdash retry test"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let st = wait_for("NODE_FAIL", Duration::from_secs(60), || async {
        let s = sacct_state(&r, first.job_id).await;
        (s == "NODE_FAIL").then_some(s)
    })
    .await;
    assert_eq!(st, "NODE_FAIL");
    // Back to service (slurmd may already have brought it back when it re-registered, in
    // which case scontrol answers "Invalid node state specified").
    let _ = scontrol_node(&node, &["state=resume"]);
    wait_for(
        "the node back in service",
        Duration::from_secs(60),
        || async { in_service(&node_state(&r, &node).await).then_some(()) },
    )
    .await;

    let (events, entries) = retry_check(&r, &registry, true, &no_secret).await;
    let second = events
        .iter()
        .find_map(|e| match e {
            RetryEvent::Resubmitted { new, failed, .. } if *failed == first.job_id => Some(*new),
            _ => None,
        })
        .unwrap_or_else(|| panic!("not resubmitted: {events:?}"));
    assert!(
        events.iter().any(|e| matches!(e, RetryEvent::Finished { class: Some(Class::Infra), state, .. } if state == "NODE_FAIL")),
        "{events:?}"
    );
    // Kept off the node that failed it, and off the script's own exclusion too (a command
    // line --exclude alone would replace it); the user is told.
    let shown = run(&r, &["scontrol", "show", "job", &second.to_string()]).await;
    let exc = shown
        .stdout_lossy()
        .split_whitespace()
        .find_map(|w| w.strip_prefix("ExcNodeList=").map(str::to_string))
        .unwrap_or_default();
    let mut exc: Vec<&str> = exc.split(',').collect();
    exc.sort_unstable();
    let mut want = vec!["cpu01", node.as_str()];
    want.sort_unstable();
    assert_eq!(exc, want, "{}", shown.stdout_lossy());
    let told = events
        .iter()
        .find(|e| matches!(e, RetryEvent::Resubmitted { .. }))
        .map(RetryEvent::line)
        .unwrap_or_default();
    assert!(
        told.ends_with(&format!(", not on {node} where it failed (--exclude)")),
        "{told}"
    );
    // The chain the dashboard shows.
    let chains = Chain::index(&entries, &RetryPolicy::default());
    let (_, chain) = chains
        .iter()
        .find(|(id, _)| *id == second)
        .expect("chain of the retry");
    assert_eq!(
        chain.describe(),
        format!(
            "attempt 2 of up to 11 (launch {local}) · earlier: {} NODE_FAIL ERR_INFRA",
            first.job_id
        )
    );

    let done = final_state(&r, second, Duration::from_secs(120)).await;
    assert_eq!(done, "COMPLETED");
    let out = run(
        &r,
        &[
            "cat",
            &format!("{}/slurm-logs/node-victim-{second}/main.out", first.job_dir),
        ],
    )
    .await;
    assert_eq!(out.stdout_lossy().trim(), "second attempt done");
}
