//! A node taken down under a guarded launch, with no slurmdash process after submit: without
//! `--requeue` the guard resubmits it once (NODE_FAIL is ERR_INFRA) and the second attempt
//! completes; with `--requeue` Slurm's own requeue alone runs it again under the same id and
//! the guard starts no second copy.
//!
//! This sets a node of partition `spare` DOWN (which kills every job on it): no other test uses
//! that partition, and one such test runs at a time (test group `spare-nodes`). The node is
//! always resumed (and, if it stays COMPLETING, set down and resumed again).

use crate::common;
use crate::guard_helpers;

use common::*;
use guard_helpers::*;

/// Runs long the first time, finishes after 20 s when run again (Slurm still shows the
/// job then, for `scontrol show job`).
const ONCE: &str = "f=\"$SLURMDASH_JOB_DIR/ran-once\"; if [ -e \"$f\" ]; then sleep 20; echo again done; exit 0; fi; touch \"$f\"; sleep 300";

#[tokio::test(flavor = "multi_thread")]
async fn a_node_failure_is_retried_by_the_guard_or_left_to_slurms_requeue() {
    let r = remote();
    let spares = spare_nodes(&r).await;
    let on_spare = format!("partition={SPARE}");

    // Without --requeue: the guard retries once.
    let l = submit(&tag("nf"), ONCE, &["--set", &on_spare]);
    wait_started(&r, &l).await;
    let node = job_nodes(&r, l.job).await;
    assert!(spares.contains(&node), "job {} on {node:?}", l.job);
    {
        let _resume = Resume(node.clone());
        take_down_and_resume(&r, &node, l.job).await;
    }
    let d = decision_for(&r, &l.dir, l.job).await;
    assert_eq!(d.state.as_deref(), Some("NODE_FAIL"), "{d:?}");
    assert_eq!(d.class.as_deref(), Some("ERR_INFRA"));
    let second = d.next_id().unwrap_or_else(|| panic!("not retried: {d:?}"));
    // Not on the node that failed it: the retry carries --exclude, and the chain says so.
    let shown = run(&r, &["scontrol", "show", "job", &second.to_string()]).await;
    let exc = shown
        .stdout_lossy()
        .split_whitespace()
        .find_map(|w| w.strip_prefix("ExcNodeList=").map(str::to_string))
        .unwrap_or_default();
    assert_eq!(exc, node, "{}", shown.stdout_lossy());
    assert!(
        d.decision
            .as_deref()
            .unwrap_or("")
            .contains(&format!("not on {node} where it failed (--exclude={node})")),
        "{d:?}"
    );
    assert_ne!(job_nodes(&r, second).await, node);
    assert_eq!(final_state(&r, second, WAIT).await, "COMPLETED");
    let lines = chain(&r, &l.dir).await;
    assert_eq!(
        lines.iter().filter(|x| x.is_decision()).count(),
        1,
        "{lines:?}"
    );
    wait_quiet(&r, &l.dir).await;
    println!(
        "no requeue: {} NODE_FAIL -> retried as {second}, COMPLETED",
        l.job
    );

    // With --requeue: Slurm requeues the same job; the guard adds nothing.
    let l = submit(
        &tag("rq"),
        ONCE,
        &["--set", "requeue=true", "--set", &on_spare],
    );
    wait_started(&r, &l).await;
    let g = guard_of(&chain(&r, &l.dir).await, l.job);
    let node = job_nodes(&r, l.job).await;
    assert!(spares.contains(&node), "job {} on {node:?}", l.job);
    {
        let _resume = Resume(node.clone());
        take_down_and_resume(&r, &node, l.job).await;
    }
    // For a moment sacct shows only NODE_FAIL; the requeued job waits (BeginTime) and runs
    // again under its id, while its guard's afternotok stays unfulfilled: the guard still
    // pends on the job, unless the requeued job has already run again and completed (then
    // Slurm has removed the guard, or is about to).
    let dep = run(&r, &["squeue", "-h", "-j", &g.to_string(), "-o", "%T|%E"]).await;
    let meanwhile = dep.stdout_lossy().trim().to_string();
    println!("requeue: guard {g} meanwhile: {meanwhile}");
    match meanwhile.split_once('|') {
        Some(("PENDING", why)) => assert!(
            why.contains(&format!("afternotok:{}", l.job)) && !why.contains("failed"),
            "the guard waits on job {}'s failure, not yet decided: {meanwhile}",
            l.job
        ),
        _ => assert_eq!(
            sacct_state(&r, l.job).await,
            "COMPLETED",
            "guard {g} no longer pends ({meanwhile:?}) before job {} ran again",
            l.job
        ),
    }
    wait_for("the requeued job to complete", WAIT, || async {
        (sacct_state(&r, l.job).await == "COMPLETED").then_some(())
    })
    .await;
    // The same job id ran twice: the attempt the node failure ended and the one that
    // completed (sacct --duplicates lists every run of a requeued job: NODE_FAIL, then COMPLETED on 22.05).
    let runs = run(
        &r,
        &[
            "sacct",
            "-n",
            "-X",
            "-D",
            "-P",
            "-o",
            "State",
            "-j",
            &l.job.to_string(),
            "-S",
            "now-1days",
        ],
    )
    .await;
    let runs: Vec<String> = runs
        .stdout_lossy()
        .lines()
        .map(|s| s.trim().to_string())
        .collect();
    assert_eq!(
        runs.last().map(String::as_str),
        Some("COMPLETED"),
        "job {} runs: {runs:?}",
        l.job
    );
    assert!(
        runs.len() >= 2
            && runs[..runs.len() - 1]
                .iter()
                .any(|s| s == "NODE_FAIL" || s == "REQUEUED"),
        "job {} ran again under its id after NODE_FAIL: {runs:?}",
        l.job
    );
    // Slurm removes the guard once the job it guards has succeeded; it never ran.
    let gs = final_state(&r, g, WAIT).await;
    let lines = chain(&r, &l.dir).await;
    println!(
        "requeue: job {} requeued by Slurm and COMPLETED; its guard {g}: {gs}; chain: {lines:?}",
        l.job
    );
    assert!(
        gs.starts_with("CANCELLED"),
        "guard {g} removed without running: {gs}"
    );
    assert!(
        !lines.iter().any(|x| x.is_decision()),
        "the guard decided nothing: {lines:?}"
    );
    let logs = run(&r, &["ls", &format!("{}/slurm-logs", l.dir)]).await;
    assert_eq!(
        logs.stdout_lossy().lines().count(),
        1,
        "one job only: {}",
        logs.stdout_lossy()
    );
    wait_quiet(&r, &l.dir).await;
}
