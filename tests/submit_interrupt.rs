//! `slurmdash submit` interrupted at each of its steps, on the dev cluster over real SSH:
//! whatever the moment, the launch ends up either queued and recorded (one job, in the
//! registry under its id) or absent (no job of its name in squeue or sacct, nothing in
//! the registry). Killed outright (SIGKILL) while it submits, the launch stays recorded as
//! being submitted, and the next retry check adopts the job the cluster queued.

use crate::common;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::launch::{no_secret, LaunchSetup};
use common::*;
use slurmdash::io::retry::{check, claim_stale_after, RetryCheck, RetryEvent};
use slurmdash::remote::Remote;
use slurmdash::retry::RetryPolicy;
use slurmdash::triage::Patterns;

/// `slurmdash submit` of a one-CPU job named `name` (a guarded launch: the guard's files
/// are staged too), logging each remote command to `log`.
fn spawn_submit(s: &LaunchSetup, name: &str, log: &std::path::Path) -> Child {
    let mut c = common::slurmdash_command(&s.config);
    c.arg("--log")
        .arg(log)
        .arg("submit")
        .env("SLURMDASH_STATE_DIR", s.state.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for kv in [
        format!("name={name}"),
        "gpus=0".into(),
        "cpus_per_task=1".into(),
        "mem=20M".into(),
        "time=2m".into(),
        "requeue=false".into(),
    ] {
        c.arg("--set").arg(kv);
    }
    c.args(["--", "sleep", "60"]);
    c.spawn().expect("slurmdash submit")
}

/// Remote commands the process has finished so far (its debug log's `ran` lines).
fn commands_done(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("slurmdash::remote: ran "))
        .count()
}

fn signal(child: &Child, sig: i32) {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill {pid}");
}

/// Jobs of this name in slurmctld and in accounting: (id, where).
async fn jobs_named(r: &dyn Remote, name: &str) -> Vec<u64> {
    let q = run(
        r,
        &[
            "squeue",
            "--me",
            "--noheader",
            "--name",
            name,
            "--format=%i",
        ],
    )
    .await;
    let a = run(
        r,
        &[
            "sacct",
            "--noheader",
            "-X",
            "--parsable2",
            "--starttime=now-1hour",
            "--name",
            name,
            "--format=JobIDRaw",
        ],
    )
    .await;
    let mut ids: Vec<u64> = q
        .stdout_lossy()
        .lines()
        .chain(a.stdout_lossy().lines())
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_submit_leaves_the_launch_queued_and_recorded_or_absent() {
    let r = remote();
    let s = LaunchSetup::new("interrupt").await;
    let tag = std::process::id() % 100_000;
    let mut outcomes = Vec::new();
    // How many remote commands a whole submit makes (reading the cluster, checking the
    // job directory, staging each file, submitting, recording): measured, not assumed.
    let whole = {
        let name = format!("int{tag}-whole");
        let log = s.state.path().join("debug-whole.log");
        let out = spawn_submit(&s, &name, &log)
            .wait_with_output()
            .expect("wait");
        assert!(out.status.success(), "{}", text(&out.stderr));
        for id in jobs_named(&r, &name).await {
            run(&r, &["scancel", &id.to_string()]).await;
        }
        commands_done(&log)
    };
    assert!(whole >= 10, "a submit made only {whole} remote commands");
    // SIGINT once the process has finished k remote commands, for every k: before the
    // first, at each step of staging, around the submission itself, after it.
    for k in 0..whole {
        let name = format!("int{tag}-{k}");
        let log = s.state.path().join(format!("debug-{k}.log"));
        let mut child = spawn_submit(&s, &name, &log);
        let start = Instant::now();
        while commands_done(&log) < k && child.try_wait().expect("wait").is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "submit did not get to command {k}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let ended_first = child.try_wait().expect("wait").is_some();
        if !ended_first {
            signal(&child, libc::SIGINT);
        }
        let out = child.wait_with_output().expect("wait");
        let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
        if !ended_first {
            // 130 once slurmdash listens for signals; killed by SIGINT before that.
            use std::os::unix::process::ExitStatusExt;
            assert!(
                out.status.code() == Some(130) || out.status.signal() == Some(libc::SIGINT),
                "k={k}: {:?}: {said}",
                out.status
            );
        }

        // Give an answer that was still travelling time to land in Slurm.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let jobs = jobs_named(&r, &name).await;
        let entries: Vec<_> = s
            .registry()
            .load()
            .expect("registry")
            .into_iter()
            .filter(|e| e.name == name)
            .collect();
        match (entries.as_slice(), jobs.as_slice()) {
            ([], []) => {
                assert!(!said.contains("Submitted job"), "k={k}: {said}");
                outcomes.push((k, "absent"));
            }
            ([e], [id]) => {
                assert_eq!(e.job_id, *id, "k={k}: the record names the queued job");
                assert!(
                    said.contains(&format!("Submitted job {id} ")),
                    "k={k}: {said}"
                );
                outcomes.push((k, "queued and recorded"));
                run(&r, &["scancel", &id.to_string()]).await;
            }
            (e, j) => panic!("k={k}: half a launch: registry {e:?}, jobs {j:?}; it said: {said}"),
        }
    }
    println!("interrupted after k remote commands: {outcomes:?}");
    // Both ends of the range were reached: interrupts before anything was queued, and
    // after the submission had begun.
    assert!(outcomes.iter().any(|(_, o)| *o == "absent"), "{outcomes:?}");
    assert!(
        outcomes.iter().any(|(_, o)| *o == "queued and recorded"),
        "{outcomes:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_submit_killed_while_submitting_is_adopted_by_the_next_check() {
    let r = remote();
    let s = LaunchSetup::new("killed").await;
    let name = format!("kill{}", std::process::id() % 100_000);
    let log = s.state.path().join("debug.log");
    let mut child = spawn_submit(&s, &name, &log);
    // Killed as soon as the submission is recorded as under way (the registry holds the
    // launch with no job yet), before the answer comes back.
    let registry = s.registry();
    let start = Instant::now();
    let claimed = loop {
        let pending = registry
            .load()
            .unwrap_or_default()
            .into_iter()
            .find(|e| e.name == name && e.job_id == 0);
        if let Some(e) = pending {
            signal(&child, libc::SIGKILL);
            break e;
        }
        assert!(
            child.try_wait().expect("wait").is_none(),
            "submit ended before it was caught submitting"
        );
        assert!(start.elapsed() < Duration::from_secs(60), "no claim seen");
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = child.wait();
    assert_eq!(claimed.attempts.len(), 1);

    // The cluster finishes what it was doing; the next check (once the claim is stale)
    // adopts that job, or submits the launch if it never got queued: one job either way.
    // The check's command timeout also sets when a claim is stale: short, to wait less.
    let timeout = Duration::from_secs(8);
    tokio::time::sleep(
        claim_stale_after(timeout)
            .to_std()
            .expect("duration")
            .saturating_add(Duration::from_secs(1)),
    )
    .await;
    let patterns = Patterns::builtin();
    let c = RetryCheck {
        remote: &r,
        registry: &registry,
        cluster: "dev",
        policy: RetryPolicy::default(),
        patterns: &patterns,
        timeout,
        secret: &no_secret,
        allow_submit: true,
    };
    let (events, entries) = check(&c).await.expect("retry check");
    let e = entries
        .iter()
        .find(|e| e.local_id == claimed.local_id)
        .unwrap_or_else(|| panic!("the launch was forgotten: {events:?}"));
    let jobs = jobs_named(&r, &name).await;
    assert_eq!(jobs.len(), 1, "one job for the launch: {jobs:?} {events:?}");
    assert_eq!(e.job_id, jobs[0], "{events:?}");
    assert!(
        events.iter().any(|ev| matches!(ev, RetryEvent::Recovered { job_id, attempt: 1, .. } if *job_id == jobs[0])),
        "{events:?}"
    );
    run(&r, &["scancel", &jobs[0].to_string()]).await;
}

/// The pid of the slurmdash started with `--log log` (found by its command line).
fn dashboard_pid(log: &std::path::Path) -> Option<i32> {
    let want = log.display().to_string();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_ours = args.first()?.ends_with(b"slurmdash")
            && args
                .windows(2)
                .any(|w| w[0] == b"--log" && w[1] == want.as_bytes());
        is_ours.then_some(pid)
    })
}

/// Remote commands of the submission itself (the safety check of the job directory, the
/// staged files, the submit script) the dashboard has finished, from its debug log.
fn submit_steps_done(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("slurmdash::remote: ran "))
        .filter(|l| {
            [
                "unsafe_dirs",
                "does not write through links",
                "script=$1; logs=$2",
            ]
            .iter()
            .any(|m| l.contains(m))
        })
        .count()
}

/// A dashboard whose terminal closes (SIGHUP) while its form submits finishes the
/// submission before it leaves, and says so: the launch is queued and recorded, never
/// half done. Interrupted as the form says "submitting…" and after k of the submission's
/// own remote commands.
#[tokio::test(flavor = "multi_thread")]
async fn a_dashboard_closed_while_its_form_submits_finishes_the_submission_first() {
    let r = remote();
    let s = LaunchSetup::new("form-interrupt").await;
    let tag = std::process::id() % 100_000;
    let mut seen = Vec::new();
    for k in [0, 1, 5, 10] {
        let name = format!("fint{tag}-{k}");
        let dir = tempfile::tempdir().expect("tmp");
        let config = dir.path().join("slurmdash.toml");
        let base = std::fs::read_to_string(&s.config).expect("config");
        std::fs::write(
            &config,
            format!("{base}\n\n[launch]\nname = \"{name}\"\ngpus = 0\ncpus_per_task = 1\nmem = \"20M\"\ntime = \"2m\"\nrequeue = false\ncommand = \"sleep 60\"\n"),
        )
        .expect("write config");
        let log = dir.path().join("debug.log");
        let log_arg = log.display().to_string();
        // A state directory per dashboard: the form starts from the config's [launch],
        // not from the last launch's values.
        let state_dir = tempfile::tempdir().expect("state");
        let state = state_dir.path().display().to_string();
        let t = common::tmux::Tmux::start_with(
            &config,
            &["--log", &log_arg],
            &[("SLURMDASH_STATE_DIR", &state)],
        );
        t.wait("the dashboard", T, |sc| sc.contains("jobs"));
        t.keys(&["n"]);
        t.wait("the form, validated", T, |sc| {
            sc.contains("launch a job on dev") && sc.contains(&format!("→ {name} on dev"))
        });
        let pid = dashboard_pid(&log).expect("the dashboard's pid");
        t.keys(&["C-s"]);
        t.wait("the form submitting", T, |sc| sc.contains("submitting…"));
        let start = Instant::now();
        while submit_steps_done(&log) < k {
            assert!(
                start.elapsed() < T,
                "k={k}: the submission did not get to step {k}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // What a closed terminal sends.
        // SAFETY: kill(2) on the dashboard this test started.
        assert_eq!(
            unsafe { libc::kill(pid, libc::SIGHUP) },
            0,
            "kill -HUP {pid}"
        );
        let screen = t.wait("the dashboard gone", T, |sc| sc.contains("EXITED:"));
        let jobs = jobs_named(&r, &name).await;
        let entries: Vec<_> = slurmdash::registry::Registry::open(state_dir.path())
            .load()
            .expect("registry")
            .into_iter()
            .filter(|e| e.name == name)
            .collect();
        match (entries.as_slice(), jobs.as_slice()) {
            ([e], [id]) => {
                assert_eq!(e.job_id, *id, "k={k}: the record names the queued job");
                run(&r, &["scancel", &id.to_string()]).await;
            }
            (e, j) => panic!(
                "k={k}: not one queued and recorded launch: registry {e:?}, jobs {j:?}\n{screen}"
            ),
        }
        // Whether the answer was still on its way at the signal depends on timing; when
        // it was, the user is told.
        let waited = screen.contains("finishing the submission of launch");
        if waited {
            assert!(screen.contains("submission finished"), "k={k}:\n{screen}");
        }
        seen.push((k, waited));
    }
    println!("closed after k submit commands (k, waited for the submission): {seen:?}");
    assert!(
        seen.iter().any(|(_, waited)| *waited),
        "no close came while the submission was under way: {seen:?}"
    );
}
