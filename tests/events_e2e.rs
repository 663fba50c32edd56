//! Job-change events in the real binary, in a real terminal (tmux), against the dev cluster:
//! a job goes PENDING → RUNNING → COMPLETED and another fails; the status bar and the
//! `:events` view say so, and the desktop notification escape (OSC 9) reaches the terminal.
//!
//! As the second test user: the status bar shows the latest change of any of the user's jobs,
//! and the jobs of the tests running beside this one are sduser's.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::tmux::{rand_suffix, refreshed, Tmux};
use common::*;

/// The dev config with a steady 2 s poll (the adaptive interval would otherwise grow to
/// 30 s while the queue is quiet, and a job could start and end between two refreshes)
/// and OSC 9 desktop notifications.
fn config(dir: &Path) -> PathBuf {
    let mut cfg = std::fs::read_to_string(dev_config_other()).expect("dev config");
    cfg.push_str("poll_interval_secs = 2\npoll_max_secs = 2\n\n[notify]\ndesktop = \"osc9\"\n");
    let p = dir.join("slurmdash.toml");
    std::fs::write(&p, cfg).expect("write config");
    p
}

#[tokio::test(flavor = "multi_thread")]
async fn job_changes_reach_the_status_bar_the_events_view_and_the_terminal() {
    let r = remote_as(OTHER_ALIAS);
    let dir = scratch_of(&r, OTHER_USER, "events").await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let raw = tmp.path().join("raw.out");
    let tag = format!("ev{}", rand_suffix() % 100_000);
    let ui = Tmux::start(&config(tmp.path()), &[]);
    ui.pipe_to(&raw);
    // The first refresh is in once the status bar says when it was ("updated 1s ago
    // (every 2s)"), whether or not the queue holds jobs.
    ui.wait(
        "the dashboard with the queue loaded",
        Duration::from_secs(30),
        refreshed,
    );
    // Pending for a few seconds (begin time), then runs briefly and completes.
    let ok = sbatch(
        &r,
        &[
            "--chdir",
            &dir,
            "-J",
            &tag,
            "-c",
            "1",
            "--mem=50M",
            "--begin=now+6",
            "--wrap",
            "sleep 5",
        ],
    )
    .await;
    let bad_name = format!("{tag}-bad");
    let bad = sbatch(
        &r,
        &[
            "--chdir",
            &dir,
            "-J",
            &bad_name,
            "-c",
            "1",
            "--mem=50M",
            "--begin=now+6",
            "--wrap",
            "sleep 3; exit 1",
        ],
    )
    .await;
    let done = format!("job {ok} {tag} completed");
    let failed = format!("job {bad} {bad_name} failed (FAILED)");
    let started = format!("job {ok} {tag} started");
    let limit = Duration::from_secs(120);
    // The latest change is on the status bar (its last two lines) until the next key.
    ui.wait("an event on the status bar", limit, |s| {
        let bar: Vec<&str> = s.lines().rev().take(2).collect();
        bar.iter()
            .any(|l| l.contains(&started) || l.contains(&done))
    });
    ui.keys(&[":", "events", "Enter"]);
    // Both left squeue at once; their final states came from sacct.
    let s = ui.wait("both jobs' final events in :events", limit, |s| {
        s.contains(&done) && s.contains(&failed)
    });
    assert!(s.contains(&started), "{s}");
    // The failure was triaged from its real log (read over SSH) and the log says why.
    let why = format!("{failed} · ERR_PROGRAM (exit code 1)");
    ui.wait("the failure's triage in :events", limit, |s| {
        s.contains(&why)
    });
    assert!(s.contains("esc closes"), "{s}");
    ui.keys(&["Escape"]);
    ui.wait("the queue again", Duration::from_secs(10), |s| {
        !s.contains("esc closes")
    });
    let bytes = std::fs::read(&raw).expect("raw pane output");
    let raw_text = String::from_utf8_lossy(&bytes);
    for want in [&started, &done, &failed] {
        let osc = format!("]9;slurmdash · dev: {want}");
        assert!(
            raw_text.contains(&osc),
            "no OSC 9 for {want:?} in the terminal output"
        );
    }
    assert_eq!(sacct_state(&r, ok).await, "COMPLETED");
    assert_eq!(sacct_state(&r, bad).await, "FAILED");
}
