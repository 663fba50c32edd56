//! Several clusters in one dashboard, over real SSH to two dev clusters of different Slurm
//! versions (the selected one and another that is up), plus one whose login host refuses.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::tmux::{rand_suffix, Tmux};
use common::{
    dev_slurm, lists_job, parsable_job_id, sacct_argv, shared_dev_dir, slurmdash_with, text,
    SACCT_ENDED,
};

const LIMIT: Duration = Duration::from_secs(60);

/// The client directory of Slurm version `v` (as `dev_dir` for the selected one).
fn dir_of(v: &str) -> PathBuf {
    let base = shared_dev_dir();
    let d = if v == "22.05" { base } else { base.join(v) };
    assert!(
        d.join("slurmdash.toml").is_file(),
        "this test needs a second dev cluster: run `scripts/dev-cluster up --slurm {v}` ({} is missing)",
        d.display()
    );
    d
}

/// The other version this test pairs with the selected one.
fn other_version() -> String {
    if dev_slurm() == "26.05" {
        "22.05"
    } else {
        "26.05"
    }
    .to_string()
}

/// `ssh slurmdash-dev ARGV...` to version `v`'s login node, as slurmdash sends a command
/// (one framed sh program, whatever the login shell: tcsh on 24.11), with the frame and what
/// the login printed around it taken off.
fn ssh(v: &str, argv: &[&str]) -> Output {
    use slurmdash::remote::frame;
    let marker = frame::new_marker();
    let words: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    let mut out = Command::new("ssh")
        .arg("-F")
        .arg(dir_of(v).join("ssh/config"))
        .arg("slurmdash-dev")
        .arg(frame::login_line(&words, &marker))
        .output()
        .unwrap_or_else(|e| panic!("ssh {argv:?} on {v}: {e}"));
    out.stdout = frame::unframe(&out.stdout, &marker).bytes;
    out.stderr = frame::unframe(&out.stderr, &marker).bytes;
    out
}

/// `sbatch` in partition short for 5 minutes with `args` on version `v`'s cluster; returns
/// the job id.
fn sbatch_on(v: &str, args: &[&str]) -> u64 {
    let mut argv = vec!["sbatch", "--parsable", "-p", "short", "-t", "5"];
    argv.extend_from_slice(args);
    let out = ssh(v, &argv);
    assert!(out.status.success(), "sbatch on {v}: {}", text(&out.stderr));
    parsable_job_id(&text(&out.stdout))
}

/// A job that sleeps 5 minutes on version `v`'s cluster; returns its id.
fn submit(v: &str, name: &str) -> u64 {
    sbatch_on(v, &["-J", name, "--wrap=sleep 300"])
}

/// What Slurm says of job `id` on version `v`'s cluster (`sacct` state, `CANCELLED by 1000`
/// cut to its first word).
fn state(v: &str, id: u64) -> String {
    let out = ssh(v, &sacct_argv("State", &id.to_string()));
    text(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string()
}

fn scancel(v: &str, id: u64) {
    let _ = ssh(v, &["scancel", &id.to_string()]);
}

/// A config with the two dev clusters as `alpha` (selected version) and `beta` (the other),
/// and `gamma`, whose login host refuses connections.
fn config(dir: &Path, alpha: &str, beta: &str) -> PathBuf {
    // No RPC budget: the test waits for screens with deadlines.
    let mut cfg = String::from("default_cluster = \"alpha\"\n\n[poll]\nmax_rpcs_per_minute = 0\n");
    for (name, v) in [("alpha", alpha), ("beta", beta)] {
        let src = std::fs::read_to_string(dir_of(v).join("slurmdash.toml")).expect("dev config");
        let table = src
            .split_once("[clusters.dev]")
            .map(|(_, t)| t)
            .expect("a [clusters.dev] table");
        cfg.push_str(&format!(
            "\n[clusters.{name}]{table}poll_interval_secs = 2\npersist_secs = 0\n"
        ));
    }
    cfg.push_str(
        "\n[clusters.gamma]\nhosts = [\"127.0.0.1\"]\nport = 9\nconnect_timeout_secs = 2\npoll_interval_secs = 2\n",
    );
    let p = dir.join("slurmdash.toml");
    std::fs::write(&p, cfg).expect("write config");
    p
}

/// The queue row of job `id` shown for cluster `cluster`.
fn row_of<'a>(screen: &'a str, id: u64, cluster: &str) -> Option<&'a str> {
    let id = id.to_string();
    screen.lines().find(|l| {
        let mut w = l.trim_start_matches(['│', ' ']).split_whitespace();
        w.next() == Some(id.as_str()) && w.next() == Some(cluster)
    })
}

#[test]
fn one_dashboard_shows_two_clusters_acts_on_the_right_one_and_a_dead_one_holds_up_nothing() {
    let (alpha, beta) = (dev_slurm(), other_version());
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = config(tmp.path(), &alpha, &beta);
    let tag = rand_suffix();
    let a_job = submit(&alpha, &format!("mc-a-{tag}"));
    let b_job = submit(&beta, &format!("mc-b-{tag}"));

    // The CLI first: one JSON list from both, each row naming its cluster.
    let out = slurmdash_with(&cfg, &["--cluster", "alpha,beta", "jobs", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("json");
    let cluster_of = |id: u64| {
        rows.iter()
            .filter(|r| r["id"].as_str() == Some(id.to_string().as_str()))
            .map(|r| r["cluster"].as_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert!(cluster_of(a_job).contains(&"alpha".to_string()), "{rows:?}");
    assert!(cluster_of(b_job).contains(&"beta".to_string()), "{rows:?}");
    // A cluster that cannot be reached is named on stderr; the others are still listed.
    let out = slurmdash_with(&cfg, &["--cluster", "alpha,gamma", "jobs"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cluster `gamma`"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains(&format!("mc-a-{tag}")),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stdout).starts_with("CLUSTER"),
        "{}",
        text(&out.stdout)
    );

    // The dashboard on all three.
    let started = Instant::now();
    let t = Tmux::start(&cfg, &["--cluster", "alpha,beta,gamma"]);
    let s = t.wait("both clusters' jobs in one queue", LIMIT, |s| {
        row_of(s, a_job, "alpha").is_some() && row_of(s, b_job, "beta").is_some()
    });
    let took = started.elapsed();
    assert!(s.contains("CLUSTER"), "{s}");
    println!("both clusters' rows on screen {took:?} after start, with gamma refusing");
    let s = t.wait("gamma's trouble on the status bar", LIMIT, |s| {
        let status: Vec<&str> = s.lines().rev().take(2).collect();
        status
            .iter()
            .any(|l| l.contains(" gamma ") && !l.contains(" gamma no jobs"))
    });
    let status: Vec<&str> = s.lines().rev().take(2).collect();
    assert!(status[1].contains(" alpha "), "{s}");
    assert!(status[1].contains(" beta "), "{s}");

    // Filter to beta's job by its cluster's name, then cancel it: only beta's job goes.
    t.filter(&format!("mc-b-{tag}"), Duration::from_secs(30));
    t.wait("only beta's job left in the filter", LIMIT, |s| {
        row_of(s, b_job, "beta").is_some() && row_of(s, a_job, "alpha").is_none()
    });
    t.keys(&["D"]);
    let deadline = Instant::now() + LIMIT;
    while state(&beta, b_job) != "CANCELLED" {
        assert!(
            Instant::now() < deadline,
            "beta's job {b_job} was not cancelled: {}\n{}",
            state(&beta, b_job),
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    // slurmdbd records a new job a little after slurmctld has it (longer on a busy
    // machine): an empty answer is asked again.
    let deadline = Instant::now() + LIMIT;
    let mut a_state = state(&alpha, a_job);
    while a_state.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
        a_state = state(&alpha, a_job);
    }
    assert!(
        a_state == "RUNNING" || a_state == "PENDING",
        "alpha's job untouched: {a_state}"
    );
    t.keys(&["q"]);
    t.wait("the dashboard exits", LIMIT, |s| s.contains("EXITED:0"));
    scancel(&alpha, a_job);
}

/// A job that ends at once on version `v`'s cluster; returns its id once sacct's end-time
/// selection (what `history` reads) lists it.
fn ended_job(v: &str, name: &str) -> u64 {
    let id = sbatch_on(v, &["-c", "1", "--mem=50M", "-J", name, "--wrap=true"]);
    let deadline = Instant::now() + Duration::from_secs(180);
    while !lists_job(&text(&ssh(v, SACCT_ENDED).stdout), id) {
        assert!(
            Instant::now() < deadline,
            "job {id} on {v} never showed in sacct's end-time selection"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    id
}

#[test]
fn history_lists_jobs_that_ended_on_every_cluster_and_a_dead_one_holds_up_nothing() {
    let (alpha, beta) = (dev_slurm(), other_version());
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = config(tmp.path(), &alpha, &beta);
    let tag = rand_suffix();
    let (a_name, b_name) = (format!("mh-a-{tag}"), format!("mh-b-{tag}"));
    let a_job = ended_job(&alpha, &a_name);
    let b_job = ended_job(&beta, &b_name);

    // The CLI: one JSON list from both, each row naming its cluster.
    let out = slurmdash_with(
        &cfg,
        &[
            "--cluster",
            "alpha,beta",
            "history",
            "--days",
            "1",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("json");
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("no row named {name}: {rows:?}"))
            .clone()
    };
    let (a, b) = (row(&a_name), row(&b_name));
    assert_eq!(a["cluster"], "alpha", "{a}");
    assert_eq!(a["id"], a_job.to_string(), "{a}");
    assert_eq!(a["state"], "COMPLETED", "{a}");
    assert_eq!(b["cluster"], "beta", "{b}");
    assert_eq!(b["id"], b_job.to_string(), "{b}");
    assert!(
        rows.iter()
            .all(|r| r["cluster"] == "alpha" || r["cluster"] == "beta"),
        "every row names its cluster"
    );

    // A cluster that cannot be reached: named on stderr, exit 1, the others printed.
    let out = slurmdash_with(
        &cfg,
        &["--cluster", "alpha,gamma", "history", "--days", "1"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cluster `gamma`"),
        "{}",
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("CLUSTER"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("alpha") && l.contains(&a_job.to_string())),
        "{stdout}"
    );

    // `:history` in the dashboard on all three: both clusters' jobs, gamma named as failing.
    let t = Tmux::start(&cfg, &["--cluster", "alpha,beta,gamma"]);
    t.wait("both clusters' queues", LIMIT, |s| {
        s.contains("alpha updated") && s.contains("beta updated")
    });
    let asked = Instant::now();
    t.keys(&[":", "history", "Enter"]);
    // Only this test's two jobs, as a user narrows a long history: the other tests' jobs
    // of the same user on both clusters would push them off the screen.
    t.keys(&["/"]);
    t.type_text(&tag.to_string());
    t.keys(&["Enter"]);
    let s = t.wait("finished jobs of both clusters in :history", LIMIT, |s| {
        row_of(s, a_job, "alpha").is_some_and(|r| r.contains("COMPLETED"))
            && row_of(s, b_job, "beta").is_some_and(|r| r.contains("COMPLETED"))
    });
    println!(
        ":history rows of both clusters on screen {:?} after asking, with gamma refusing",
        asked.elapsed()
    );
    assert!(s.contains("history, 7 days"), "{s}");
    t.wait("gamma's failed read named in the title", LIMIT, |s| {
        s.contains("[gamma: ")
    });
    // The filter by cluster name (in place of the tag) keeps only that cluster's rows.
    t.keys(&["/", "C-u"]);
    t.type_text("beta");
    t.keys(&["Enter"]);
    let cluster_col = |l: &str| {
        let mut w = l.trim_start_matches(['│', ' ']).split_whitespace();
        w.next().filter(|id| id.parse::<u64>().is_ok())?;
        w.next().map(str::to_string)
    };
    t.wait("only beta's rows", LIMIT, |s| {
        let clusters: Vec<String> = s.lines().filter_map(cluster_col).collect();
        !clusters.is_empty() && clusters.iter().all(|c| c == "beta")
    });
    t.keys(&["Escape"]);
    t.keys(&["q"]);
    t.wait("the dashboard exits", LIMIT, |s| s.contains("EXITED:0"));
}
