//! The slurmctld RPC budget on the real cluster: the real binary in a real terminal (tmux)
//! with the default budget (`[poll] max_rpcs_per_minute = 4`), for three minutes with a
//! running job selected and the user moving between three running jobs. slurmctld's own
//! count (`sdiag`, per user) says what it cost: each test runs as a dev-cluster account of
//! its own (sdbudget1, sdbudget2), which nothing else runs as, so that the count is its own
//! and no one-at-a-time group holds other tests back while it watches.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::tmux::{refreshed, Tmux};
use common::*;

/// A one-core job of `name` in `dir` that sleeps through the test (cancelled after it).
async fn sleeper(r: &dyn slurmdash::remote::Remote, dir: &str, name: &str) -> u64 {
    let args = [
        "--chdir",
        dir,
        "-J",
        name,
        "-p",
        "cpu",
        "-c",
        "1",
        "--mem=50M",
        "-t",
        "8",
    ];
    sbatch(r, &[&args[..], &["--wrap", "sleep 470"]].concat()).await
}

/// The dev config as `user` with the default budget.
fn config(dir: &Path, user: &str) -> PathBuf {
    let cfg = std::fs::read_to_string(dev_config_as(user)).expect("dev config");
    let cfg = cfg.replace("max_rpcs_per_minute = 0", "max_rpcs_per_minute = 4");
    assert!(cfg.contains("max_rpcs_per_minute = 4"), "{cfg}");
    let p = dir.join("slurmdash.toml");
    std::fs::write(&p, cfg).expect("write config");
    p
}

/// What the default budget (B = 4 slurmctld RPCs a minute, src/app/budget.rs) lets this
/// three-minute session cost, share by share:
/// - the refresh: on a cluster without state checks (22.05) a full read (2 RPCs) every
///   200/B = 50 s, never held longer (WATCH_SECS): at 0, 50, 100 and 150 s, 8 RPCs; where
///   the cluster answers `squeue --only-job-state`, a poll every 29 s (check_floor), a check
///   (1) and a full read (2) in turn: at most 7 polls in 180 s, 4 full reads and 3 checks,
///   11 RPCs;
/// - what the user asks for, never held: each of the three jobs' detail (`scontrol --local
///   show job`, 1), its batch script kept once for a relaunch (`scontrol write
///   batch_script`, 1) and its live sample (sstat, 3) once, since all are kept for the whole
///   test (details while the job's state stays, scripts for good, samples KEEP_SECS = 180 s),
///   so moving back costs nothing: 15 RPCs; and the site's rate limit (`scontrol show
///   config`, 2), asked with the first selection;
/// - the background (samples while a job stays selected): only while the reads of the last
///   five minutes, the user's included, plus it stay within a quarter of the five-minute
///   allowance (5·B/4 = 5); the opening's reads (the first job's detail, script and sample,
///   the site's limit: 7) take more than that quarter at once, so nothing more in these three minutes;
/// - connecting runs commands no plan holds (the registry's jobs, the retry check): at most
///   a few RPCs.
///
/// A budget that lets the background sample with each refresh, refreshes faster than its
/// pace, or reads a kept detail or sample again, goes over.
fn allowed(state_checks: bool) -> u64 {
    let refresh = if state_checks { 4 * 2 + 3 } else { 4 * 2 };
    let user = 3 * (1 + 1 + 3) + 2;
    let background = 0;
    refresh + user + background + CONNECT
}
const CONNECT: u64 = 4;

/// The accounts of the two tests (scripts/dev-cluster's SHELL_USERS).
const USER_A: &str = "sdbudget1";
const USER_B: &str = "sdbudget2";

#[tokio::test(flavor = "multi_thread")]
async fn three_minutes_on_running_jobs_stay_within_the_default_budget() {
    let r = remote_as(&alias_of(USER_A));
    let dir = scratch_of(&r, USER_A, "budget").await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(sleeper(&r, &dir, &format!("budget{i}")).await);
    }
    let _cancel = CancelAs(alias_of(USER_A), ids.clone());
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = config(tmp.path(), USER_A);
    // Wait until the three run (read with this test's own ssh: before the count starts).
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = run(
            &r,
            &[
                "squeue",
                "--me",
                "--noheader",
                "--states=RUNNING",
                "-o",
                "%i",
            ],
        )
        .await;
        let running = out.stdout_lossy().lines().count();
        if running >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the three jobs did not start: {running} run"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let (ctld0, _) = rpcs_of(USER_A);
    let started = Instant::now();
    let ui = Tmux::start(&cfg, &[]);
    let s = ui.wait("the first screen", Duration::from_secs(30), refreshed);
    assert!(
        s.contains("budget 4/min"),
        "the status bar shows the budget: {s}"
    );
    // Three minutes: a key every 20 s, down through the three jobs and back.
    let keys = ["j", "j", "k", "k", "j", "j", "k", "k", "j"];
    for k in keys {
        tokio::time::sleep(Duration::from_secs(20)).await;
        ui.keys(&[k]);
    }
    let left = Duration::from_secs(180).saturating_sub(started.elapsed());
    tokio::time::sleep(left).await;
    let screen = ui.screen();
    let (ctld1, _) = rpcs_of(USER_A);
    let secs = started.elapsed().as_secs();
    drop(ui);
    let spent = ctld1 - ctld0;
    println!(
        "budget_cluster: {spent} slurmctld RPCs of {USER_A} in {secs} s with the default budget (4/min)"
    );
    let allowed = allowed(dev_slurm() != "22.05");
    assert!(
        spent <= allowed,
        "{spent} slurmctld RPCs in {secs} s, over the {allowed} the budget allows:\n{screen}"
    );
    // The refresh kept going: the queue is not stale.
    assert!(refreshed(&screen), "{screen}");
}

/// The remote commands of a debug log (`--log`): when each ran and whether it was a state
/// check (`squeue --only-job-state`) or a full read (`squeue --local`).
fn polls_in(log: &str) -> Vec<(chrono::DateTime<chrono::Utc>, bool)> {
    log.lines()
        .filter(|l| l.contains("slurmdash::remote") && l.contains("squeue"))
        .filter_map(|l| {
            let at = l.split_whitespace().next()?.parse().ok()?;
            let check = l.contains("--only-job-state");
            (check || l.contains("--local")).then_some((at, check))
        })
        .collect()
}

/// Where the cluster answers `squeue --only-job-state` (24.11, 26.05), a job that ends
/// between two full reads is seen by the state check that follows, and the full read it
/// calls for runs right after it, sooner than the next scheduled one; slurmctld's count
/// stays within the budget. On 22.05 no check is ever sent and full reads go on.
#[tokio::test(flavor = "multi_thread")]
async fn a_job_that_ends_is_seen_by_a_state_check_and_read_in_full_at_once() {
    let ver = dev_slurm();
    let r = remote_as(&alias_of(USER_B));
    let dir = scratch_of(&r, USER_B, "budget-check").await;
    let mut ids = Vec::new();
    for name in ["check-stays", "check-ends"] {
        ids.push(sleeper(&r, &dir, name).await);
    }
    let _cancel = CancelAs(alias_of(USER_B), ids.clone());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = run(
            &r,
            &[
                "squeue",
                "--me",
                "--noheader",
                "--states=RUNNING",
                "-o",
                "%i",
            ],
        )
        .await;
        if out.stdout_lossy().lines().count() >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the two jobs did not start");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = config(tmp.path(), USER_B);
    let log = tmp.path().join("debug.log");
    let log_arg = log.display().to_string();
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let (ctld0, _) = rpcs_of(USER_B);
    let started = Instant::now();
    let ui = Tmux::start(&cfg, &["--log", &log_arg]);
    ui.wait("the first screen", Duration::from_secs(30), refreshed);

    let ended = ids[1].to_string();
    if ver == "22.05" {
        // The same end, right after a full read, seen by full reads alone (for the figures
        // beside those with checks).
        let deadline = Instant::now() + Duration::from_secs(60);
        while polls_in(&read_log()).len() < 2 {
            assert!(Instant::now() < deadline, "no second full read");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let out = slurm_admin(&["scancel", &ended]);
        assert!(out.status.success(), "scancel: {}", text(&out.stderr));
        let cancelled = Instant::now();
        ui.wait("the ended job's row", Duration::from_secs(150), |s| {
            s.lines()
                .any(|l| l.contains(&ended) && (l.contains("CANCEL") || l.contains(" CA ")))
        });
        let seen = cancelled.elapsed().as_secs_f64();
        let left = Duration::from_secs(180).saturating_sub(started.elapsed());
        tokio::time::sleep(left).await;
        let (ctld1, _) = rpcs_of(USER_B);
        let secs = started.elapsed().as_secs();
        let polls = polls_in(&read_log());
        println!(
            "budget_cluster (22.05): job {ended} cancelled, its end on screen {seen:.1} s later; {} slurmctld RPCs of {USER_B} in {secs} s; {} full reads",
            ctld1 - ctld0,
            polls.len()
        );
        assert!(
            polls.iter().all(|(_, check)| !check),
            "22.05 has no --only-job-state: {polls:?}"
        );
        assert!(polls.len() >= 3, "full reads went on: {polls:?}");
        return;
    }

    // Once a check ran, wait for a full read and end a job right after it (as root: the
    // count stays the dashboard's), so that the next poll is a check.
    let deadline = Instant::now() + Duration::from_secs(150);
    let fulls = loop {
        let polls = polls_in(&read_log());
        if polls.iter().any(|(_, c)| *c) {
            break polls.iter().filter(|(_, c)| !c).count();
        }
        assert!(Instant::now() < deadline, "no state check ran: {polls:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    while polls_in(&read_log()).iter().filter(|(_, c)| !c).count() == fulls {
        assert!(Instant::now() < deadline, "no full read after the check");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let out = slurm_admin(&["scancel", &ended]);
    assert!(out.status.success(), "scancel: {}", text(&out.stderr));
    let cancelled_at = chrono::Utc::now();
    let cancelled = Instant::now();
    // The next poll (a check, at most 31 s on), and the full read it calls for.
    let deadline = Instant::now() + Duration::from_secs(90);
    let after = loop {
        let after: Vec<_> = polls_in(&read_log())
            .into_iter()
            .filter(|(t, _)| *t > cancelled_at)
            .collect();
        if after.len() >= 2 {
            break after;
        }
        assert!(
            Instant::now() < deadline,
            "no polls after the end: {after:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    eprintln!(
        "cancelled {ended} at {cancelled_at}; polls (time, check?): {:?}",
        polls_in(&read_log())
    );
    let screen = ui.wait("the ended job's row", Duration::from_secs(60), |s| {
        s.lines()
            .any(|l| l.contains(&ended) && (l.contains("CANCEL") || l.contains(" CA ")))
    });
    let seen = cancelled.elapsed().as_secs_f64();
    let left = Duration::from_secs(180).saturating_sub(started.elapsed());
    tokio::time::sleep(left).await;
    let (ctld1, _) = rpcs_of(USER_B);
    let secs = started.elapsed().as_secs();
    drop(ui);
    let all = polls_in(&read_log());
    let spent = ctld1 - ctld0;
    let (check_at, full_at) = (after[0].0, after[1].0);
    let gap = (full_at - check_at).num_milliseconds();
    println!(
        "budget_cluster ({ver}): job {ended} cancelled {cancelled_at}, check {check_at}, full read {full_at} ({gap} ms later), its end on screen {seen:.1} s after the cancel; {spent} slurmctld RPCs of {USER_B} in {secs} s; {} checks, {} full reads",
        all.iter().filter(|(_, c)| *c).count(),
        all.iter().filter(|(_, c)| !c).count(),
    );
    assert!(
        after[0].1,
        "the first poll after the end was a check: {after:?}"
    );
    assert!(
        !after[1].1,
        "the check's change called for a full read: {after:?}"
    );
    assert!(
        gap < 5_000,
        "the full read came right after the check ({gap} ms), not at its schedule (62 s)"
    );
    // No key here: the refresh with state checks (11, see `allowed`), the full read the check
    // called for (2), the first job's detail, sample and the site's limit (6), connecting.
    let allowed = 4 * 2 + 3 + 2 + (1 + 3 + 2) + CONNECT;
    assert!(
        spent <= allowed,
        "{spent} slurmctld RPCs in {secs} s, over the {allowed} the budget allows:\n{screen}"
    );
}
