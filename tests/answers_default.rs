//! The settings a user gets (the default slurmctld RPC budget, 4 a minute), the real binary
//! in tmux against the dev cluster: the queue refreshes by itself while it is watched, and a
//! job on screen that ends is shown ended without a key. How fast is the benchmark's question
//! (`scripts/bench-answers`); these tests say that the answers come.

use crate::common;

use std::time::{Duration, Instant};

use common::tmux::{rand_suffix, row, updated_secs, Tmux};
use common::*;

#[tokio::test(flavor = "multi_thread")]
async fn with_the_default_budget_the_queue_refreshes_itself_and_an_ended_job_shows() {
    let r = remote();
    let dir = scratch(&r, "answers").await;
    let tag = format!("ad{}", rand_suffix() % 100_000);
    // A job that runs 25 s: on screen running at the dashboard's first refresh, ended by a
    // later one that only the dashboard itself can make.
    let id = sbatch(
        &r,
        &[
            "--chdir",
            &dir,
            "-J",
            &tag,
            "-c",
            "1",
            "--mem=50M",
            "--wrap",
            "sleep 25",
        ],
    )
    .await;
    let _cancel = CancelOnDrop(id);
    wait_for(
        &format!("job {id} to run"),
        Duration::from_secs(180),
        || async {
            let out = run(&r, &["squeue", "-h", "-j", &id.to_string(), "-o", "%T"]).await;
            (out.stdout_lossy().trim() == "RUNNING").then_some(())
        },
    )
    .await;
    let t = Tmux::start(&dev_config_default(), &[]);
    t.keys(&["/"]);
    t.keys(&[&tag, "Enter"]);
    t.wait("the job running", Duration::from_secs(60), |s| {
        row(s, id).is_some_and(|l| l.contains("RUNNING"))
    });
    // No key from here on: the dashboard reads by itself. Its status bar's age falls back
    // each time a refresh lands; the job's row ends COMPLETED (its final state from sacct
    // once it left squeue, or from its detail read again, which can come first). Watched
    // until both are seen.
    let start = Instant::now();
    let (mut refreshes, mut last, mut oldest) = (0, None::<u64>, 0);
    let mut shown_ended = None::<f64>;
    let ended = loop {
        let s = t.screen();
        assert!(!s.contains("panicked"), "{s}");
        if let Some(age) = updated_secs(&s) {
            if last.is_some_and(|l| age < l) {
                refreshes += 1;
            }
            oldest = oldest.max(age);
            last = Some(age);
        }
        if shown_ended.is_none() && row(&s, id).is_some_and(|l| l.contains("COMPLETED")) {
            shown_ended = Some(start.elapsed().as_secs_f64());
        }
        if shown_ended.is_some() && refreshes >= 1 {
            break Some(s);
        }
        if start.elapsed() > Duration::from_secs(240) {
            break shown_ended.map(|_| s);
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let Some(s) = ended else {
        panic!(
            "job {id} not shown COMPLETED within 240 s without a key ({refreshes} refreshes seen):\n{}",
            t.screen()
        );
    };
    assert!(
        refreshes >= 1,
        "the queue's age never fell back in 240 s: no refresh by itself\n{s}"
    );
    println!(
        "default budget: job {id} shown COMPLETED {:.0}s after the dashboard showed it running; {refreshes} refreshes seen, the queue at most {oldest}s old",
        shown_ended.unwrap_or_default()
    );
}
