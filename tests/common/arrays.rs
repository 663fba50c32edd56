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
