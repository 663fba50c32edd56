//! `slurmdash adopt ID` on the real cluster: a job submitted with plain `sbatch` (not by
//! slurmdash) is put under the guard's care; its node fails with no slurmdash running and
//! the guard submits Slurm's own copy of its script again, with its own options, even though
//! the user's file changed meanwhile. Another user's job and a finished job are refused.
//!
//! The first test sets a node of partition `spare` DOWN (test group `spare-nodes`); the
//! second submits a job as the other test user (test group `other-user`).

use crate::common;
use crate::guard_helpers;

use common::*;
use guard_helpers::*;
use slurmdash::registry::Registry;

async fn write(r: &dyn slurmdash::remote::Remote, path: &str, body: &str) {
    let out = r
        .run(
            &s(&["sh", "-c", "cat > \"$1\"", "sh", path]),
            Some(body.as_bytes()),
            T,
        )
        .await
        .expect("write");
    assert!(out.success(), "{}", out.stderr_lossy());
}

async fn sbatch(r: &dyn slurmdash::remote::Remote, args: &[&str]) -> u64 {
    let mut argv = vec!["sbatch", "--parsable"];
    argv.extend_from_slice(args);
    let out = run(r, &argv).await;
    assert!(out.success(), "sbatch: {}", out.stderr_lossy());
    let id = out.stdout_lossy();
    id.trim()
        .split(';')
        .next()
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("sbatch printed {id:?}"))
}

fn adopt(state: &std::path::Path, id: u64) -> std::process::Output {
    slurmdash_env(
        &dev_config(),
        &["adopt", &id.to_string(), "--json"],
        &[("SLURMDASH_STATE_DIR", state.to_str().expect("utf-8"))],
    )
}

async fn sha256(r: &dyn slurmdash::remote::Remote, path: &str) -> String {
    let out = run(r, &["sha256sum", path]).await;
    assert!(out.success(), "{}", out.stderr_lossy());
    out.stdout_lossy()
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_submitted_with_sbatch_is_adopted_and_resubmitted_after_its_node_fails() {
    let r = remote();
    let spares = spare_nodes(&r).await;
    let base = scratch(&r, "adopt").await;
    let script = format!("{base}/train.sbatch");
    let mark = format!("{base}/ran-once");
    write(
        &r,
        &script,
        &format!(
            "#!/bin/bash\n#SBATCH --mem=50M\n#SBATCH -t 5\nm={mark}\nif [ -e \"$m\" ]; then echo \"second run as job $SLURM_JOB_ID ($SLURM_JOB_NAME) in $(pwd)\"; sleep 20; exit 0; fi\ntouch \"$m\"; echo first; sleep 300\n"
        ),
    )
    .await;
    // As a user in a terminal: plain sbatch, options on the command line.
    let name = format!("adopt me {}", std::process::id() % 10000);
    let first_out = format!("{base}/first-%j.out");
    let id = sbatch(
        &r,
        &[
            "-p",
            SPARE,
            "-J",
            &name,
            "--no-requeue",
            "--cpus-per-task=1",
            "-o",
            &first_out,
            "-D",
            &base,
            &script,
        ],
    )
    .await;
    wait_running(&r, id).await;
    wait_for("the job to mark its first run", WAIT, || async {
        run(&r, &["test", "-e", &mark])
            .await
            .success()
            .then_some(())
    })
    .await;

    let state = tempfile::tempdir().expect("state dir");
    let out = adopt(state.path(), id);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    let j: serde_json::Value = serde_json::from_str(said.trim()).expect("adopt --json");
    assert_eq!(j["job_id"], id, "{j}");
    let dir = j["job_dir"].as_str().expect("job_dir").to_string();
    let staged = j["script"].as_str().expect("script").to_string();
    assert!(staged.starts_with(&format!("{dir}/sbatch/")), "{j}");
    // The staged script is Slurm's copy, which is the user's file byte for byte.
    let want = sha256(&r, &script).await;
    assert_eq!(sha256(&r, &staged).await, want);
    assert_eq!(j["sha256"], want.as_str());
    let opts: Vec<String> = serde_json::from_value(j["sbatch"].clone()).expect("sbatch");
    for o in [
        format!("--job-name={name}"),
        format!("--partition={SPARE}"),
        format!("--chdir={base}"),
        "--no-requeue".to_string(),
    ] {
        assert!(opts.contains(&o), "{o} in {opts:?}");
    }
    let left = j["left_out"].to_string();
    assert!(left.contains(&format!("{base}/first-{id}.out")), "{left}");
    // Recorded with its guard, as a launch is; adopting it again does nothing.
    let entries = Registry::open(state.path()).load().expect("registry");
    let e = entries.iter().find(|e| e.job_id == id).expect("recorded");
    assert!(e.guard.is_some(), "{e:?}");
    let again = adopt(state.path(), id);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again.stderr).contains(&format!("job {id} is already under slurmdash's care")),
        "{}",
        text(&again.stderr)
    );
    let guard = guard_of(&chain(&r, &dir).await, id);
    println!("job {id} adopted as {dir}, guard {guard}");
    // The user edits the file meanwhile: the guard resubmits what Slurm ran.
    write(&r, &script, "#!/bin/bash\necho edited; exit 1\n").await;

    // The node fails under it; no slurmdash runs anywhere.
    let node = job_nodes(&r, id).await;
    assert!(spares.contains(&node), "job {id} on {node:?}");
    {
        let _resume = Resume(node.clone());
        take_down_and_resume(&r, &node, id).await;
    }
    let d = decision_for(&r, &dir, id).await;
    assert_eq!(d.state.as_deref(), Some("NODE_FAIL"), "{d:?}");
    assert_eq!(d.class.as_deref(), Some("ERR_INFRA"), "{d:?}");
    let second = d
        .next_id()
        .unwrap_or_else(|| panic!("not resubmitted: {d:?}"));
    assert_eq!(final_state(&r, second, WAIT).await, "COMPLETED");
    // The same script (Slurm's copy) under the same name, in the same directory.
    let log = format!(
        "{dir}/slurm-logs/{}-{second}/main.out",
        slurmdash::launch::adopt::dir_name(&name)
    );
    let out = run(&r, &["cat", &log]).await;
    assert_eq!(
        out.stdout_lossy().trim(),
        format!("second run as job {second} ({name}) in {base}"),
        "{log}"
    );
    let acct = run(
        &r,
        &[
            "sacct",
            "-n",
            "-X",
            "-P",
            "-j",
            &second.to_string(),
            "-o",
            "Partition,JobName,WorkDir",
        ],
    )
    .await;
    println!("retry {second}: {}", acct.stdout_lossy().trim());
    assert_eq!(
        acct.stdout_lossy().trim(),
        format!("{SPARE}|{name}|{base}"),
        "the retry's partition, name and working directory"
    );
    wait_quiet(&r, &dir).await;
    println!("adopted {id}: NODE_FAIL -> resubmitted as {second}, COMPLETED");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_users_job_and_a_finished_job_are_refused() {
    let r = remote();
    let other = remote_as(OTHER_ALIAS);
    let state = tempfile::tempdir().expect("state dir");
    let theirs = sbatch(
        &other,
        &[
            "-p",
            "cpu",
            "-t",
            "2",
            "--mem=50M",
            "-o",
            "/dev/null",
            "--wrap",
            "sleep 60",
        ],
    )
    .await;
    let out = adopt(state.path(), theirs);
    run(&other, &["scancel", &theirs.to_string()]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("job {theirs} belongs to {OTHER_USER}"))
            && err.contains("slurmdash adopts only your own jobs"),
        "{err}"
    );

    let base = scratch(&r, "adopt-done").await;
    let done = sbatch(
        &r,
        &[
            "-p",
            "cpu",
            "-t",
            "2",
            "--mem=50M",
            "-o",
            &format!("{base}/o"),
            "--wrap",
            "true",
        ],
    )
    .await;
    assert_eq!(final_state(&r, done, WAIT).await, "COMPLETED");
    let out = adopt(state.path(), done);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "job {done} is COMPLETED: only a running or pending job can be adopted"
        )) || err.contains(&format!("Slurm does not know job {done}")),
        "{err}"
    );
    // Nothing recorded, nothing staged.
    assert!(Registry::open(state.path())
        .load()
        .unwrap_or_default()
        .is_empty());
    run(&r, &["rm", "-rf", &base]).await;
}

/// `A` on the row of a job submitted with plain sbatch, through the real binary in tmux: it
/// asks, saying what it will do; `y` adopts it (a guard waits on it, the dashboard says so
/// and shows the job as a guarded launch in its detail).
#[tokio::test(flavor = "multi_thread")]
async fn a_on_the_row_asks_then_adopts_the_job() {
    use common::tmux::{fast_config, left_pane_text, refreshed, row, Tmux};
    use std::time::Duration;
    let r = remote();
    let base = scratch(&r, "adopt-key").await;
    let name = format!("adoptkey{}", std::process::id() % 10000);
    // Pending for an hour: nothing runs, nothing is used.
    let id = sbatch(
        &r,
        &[
            "-p",
            "cpu",
            "-t",
            "2",
            "--mem=50M",
            "--begin=now+1hour",
            "-J",
            &name,
            "-o",
            &format!("{base}/o-%j"),
            "--wrap",
            "echo hi",
        ],
    )
    .await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let state_s = state.to_str().expect("utf-8").to_string();
    let t = Tmux::start_with(
        &fast_config(tmp.path()),
        &[],
        &[("SLURMDASH_STATE_DIR", &state_s)],
    );
    t.wait("the dashboard", Duration::from_secs(30), refreshed);
    t.filter(&name, Duration::from_secs(30));
    t.wait("the job's row", Duration::from_secs(20), |s| {
        row(s, id).is_some()
    });
    t.keys(&["A"]);
    let s = t.wait("the question", Duration::from_secs(15), |s| {
        s.contains(&format!("adopt job {id} ({name})?"))
    });
    assert!(s.contains("y/enter: adopt"), "{s}");
    t.keys(&["y"]);
    let s = t.wait("the answer", Duration::from_secs(60), |s| {
        s.contains(&format!("job {id} adopted as launch"))
    });
    println!("{}", non_blank_lines(&s));
    // A guard waits on it, and the registry holds it with its guard.
    let q = run(&r, &["squeue", "--me", "-h", "-o", "%j|%E"]).await;
    assert!(
        q.stdout_lossy()
            .lines()
            .any(|l| l.starts_with(&format!("sdguard-{name}|"))
                && l.contains(&format!("afternotok:{id}"))),
        "{}",
        q.stdout_lossy()
    );
    let entries = Registry::open(&state).load().expect("registry");
    assert!(
        entries.iter().any(|e| e.job_id == id && e.guard.is_some()),
        "{entries:?}"
    );
    // The dashboard reads the launch at its next retry check: the detail shows the chain.
    let s = t.wait(
        "the job as a guarded launch",
        Duration::from_secs(90),
        |s| left_pane_text(s).contains("attempt 1 of up to"),
    );
    println!("{}", left_pane_text(&s));
    // A second `A` says it is already cared for.
    t.keys(&["A"]);
    t.wait("the refusal", Duration::from_secs(15), |s| {
        s.contains(&format!("job {id} is already under slurmdash's care"))
    });
    t.keys(&["q"]);
    // Cancelling cancels its guard first.
    let out = slurmdash_env(
        &dev_config(),
        &["cancel", &id.to_string()],
        &[("SLURMDASH_STATE_DIR", &state_s)],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    run(&r, &["rm", "-rf", &base]).await;
}

fn non_blank_lines(s: &str) -> String {
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `L` on an adopted job after it ended: the form runs the script adopt kept in the job
/// directory (Slurm's copy, hash-checked), not the user's file, which changed since; the
/// relaunch runs it.
#[tokio::test(flavor = "multi_thread")]
async fn l_on_an_adopted_job_relaunches_the_script_adopt_kept() {
    use common::tmux::{fast_config, refreshed, row, Tmux};
    use std::time::Duration;
    let r = remote();
    let base = scratch(&r, "adopt-relaunch").await;
    let name = format!("adoptL{}", std::process::id() % 10000);
    let file = format!("{base}/train.sh");
    write(
        &r,
        &file,
        "#!/bin/sh\n#SBATCH --mem=50M\nsleep 8\necho original-script-ran\n",
    )
    .await;
    // Held until adopted: an 8-second job could end before `adopt` (a login, a probe,
    // the staging and the guard) is done on a loaded machine, and only a pending or
    // running job can be adopted.
    let id = sbatch(
        &r,
        &[
            "--hold",
            "-p",
            "cpu",
            "-t",
            "2",
            "-J",
            &name,
            "-o",
            &format!("{base}/o-%j"),
            &file,
        ],
    )
    .await;
    let _cancel = CancelOnDrop(id);
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let out = adopt(&state, id);
    assert!(out.status.success(), "adopt: {}", text(&out.stderr));
    let released = run(&r, &["scontrol", "release", &id.to_string()]).await;
    assert!(
        released.success(),
        "scontrol release: {}",
        released.stderr_lossy()
    );
    assert_eq!(
        final_state(&r, id, Duration::from_secs(120)).await,
        "COMPLETED"
    );
    write(&r, &file, "#!/bin/sh\necho edited-later\n").await;

    let state_s = state.to_str().expect("utf-8").to_string();
    let t = Tmux::start_with(
        &fast_config(tmp.path()),
        &[],
        &[("SLURMDASH_STATE_DIR", &state_s)],
    );
    t.wait("the dashboard", Duration::from_secs(30), refreshed);
    t.filter(&id.to_string(), Duration::from_secs(30));
    t.wait("the job's row", Duration::from_secs(60), |s| {
        row(s, id).is_some_and(|r| r.contains("COMPLETED"))
    });
    let s = t.press_until(
        &["L"],
        "the relaunch form",
        Duration::from_secs(10),
        Duration::from_secs(90),
        |s| s.contains("launch a job on") && s.contains("the copy adopt kept"),
        |t, s| {
            if s.contains("launch a job on") {
                t.keys(&["Escape"]);
            }
        },
    );
    assert!(!s.contains("cannot relaunch"), "{s}");
    t.keys(&["C-s"]);
    let id2 = t.submitted_job(Duration::from_secs(120));
    let _cancel2 = CancelOnDrop(id2);
    t.keys(&["q"]);
    assert_eq!(
        final_state(&r, id2, Duration::from_secs(120)).await,
        "COMPLETED"
    );
    let entries = Registry::open(&state).load().expect("registry");
    let e = entries
        .iter()
        .find(|e| e.job_id == id2)
        .unwrap_or_else(|| panic!("job {id2} not in the registry: {entries:?}"));
    let out = cat(
        &r,
        &format!("{}/slurm-logs/{name}-{id2}/main.out", e.job_dir),
    )
    .await;
    assert!(out.contains("original-script-ran"), "{out}");
    assert!(!out.contains("edited-later"), "{out}");
    run(&r, &["rm", "-rf", &base]).await;
}
