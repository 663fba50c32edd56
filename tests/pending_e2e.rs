//! The real binary in tmux against the dev cluster: a job over MaxTime is explained in the
//! queue and the detail pane, `:partitions` and `:stats` open and close.

mod common;

use std::time::Duration;

use common::tmux::{rand_suffix, Tmux};
use common::*;
use slurmdash::remote::Remote;

#[tokio::test(flavor = "multi_thread")]
async fn over_maxtime_explained_and_partitions_and_stats_views() {
    let r = remote();
    let dir = scratch(&r, "pend-e2e").await;
    let tag = format!("pe{}", rand_suffix() % 100_000);
    let id = sbatch(
        &r,
        &[
            "-J",
            &format!("{tag}-long"),
            "-p",
            "polar",
            "--time=10:00:00",
            "-c",
            "1",
            "-D",
            &dir,
            "--wrap",
            "true",
        ],
    )
    .await;
    let t = Tmux::start(&dev_config(), &[]);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        t.keys(&["/"]);
        t.keys(&[&tag, "Enter"]);
        // The detail pane sits beside the log pane: match within its lines.
        let s = t.wait("the reason explained", Duration::from_secs(60), |s| {
            s.contains("too long: E to edit")
                && s.contains("PartitionTimeLimit: time limit 10:00:00 exceeds polar's")
                && s.contains("MaxTime 4:00:00")
                && s.contains("Fits in      long")
        });
        assert!(s.contains("E to edit the time limit or partition"), "{s}");
        t.keys(&[":"]);
        t.keys(&["partitions", "Enter"]);
        let s = t.wait("the partitions view", Duration::from_secs(30), |s| {
            s.contains("PARTITION")
                && s.contains("MAXTIME")
                && (s.contains("could start now") || s.contains("fits, waits for room"))
        });
        let polar = s
            .lines()
            .find(|l| l.contains("│polar "))
            .expect("polar row");
        assert!(polar.contains("4:00:00"), "{s}");
        assert!(s.contains(&format!("job {id} asks 1 CPU")), "{s}");
        assert!(
            s.contains("cannot run it: time 10:00:00 > MaxTime 4:00:00"),
            "{s}"
        );
        t.keys(&["Escape"]);
        t.wait("the view closed", Duration::from_secs(5), |s| {
            !s.contains("MAXTIME")
        });
        t.keys(&[":"]);
        t.keys(&["stats", "Enter"]);
        t.wait("the stats view", Duration::from_secs(15), |s| {
            s.contains("slurmctld RPCs per minute") && s.contains("last round trip")
        });
        t.keys(&["Escape", "q"]);
    }));
    let _ = r.run(&s(&["scancel", &id.to_string()]), None, T).await;
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
