//! A submission that times out after sbatch leaves nothing behind, and submitting the same
//! launch again never queues it twice into one job directory. Real cluster over real SSH:
//! the timeout is forced by putting a slow `scontrol` first in the staging script's PATH
//! (passed the way secrets are, on stdin), so sbatch has queued the held job when the
//! command timeout hits.

use crate::common;

use std::time::Duration;

use common::*;
use slurmdash::io::facts;
use slurmdash::io::submit::Target;
use slurmdash::launch::spec::LaunchSpec;
use slurmdash::launch::submit;
use slurmdash::registry::Registry;
use slurmdash::remote::Remote;

/// (id, state, reason) of every queued job whose batch script is `script`.
async fn queued_with_script(r: &dyn Remote, script: &str) -> Vec<(u64, String, String)> {
    // A launch's attempts run in its job directory (sbatch reads the script on stdin);
    // its guards, there too, have names of their own.
    let dir = script.rsplit_once("/sbatch/").map_or(script, |(d, _)| d);
    let out = run(
        r,
        &["squeue", "--me", "--noheader", "--format=%i|%T|%r|%Z|%j"],
    )
    .await;
    assert!(out.success(), "squeue: {}", out.stderr_lossy());
    out.stdout_lossy()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (f.len() == 5 && f[3] == dir && !f[4].starts_with("sdguard-")).then(|| {
                (
                    f[0].parse().expect("job id"),
                    f[1].to_string(),
                    f[2].to_string(),
                )
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timed_out_submit_cancels_its_job_and_a_resubmit_queues_the_launch_once() {
    let r = remote();
    let base = scratch(&r, "submit-timeout").await;
    let root = format!("{base}/results");
    let state = tempfile::tempdir().expect("state dir");
    let registry = Registry::open(state.path());

    // A scontrol that hangs: `scontrol release` never answers within the timeout.
    let real = run(&r, &["sh", "-c", "command -v scontrol"]).await;
    assert!(real.success(), "no scontrol on the login node");
    let real = real.stdout_lossy().trim().to_string();
    let bin = format!("{base}/slowbin");
    let mk = run(
        &r,
        &[
            "sh",
            "-c",
            "mkdir -p \"$1\" && printf '#!/bin/sh\\nsleep 60\\nexec %s \"$@\"\\n' \"$2\" > \"$1/scontrol\" && chmod +x \"$1/scontrol\"",
            "sh",
            &bin,
            &real,
        ],
    )
    .await;
    assert!(mk.success(), "{}", mk.stderr_lossy());

    let facts = facts::fetch(&r, T).await.expect("cluster facts");
    let tag = format!("tmo{}", std::process::id());
    let spec = LaunchSpec {
        name: tag.clone(),
        gpus: 0,
        cpus_per_task: 1,
        mem: "50M".into(),
        time: "5m".into(),
        command: "sleep 120".into(),
        requeue: false,
        ..LaunchSpec::default()
    }
    .with_cluster_defaults(Some("short"), None);
    let local = submit::new_local_id();
    let p = submit::prepare(&spec, &facts, &root, &local).expect("valid launch");
    let script = p.layout.script_path();
    let slow_path = vec![("PATH".to_string(), format!("{bin}:/usr/bin:/bin"))];
    let short = Target {
        remote: &r,
        cluster: "dev",
        registry: &registry,
        timeout: Duration::from_secs(10),
        convert_timeout: T,
    };
    let err = slurmdash::io::submit::submit(&short, &p, &slow_path)
        .await
        .expect_err("the submission times out");
    assert!(err.contains("did not finish within"), "{err}");

    // sbatch had queued a held job (its log directory, named after the job id, was made
    // before the release hung); the interrupted script cancelled it.
    let logs = run(&r, &["ls", &format!("{}/slurm-logs", p.layout.job_dir)]).await;
    let id: u64 = logs
        .stdout_lossy()
        .trim()
        .strip_prefix(&format!("{tag}-"))
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "sbatch did not get to queue the job: {}",
                logs.stdout_lossy()
            )
        });
    let st = wait_for(
        "sacct to record the interrupted submission's job",
        Duration::from_secs(60),
        || async {
            let s = sacct_state(&r, id).await;
            (!s.is_empty() && s != "PENDING").then_some(s)
        },
    )
    .await;
    assert!(st.starts_with("CANCELLED"), "job {id} is {st}");
    wait_for(
        "the cancelled job to leave the queue",
        Duration::from_secs(60),
        || async {
            queued_with_script(&r, &script)
                .await
                .is_empty()
                .then_some(())
        },
    )
    .await;
    // Its answer was lost: the launch stays recorded as being submitted (no job yet), for
    // a dashboard to adopt a job the cluster queued after all, or to submit it once.
    let entries = registry.load().expect("registry");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        (entries[0].job_id, entries[0].attempts.len()),
        (0, 1),
        "{entries:?}"
    );
    assert!(err.contains("stays recorded as being submitted"), "{err}");

    // The form submits the same launch again (same local id, same job directory): that
    // is the record's job from then on.
    let normal = Target {
        timeout: T,
        ..short
    };
    let first = slurmdash::io::submit::submit(&normal, &p, &[])
        .await
        .expect("submitted");
    assert_ne!(
        first.job_id, id,
        "a new job: the interrupted one was cancelled"
    );
    assert!(first.warnings.is_empty(), "{:?}", first.warnings);
    // Its answer is "lost" and the form submits once more: the queued job is found, not
    // duplicated.
    let again = slurmdash::io::submit::submit(&normal, &p, &[])
        .await
        .expect("submitted");
    assert_eq!(again.job_id, first.job_id);
    assert!(
        again.warnings.iter().any(|w| w.contains("already queued")),
        "{:?}",
        again.warnings
    );
    let live = queued_with_script(&r, &script).await;
    assert_eq!(live.len(), 1, "one job for the launch: {live:?}");
    assert_eq!(live[0].0, first.job_id);
    assert_ne!(live[0].2, "JobHeldUser", "{live:?}");
    let entries = registry.load().expect("registry");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].job_id, first.job_id);
    let c = run(&r, &["scancel", &first.job_id.to_string()]).await;
    assert!(c.success());
}
