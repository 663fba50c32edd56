//! Jobs whose name or work directory hold our own separator bytes (0x1F between fields,
//! 0x1E after a record) or a newline, submitted for real: every other job still lists,
//! and these list with their name and directory intact, in `slurmdash jobs` and in the
//! dashboard's refresh. Before the framed format, one such job made every refresh fail
//! ("expected 21 fields, found 20") for its owner and every `--all` view.

use crate::common;

use common::*;
use serde_json::Value;
use slurmdash::io::poll;
use slurmdash::slurm::command::{Scope, SqueueQuery};

struct Odd {
    dir: String,
    odd_dir: String,
    ids: Vec<u64>,
}

const ODD_NAME: &str = "a\x1fb\x1e\nc";

async fn submit(r: &dyn slurmdash::remote::Remote) -> Odd {
    let dir = scratch(r, "odd").await;
    let odd_dir = format!("{dir}/w\x1ed\x1fx");
    let out = run(r, &["mkdir", &odd_dir]).await;
    assert!(out.success(), "mkdir: {}", out.stderr_lossy());
    // Held: they take no node, and stay in squeue for the whole test.
    let mut ids = Vec::new();
    for (name, d) in [
        (ODD_NAME, dir.as_str()),
        ("odd-dir", odd_dir.as_str()),
        ("plain", dir.as_str()),
    ] {
        ids.push(
            sbatch(
                r,
                &["--hold", "-J", name, "-D", d, "-t", "1", "--wrap", "true"],
            )
            .await,
        );
    }
    Odd { dir, odd_dir, ids }
}

fn by_id(jobs: &[Value], id: u64) -> Value {
    jobs.iter()
        .find(|j| j["id"].as_str() == Some(id.to_string().as_str()))
        .cloned()
        .unwrap_or_else(|| panic!("job {id} missing from {jobs:?}"))
}

#[tokio::test]
async fn odd_names_and_dirs_spoil_no_listing() {
    let r = remote();
    let odd = submit(&r).await;
    let json = slurmdash(&["jobs", "--json"]);
    let all = slurmdash(&["jobs", "--all"]);
    let refresh = poll::poll(
        &r,
        &SqueueQuery {
            scope: Scope::All,
            ..SqueueQuery::default()
        },
        &[],
        T,
    )
    .await;
    let ids: Vec<String> = odd.ids.iter().map(u64::to_string).collect();
    let mut cancel = vec!["scancel"];
    cancel.extend(ids.iter().map(String::as_str));
    run(&r, &cancel).await;

    // `jobs --json`: exit 0, every job, names and dirs byte for byte, nothing on stderr.
    assert!(json.status.success(), "jobs --json: {}", text(&json.stderr));
    assert_eq!(text(&json.stderr), "");
    let jobs: Vec<Value> = serde_json::from_slice(&json.stdout).expect("JSON array");
    let a = by_id(&jobs, odd.ids[0]);
    assert_eq!(a["name"], ODD_NAME);
    assert_eq!(a["work_dir"], odd.dir.as_str());
    let b = by_id(&jobs, odd.ids[1]);
    assert_eq!(b["name"], "odd-dir");
    assert_eq!(b["work_dir"], odd.odd_dir.as_str());
    assert_eq!(by_id(&jobs, odd.ids[2])["name"], "plain");
    assert!(jobs.iter().all(|j| j["problem"].is_null()), "{jobs:?}");

    // The `--all` table: one row per job, control bytes shown as `?`.
    assert!(all.status.success(), "jobs --all: {}", text(&all.stderr));
    let table = text(&all.stdout);
    for (id, name) in ids.iter().zip(["a?b??c", "odd-dir", "plain"]) {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id.as_str()))
            .unwrap_or_else(|| panic!("no row for {id} in\n{table}"));
        assert!(row.contains(name), "{row}");
    }

    // The dashboard's refresh (one squeue, in one exec): the same, no problem.
    let (jobs, extra) = refresh.expect("refresh");
    let a = jobs
        .iter()
        .find(|j| j.id.as_str() == ids[0])
        .expect("odd-name job in the refresh");
    assert_eq!(a.name, ODD_NAME);
    let b = jobs
        .iter()
        .find(|j| j.id.as_str() == ids[1])
        .expect("odd-dir job in the refresh");
    assert_eq!(&*b.work_dir, odd.odd_dir.as_str());
    assert!(jobs.iter().any(|j| j.id.as_str() == ids[2]));
    assert!(jobs.iter().all(|j| j.problem.is_none()));
    assert!(extra.problems.is_empty(), "{:?}", extra.problems);
}

/// `slurmdash jobs` when one record of squeue's output does not read: real output of the
/// 26.05 dev cluster (the fixture) with one field cut out of job 81's record, printed by a
/// stand-in `squeue` on a cluster that runs its commands on this machine (`local = true`).
/// The listing still succeeds, every other job is listed, the bad row is marked `!`, and
/// stderr names the problem and the job.
#[test]
fn jobs_lists_the_rest_and_names_a_record_that_does_not_read() {
    let real = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/slurm/26.05/squeue_me.out"),
    )
    .expect("fixture");
    // Job 81's record loses its reason field ("\x1fResources"): one field short.
    let start = real
        .windows(4)
        .position(|w| w == b"\n81\x1f")
        .expect("job 81 in the fixture")
        + 1;
    let end = start
        + real[start..]
            .iter()
            .position(|&b| b == b'\n')
            .expect("end of record");
    let record = &real[start..end];
    let cut = record
        .windows(10)
        .position(|w| w == b"\x1fResources")
        .expect("reason field")
        + start;
    let mut bad = real[..cut].to_vec();
    bad.extend_from_slice(&real[cut + 10..]);
    let ids_total = real.iter().filter(|&&b| b == 0x1e).count();

    let dir = tempfile::tempdir().expect("tempdir");
    let out_file = dir.path().join("squeue.out");
    std::fs::write(&out_file, &bad).expect("write");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    let squeue = bin.join("squeue");
    std::fs::write(
        &squeue,
        format!("#!/bin/sh\nexec cat '{}'\n", out_file.display()),
    )
    .expect("write squeue");
    std::fs::set_permissions(&squeue, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "default_cluster = \"here\"\n[clusters.here]\nlocal = true\nuser = \"sduser\"\n",
    )
    .expect("config");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = slurmdash_env(&cfg, &["jobs"], &[("PATH", &path)]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("81!")),
        "job 81 not marked `!`:\n{stdout}"
    );
    let listed = stdout
        .lines()
        .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .count();
    assert_eq!(listed, ids_total, "every job listed once:\n{stdout}");
    for id in ["71", "82"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(&format!("{id} "))),
            "job {id} missing:\n{stdout}"
        );
    }
    assert!(
        stderr.starts_with("slurmdash: ") && stderr.contains("81") && stderr.contains("squeue"),
        "stderr does not name the problem, the job and the command:\n{stderr}"
    );
}
