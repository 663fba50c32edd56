//! Job arrays on the dev cluster as sacct sees them: each task's state, waiting for all to
//! end, the ones that did not complete.

use std::collections::BTreeSet;
use std::time::Duration;

use slurmdash::remote::Remote;

use super::{run, wait_for};

/// How long an array's tasks may take to end in these tests.
pub const ENDS: Duration = Duration::from_secs(300);

/// (index, state) of each task of array `id`, from sacct's allocation lines.
pub async fn tasks(r: &dyn Remote, id: u64) -> Vec<(u32, String)> {
    let out = run(
        r,
        &[
            "sacct",
            "--noheader",
            "--parsable2",
            "--allocations",
            "--starttime=now-1days",
            "--format=JobID,State",
            &format!("--jobs={id}"),
        ],
    )
    .await;
    out.stdout_lossy()
        .lines()
        .filter_map(|l| {
            let (job, state) = l.split_once('|')?;
            let idx = job.strip_prefix(&format!("{id}_"))?.parse().ok()?;
            Some((idx, state.split_whitespace().next()?.to_string()))
        })
        .collect()
}

/// Whether a sacct state is one a task ends in.
pub fn ended(state: &str) -> bool {
    !matches!(
        state,
        "PENDING" | "RUNNING" | "COMPLETING" | "CONFIGURING" | "REQUEUED" | "SUSPENDED"
    )
}

/// Waits (at most [`ENDS`]) until sacct lists `count` tasks of `id`, all ended.
pub async fn all_ended(r: &dyn Remote, id: u64, count: usize) -> Vec<(u32, String)> {
    wait_for(
        &format!("all {count} tasks of array {id} to end in sacct"),
        ENDS,
        || async {
            let t = tasks(r, id).await;
            (t.len() == count && t.iter().all(|(_, s)| ended(s))).then_some(t)
        },
    )
    .await
}

/// The indices of the tasks that did not complete.
pub fn failed(t: &[(u32, String)]) -> BTreeSet<u32> {
    t.iter()
        .filter(|(_, s)| s != "COMPLETED")
        .map(|(i, _)| *i)
        .collect()
}

/// `slurmdash submit --json` of a job named `name` on the cpu partition (no GPU, 1 CPU,
/// 50M, 5 minutes, no requeue) with the state dir `state`, the launch fields `sets`
/// (`key=value`, e.g. `array=0-19` or a sweep) and `command` after `--`. Returns the job id
/// and job directory; panics with slurmdash's output when it fails.
pub fn submit_on_cpu(
    state: &std::path::Path,
    name: &str,
    sets: &[&str],
    command: &[&str],
) -> (u64, String) {
    let name_set = format!("name={name}");
    let mut args = vec!["submit", "--json", "--set", &name_set];
    for set in sets.iter().chain(&[
        "partition=cpu",
        "gpus=0",
        "cpus_per_task=1",
        "mem=50M",
        "time=5m",
        "requeue=false",
    ]) {
        args.extend(["--set", set]);
    }
    args.push("--");
    args.extend(command);
    let env = [("SLURMDASH_STATE_DIR", state.to_str().expect("utf-8"))];
    let out = super::slurmdash_env(&super::dev_config(), &args, &env);
    let stdout = super::text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", super::text(&out.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let id = v["job_id"].as_u64().unwrap_or_else(|| panic!("{stdout}"));
    let dir = v["job_dir"].as_str().unwrap_or_else(|| panic!("{stdout}"));
    (id, dir.to_string())
}
