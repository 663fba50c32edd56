//! Failure triage against the dev cluster (`scripts/dev-cluster up`): real jobs end in real
//! states, the real worker fetches their detail (scontrol, or sacct after MinJobAge) and reads
//! their real logs over SSH, and the classifier names the class.
//!
//! ERR_OOM from a real memory kill: the dev cluster runs `TaskPlugin=task/cgroup` with
//! `ConstrainRAMSpace=yes`, so a job that allocates past its `--mem` is killed by the kernel
//! and Slurm records OUT_OF_MEMORY. NODE_FAIL needs a node set down, which only the retry test
//! (tests/retry_node_fail.rs, its own binary) does.

use crate::common;

use std::time::Duration;

use common::{final_state, remote, run, sacct_state, sbatch, scratch, wait_for, T};
use slurmdash::io::fetch;
use slurmdash::io::triage::{triage_job, TriageReport};
use slurmdash::remote::Remote;
use slurmdash::slurm::model::JobId;
use slurmdash::triage::{Class, Evidence, Patterns};

/// Waits until sacct records a final state, then triages the job the way the dashboard does.
async fn finished_and_triaged(
    r: &dyn Remote,
    id: u64,
    results_dir: Option<&str>,
    limit: Duration,
) -> TriageReport {
    let state = final_state(r, id, limit).await;
    // sacct can record the final state while slurmctld still shows the job completing
    // (seen on 26.05 after a TIMEOUT): the dashboard triages it at a later refresh, so the
    // test asks again for a while, as the dashboard would.
    let what = format!("job {id} (sacct: {state}) to be classified");
    wait_for(&what, Duration::from_secs(60), || async {
        let (detail, source) = fetch::detail(r, &JobId::new(id), T)
            .await
            .unwrap_or_else(|e| panic!("detail of {id}: {e}"));
        triage_job(r, &detail, source, results_dir, &Patterns::builtin())
            .await
            .unwrap_or_else(|e| panic!("triage of {id}: {e}"))
    })
    .await
}

fn submit_args<'a>(dir: &'a str, name: &'a str, wrap: &'a str) -> Vec<&'a str> {
    vec![
        "--chdir",
        dir,
        "-J",
        name,
        "-c",
        "1",
        "--mem=100M",
        "--time=5",
        "--wrap",
        wrap,
    ]
}

#[tokio::test]
async fn real_failures_are_classified_from_state_and_log_tails() {
    let r = remote();
    let dir = scratch(&r, "triage").await;
    // Slurm's default log name (slurm-%j.out in the work dir) so the paths are known even
    // when only sacct still knows the job.
    let program = sbatch(
        &r,
        &submit_args(
            &dir,
            "tr-program",
            "echo training; python3 -c 'raise SystemExit(\"bad config\")'; exit 1",
        ),
    )
    .await;
    let infra_line = "gpu-a17:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)";
    let infra_wrap = format!("echo step 1; echo '{infra_line}' >&2; exit 1");
    let infra = sbatch(&r, &submit_args(&dir, "tr-infra", &infra_wrap)).await;
    let mut to_args = submit_args(&dir, "tr-timeout", "echo sleeping; sleep 300");
    to_args[7] = "--time=1";
    let timeout = sbatch(&r, &to_args).await;
    let results = format!("{dir}/results");
    let status_wrap = format!(
        "mkdir -p {results} && printf '%s\\n' '{{\"status\": \"STARTED\"}}' '{{\"status\": \"FAILURE\", \"message\": \"no label files\"}}' > {results}/status.json; echo done"
    );
    let status_err = sbatch(&r, &submit_args(&dir, "tr-status", &status_wrap)).await;
    let ok = sbatch(&r, &submit_args(&dir, "tr-ok", "echo fine")).await;
    let cancel = sbatch(&r, &submit_args(&dir, "tr-cancel", "sleep 300")).await;
    let out = run(&r, &["scancel", &cancel.to_string()]).await;
    assert!(out.success(), "scancel: {}", out.stderr_lossy());

    let minute = Duration::from_secs(60);
    let p = finished_and_triaged(&r, program, None, minute).await;
    assert_eq!(p.triage.class, Class::Program, "{p:?}");
    assert_eq!(p.triage.evidence, Evidence::ExitCode { code: 1, signal: 0 });

    let i = finished_and_triaged(&r, infra, None, minute).await;
    assert_eq!(i.triage.class, Class::Infra, "{i:?}");
    match &i.triage.evidence {
        Evidence::LogLine { line, .. } => assert_eq!(line, infra_line),
        other => panic!("expected the NCCL line as evidence, got {other:?}"),
    }

    let s = finished_and_triaged(&r, status_err, Some(&results), minute).await;
    assert_eq!(sacct_state(&r, status_err).await, "COMPLETED");
    assert_eq!(s.triage.class, Class::Error, "{s:?}");
    assert_eq!(
        s.triage.evidence.to_string(),
        "status.json: FAILURE (no label files)"
    );
    assert_eq!(
        s.status_path.as_deref(),
        Some(format!("{results}/status.json").as_str())
    );
    // No status.json anywhere: COMPLETED stands.
    let c = finished_and_triaged(&r, ok, None, minute).await;
    assert_eq!(c.triage.class, Class::Complete, "{c:?}");

    let x = finished_and_triaged(&r, cancel, None, minute).await;
    assert_eq!(x.triage.class, Class::Cancelled, "{x:?}");

    // Slurm checks limits about every 30 s and gives KillWait before SIGKILL: allow 4 min.
    let t = finished_and_triaged(&r, timeout, None, Duration::from_secs(240)).await;
    assert_eq!(t.triage.class, Class::Timeout, "{t:?}");
    assert_eq!(sacct_state(&r, timeout).await, "TIMEOUT");
}

/// A job that allocates 400 MB under `--mem=100M` is killed by its memory cgroup; sacct says
/// OUT_OF_MEMORY and the triage classifies it ERR_OOM from that state, with the memory hint.
#[tokio::test]
async fn a_job_over_its_memory_limit_ends_out_of_memory_and_is_classified_oom() {
    let r = remote();
    let dir = scratch(&r, "triage-oom").await;
    let hog = "echo allocating; python3 -c 'b = bytearray(400 * 1024 * 1024); import time; time.sleep(5)'";
    let id = sbatch(&r, &submit_args(&dir, "tr-oom", hog)).await;
    let o = finished_and_triaged(&r, id, None, Duration::from_secs(120)).await;
    assert_eq!(sacct_state(&r, id).await, "OUT_OF_MEMORY");
    assert_eq!(o.triage.class, Class::Oom, "{o:?}");
    assert!(
        o.triage.evidence.to_string().contains("OUT_OF_MEMORY"),
        "{}",
        o.triage.evidence
    );
    assert!(
        o.triage.suggestion.contains("--mem"),
        "{}",
        o.triage.suggestion
    );
    // slurmstepd tells the job's stderr (here the same file) that the cgroup killed it
    // ("slurmstepd-NODE: error: Detected 1 oom-kill event(s)" in 22.05, "error: Detected
    // 1 oom_kill event" in 26.05).
    let log = run(&r, &["cat", &format!("{dir}/slurm-{id}.out")]).await;
    let log = log.stdout_lossy();
    assert!(log.contains("allocating"), "{log}");
    assert!(
        log.lines()
            .any(|l| l.contains("Detected") && l.to_lowercase().contains("oom")),
        "{log}"
    );
}
