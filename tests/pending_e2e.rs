//! The real binary in tmux against the dev cluster: a job over MaxTime is explained in the
//! queue and the detail pane, `:partitions` and `:stats` open and close.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use slurmdash::remote::Remote;

struct Tmux {
    name: String,
}

impl Tmux {
    fn start(config: &Path) -> Tmux {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!("sdpend-{}-{nanos}", std::process::id());
        let bin = env!("CARGO_BIN_EXE_slurmdash");
        let cmd = format!("{bin} --config {}; sleep 60", config.display());
        let ok = Command::new("tmux")
            .args(["new-session", "-d", "-s", &name, "-x", "200", "-y", "50"])
            .arg(format!("env -u NO_COLOR TERM=xterm-256color sh -c '{cmd}'"))
            .status()
            .expect("tmux");
        assert!(ok.success(), "tmux new-session failed");
        Tmux { name }
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .expect("capture-pane");
        text(&out.stdout)
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            let ok = Command::new("tmux")
                .args(["send-keys", "-t", &self.name, k])
                .status()
                .expect("send-keys");
            assert!(ok.success());
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    fn wait(&self, what: &str, limit: Duration, f: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if f(&s) {
                return s;
            }
            assert!(
                start.elapsed() < limit,
                "timed out after {limit:?} waiting for {what}; the screen was:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn over_maxtime_explained_and_partitions_and_stats_views() {
    let r = remote();
    let dir = scratch(&r, "pend-e2e").await;
    let tag = format!(
        "pe{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() % 100_000)
            .unwrap_or(0)
    );
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
    let t = Tmux::start(&dev_config());
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
            s.contains("PARTITION") && s.contains("MAXTIME") && s.contains("could start now")
                || s.contains("fits, waits for room")
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
            s.contains("remote commands") && s.contains("last round trip")
        });
        t.keys(&["Escape", "q"]);
    }));
    let _ = r.run(&s(&["scancel", &id.to_string()]), None, T).await;
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
