//! The real binary in tmux against the dev cluster, with the settings a user gets (the
//! default RPC budget): a job over MaxTime is explained in the queue and the detail pane,
//! `:partitions` and `:stats` open and close.

use crate::common;

use std::time::Duration;

use common::limits;
use common::tmux::{rand_suffix, Tmux};
use common::*;
use slurmdash::remote::Remote;

#[tokio::test(flavor = "multi_thread")]
async fn over_maxtime_explained_and_partitions_and_stats_views() {
    let r = remote();
    let dir = scratch(&r, "pend-e2e").await;
    let tag = format!("pe{}", rand_suffix() % 100_000);
    let id = sbatch_too_long(&r, &format!("{tag}-long"), &dir).await;
    let t = Tmux::start(&dev_config_default(), &[]);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        t.keys(&["/"]);
        t.keys(&[&tag, "Enter"]);
        // The detail pane sits beside the log pane: match within its lines.
        // The queue's reason is the refresh's (every 50 s with the default budget): two
        // refreshes at most.
        let s = t.wait("the reason explained", Duration::from_secs(120), |s| {
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
        // The site's own rate limit, read once from `scontrol show config`: the dev
        // clusters have none.
        t.wait("the stats view", Duration::from_secs(15), |s| {
            s.contains("slurmctld RPCs per minute")
                && s.contains("last round trip")
                && s.contains(
                    "site limit                none (no rl_enable in SlurmctldParameters)",
                )
        });
        t.keys(&["Escape", "q"]);
    }));
    let _ = r.run(&s(&["scancel", &id.to_string()]), None, T).await;
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// A job waiting for its QOS's per-user GPU limit (a QOS and account of this test's own,
/// removed after): the real dashboard's detail pane names the limit and slurmctld's count.
/// Where the cluster does not enforce limits it says slurmctld counts nothing instead.
#[tokio::test(flavor = "multi_thread")]
async fn the_detail_pane_names_the_limit_a_job_waits_for() {
    let enforced = limits::enforced();
    let own = limits::OwnLimits::add("sdlime2e");
    let r = remote();
    let dir = scratch(&r, "lim-e2e").await;
    let tag = format!("le{}", rand_suffix() % 100_000);
    let args = ["-A", "sdlime2e", "--qos=sdlime2e", "-c", "1", "-D", &dir];
    let holder_name = format!("{tag}-holder");
    // slurmctld hears of the new QOS and account from slurmdbd within seconds.
    let holder = wait_for(
        "sbatch with the new QOS",
        Duration::from_secs(60),
        || async {
            let mut argv = vec!["sbatch", "--parsable", "-J", &holder_name];
            argv.extend_from_slice(&["--gres=gpu:2", "-t", "3"]);
            argv.extend_from_slice(&args);
            argv.extend_from_slice(&["--wrap", "sleep 150"]);
            let out = run(&r, &argv).await;
            out.success()
                .then(|| {
                    out.stdout_lossy()
                        .trim()
                        .split(';')
                        .next()?
                        .parse::<u64>()
                        .ok()
                })
                .flatten()
        },
    )
    .await;
    // Other tests may hold the GPUs for a while.
    let running = wait_for_running(&r, holder).await;
    let waits_name = format!("{tag}-waits");
    let mut argv = vec!["-J", &waits_name, "--gres=gpu:1", "-t", "1"];
    if !enforced {
        // Nothing would hold it back: hold it, so it stays pending to be looked at.
        argv.push("--hold");
    }
    argv.extend_from_slice(&args);
    argv.extend_from_slice(&["--wrap", "true"]);
    let target = sbatch(&r, &argv).await;
    let t = Tmux::start(&dev_config_default(), &[]);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        assert!(running, "the 2-GPU holder did not start within 240 s");
        t.keys(&["/"]);
        t.keys(&[&waits_name, "Enter"]);
        if enforced {
            let s = t.wait("the limit named", Duration::from_secs(60), |s| {
                s.contains("Limit hit") && s.contains("QOSMaxGRESPerUser")
            });
            let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                flat.contains("you hold 2 of the 2 GPUs QOS sdlime2e allows per user"),
                "{s}"
            );
        } else {
            t.wait("the note", Duration::from_secs(60), |s| {
                s.contains("slurmctld counts no usage")
            });
        }
        t.keys(&["q"]);
    }));
    let _ = r
        .run(
            &s(&["scancel", &holder.to_string(), &target.to_string()]),
            None,
            T,
        )
        .await;
    drop(own);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// Whether job `id` runs within 240 s (squeue as the test user).
async fn wait_for_running(r: &dyn Remote, id: u64) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(240) {
        let out = run(r, &["squeue", "-h", "-j", &id.to_string(), "-o", "%T"]).await;
        if out.stdout_lossy().trim() == "RUNNING" {
            return true;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    false
}
