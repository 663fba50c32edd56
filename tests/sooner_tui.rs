//! Issue 39 in the real binary, in tmux, against the dev cluster, with the default polling
//! budget: the launch form warns that its time limit runs into a maintenance window the
//! test makes on partition `spare`, with the longest limit that starts before it, and says
//! what starts now there with the figures sinfo and scontrol give; `:sooner` on a job pending
//! behind that window lists the alternatives the scheduler checked, with their starts; a
//! finished job's wait chart sits beside the submit, eligible and start times sacct records.
//!
//! The window is a MAINT reservation on spare's two nodes, which only the tests of test
//! group `spare-nodes` use, one at a time (.config/nextest.toml; this binary is in it). It
//! starts 20 minutes after it is made and is removed when the test ends, a failing one
//! included. The tests take it one after the other ([`ONE_WINDOW`]) in one process.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use chrono::NaiveDateTime;
use common::maintenance::{Maintenance, ONE_WINDOW};
use common::tmux::{rand_suffix, Tmux};
use common::*;
use slurmdash::launch::facts::{nodes_argv, parse_nodes};
use slurmdash::remote::SshRemote;
use slurmdash::slurm::time::parse_time;

/// The login node's clock.
async fn cluster_now(r: &SshRemote) -> NaiveDateTime {
    let out = run(r, &["date", "+%Y-%m-%dT%H:%M:%S"]).await;
    parse_time(out.stdout_lossy().trim())
        .ok()
        .flatten()
        .expect("date prints a time")
}

/// slurmdash in tmux with the default budget, results in a scratch directory of the test's
/// own and `launch` as its `[launch]` table.
struct Dashboard {
    t: Tmux,
    _dir: tempfile::TempDir,
}

impl Dashboard {
    async fn start(r: &SshRemote, tag: &str, launch: &str) -> Dashboard {
        let base = scratch(r, tag).await;
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg: String = std::fs::read_to_string(dev_config_default())
            .expect("dev config")
            .lines()
            .filter(|l| !l.starts_with("results_root"))
            .map(|l| format!("{l}\n"))
            .collect();
        let config: PathBuf = dir.path().join("slurmdash.toml");
        std::fs::write(
            &config,
            format!("{cfg}results_root = \"{base}/results\"\n\n[launch]\n{launch}"),
        )
        .expect("config");
        let t = Tmux::start(&config, &[]);
        t.wait("the dashboard", Duration::from_secs(30), |s| {
            s.contains("jobs")
        });
        Dashboard { t, _dir: dir }
    }
}

/// The most GPUs an open spare node (idle or mixed, with a CPU free) has free, once one is
/// open, as `sinfo --Node` says.
async fn open_spare_gpus(r: &SshRemote) -> u32 {
    let argv: Vec<String> = nodes_argv();
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    wait_for("an open spare node", Duration::from_secs(120), || async {
        let out = run(r, &argv).await;
        let nodes = parse_nodes(&out.stdout_lossy()).expect("sinfo --Node reads");
        nodes
            .iter()
            .filter(|n| n.partition == SPARE && n.open() && n.cpus_idle >= 1)
            .map(|n| n.gpus_free())
            .max()
    })
    .await
}

/// The number before `after` in `line` ("a limit of 19m or less": 19).
fn minutes_before(s: &str, after: &str) -> Option<i64> {
    let head = s.split(after).next()?;
    let word = head.rsplit(' ').next()?;
    let mins = word.strip_suffix('m')?;
    match mins.split_once('h') {
        Some((h, m)) => Some(h.parse::<i64>().ok()? * 60 + m.parse::<i64>().ok()?),
        None => mins.parse().ok(),
    }
}

/// The form on spare with a 30-minute limit: the window named with the limit that starts
/// before it, and the GPUs and time that start now, as the cluster's own figures say.
#[tokio::test(flavor = "multi_thread")]
async fn the_form_warns_of_the_window_and_says_what_starts_now() {
    let _one = ONE_WINDOW.lock().await;
    let r = remote();
    let spare = spare_nodes(&r).await;
    let m = Maintenance::create(&spare, "sooner-form");
    let resv = m.read();
    let ui = Dashboard::start(
        &r,
        "sooner-form",
        "name = \"sooner-form\"\npartition = \"spare\"\ngpus = 1\ncpus_per_task = 1\nmem = \"100M\"\ntime = \"30m\"\ncommand = \"true\"\n",
    )
    .await;
    let t = &ui.t;
    // A spare node another test's job left planned or completing opens again first.
    open_spare_gpus(&r).await;
    let opened = cluster_now(&r).await;
    t.keys(&["n"]);
    let s = t.wait(
        "the maintenance warning and the starts-now line",
        Duration::from_secs(60),
        |s| s.contains("runs into maintenance") && s.contains("start now on spare"),
    );
    let flat: String = s
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect::<Vec<_>>()
        .join(" ");
    let window = format!(
        "maintenance {}–{} on {}",
        resv.start.format("%Y-%m-%d %H:%M"),
        resv.end.format("%H:%M"),
        resv.node_list
    );
    assert!(
        flat.contains(&format!("your 30m limit runs into {window}")),
        "the window as scontrol shows it ({window}):\n{s}"
    );
    // The longest limit before the window: whole minutes from the cluster's clock when the
    // form opened (a minute either way for the seconds the form took to read).
    let expect = (resv.start - opened).num_seconds() / 60;
    let said = minutes_before(&flat, " or less starts before it").expect("a limit on screen");
    assert!(
        (expect - 2..=expect).contains(&said),
        "a limit of {said}m said, about {expect}m expected:\n{s}"
    );
    // Starts now: the most GPUs an open spare node has free, until the window.
    let gpus = open_spare_gpus(&r).await;
    let line = format!(
        "up to {gpus} GPU{} for up to ",
        if gpus == 1 { "" } else { "s" }
    );
    assert!(flat.contains(&line), "{line:?} on screen:\n{s}");
    let until = format!(
        "(until maintenance {}) start now on spare; yours would wait",
        resv.start.format("%H:%M")
    );
    assert!(flat.contains(&until), "{until:?} on screen:\n{s}");
    let now_limit = minutes_before(&flat, &format!(" {until}")).expect("the starts-now limit");
    assert!(
        (expect - 2..=expect).contains(&now_limit),
        "starts now for {now_limit}m, about {expect}m expected:\n{s}"
    );
    // A limit that ends before the window, typed: the warning goes, the request fits.
    let down = vec!["j"; 7];
    t.keys(&down);
    t.keys(&["Enter", "C-u"]);
    t.type_text("10m");
    t.keys(&["Enter"]);
    let s = t.wait("the warning gone", Duration::from_secs(20), |s| {
        !s.contains("runs into maintenance") && s.contains("start now on spare; yours fits")
    });
    assert!(s.contains("time limit            10m"), "{s}");
    drop(m);
}

/// A job pending behind the window: `:sooner` in the dashboard lists the alternatives the
/// scheduler checked with `--test-only`, each with its start.
#[tokio::test(flavor = "multi_thread")]
async fn sooner_on_a_job_pending_behind_the_window_lists_checked_alternatives() {
    let _one = ONE_WINDOW.lock().await;
    let r = remote();
    let spare = spare_nodes(&r).await;
    let _m = Maintenance::create(&spare, "sooner-tui");
    let dir = scratch(&r, "sooner-tui").await;
    let name = format!("sooner-tui-{}", rand_suffix());
    let id = sbatch(
        &r,
        &[
            "-p",
            SPARE,
            "-t",
            "30",
            "-c",
            "1",
            "--mem=50M",
            "-J",
            &name,
            "-D",
            &dir,
            "--wrap",
            "true",
        ],
    )
    .await;
    let _cancel = CancelOnDrop(id);
    let ui = Dashboard::start(&r, "sooner-tui-ui", "name = \"unused\"\n").await;
    let t = &ui.t;
    t.filter(&name, Duration::from_secs(60));
    t.wait("the pending job selected", Duration::from_secs(60), |s| {
        s.contains(&format!("job {id}")) && s.contains("PENDING")
    });
    // Once: when its partitions are not read yet, the check follows when they come.
    t.keys(&[":", "sooner", "Enter"]);
    // The note "asking the scheduler when job …" stays on the status bar; the detail says
    // "asking the scheduler (sbatch --test-only)…" until the answers come.
    let s = t.wait("the checked alternatives", Duration::from_secs(120), |s| {
        s.contains("(:sooner 1)") && !s.contains("asking the scheduler (sbatch")
    });
    let pane = common::tmux::left_pane_text(&s);
    let list = pane
        .split("Sooner if ")
        .nth(1)
        .unwrap_or_else(|| panic!("no Sooner if section:\n{s}"));
    let mut alts = Vec::new();
    let mut rest = list;
    for n in 1..=3 {
        let mark = format!("(:sooner {n})");
        let Some(at) = rest.find(&mark) else { break };
        alts.push(rest[..at].trim().to_string());
        rest = &rest[at + mark.len()..];
    }
    assert!(!alts.is_empty(), "{s}");
    assert!(alts[0].starts_with("1. "), "{alts:?}");
    // A shorter limit and another partition, each with the scheduler's word on it.
    assert!(
        alts.iter()
            .any(|a| a.contains("time limit ") && a.contains("instead of 30:00")),
        "a shorter limit among {alts:?}"
    );
    assert!(
        alts.iter()
            .any(|a| a.contains("partition ") && a.contains("instead of spare")),
        "another partition among {alts:?}"
    );
    assert!(
        alts.iter().all(|a| a.contains("→ starts")
            || a.contains("→ refused")
            || a.contains("→ no estimate")),
        "{alts:?}"
    );
}

/// A finished job that was held a few seconds: the detail's Submitted, Eligible and Started
/// are sacct's, and the wait's chart beside Waited shows the hold and the start.
#[tokio::test(flavor = "multi_thread")]
async fn a_finished_job_s_wait_chart_matches_sacct() {
    let r = remote();
    let name = format!("sooner-chart-{}", rand_suffix());
    let dir = scratch(&r, "sooner-chart").await;
    let id = sbatch(
        &r,
        &[
            "-p",
            "cpu",
            "-t",
            "1",
            "-c",
            "1",
            "--mem=50M",
            "--hold",
            "-J",
            &name,
            "-D",
            &dir,
            "--wrap",
            "true",
        ],
    )
    .await;
    let _cancel = CancelOnDrop(id);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let out = run(&r, &["scontrol", "release", &id.to_string()]).await;
    assert!(out.success(), "{}", out.stderr_lossy());
    // sacct's times once the job is done and recorded.
    let times = wait_for("sacct's times", Duration::from_secs(120), || async {
        let out = run(
            &r,
            &[
                "sacct",
                "-X",
                "-n",
                "-P",
                "-j",
                &id.to_string(),
                "-o",
                "State,Submit,Eligible,Start",
            ],
        )
        .await;
        let line = out.stdout_lossy().lines().next()?.to_string();
        let f: Vec<String> = line.split('|').map(str::to_string).collect();
        // slurmdbd records a released job's Eligible a moment after its end (22.05 shows
        // Unknown until then).
        (f.len() == 4 && f[0] == "COMPLETED" && f[2] != "Unknown").then_some(f)
    })
    .await;
    let ui = Dashboard::start(&r, "sooner-chart-ui", "name = \"unused\"\n").await;
    let t = &ui.t;
    t.keys(&[":"]);
    t.type_text("history 1");
    t.keys(&["Enter"]);
    t.filter(&name, Duration::from_secs(60));
    let date = |s: &str| s.replace('T', " ");
    let rows = [
        ("Submitted", date(&times[1])),
        ("Eligible", date(&times[2])),
        ("Started", date(&times[3])),
    ];
    // Until the detail holds sacct's record (the history row comes first, alone).
    let shows = |s: &str| {
        s.contains(&format!("job {id}"))
            && rows.iter().all(|(label, value)| {
                s.lines()
                    .any(|l| l.contains(&format!("│{label} ")) && l.contains(value.as_str()))
            })
    };
    let s = t.wait(
        &format!("the detail's Submitted, Eligible and Started as sacct's {rows:?}"),
        Duration::from_secs(60),
        shows,
    );
    let waited = s
        .lines()
        .find(|l| l.contains("│Waited "))
        .expect("Waited row");
    assert!(
        waited.contains("held") && waited.contains('░') && waited.contains('▶'),
        "the hold and the start on the chart: {waited}"
    );
}
