//! The command log (`@`) in the real binary, in a real terminal (tmux), against the dev
//! cluster with the default settings (the RPC budget on): the refresh's squeue is listed with
//! exit 0 and what it cost slurmctld; a job cancelled with `d` shows its scancel, with the
//! job id in the argv and "your key" as the reason; `y` copies that argv to the clipboard
//! (OSC 52, which tmux takes into its paste buffer); the argv is what slurmdash asked for,
//! not the login shell's wrapper (24.11's login shell is tcsh with a printing .cshrc).

use crate::common;

use std::time::Duration;

use common::tmux::*;
use common::*;

/// The log's row of the refresh that ran squeue: its exit and slurmctld RPCs.
fn squeue_row(s: &str) -> Option<(String, u64)> {
    s.lines()
        .filter(|l| l.contains(" refresh ") && l.contains("squeue"))
        .find_map(|l| {
            let f: Vec<&str> = l.trim_start_matches('│').split_whitespace().collect();
            // when, why, exit, took, in, ctld, dbd, argv…
            Some((f.get(2)?.to_string(), f.get(5)?.parse().ok()?))
        })
}

#[tokio::test(flavor = "multi_thread")]
async fn the_command_log_shows_the_refresh_and_a_cancel_and_copies_its_argv() {
    let r = remote();
    let name = format!("cl{}", rand_suffix() % 100_000);
    let held = sbatch_true(&r, &name, &["--hold"]).await;

    let t = Tmux::start(&dev_config_default(), &[]);
    t.wait("the dashboard", Duration::from_secs(30), refreshed);

    // @ opens the log: the refresh's squeue, exit 0, at least one slurmctld RPC.
    t.keys(&["@"]);
    let s = t.wait(
        "the refresh in the command log",
        Duration::from_secs(15),
        |s| s.contains("command log") && squeue_row(s).is_some(),
    );
    let (exit, ctld) = squeue_row(&s).unwrap_or_default();
    assert_eq!(exit, "0", "{s}");
    assert!(ctld >= 1, "the refresh cost slurmctld {ctld} RPCs: {s}");
    // What slurmdash asked for, never the login shell's wrapper around it.
    assert!(!s.contains("tcsh") && !s.contains("exec sh"), "{s}");
    t.keys(&["Escape"]);
    t.wait("the queue again", Duration::from_secs(5), |s| {
        !s.contains("command log")
    });

    // d on the held job (found by its name), y to the question: cancelled.
    t.keys(&["/"]);
    t.keys(&[&name, "Enter"]);
    t.wait("the held job alone", Duration::from_secs(15), |s| {
        row(s, held).is_some()
    });
    t.keys(&["d"]);
    t.wait("the question", Duration::from_secs(10), |s| {
        s.contains(&format!("cancel {held}"))
    });
    t.keys(&["y"]);
    t.wait("the report", Duration::from_secs(20), |s| {
        s.contains(&format!("cancelled {held}"))
    });

    // The log shows the scancel: why = your key, exit 0, the job id in its argv. `f` twice
    // shows only the commands of the user's keys (refresh, then your key), newest first.
    t.keys(&["@", "f", "f"]);
    let id = held.to_string();
    let s = t.wait(
        "the scancel in the command log",
        Duration::from_secs(15),
        |s| {
            s.contains("your key only")
                && s.lines()
                    .any(|l| l.contains("your key") && l.contains("scancel") && l.contains(&id))
        },
    );
    let line = s
        .lines()
        .find(|l| l.contains("your key") && l.contains("scancel") && l.contains(&id))
        .unwrap_or_default();
    assert!(line.contains("your key    0 "), "{line}\n{s}");

    // enter shows it whole: the argv as slurmdash ran it.
    t.keys(&["Enter"]);
    let s = t.wait("the full entry", Duration::from_secs(5), |s| {
        s.contains("argv (as slurmdash ran it")
    });
    assert!(s.contains("why         your key"), "{s}");
    assert!(s.contains("slurmctld "), "{s}");
    eprintln!("the full entry on Slurm {}:\n{s}", dev_slurm());
    if dev_slurm() == "24.11" {
        // tcsh's .cshrc there prints a line around every command: taken off and said so,
        // while the argv above is the one slurmdash asked for.
        assert!(s.contains("login shell printed"), "{s}");
    }

    // y copies the argv, quoted for a shell, through the terminal (OSC 52).
    let ok = t
        .cmd()
        .args(["set-option", "-g", "set-clipboard", "on"])
        .status()
        .expect("tmux set-option");
    assert!(ok.success());
    t.keys(&["y"]);
    t.wait("the copy note", Duration::from_secs(5), |s| {
        s.contains("to the clipboard (through the terminal: OSC 52)")
    });
    let start = std::time::Instant::now();
    let copied = loop {
        let out = t
            .cmd()
            .args(["show-buffer"])
            .output()
            .expect("tmux show-buffer");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if text.contains("scancel") {
            break text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "tmux's paste buffer holds {text:?}, not the scancel"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // A line a shell splits back into an argv that names the job.
    let words = shlex::split(&copied).unwrap_or_default();
    assert!(
        words.iter().any(|w| w.contains(&id)),
        "{copied:?} → {words:?}"
    );

    t.keys(&["Escape", "Escape", "q"]);
    let s = t.wait("slurmdash to exit", Duration::from_secs(10), |s| {
        s.contains("EXITED:")
    });
    assert!(s.contains("EXITED:0"), "{s}");
    // The cancel reached Slurm.
    let start = std::time::Instant::now();
    loop {
        let state = sacct_state(&r, held).await;
        if state.starts_with("CANCELLED") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "job {held} is {state:?}, not cancelled"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
