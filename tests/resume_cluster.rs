//! Auto-resume on the dev cluster, with the laptop closed: `slurmdash submit --resume
//! timeout` leaves the launch to its guard job, which submits the same staged script again
//! after each TIMEOUT with SLURMDASH_RESUME_ATTEMPT set. A job that appends that number to a
//! counter file and sleeps past its 1-minute limit completes on its third attempt with three
//! lines in the counter; each attempt keeps its own slurm-logs/<name>-<id>/; a plain exit 1
//! under the same setting is not resumed. A job preempted by a higher QOS is resumed once
//! the node is free again. A job whose node fails (set DOWN under it) is resumed too. (The
//! resume cap is covered against stand-ins in guard_script.rs.)

use crate::common;
use crate::guard_helpers;

use std::time::Duration;

use common::*;
use guard_helpers::*;

/// Each attempt runs into its 1-minute limit (Slurm ends it within about 30 s after), then
/// the guard waits for sacct's final record.
const PER_ATTEMPT: Duration = Duration::from_secs(300);

#[tokio::test(flavor = "multi_thread")]
async fn a_job_past_its_time_limit_resumes_and_completes_on_its_third_attempt() {
    let r = remote();
    let name = tag("resume");
    let counting = "echo \"${SLURMDASH_RESUME_ATTEMPT-unset}\" >> \"$SLURMDASH_JOB_DIR/counter\"; n=$(wc -l < \"$SLURMDASH_JOB_DIR/counter\"); if [ \"$n\" -ge 3 ]; then echo \"done at $n\"; exit 0; fi; echo \"attempt $n sleeps past the limit\"; sleep 600";
    let l = submit_with(
        &dev_config(),
        &name,
        counting,
        &[
            "--set",
            "time=1m",
            "--resume",
            "timeout",
            "--max-resumes",
            "5",
        ],
        &[],
    );
    // Beside it, the same setting on a job that fails: not resumed.
    let failing = tag("resume-exit");
    let f = submit_with(
        &dev_config(),
        &failing,
        "echo failing >&2; exit 1",
        &["--resume", "timeout"],
        &[],
    );

    let mut attempts = vec![l.job];
    for resume in 1..=2u32 {
        let job = *attempts.last().expect("an attempt");
        let d = wait_for(
            &format!("the guard's decision on attempt {job}"),
            PER_ATTEMPT,
            || async {
                chain(&r, &l.dir)
                    .await
                    .into_iter()
                    .find(|x| x.is_decision() && x.job_id() == Some(job))
            },
        )
        .await;
        assert_eq!(d.state.as_deref(), Some("TIMEOUT"), "{d:?}");
        let next = d
            .next_id()
            .unwrap_or_else(|| panic!("attempt {job} was not resumed: {d:?}"));
        assert_eq!(
            d.decision.as_deref(),
            Some(&*format!(
                "resumed after TIMEOUT as {next} (resume {resume} of 5)"
            )),
            "{d:?}"
        );
        attempts.push(next);
    }
    let third = attempts[2];
    assert_eq!(final_state(&r, third, PER_ATTEMPT).await, "COMPLETED");
    let counter = run(&r, &["cat", &format!("{}/counter", l.dir)]).await;
    assert_eq!(
        counter.stdout_lossy(),
        "0\n1\n2\n",
        "the counter: one line per attempt, each with its resume number"
    );
    for (i, id) in attempts.iter().enumerate() {
        let out = run(
            &r,
            &["cat", &format!("{}/slurm-logs/{name}-{id}/main.out", l.dir)],
        )
        .await;
        let want = if i == 2 {
            "done at 3".to_string()
        } else {
            format!("attempt {} sleeps past the limit", i + 1)
        };
        assert!(
            out.stdout_lossy().contains(&want),
            "attempt {id}'s own log: {}",
            out.stdout_lossy()
        );
    }
    wait_quiet(&r, &l.dir).await;

    // A dashboard opened afterwards (the real binary in a terminal) shows the last attempt
    // as the launch's second resume.
    let state_dir = l.state.path().display().to_string();
    let t =
        common::tmux::Tmux::start_with(&dev_config(), &[], &[("SLURMDASH_STATE_DIR", &state_dir)]);
    t.wait(
        "the resumed attempt with its badge",
        Duration::from_secs(120),
        |s| {
            common::tmux::row(s, third)
                .is_some_and(|row| row.contains("↻2/5 resumed after TIMEOUT"))
        },
    );
    t.keys(&["q"]);
    drop(t);

    let d = decision_for(&r, &f.dir, f.job).await;
    assert_eq!(
        d.decision.as_deref(),
        Some("not retried: ERR_PROGRAM (exit code 1)"),
        "{d:?}"
    );
    assert_eq!(d.next_id(), None);
    println!(
        "resumed twice after TIMEOUT: attempts {attempts:?}; exit 1 not resumed ({})",
        f.job
    );
}

/// Preemption: a launch at a preemptable QOS (`sdpreempt-low`) on spare01 loses the node to
/// a job of a QOS that preempts it (`sdpreempt-high`, slurm.conf `PreemptType=preempt/qos`,
/// `PreemptMode=CANCEL`); it ends PREEMPTED, its guard resumes it, and the resumed run
/// starts once the node is free and completes.
#[tokio::test(flavor = "multi_thread")]
async fn a_preempted_job_is_resumed_after_the_job_that_took_its_node() {
    let r = remote();
    let _qos = limits::OwnPreemption::add("sdpreempt", "sduser");
    let node = spare_nodes(&r).await.remove(0);
    let at = |qos: &str| {
        vec![
            "-A".to_string(),
            "sdpreempt".into(),
            format!("--qos={qos}"),
            "-p".into(),
            "spare".into(),
            "-w".into(),
            node.clone(),
            "--exclusive".into(),
        ]
    };
    // slurmctld hears of the new QOS from slurmdbd within seconds.
    wait_for(
        "sbatch to know the new QOS",
        Duration::from_secs(60),
        || async {
            let mut argv = vec!["sbatch".to_string(), "--test-only".into()];
            argv.extend(at("sdpreempt-low"));
            argv.extend(["--wrap".into(), "true".into()]);
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            run(&r, &argv).await.success().then_some(())
        },
    )
    .await;

    let name = tag("preempt");
    let extra = format!("extra_sbatch=--qos=sdpreempt-low --nodelist={node} --exclusive");
    let l = submit_with(
        &dev_config(),
        &name,
        "if [ \"$SLURMDASH_RESUME_ATTEMPT\" -ge 1 ]; then echo \"resumed ($SLURMDASH_RESUME_ATTEMPT)\"; exit 0; fi; echo first run; sleep 600",
        &[
            "--set",
            "partition=spare",
            "--set",
            "account=sdpreempt",
            "--set",
            &extra,
            "--resume",
            "preempt",
        ],
        &[],
    );
    let _cancel = CancelOnDrop(l.job);
    wait_running(&r, l.job).await;
    let mut argv = vec![
        "-J".to_string(),
        "sd-preemptor".into(),
        "-t".into(),
        "2".into(),
    ];
    argv.extend(at("sdpreempt-high"));
    argv.extend(["--wrap".into(), "sleep 15".into()]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let high = sbatch(&r, &argv).await;
    let _cancel_high = CancelOnDrop(high);

    let d = decision_for(&r, &l.dir, l.job).await;
    assert_eq!(d.state.as_deref(), Some("PREEMPTED"), "{d:?}");
    let next = d
        .next_id()
        .unwrap_or_else(|| panic!("the preempted attempt was not resumed: {d:?}"));
    assert_eq!(
        d.decision.as_deref(),
        Some(&*format!(
            "resumed after PREEMPTED as {next} (resume 1 of 10)"
        )),
        "{d:?}"
    );
    assert_eq!(final_state(&r, next, PER_ATTEMPT).await, "COMPLETED");
    assert_eq!(final_state(&r, high, PER_ATTEMPT).await, "COMPLETED");
    let out = run(
        &r,
        &[
            "cat",
            &format!("{}/slurm-logs/{name}-{next}/main.out", l.dir),
        ],
    )
    .await;
    assert!(
        out.stdout_lossy().contains("resumed (1)"),
        "{}",
        out.stdout_lossy()
    );
    wait_quiet(&r, &l.dir).await;
    println!("preempted {} by {high}, resumed as {next}", l.job);
}

/// A node failure: a launch with `--resume node_fail` whose spare node is set DOWN under it
/// ends NODE_FAIL; its guard resumes it (a resume, not a retry: SLURMDASH_RESUME_ATTEMPT=1
/// and `resumed after NODE_FAIL as N (resume 1 of 10), not on NODE where it failed
/// (--exclude=NODE)`: kept off the node that failed), and the resumed run completes with
/// its own log. Like retry_guard_node.rs it takes a node of partition `spare` down (which
/// no other test uses, never both), in test group `spare-nodes`; the node is always resumed.
#[tokio::test(flavor = "multi_thread")]
async fn a_job_whose_node_fails_is_resumed() {
    let r = remote();
    let spares = spare_nodes(&r).await;
    let name = tag("nfresume");
    let l = submit(
        &name,
        "if [ \"${SLURMDASH_RESUME_ATTEMPT-0}\" -ge 1 ]; then echo \"resumed ($SLURMDASH_RESUME_ATTEMPT)\"; exit 0; fi; touch \"$SLURMDASH_JOB_DIR/ran-once\"; echo first run; sleep 300",
        &["--set", &format!("partition={SPARE}"), "--resume", "node_fail"],
    );
    let _cancel = CancelOnDrop(l.job);
    wait_started(&r, &l).await;
    let node = job_nodes(&r, l.job).await;
    assert!(spares.contains(&node), "job {} on {node:?}", l.job);
    {
        let _resume = Resume(node.clone());
        take_down_and_resume(&r, &node, l.job).await;
    }
    let d = decision_for(&r, &l.dir, l.job).await;
    assert_eq!(d.state.as_deref(), Some("NODE_FAIL"), "{d:?}");
    let next = d
        .next_id()
        .unwrap_or_else(|| panic!("the attempt was not resumed: {d:?}"));
    let _cancel_next = CancelOnDrop(next);
    assert_eq!(
        d.decision.as_deref(),
        Some(&*format!(
            "resumed after NODE_FAIL as {next} (resume 1 of 10), not on {node} where it failed (--exclude={node})"
        )),
        "{d:?}"
    );
    assert_eq!(final_state(&r, next, PER_ATTEMPT).await, "COMPLETED");
    let out = run(
        &r,
        &[
            "cat",
            &format!("{}/slurm-logs/{name}-{next}/main.out", l.dir),
        ],
    )
    .await;
    assert!(
        out.stdout_lossy().contains("resumed (1)"),
        "{}",
        out.stdout_lossy()
    );
    // One decision, the resume: no retry beside it (a run that completes is not decided on).
    let lines = chain(&r, &l.dir).await;
    assert_eq!(
        lines.iter().filter(|x| x.is_decision()).count(),
        1,
        "{lines:?}"
    );
    wait_quiet(&r, &l.dir).await;
    println!("NODE_FAIL of {} on {node}, resumed as {next}", l.job);
}
