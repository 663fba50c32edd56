//! Job actions against the dev cluster over real SSH: what the dashboard sends when the
//! user cancels, holds, releases, requeues, moves to the top or edits, checked with
//! Slurm's own squeue/scontrol/sacct.

use crate::common;

use slurmdash::action::{JobMsg, PollMsg};
use std::time::Duration;

use chrono::Local;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use common::tmux::*;
use common::*;
use slurmdash::action::{Cmd, Msg};
use slurmdash::app::App;
use slurmdash::io::{fetch, ops};
use slurmdash::remote::Remote;
use slurmdash::slurm::command::SqueueQuery;
use slurmdash::slurm::model::JobId;
use slurmdash::slurm::ops::{JobEdit, JobOp, OpKind};

fn tag(what: &str) -> String {
    format!("{what}-{}-{}", std::process::id(), rand_suffix() % 100_000)
}

fn press(a: &mut App, code: KeyCode, mods: KeyModifiers) -> Vec<Cmd> {
    a.update(Msg::Key(KeyEvent::new(code, mods)))
}

fn typed(a: &mut App, s: &str) {
    for c in s.chars() {
        press(a, KeyCode::Char(c), KeyModifiers::NONE);
    }
}

/// A one-CPU, 20 MB job named `name` that runs `wrap`, with `args` added (e.g. `--hold`,
/// `-t 5`); returns its id.
async fn small_job(r: &dyn Remote, name: &str, args: &[&str], wrap: &str) -> u64 {
    let mut argv = vec!["-J", name, "-c", "1", "--mem=20M"];
    argv.extend_from_slice(args);
    argv.extend(["--wrap", wrap]);
    sbatch(r, &argv).await
}

/// An App holding the user's real queue, as the dashboard has it after one refresh.
async fn app_with_queue(r: &dyn Remote) -> App {
    let mut a = App::fixture(Local::now().naive_local());
    a.update(Msg::Poll(PollMsg::PollDue));
    let jobs = fetch::queue(r, &SqueueQuery::default(), T)
        .await
        .expect("squeue");
    a.update(Msg::queue(
        Ok(jobs),
        Local::now().naive_local(),
        Duration::from_millis(1),
    ));
    a
}

/// `squeue` field for one job, e.g. `%r` (reason) or `%Q` (priority).
async fn squeue_field(r: &dyn Remote, id: u64, fmt: &str) -> String {
    run(r, &["squeue", "-h", "-j", &id.to_string(), "-o", fmt])
        .await
        .stdout_lossy()
        .trim()
        .to_string()
}

async fn scontrol_field(r: &dyn Remote, id: u64, key: &str) -> String {
    let out = run(r, &["scontrol", "show", "job", &id.to_string()]).await;
    let text = out.stdout_lossy();
    // Values may hold spaces (JobName=odd name): take up to the next " Key=".
    let start = text
        .find(&format!("{key}="))
        .unwrap_or_else(|| panic!("{key} in {text}"))
        + key.len()
        + 1;
    let rest = &text[start..];
    let end = rest
        .char_indices()
        .find(|&(i, c)| {
            c == '\n'
                || (c == ' '
                    && rest[i + 1..]
                        .split_once('=')
                        .is_some_and(|(k, _)| !k.contains(' ') && !k.is_empty()))
        })
        .map_or(rest.len(), |(i, _)| i);
    rest[..end].to_string()
}

async fn wait_sacct(r: &dyn Remote, id: u64, prefix: &str) -> String {
    wait_for(
        &format!("job {id} to be {prefix} in sacct"),
        Duration::from_secs(60),
        || async move {
            let s = sacct_state(r, id).await;
            s.starts_with(prefix).then_some(s)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn fifty_marked_jobs_are_cancelled_by_one_scancel() {
    let r = remote();
    let name = tag("bulk");
    let script = format!(
        "for i in $(seq 50); do sbatch --parsable --hold -J {name} -t 5 -c 1 --mem=20M --wrap 'sleep 60' || exit 1; done"
    );
    let out = run(&r, &["sh", "-c", &script]).await;
    assert!(out.success(), "{}", out.stderr_lossy());
    let ids: Vec<u64> = out
        .stdout_lossy()
        .lines()
        .filter_map(|l| l.trim().split(';').next()?.parse().ok())
        .collect();
    assert_eq!(ids.len(), 50);

    // In the dashboard: filter to these jobs, mark all shown, d, y.
    let mut a = app_with_queue(&r).await;
    press(&mut a, KeyCode::Char('/'), KeyModifiers::NONE);
    typed(&mut a, &name);
    press(&mut a, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(a.queue.shown().len(), 50, "the filter shows the 50 jobs");
    press(&mut a, KeyCode::Char('a'), KeyModifiers::CONTROL);
    assert_eq!(a.queue.shown().mark_count(), 50);
    press(&mut a, KeyCode::Char('d'), KeyModifiers::NONE);
    let cmds = press(&mut a, KeyCode::Char('y'), KeyModifiers::NONE);
    let op = match cmds.as_slice() {
        [Cmd::Op(op)] => op.clone(),
        other => panic!("expected one action, got {other:?}"),
    };
    assert_eq!(op.ids.len(), 50);

    let before = r.stats().execs;
    let result = ops::run(&r, &op, T).await;
    assert_eq!(
        r.stats().execs - before,
        1,
        "one remote command for 50 jobs"
    );
    let report = result.expect("scancel ran");
    assert!(report.failed().is_empty(), "{}", report.summary());
    a.update(Msg::Job(JobMsg::OpDone {
        op,
        result: Ok(report),
    }));
    let note = a.note.clone().unwrap_or_default();
    assert!(note.starts_with("cancelled "), "{note}");
    assert_eq!(
        a.queue.shown().mark_count(),
        0,
        "cancelled jobs are unmarked"
    );
    for id in ids {
        wait_sacct(&r, id, "CANCELLED").await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_finished_and_an_unknown_job_counts_as_success() {
    let r = remote();
    let done = small_job(&r, &tag("done"), &[], "true").await;
    wait_sacct(&r, done, "COMPLETED").await;
    let held = small_job(&r, &tag("held"), &["--hold"], "sleep 60").await;
    let op = JobOp::new(OpKind::Cancel, [done, 99_999_999, held].map(JobId::new));
    let report = ops::run(&r, &op, T).await.expect("scancel ran");
    assert!(report.failed().is_empty(), "{}", report.summary());
    let summary = report.summary();
    assert!(
        summary.starts_with(&format!("cancelled {held}")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(
            "{done}, 99999999 already finished or gone (counts as cancelled)"
        )),
        "{summary}"
    );
    wait_sacct(&r, held, "CANCELLED").await;
    // Holding the finished job is not a success: the user is told why.
    let op = JobOp::new(OpKind::Hold, [JobId::new(done)]);
    let report = ops::run(&r, &op, T).await.expect("scontrol ran");
    assert_eq!(
        report.summary(),
        format!("could not hold {done}: the job has already finished")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hold_release_top_requeue_and_edit_change_the_job_in_slurm() {
    let r = remote();
    let later = ["--begin=now+2hours", "-c", "1", "--mem=20M", "-t", "10"];
    let mut args = vec!["-J", "first"];
    args.extend(later);
    args.extend(["--wrap", "sleep 60"]);
    let first = sbatch(&r, &args).await;
    args[1] = "second";
    let second = sbatch(&r, &args).await;
    let running = small_job(&r, &tag("requeue"), &["-t", "10"], "sleep 300").await;

    // Hold, then release.
    let act = |kind: OpKind, id: u64| {
        let r = &r;
        async move {
            let report = ops::run(r, &JobOp::new(kind, [JobId::new(id)]), T)
                .await
                .expect("scontrol ran");
            assert!(report.failed().is_empty(), "{}", report.summary());
        }
    };
    act(OpKind::Hold, first).await;
    assert_eq!(squeue_field(&r, first, "%r").await, "JobHeldUser");
    act(OpKind::Release, first).await;
    // Slurm clears the reason; the scheduler sets BeginTime again on its next pass.
    let reason = squeue_field(&r, first, "%r").await;
    assert!(["None", "BeginTime"].contains(&reason.as_str()), "{reason}");

    // Top: the later job now goes before the earlier one.
    act(OpKind::Top, second).await;
    let p1: u64 = squeue_field(&r, first, "%Q")
        .await
        .parse()
        .expect("priority");
    let p2: u64 = squeue_field(&r, second, "%Q")
        .await
        .parse()
        .expect("priority");
    assert!(
        p2 > p1,
        "after top, {second} has priority {p2} > {first}'s {p1}"
    );

    // Edit: time limit, partition and an odd name in one scontrol update.
    let odd = "odd name; $(touch /tmp/pwned) 'q'";
    let edit = JobEdit {
        time_limit: Some("15".into()),
        partition: Some("polar".into()),
        name: Some(odd.into()),
        ..JobEdit::default()
    };
    let outcomes = ops::edit(&r, &JobId::new(first), &edit, T)
        .await
        .expect("scontrol update ran");
    assert_eq!(
        outcomes[0].1,
        slurmdash::slurm::model::CancelOutcome::Cancelled,
        "{outcomes:?}"
    );
    assert_eq!(scontrol_field(&r, first, "TimeLimit").await, "00:15:00");
    assert_eq!(scontrol_field(&r, first, "Partition").await, "polar");
    assert_eq!(scontrol_field(&r, first, "JobName").await, odd);
    let pwned = run(&r, &["test", "-e", "/tmp/pwned"]).await;
    assert!(!pwned.success(), "the name reached a shell");

    // Requeue a running job: back to pending, restarted once.
    wait_for("the job to run", Duration::from_secs(90), || async {
        (squeue_field(&r, running, "%T").await == "RUNNING").then_some(())
    })
    .await;
    act(OpKind::Requeue, running).await;
    wait_for(
        "the requeued job to show a restart",
        Duration::from_secs(30),
        || async { (scontrol_field(&r, running, "Restarts").await == "1").then_some(()) },
    )
    .await;
    let state = squeue_field(&r, running, "%T").await;
    assert!(
        ["PENDING", "REQUEUED", "COMPLETING", "RUNNING"].contains(&state.as_str()),
        "{state}"
    );
    run(
        &r,
        &[
            "scancel",
            &first.to_string(),
            &second.to_string(),
            &running.to_string(),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_by_keystroke_in_the_dashboard() {
    let r = remote();
    let pending_name = tag("kp");
    let running_name = tag("kr");
    let pending = small_job(&r, &pending_name, &["--hold"], "sleep 60").await;
    let running = small_job(&r, &running_name, &["-t", "5"], "sleep 300").await;
    wait_for("the job to run", Duration::from_secs(90), || async {
        (squeue_field(&r, running, "%T").await == "RUNNING").then_some(())
    })
    .await;

    let tmp = tempfile::tempdir().expect("tempdir");
    let t = Tmux::start(&fast_config(tmp.path()), &[]);
    t.wait("the dashboard", Duration::from_secs(20), refreshed);

    // d asks, y cancels.
    t.keys(&["/"]);
    t.keys(&[&pending_name, "Enter", "d"]);
    let s = t.wait("the question", Duration::from_secs(15), |s| {
        s.contains(&format!("cancel {pending} ({pending_name}, PENDING)?"))
    });
    assert!(s.contains("y/enter: cancel"), "{s}");
    t.keys(&["y"]);
    t.wait("the report", Duration::from_secs(15), |s| {
        s.contains(&format!("cancelled {pending}"))
    });

    // D cancels the running job without asking.
    t.keys(&["Escape", "/"]);
    t.keys(&[&running_name, "Enter"]);
    t.wait("the running job alone", Duration::from_secs(15), |s| {
        row(s, running).is_some() && row(s, pending).is_none()
    });
    t.keys(&["D"]);
    t.wait("the report", Duration::from_secs(15), |s| {
        s.contains(&format!("cancelled {running}"))
    });
    t.keys(&["q"]);

    wait_sacct(&r, pending, "CANCELLED").await;
    wait_sacct(&r, running, "CANCELLED").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn read_only_refuses_to_change_anything() {
    let r = remote();
    let name = tag("ro");
    let held = small_job(&r, &name, &["--hold"], "sleep 60").await;

    // The command line refuses and says why.
    let out = slurmdash(&["--read-only", "cancel", &held.to_string()]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("read-only"), "{err}");
    let out = slurmdash(&["--read-only", "submit", "--set", "name=ro", "--", "true"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("read-only") && err.contains("nothing submitted"),
        "{err}"
    );

    // The dashboard refuses each key that would change the job.
    let tmp = tempfile::tempdir().expect("tempdir");
    let t = Tmux::start(&fast_config(tmp.path()), &["--read-only"]);
    t.wait("the dashboard", Duration::from_secs(20), refreshed);
    t.keys(&["/"]);
    t.keys(&[&name, "Enter"]);
    t.wait("the job", Duration::from_secs(10), |s| {
        row(s, held).is_some()
    });
    for k in ["d", "D", "u", "E"] {
        t.keys(&[k]);
        let s = t.wait("the refusal", Duration::from_secs(5), |s| {
            s.contains("read-only session:")
        });
        assert!(!s.contains("y/enter"), "{k} asked a question: {s}");
    }
    t.keys(&["q"]);
    assert_eq!(squeue_field(&r, held, "%T").await, "PENDING");
    assert_eq!(squeue_field(&r, held, "%r").await, "JobHeldUser");
    run(&r, &["scancel", &held.to_string()]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_folded_array_p_cancels_only_the_pending_tasks() {
    let r = remote();
    let name = tag("arr");
    let id = small_job(&r, &name, &["--array=0-5%2", "-t", "5"], "sleep 120").await;
    wait_for("two tasks to run", Duration::from_secs(90), || async {
        let out = run(
            &r,
            &[
                "squeue",
                "-h",
                "-r",
                "-j",
                &id.to_string(),
                "-t",
                "R",
                "-o",
                "%i",
            ],
        )
        .await;
        (out.stdout_lossy().lines().count() == 2).then_some(())
    })
    .await;

    let mut a = app_with_queue(&r).await;
    press(&mut a, KeyCode::Char('/'), KeyModifiers::NONE);
    typed(&mut a, &name);
    press(&mut a, KeyCode::Enter, KeyModifiers::NONE);
    let i = a
        .queue
        .shown()
        .rows()
        .position(|row| row.is_collapsed())
        .expect("a folded row for the pending tasks");
    a.queue.shown_mut().select_index(i);
    press(&mut a, KeyCode::Char('d'), KeyModifiers::NONE);
    let cmds = press(&mut a, KeyCode::Char('p'), KeyModifiers::NONE);
    let [Cmd::Op(op)] = cmds.as_slice() else {
        panic!("{cmds:?}")
    };
    let report = ops::run(&r, op, T).await.expect("scancel ran");
    assert!(report.failed().is_empty(), "{}", report.summary());
    let left = run(
        &r,
        &["squeue", "-h", "-r", "-j", &id.to_string(), "-o", "%i %T"],
    )
    .await
    .stdout_lossy();
    let states: Vec<&str> = left.lines().collect();
    assert_eq!(states.len(), 2, "only the running tasks are left: {left}");
    assert!(states.iter().all(|l| l.ends_with("RUNNING")), "{left}");
    run(&r, &["scancel", &id.to_string()]).await;
}
