//! The slurmctld RPC budget on the real cluster: the real binary in a real terminal (tmux)
//! with the default budget (`[poll] max_rpcs_per_minute = 4`), as the second test user
//! (sdother, whom nothing else runs as meanwhile: nextest group `other-user`), for three
//! minutes with a running job selected and the user moving between three running jobs.
//! slurmctld's own count (`sdiag`, per user) says what it cost.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::tmux::{refreshed, Tmux};
use common::*;

/// The dev config as sdother with the default budget.
fn config(dir: &Path) -> PathBuf {
    let cfg = std::fs::read_to_string(dev_config_other()).expect("dev config");
    let cfg = cfg.replace("max_rpcs_per_minute = 0", "max_rpcs_per_minute = 4");
    assert!(cfg.contains("max_rpcs_per_minute = 4"), "{cfg}");
    let p = dir.join("slurmdash.toml");
    std::fs::write(&p, cfg).expect("write config");
    p
}

/// Cancels sdother's jobs when dropped, a failing test included.
struct CancelOther(Vec<u64>);

impl Drop for CancelOther {
    fn drop(&mut self) {
        let mut args = vec![OTHER_ALIAS.to_string(), "scancel".into()];
        args.extend(self.0.iter().map(u64::to_string));
        let _ = std::process::Command::new("ssh")
            .arg("-F")
            .arg(ssh_config())
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// What the dashboard may cost slurmctld in three minutes: the budget allows 5 × 4 = 20 in
/// any five minutes (reads may come together within them), and connecting runs commands no
/// plan holds (the registry's jobs, the retry check: at most a few RPCs).
const ALLOWED: u64 = 5 * 4;
const CONNECT: u64 = 4;

#[tokio::test(flavor = "multi_thread")]
async fn three_minutes_on_running_jobs_stay_within_the_default_budget() {
    let r = remote_as(OTHER_ALIAS);
    let dir = scratch_of(&r, OTHER_USER, "budget").await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let name = format!("budget{i}");
        ids.push(
            sbatch(
                &r,
                &[
                    "--chdir",
                    &dir,
                    "-J",
                    &name,
                    "-p",
                    "cpu",
                    "-c",
                    "1",
                    "--mem=50M",
                    "-t",
                    "8",
                    "--wrap",
                    "sleep 470",
                ],
            )
            .await,
        );
    }
    let _cancel = CancelOther(ids.clone());
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = config(tmp.path());
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
    let (ctld0, _) = rpcs_of(OTHER_USER);
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
    let (ctld1, _) = rpcs_of(OTHER_USER);
    let secs = started.elapsed().as_secs();
    drop(ui);
    let spent = ctld1 - ctld0;
    println!(
        "budget_cluster: {spent} slurmctld RPCs of sdother in {secs} s with the default budget (4/min)"
    );
    assert!(
        spent <= ALLOWED + CONNECT,
        "{spent} slurmctld RPCs in {secs} s, over {ALLOWED} + {CONNECT}:\n{screen}"
    );
    // The refresh kept going: the queue is not stale.
    assert!(refreshed(&screen), "{screen}");
}
