//! `:history` in the real binary, in a real terminal (tmux), against the dev cluster: a job
//! that ended before the dashboard started is listed with its state, exit code and
//! efficiency; the filter works there; its detail shows the Efficiency lines; esc returns to
//! the queue.

use crate::common;

use std::time::Duration;

use common::tmux::{rand_suffix, refreshed, Tmux};
use common::*;

#[tokio::test(flavor = "multi_thread")]
async fn history_lists_a_job_that_ended_before_the_dashboard_started() {
    let r = remote();
    let dir = scratch(&r, "hist").await;
    let tag = format!("hist{}", rand_suffix() % 100_000);
    let id = sbatch(
        &r,
        &[
            "--chdir",
            &dir,
            "-J",
            &format!("{tag}-bad"),
            "-c",
            "1",
            "--mem=200M",
            "-t",
            "5",
            "--wrap",
            "echo hello; sleep 2; exit 3",
        ],
    )
    .await;
    let other = sbatch(
        &r,
        &[
            "--chdir",
            &dir,
            "-J",
            &format!("{tag}-ok"),
            "-c",
            "1",
            "--mem=50M",
            "--wrap",
            "true",
        ],
    )
    .await;
    // Ended, and found by slurmdbd's end-time selection (it lags `sacct -j` by seconds).
    wait_for(
        "both jobs in sacct's end-time selection",
        Duration::from_secs(120),
        || async {
            let t = run(&r, SACCT_ENDED).await.stdout_lossy();
            (lists_job(&t, id) && lists_job(&t, other)).then_some(())
        },
    )
    .await;

    let ui = Tmux::start(&dev_config(), &[]);
    ui.wait(
        "the dashboard with the queue loaded",
        Duration::from_secs(30),
        refreshed,
    );
    ui.keys(&[":", "history", "Enter"]);
    let s = ui.wait("the job in :history", Duration::from_secs(60), |s| {
        tmux::row(s, id).is_some_and(|r| r.contains("FAILED"))
    });
    assert!(s.contains("history, 7 days"), "{s}");
    for col in ["EXIT", "CPU%", "MEM%", "TRIAGE"] {
        assert!(s.contains(col), "column {col}:\n{s}");
    }
    let row = tmux::row(&s, id).expect("row").to_string();
    assert!(
        row.contains(&tag) && row.contains(" 3 "),
        "exit code 3 in {row}"
    );
    ui.wait(
        "the use figures and the triage class",
        Duration::from_secs(60),
        |s| tmux::row(s, id).is_some_and(|r| r.contains("ERR_PROGRAM") && !r.contains('…')),
    );

    // The filter works as in the queue.
    ui.filter(&format!("{tag}-ok"), Duration::from_secs(30));
    let s = ui.wait("only the filtered job", Duration::from_secs(10), |s| {
        tmux::row(s, other).is_some() && tmux::row(s, id).is_none()
    });
    assert!(s.contains("filter:"), "{s}");
    ui.keys(&["Escape"]);
    ui.wait("the filter cleared", Duration::from_secs(10), |s| {
        tmux::row(s, id).is_some() && tmux::row(s, other).is_some()
    });

    // Select the failed job: its detail shows the Efficiency lines (no remote command:
    // the history's read holds them).
    ui.filter(&format!("{tag}-bad"), Duration::from_secs(30));
    let s = ui.wait(
        "the Efficiency lines in the detail",
        Duration::from_secs(30),
        |s| s.contains("Efficiency") && s.contains("Verdict") && s.contains(&format!("job {id}")),
    );
    assert!(s.contains("ERR_PROGRAM"), "{s}");

    // `L` on it: slurmdash did not launch it, so the form gets what Slurm recorded and the
    // note says what could not be recovered.
    ui.keys(&["L"]);
    let s = ui.wait(
        "the form from the job's records",
        Duration::from_secs(60),
        |s| {
            s.contains("launch a job on")
                && s.contains(&format!("relaunch of {id} (not launched by slurmdash"))
        },
    );
    assert!(s.contains("not recovered"), "{s}");
    ui.keys(&["Escape"]);
    ui.wait("the form closed", Duration::from_secs(10), |s| {
        !s.contains("launch a job on")
    });

    // esc clears the filter, then returns to the queue.
    ui.keys(&["Escape", "Escape"]);
    ui.wait("the queue again", Duration::from_secs(10), |s| {
        s.contains(" jobs ") && !s.contains("history, 7 days")
    });
    ui.keys(&["q"]);
}
