//! The real binary in a real terminal (tmux) against the dev cluster, read back with
//! capture-pane as a person would see it.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::tmux::*;
use common::*;

#[tokio::test(flavor = "multi_thread")]
async fn dashboard_shows_states_reasons_estimates_live_logs_and_restores_the_terminal() {
    let r = remote();
    let dir = scratch(&r, "tui").await;
    let tag = format!("tui{}", rand_suffix() % 100_000);
    let held = sbatch_true(&r, &format!("{tag}-held"), &["--hold"]).await;
    let later = sbatch_true(&r, &format!("{tag}-later"), &["--begin=now+2hours"]).await;
    let marker = format!("marker-{tag}");
    let running = sbatch(
        &r,
        &[
            "-J",
            &format!("{tag}-talker"),
            "-c",
            "1",
            "-t",
            "2",
            "-o",
            &format!("{dir}/talker-%j.out"),
            "--wrap",
            &format!("i=0; while [ $i -lt 90 ]; do i=$((i+1)); echo {marker} $i; sleep 1; done"),
        ],
    )
    .await;
    wait_job_running(&r, running, "the talker to run", Duration::from_secs(60)).await;

    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = fast_config(tmp.path());
    let t = Tmux::start(&cfg, &[]);

    // The queue lists all three with their states; pending ones with their reasons, and the
    // one that may not start before its begin time with an estimate.
    let s = t.wait("the three jobs", Duration::from_secs(20), |s| {
        [held, later, running]
            .iter()
            .all(|id| s.contains(&id.to_string()))
    });
    let line = |id: u64| row(&s, id).unwrap_or_default().to_string();
    assert!(
        line(held).contains("PENDING") && line(held).contains("JobHeldUser"),
        "{s}"
    );
    assert!(
        line(later).contains("PENDING") && line(later).contains("BeginTime"),
        "{s}"
    );
    assert!(
        line(later).contains("in 1h") || line(later).contains("in 2h"),
        "{s}"
    );
    assert!(line(running).contains("RUNNING"), "{s}");

    // Select the running job by filtering on its name: its output appears in the log pane
    // and keeps growing.
    t.keys(&["/"]);
    t.keys(&[&format!("{tag}-talker"), "Enter"]);
    let s = t.wait(
        "the job's output in the log pane",
        Duration::from_secs(15),
        |s| s.contains(&format!("{marker} ")),
    );
    let last_seen = |s: &str| {
        s.lines()
            .filter_map(|l| l.split(&format!("{marker} ")).nth(1))
            .filter_map(|rest| rest.split_whitespace().next()?.parse::<u32>().ok())
            .max()
            .unwrap_or(0)
    };
    let first = last_seen(&s);
    // A new line printed by the job shows within two poll intervals (2 s each), plus slack.
    t.wait("a newer output line", Duration::from_secs(8), |s| {
        last_seen(s) > first
    });

    // The help overlay lists the bindings of the focused pane.
    t.keys(&["?"]);
    let s = t.wait("the help overlay", Duration::from_secs(5), |s| {
        s.contains("keys in the queue pane")
    });
    assert!(
        s.contains("filter jobs by id, name, state, partition"),
        "{s}"
    );
    t.keys(&["Escape"]);

    // Y puts the selected job's id on the clipboard through the terminal (OSC 52): tmux
    // with `set-clipboard on` takes the escape into its paste buffer, as a terminal takes
    // it into the clipboard.
    let ok = t
        .cmd()
        .args(["set-option", "-g", "set-clipboard", "on"])
        .status()
        .expect("tmux set-option");
    assert!(ok.success());
    t.keys(&["Y"]);
    t.wait("the copy note", Duration::from_secs(5), |s| {
        s.contains(&format!("copied {running} to the clipboard"))
    });
    let start = std::time::Instant::now();
    loop {
        let out = t
            .cmd()
            .args(["show-buffer"])
            .output()
            .expect("tmux show-buffer");
        if String::from_utf8_lossy(&out.stdout) == running.to_string() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "tmux's paste buffer holds {:?}, not job {running}",
            String::from_utf8_lossy(&out.stdout)
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // q quits and gives the terminal back.
    t.keys(&["q"]);
    let s = t.wait("slurmdash to exit", Duration::from_secs(10), |s| {
        s.contains("EXITED:")
    });
    assert!(s.contains("EXITED:0"), "{s}");
    assert!(!t.alternate_screen_on(), "the alternate screen is still on");

    run(
        &r,
        &[
            "scancel",
            &held.to_string(),
            &later.to_string(),
            &running.to_string(),
        ],
    )
    .await;
    run(&r, &["rm", "-rf", &dir]).await;
}

#[test]
fn resizing_reflows_and_sigterm_restores_the_terminal() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = fast_config(tmp.path());
    let t = Tmux::start(&cfg, &[]);
    t.wait("the dashboard", Duration::from_secs(20), refreshed);
    assert!(t.alternate_screen_on());
    let ok = t
        .cmd()
        .args(["resize-window", "-t", &t.name, "-x", "100", "-y", "30"])
        .status()
        .expect("resize");
    assert!(ok.success());
    let s = t.wait("the layout at 100 columns", Duration::from_secs(5), |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.trim_end().chars().count() == 100)
    });
    assert!(s.lines().count() <= 30, "{s}");

    let pid = Command::new("pgrep")
        .args([
            "-n",
            "-f",
            &format!(
                "^{} --config {}",
                env!("CARGO_BIN_EXE_slurmdash"),
                cfg.display()
            ),
        ])
        .output()
        .expect("pgrep");
    let pid = text(&pid.stdout).trim().to_string();
    assert!(!pid.is_empty(), "slurmdash process not found");
    let ok = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(ok.success());
    let s = t.wait(
        "slurmdash to exit on SIGTERM",
        Duration::from_secs(10),
        |s| s.contains("EXITED:"),
    );
    assert!(s.contains("EXITED:0"), "{s}");
    assert!(!t.alternate_screen_on(), "the alternate screen is still on");
}

/// `c` in the real binary: the chooser over the queue, a column turned off and saved, the
/// queue's header without it at once, and the config file rewritten with its comments kept.
#[tokio::test(flavor = "multi_thread")]
async fn columns_chosen_with_c_are_shown_and_saved_in_the_config() {
    // A job of its own, held, so the queue has a header to read whatever else runs.
    let r = remote();
    let dir = scratch(&r, "columns").await;
    let held = sbatch(
        &r,
        &[
            "--chdir", &dir, "--hold", "-J", "columns", "-t", "1", "--wrap", "true",
        ],
    )
    .await;
    let _cancel = CancelOnDrop(held);
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = fast_config(tmp.path());
    let mut text = std::fs::read_to_string(&cfg).expect("config");
    text.push_str("\n# my columns\n[ui]\ncolumns = [\"id\", \"name\", \"state\", \"time\"]\n");
    std::fs::write(&cfg, &text).expect("config");
    let t = Tmux::start(&cfg, &[]);
    let s = t.wait("the dashboard", Duration::from_secs(20), refreshed);
    assert!(s.contains("NAME") && s.contains("STATE"), "{s}");
    t.keys(&["c"]);
    t.wait("the column chooser", Duration::from_secs(5), |s| {
        s.contains("columns of the queue") && s.contains("[x] NAME")
    });
    // The second row is NAME: off, then enter.
    t.keys(&["j", "Space", "Enter"]);
    let s = t.wait(
        "the note that they were saved",
        Duration::from_secs(10),
        |s| s.contains("columns saved in"),
    );
    assert!(!s.contains("columns of the queue"), "{s}");
    let header = s
        .lines()
        .find(|l| l.contains("JOBID"))
        .expect("the queue's header");
    assert!(
        header.contains("STATE") && !header.contains("NAME"),
        "{header}"
    );
    let saved = std::fs::read_to_string(&cfg).expect("config");
    assert!(
        saved.contains("# my columns\n[ui]\ncolumns = [\"id\", \"state\", \"time\"]"),
        "{saved}"
    );
    // The rest of the config is as it was.
    assert!(
        saved.starts_with(&text[..text.find("\n# my columns").unwrap()]),
        "{saved}"
    );
    t.keys(&["q"]);
    t.wait("slurmdash to exit", Duration::from_secs(10), |s| {
        s.contains("EXITED:0")
    });
}
