//! The budget read on real output of the 22.05 and 26.05 dev clusters
//! (scripts/capture-usage-fixtures): a 2-CPU job `usage-burn` that ran ~20 s and a 1-GPU job
//! `usage-gpu` of ~10 s under research, a running 2-CPU 1-GPU job (10 min limit), a pending
//! 48-CPU job (30 min) under research, a held one under vision (1 h, 4 CPUs); the 22.05
//! capture also holds an older pending 48-CPU job (20 min) and a held 2-CPU one (10 min)
//! under research.

use std::path::PathBuf;

use super::*;
use crate::slurm::limits::parse_assoc_mgr;
use crate::slurm::parse::{parse_squeue, parse_sshare};

fn fixture(name: &str) -> String {
    fixture_of("22.05", name)
}

const VERSIONS: [&str; 2] = ["22.05", "26.05"];

pub(super) fn fixture_of(version: &str, name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/slurm")
        .join(version)
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn captured() -> UsageReport {
    captured_on("22.05")
}

fn captured_on(v: &str) -> UsageReport {
    let fixture = |n: &str| fixture_of(v, n);
    let sacct = parse_acct_jobs(&fixture("usage_sacct_used.out")).unwrap();
    let queue = parse_squeue(&fixture("usage_squeue.out")).unwrap();
    let sshare = parse_sshare(&fixture("usage_sshare.out")).unwrap();
    let assoc = parse_assoc_mgr(&fixture("usage_assoc_mgr.out")).unwrap();
    let user = fixture("usage_id.out");
    report(
        &Read {
            days: 7,
            user: Some(user.trim()),
            sacct: &sacct,
            queue: &queue,
            sshare: &sshare,
            assoc: Some(&assoc),
        },
        Vec::new(),
    )
}

#[test]
fn every_line_of_the_real_sacct_read_reads() {
    for v in VERSIONS {
        let out = fixture_of(v, "usage_sacct_used.out");
        let jobs = parse_acct_jobs(&out).unwrap();
        assert_eq!(jobs.len(), out.lines().count(), "{v}");
        let burn = jobs
            .iter()
            .find(|j| (20..=25).contains(&j.elapsed_s) && j.cpus == 2 && j.ended())
            .unwrap_or_else(|| panic!("{v}: no usage-burn in {jobs:#?}"));
        assert_eq!(
            (burn.account.as_str(), burn.partition.as_str()),
            ("research", "short")
        );
        assert!(burn.allocated);
        // The GPU job: 1 CPU, 1 GPU, ~10 s.
        assert!(
            jobs.iter().any(|j| (j.cpus, j.gpus) == (1, 1)
                && (10..=15).contains(&j.elapsed_s)
                && j.ended()),
            "{v}"
        );
        // The pending one was never allocated. 22.05 prints the 48 CPUs it asks for as
        // NCPUS, 26.05 prints 0 (ReqTRES has cpu=48): pending jobs are counted from
        // squeue, never from this read.
        let pend = jobs
            .iter()
            .find(|j| j.state == crate::slurm::model::JobState::Pending && j.partition == "long")
            .unwrap_or_else(|| panic!("{v}: no pending job"));
        assert!(!pend.allocated && pend.waited_s().is_none(), "{v}");
        assert_eq!(pend.cpus, if v == "22.05" { 48 } else { 0 });
        let waits = parse_acct_jobs(&fixture_of(v, "usage_sacct_waits.out")).unwrap();
        assert!(waits.iter().any(|j| j.waited_s().is_some()), "{v}");
    }
}

/// 26.05: the same jobs, without 22.05's older pending ones.
#[test]
fn figures_per_account_on_26_05() {
    let r = captured_on("26.05");
    let names: Vec<&str> = r.accounts.iter().map(|a| a.account.as_str()).collect();
    assert_eq!(names, ["research", "vision"]);
    let research = &r.accounts[0];
    assert!(
        research.used.cpu_seconds >= 2 * 20 + 10,
        "{:?}",
        research.used
    );
    assert!(research.used.gpu_seconds >= 10, "{:?}", research.used);
    // Running: 2 CPUs and 1 GPU for 8 s so far, of 10 min.
    assert_eq!(
        (
            research.in_flight.cpu_seconds,
            research.in_flight.gpu_seconds
        ),
        (16, 8)
    );
    assert_eq!(research.pending.cpu_seconds, 48 * 1800);
    assert_eq!(research.committed.cpu_seconds, 48 * 1800 + 2 * 600);
    assert_eq!(r.accounts[1].pending.cpu_seconds, 4 * 3600);
    assert_eq!(
        research.fair_share.as_ref().unwrap().effective_usage,
        Some(0.889743)
    );
}

#[test]
fn figures_per_account_from_the_captured_read() {
    let r = captured();
    assert_eq!(r.user.as_deref(), Some("sduser"));
    let names: Vec<&str> = r.accounts.iter().map(|a| a.account.as_str()).collect();
    assert_eq!(names, ["research", "vision"]);
    let research = &r.accounts[0];
    // At least the burn (2 CPUs × 20 s) and the GPU job (1 × 10 s).
    assert!(research.used.cpu_seconds >= 50, "{:?}", research.used);
    assert!(research.used.gpu_seconds >= 10, "{:?}", research.used);
    assert!(research.by_partition.contains_key("short"));
    // Running: 2 CPUs, 1 GPU, 10 s elapsed of a 10 min limit.
    assert_eq!(research.in_flight.jobs, 1);
    assert_eq!(research.in_flight.cpu_seconds, 20);
    assert_eq!(research.in_flight.gpu_seconds, 10);
    // Pending in research: 48 × 30 min, 48 × 20 min, held 2 × 10 min.
    let pending_cpu = 48 * 1800 + 48 * 1200 + 2 * 600;
    assert_eq!(research.pending.cpu_seconds, pending_cpu);
    assert_eq!(research.pending.jobs, 3);
    assert_eq!(research.committed.cpu_seconds, pending_cpu + 2 * 600);
    assert_eq!(research.committed.gpu_seconds, 600);
    let vision = &r.accounts[1];
    assert_eq!(vision.pending.cpu_seconds, 4 * 3600);
    assert_eq!(vision.used, Tally::default());
    // Fair share from sshare's user rows, no GrpTRESMins on the dev cluster's accounts.
    let fs = research.fair_share.as_ref().unwrap();
    assert_eq!(fs.raw_usage, Some(13798));
    assert_eq!(fs.effective_usage, Some(0.838447));
    assert_eq!(fs.account_effective_usage, Some(0.996567));
    assert!(research.limits.is_empty() && vision.limits.is_empty());
    assert_eq!(r.pending_total().jobs, 4);
}

#[test]
fn grp_tres_mins_of_the_account_and_the_users_association() {
    for v in VERSIONS {
        grp_tres_mins_on(v);
    }
}

fn grp_tres_mins_on(v: &str) {
    let assoc = parse_assoc_mgr(&fixture_of(v, "usage_assoc_mgr_limits.out")).unwrap();
    let sacct = vec![AcctJob {
        id: "1".into(),
        account: "sdusage".into(),
        partition: "short".into(),
        state: crate::slurm::model::JobState::Completed,
        submit: None,
        eligible: None,
        start: None,
        elapsed_s: 3600,
        cpus: 10,
        gpus: 0,
        allocated: true,
    }];
    let r = report(
        &Read {
            days: 7,
            user: Some("sdother"),
            sacct: &sacct,
            assoc: Some(&assoc),
            ..Read::default()
        },
        Vec::new(),
    );
    let a = r.accounts.iter().find(|a| a.account == "sdusage").unwrap();
    let got: Vec<(&str, &str, u64, Option<u64>)> = a
        .limits
        .iter()
        .map(|l| {
            (
                l.on.as_str(),
                l.tres.as_str(),
                l.limit_minutes,
                l.used_minutes,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("account sdusage", "cpu", 6000, Some(0)),
            ("account sdusage", "gres/gpu", 600, Some(0)),
            ("user sdother in sdusage", "cpu", 3000, Some(0)),
        ]
    );
    // slurmctld counts 0 against them: the bar follows its count, not the window's.
    let (l, frac) = a.tightest().unwrap();
    assert_eq!(frac, 0.0);
    assert_eq!(
        (l.tres.as_str(), l.limit_minutes),
        ("gres/gpu", 600),
        "on a tie, the smallest"
    );
}

#[test]
fn a_line_with_a_field_missing_is_an_error_naming_it() {
    let e = parse_acct_jobs("1\u{1f}research\u{1f}short\n").unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.to_string().contains("expected 11 fields"), "{e}");
    let bad = "1\u{1f}a\u{1f}p\u{1f}COMPLETED\u{1f}\u{1f}\u{1f}\u{1f}lots\u{1f}1\u{1f}\u{1f}\n";
    assert!(parse_acct_jobs(bad)
        .unwrap_err()
        .to_string()
        .contains("ElapsedRaw"));
}

#[test]
fn the_reads_always_name_a_start_time() {
    for argv in [sacct_used(7), sacct_waits(14)] {
        assert!(
            argv.iter().any(|a| a.starts_with("--starttime=now-")),
            "{argv:?}"
        );
        assert!(argv.iter().any(|a| a == "--allocations"));
    }
    assert!(sacct_used(3).contains(&"--starttime=now-3days".to_string()));
    assert!(sacct_used(3).contains(&"--truncate".to_string()));
    assert!(!sacct_waits(3).contains(&"--truncate".to_string()));
    let fmt = format!("--format={}", ACCT_FIELDS.join(","));
    assert!(sacct_used(1).contains(&fmt));
}

#[test]
fn hours_read_well() {
    assert_eq!(hours(0), "0.0");
    assert_eq!(hours(100), "0.03");
    assert_eq!(hours(5400), "1.5");
    assert_eq!(hours(3600 * 2500), "2500");
    let t = Tally {
        cpu_seconds: 7200,
        gpu_seconds: 1800,
        jobs: 2,
    };
    assert_eq!(t.text(), "2.0 CPU-h, 0.50 GPU-h");
}

#[test]
fn a_folded_pending_array_counts_each_task_and_unlimited_counts_nothing() {
    let mut queue = parse_squeue(&fixture("usage_squeue.out")).unwrap();
    queue.retain(|j| j.id.as_str() == "12312"); // 48 CPUs, 30 min
    queue[0].id = "12312_[0-3]".parse().unwrap();
    let mut unlimited = queue[0].clone();
    unlimited.id = "12399".parse().unwrap();
    unlimited.time_limit = crate::slurm::time::SlurmDuration::Unlimited;
    queue.push(unlimited);
    let r = report(
        &Read {
            days: 7,
            queue: &queue,
            ..Read::default()
        },
        Vec::new(),
    );
    let p = r.accounts[0].pending;
    assert_eq!((p.jobs, p.cpu_seconds), (5, 4 * 48 * 1800));
}
