//! Progress and ETA read from a running job's log: the real binary in tmux against the dev
//! cluster, two jobs on partition cpu printing progress as programs do. One writes a
//! tqdm-style bar, each update after a `\r` on one line, with tqdm's own `<MM:SS` estimate;
//! the other writes `step N/M` lines too slowly for its 2-minute limit, so its ETA comes
//! from the rate the dashboard observed and lands after the limit. With the default RPC
//! budget: progress needs no read of its own.

use crate::common;

use std::time::Duration;

use common::tmux::*;
use common::*;

/// A tqdm bar over `total` steps, one a second, each update `\r` then the bar (no newline),
/// in tqdm's own format: ` 45%|####      | 45/100 [00:45<00:55,  1.00it/s]`.
fn tqdm_loop(total: u32) -> String {
    format!(
        "n=0; while [ $n -le {total} ]; do p=$((n*100/{total})); r=$(({total}-n)); \
         printf '\\r%3d%%|####      | %d/{total} [%02d:%02d<%02d:%02d,  1.00it/s]' \
         $p $n $((n/60)) $((n%60)) $((r/60)) $((r%60)); n=$((n+1)); sleep 1; done; echo"
    )
}

/// `step N/600` every 2 seconds: 20 minutes of work.
fn step_loop() -> String {
    "n=1; while [ $n -le 600 ]; do echo \"step $n/600 loss 0.$n\"; n=$((n+1)); sleep 2; done"
        .to_string()
}

/// The detail pane's `Progress` figure: `45` from `Progress 45 % · ETA ...` (`<1` is 0).
fn detail_percent(s: &str) -> Option<u32> {
    let d = left_pane_text(s);
    let p = d.split("Progress ").nth(1)?.split(" %").next()?.trim();
    if p == "<1" {
        return Some(0);
    }
    p.parse().ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_jobs_progress_rises_with_an_eta_and_a_late_one_is_warned() {
    let r = remote();
    let dir = scratch(&r, "progress").await;
    let tag = format!("prog{}", rand_suffix() % 100_000);
    let bar = sbatch(
        &r,
        &[
            "-J",
            &format!("{tag}-bar"),
            "-p",
            "cpu",
            "-c",
            "1",
            "-t",
            "5",
            "-o",
            &format!("{dir}/bar-%j.out"),
            "--wrap",
            &tqdm_loop(150),
        ],
    )
    .await;
    let steps = sbatch(
        &r,
        &[
            "-J",
            &format!("{tag}-steps"),
            "-p",
            "cpu",
            "-c",
            "1",
            "-t",
            "2",
            "-o",
            &format!("{dir}/steps-%j.out"),
            "--wrap",
            &step_loop(),
        ],
    )
    .await;
    wait_job_running(&r, bar, "the bar job to run", Duration::from_secs(60)).await;
    wait_job_running(&r, steps, "the steps job to run", Duration::from_secs(60)).await;

    // As a user has it: the default slurmctld RPC budget (progress costs none).
    let t = Tmux::start(&dev_config_default(), &[]);
    t.wait("the dashboard", Duration::from_secs(30), refreshed);
    // (Whether PROGRESS is drawn before a log is open depends on which job sorts first: the
    // selected row's log opens at once, and other tests' jobs share the queue. The column's
    // absence before any progress is checked where the queue is known: app::progress's
    // tests.)

    // The bar job: its log opens, the percent shows with tqdm's estimate and rises.
    t.filter(&format!("{tag}-bar"), Duration::from_secs(20));
    let s = t.wait(
        "the bar job's progress in the detail pane",
        Duration::from_secs(30),
        |s| detail_percent(s).is_some() && left_pane_text(s).contains("· ETA "),
    );
    let first = detail_percent(&s).unwrap_or(0);
    let d = left_pane_text(&s);
    assert!(d.contains("tqdm bar"), "{d}");
    assert!(d.contains("limit in "), "{d}");
    assert!(!d.contains("reaches its time limit first"), "{d}");
    let s = t.wait("the percent to rise", Duration::from_secs(30), |s| {
        detail_percent(s).is_some_and(|p| p >= first + 2)
    });
    let line = row(&s, bar).unwrap_or_default().to_string();
    assert!(line.contains('%'), "the queue's PROGRESS cell: {s}");
    assert!(s.contains("PROGRESS"), "{s}");
    println!(
        "bar job: {first} % then {:?} %; detail: {}",
        detail_percent(&s),
        left_pane_text(&s)
    );

    // The steps job: one step every 2 s of 600 is 20 minutes, its limit 2: once the
    // dashboard has seen two changes it has a rate, and the ETA lands after the limit.
    t.filter(&format!("{tag}-steps"), Duration::from_secs(20));
    let s = t.wait(
        "the time-limit warning for the steps job",
        Duration::from_secs(40),
        |s| left_pane_text(s).contains("reaches its time limit first"),
    );
    let d = left_pane_text(&s);
    assert!(d.contains("· ETA ") && d.contains("· limit in "), "{d}");
    assert!(d.contains("step"), "{d}");
    assert!(d.contains("To do"), "{d}");
    assert!(d.contains("auto-resume"), "{d}");
    let line = row(&s, steps).unwrap_or_default().to_string();
    assert!(line.contains("%") && line.contains('!'), "{s}");
    println!("steps job: {d}");

    // With the filter cleared, both rows keep what was read: the bar's log is no longer
    // open, its cell stays.
    t.keys(&["Escape"]);
    let s = t.wait("both rows with progress", Duration::from_secs(15), |s| {
        row(s, bar).is_some_and(|l| l.contains('%'))
            && row(s, steps).is_some_and(|l| l.contains('!'))
    });
    println!(
        "queue rows:\n{}\n{}",
        row(&s, bar).unwrap_or_default(),
        row(&s, steps).unwrap_or_default()
    );

    t.keys(&["q"]);
    t.wait("slurmdash to exit", Duration::from_secs(10), |s| {
        s.contains("EXITED:")
    });
    run(&r, &["scancel", &bar.to_string(), &steps.to_string()]).await;
    run(&r, &["rm", "-rf", &dir]).await;
}
