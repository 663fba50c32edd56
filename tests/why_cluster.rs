//! `slurmdash why` against a maintenance window the test makes itself (issue 39): the
//! window named, the suggested time limit checked with `sbatch --test-only` and applied
//! (`--apply`, the job then starts before the window), a partition change applied, and the
//! refusals (no terminal without `--yes`, a raise past the partition's MaxTime, a job that
//! is no longer pending) explained.
//!
//! The window is a MAINT reservation on partition `spare`'s two nodes, which only the tests
//! of test group `spare-nodes` use (one at a time, .config/nextest.toml; this binary is in
//! it): no other test's job waits for it. It starts 20 minutes after it is made and is
//! removed when the test ends, a failing one included ([`Maintenance`]). Its two tests take
//! it one after the other ([`ONE_WINDOW`]) when `cargo test` runs them in one process.

use crate::common;

use std::process::Output;
use std::time::Duration;

use chrono::NaiveDateTime;
use common::maintenance::{Maintenance, ONE_WINDOW};
use common::*;
use serde_json::Value;
use slurmdash::remote::SshRemote;
use slurmdash::slurm::model::{JobId, SlurmDuration};
use slurmdash::slurm::time::parse_time;
use slurmdash::slurm::why::{self, Change};

fn at(s: &str) -> NaiveDateTime {
    parse_time(s)
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("{s:?} is not a time"))
}

/// A one-CPU job of 30 minutes (spare's MaxTime) on spare that runs `true`: it runs into
/// the window and waits for it.
async fn behind_the_window(r: &SshRemote, dir: &str, name: &str) -> u64 {
    sbatch(
        r,
        &[
            "-p",
            SPARE,
            "-t",
            "30",
            "-c",
            "1",
            "--mem=50M",
            "-J",
            name,
            "-D",
            dir,
            "--wrap",
            "true",
        ],
    )
    .await
}

/// Waits until the scheduler has looked at the job and says why it waits.
async fn wait_reason(r: &SshRemote, id: u64) -> String {
    wait_for(
        "the scheduler's reason",
        Duration::from_secs(90),
        || async {
            let out = run(r, &["squeue", "-h", "-j", &id.to_string(), "-o", "%T|%r"]).await;
            let s = out.stdout_lossy().trim().to_string();
            let (state, reason) = s.split_once('|')?;
            (state == "PENDING" && !matches!(reason, "None" | "")).then(|| reason.to_string())
        },
    )
    .await
}

/// sacct's `fields` of the job once slurmdbd has every one of them (a job that started and
/// ended within a second is recorded first without its partition and limit).
async fn settled(r: &SshRemote, id: u64, fields: &str) -> Vec<String> {
    wait_for(
        &format!("slurmdbd's record of {fields} of job {id}"),
        Duration::from_secs(60),
        || async {
            let out = sacct_fields(r, id, fields).await.stdout_lossy();
            let v: Vec<String> = out.trim().split('|').map(str::to_string).collect();
            (v.len() == fields.split(',').count() && v.iter().all(|f| !f.is_empty())).then_some(v)
        },
    )
    .await
}

fn why_json(id: u64) -> Value {
    let out = slurmdash(&["why", &id.to_string(), "--json", "--alternatives"]);
    assert!(
        out.status.success(),
        "why --json: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("why --json prints JSON")
}

fn apply(id: u64, n: usize, yes: bool) -> Output {
    let n = n.to_string();
    let id = id.to_string();
    let mut args = vec!["why", id.as_str(), "--apply", n.as_str()];
    if yes {
        args.push("--yes");
    }
    slurmdash(&args)
}

/// The index (from 1) and the alternative whose argv sets `key`.
fn alternative(v: &Value, key: &str) -> (usize, Value) {
    let alts = v["alternatives"].as_array().expect("alternatives");
    alts.iter()
        .enumerate()
        .find(|(_, a)| {
            a["argv"].as_array().is_some_and(|w| {
                w.iter()
                    .any(|w| w.as_str().is_some_and(|w| w.starts_with(key)))
            })
        })
        .map(|(i, a)| (i + 1, a.clone()))
        .unwrap_or_else(|| panic!("no alternative sets {key}: {v:#}"))
}

/// The window named, the longest limit that ends before it checked by the scheduler,
/// `--apply` refused without a terminal and applied with `--yes`: the job then starts at
/// once and ends before the window; afterwards `why` says it is no longer pending.
#[tokio::test(flavor = "multi_thread")]
async fn the_window_is_named_and_the_shorter_limit_applied_starts_the_job() {
    let _one = ONE_WINDOW.lock().await;
    let r = remote();
    let nodes = spare_nodes(&r).await;
    let dir = scratch(&r, "why-limit").await;
    let window = Maintenance::create(&nodes, "why-limit");
    let resv = window.read();
    assert!(resv.is_maintenance(), "{resv:?}");
    let id = behind_the_window(&r, &dir, "why-limit").await;
    let _cancel = CancelOnDrop(id);
    let reason = wait_reason(&r, id).await;
    assert!(
        reason.starts_with("ReqNodeNotAvail") || reason == "Resources",
        "the job waits for the window: {reason}"
    );

    let v = why_json(id);
    assert_eq!(v["state"], "PENDING", "{v:#}");
    assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()), "{v:#}");
    assert!(v["explanation"].as_str().is_some_and(|e| !e.is_empty()));
    assert_eq!(v["rank"]["partition"], SPARE, "{v:#}");
    let m = &v["maintenance"];
    assert_eq!(m["nodes"], resv.node_list.as_str(), "{v:#}");
    assert_eq!(at(m["start"].as_str().unwrap_or("")), resv.start);
    assert_eq!(at(m["end"].as_str().unwrap_or("")), resv.end);

    // The first alternative: the longest limit that ends before the window, checked.
    let (n, alt) = alternative(&v, "TimeLimit=");
    assert_eq!(n, 1, "{v:#}");
    let argv: Vec<String> = serde_json::from_value(alt["argv"].clone()).expect("argv");
    let limit = argv[3].strip_prefix("TimeLimit=").unwrap_or("");
    let limit = SlurmDuration::parse(limit)
        .ok()
        .and_then(|d| d.known())
        .unwrap_or_else(|| panic!("{argv:?}"));
    assert_eq!(argv[..3], ["scontrol", "update", &format!("JobId={id}")]);
    assert!(
        (17 * 60..=19 * 60).contains(&limit.as_secs()) && limit.as_secs().is_multiple_of(60),
        "whole minutes, ending before the window 20 minutes ahead: {limit:?}"
    );
    let est = at(alt["estimated_start"].as_str().unwrap_or("none"));
    assert!(
        est < resv.start,
        "sbatch --test-only starts the shorter job before the window: {est} vs {}",
        resv.start
    );
    assert!(
        alt["change"]
            .as_str()
            .is_some_and(|c| c.contains("ends before the maintenance")),
        "{alt:#}"
    );

    // Without a terminal and without --yes: refused, and nothing changed.
    let out = apply(id, 1, false);
    assert!(!out.status.success());
    let said = text(&out.stderr);
    assert!(
        said.contains("standard input is not a terminal") && said.contains("--yes"),
        "{said}"
    );
    let l = run(&r, &["squeue", "-h", "-j", &id.to_string(), "-o", "%l"]).await;
    assert_eq!(l.stdout_lossy().trim(), "30:00");

    // With --yes: the argv first, then applied; the job starts before the window.
    let out = apply(id, 1, true);
    let printed = text(&out.stdout);
    assert!(out.status.success(), "{printed}{}", text(&out.stderr));
    assert!(
        printed.contains(&format!("Apply 1: scontrol update JobId={id} TimeLimit=")),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("Applied to job {id}")),
        "{printed}"
    );
    let state = final_state(&r, id, Duration::from_secs(120)).await;
    assert_eq!(state, "COMPLETED");
    let acct = settled(&r, id, "Start,Timelimit").await;
    let start = at(&acct[0]);
    let tl = SlurmDuration::parse(&acct[1]).ok().and_then(|d| d.known());
    assert_eq!(tl, Some(limit), "the limit applied: {acct:?}, {v:#}");
    assert!(
        start + chrono::Duration::seconds(limit.as_secs() as i64) <= resv.start,
        "it ran before the window, with the limit ending by its start: {acct:?} vs {}",
        resv.start
    );

    // Ended: `why` says so and fails, in JSON too.
    let out = slurmdash(&["why", &id.to_string(), "--json"]);
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["state"], "COMPLETED", "{v:#}");
    assert!(
        text(&out.stderr).contains(&format!("job {id} is COMPLETED, not pending")),
        "{}",
        text(&out.stderr)
    );
    drop(window);
    run(&r, &["rm", "-rf", &dir]).await;
}

/// Behind the same kind of window: the partition alternative applied (the job runs in the
/// partition it names), and the refusals: a held job has nothing to apply, a raise past the
/// partition's MaxTime is refused before anything is sent, and Slurm's own refusal of it
/// is put in words.
#[tokio::test(flavor = "multi_thread")]
async fn a_partition_change_is_applied_and_refusals_are_explained() {
    let _one = ONE_WINDOW.lock().await;
    let r = remote();
    let nodes = spare_nodes(&r).await;
    let dir = scratch(&r, "why-partition").await;
    let _window = Maintenance::create(&nodes, "why-partition");
    let id = behind_the_window(&r, &dir, "why-partition").await;
    let _cancel = CancelOnDrop(id);
    wait_reason(&r, id).await;
    let v = why_json(id);
    let (n, alt) = alternative(&v, "Partition=");
    let argv: Vec<String> = serde_json::from_value(alt["argv"].clone()).expect("argv");
    let to = argv[3].strip_prefix("Partition=").unwrap_or("").to_string();
    assert_ne!(to, SPARE);
    assert!(
        alt["estimated_start"].as_str().is_some(),
        "checked with sbatch --test-only: {alt:#}"
    );
    let out = apply(id, n, true);
    let printed = text(&out.stdout);
    assert!(out.status.success(), "{printed}{}", text(&out.stderr));
    assert!(
        printed.contains(&format!("scontrol update JobId={id} Partition={to}")),
        "{printed}"
    );
    assert_eq!(
        final_state(&r, id, Duration::from_secs(120)).await,
        "COMPLETED"
    );
    let part = settled(&r, id, "Partition").await;
    assert_eq!(part, [to], "it ran in the partition it was moved to");

    // A held job: nothing to apply, and why.
    let held = sbatch(
        &r,
        &[
            "-p",
            SPARE,
            "-t",
            "5",
            "-c",
            "1",
            "--mem=50M",
            "-J",
            "why-held",
            "-D",
            &dir,
            "--hold",
            "--wrap",
            "true",
        ],
    )
    .await;
    let _cancel_held = CancelOnDrop(held);
    let out = apply(held, 1, true);
    assert!(!out.status.success());
    let said = text(&out.stderr);
    assert!(
        said.contains("has 0 alternative(s) now (it is held"),
        "{said}"
    );

    // A raise past spare's MaxTime (30 minutes): refused before anything is sent...
    let t = Duration::from_secs(30);
    let (detail, _) = slurmdash::io::fetch::detail(&r, &JobId::new(held), t)
        .await
        .expect("detail");
    let job = detail.to_job().expect("a queue row");
    let parts = slurmdash::io::ops::partitions(&r, t)
        .await
        .expect("partitions");
    let raise = Change::TimeLimit {
        from: job.time_limit,
        to: SlurmDuration::from_secs(40 * 60),
    };
    let e = why::check_apply(&job, &raise, &parts).expect_err("refused up front");
    assert!(
        e.contains("only up to its partition's MaxTime (30:00)"),
        "{e}"
    );
    // ... and Slurm's own answer, when sent anyway, is put in words.
    let e = slurmdash::io::why::apply(&r, &job.id, &raise, t)
        .await
        .expect_err("Slurm refuses it");
    assert!(
        e.starts_with("Slurm refused to raise the time limit")
            && e.contains("Access/permission denied"),
        "{e}"
    );
    let l = run(&r, &["squeue", "-h", "-j", &held.to_string(), "-o", "%l"]).await;
    assert_eq!(l.stdout_lossy().trim(), "5:00", "unchanged");
    run(&r, &["rm", "-rf", &dir]).await;
}
