//! Rerunning an array's failed tasks on the dev cluster: `slurmdash submit --set
//! array=0-19` launches an array whose tasks 3, 7, 11 and 19 exit 1 on their first run (each
//! task leaves a marker in the directory it runs in); once sacct shows all 20 ended,
//! `slurmdash rerun ID --failed --json` submits exactly those 4 indices as a new array, in
//! the same working directory, and they complete; each task logs to its own file. The rerun
//! itself, all completed, has nothing to rerun.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::arrays::{all_ended, failed, submit_on_cpu, ENDS};
use common::tmux::{fast_config, non_blank, refreshed, Tmux};
use common::*;

/// `slurmdash submit` of array `array` running `command` on partition cpu, recorded in
/// `state`: the array's job id and job directory.
fn submit_array(state: &std::path::Path, name: &str, array: &str, command: &str) -> (u64, String) {
    submit_on_cpu(
        state,
        name,
        &[&format!("array={array}")],
        &["sh", "-c", command],
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_array_of_20_whose_4_tasks_failed_reruns_exactly_those_and_they_complete() {
    let r = remote();
    let state = tempfile::tempdir().expect("state dir");
    let env = [("SLURMDASH_STATE_DIR", state.path().to_str().expect("utf-8"))];
    let name = format!("rerun{}", std::process::id() % 10000);
    // The first run of each task leaves first-<index> where it runs; a rerun finds it.
    let command = "i=$SLURM_ARRAY_TASK_ID; if [ -e first-$i ]; then echo \"rerun of task $i\"; exit 0; fi; touch first-$i; echo \"first run of task $i\"; case $i in 3|7|11|19) exit 1;; esac";
    let (array, dir) = submit_array(state.path(), &name, "0-19", command);
    let _cleanup = CancelOnDrop(array);

    let first = all_ended(&r, array, 20).await;
    assert_eq!(
        failed(&first),
        BTreeSet::from([3, 7, 11, 19]),
        "the first run: {first:?}"
    );
    // Each task logged to its own file in the array's log directory.
    let log = run(
        &r,
        &[
            "cat",
            &format!("{dir}/slurm-logs/{name}-{array}/main-7.out"),
        ],
    )
    .await;
    assert!(
        log.stdout_lossy().contains("first run of task 7"),
        "{}{}",
        log.stdout_lossy(),
        log.stderr_lossy()
    );

    let id = array.to_string();
    let out = slurmdash_env(&dev_config(), &["rerun", &id, "--failed", "--json"], &env);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["indices"], serde_json::json!([3, 7, 11, 19]), "{stdout}");
    let rerun = v["job_id"]
        .as_u64()
        .unwrap_or_else(|| panic!("no job_id: {stdout}"));
    let _cleanup_rerun = CancelOnDrop(rerun);
    assert_ne!(rerun, array);
    let rerun_dir = v["submissions"][0]["job_dir"]
        .as_str()
        .unwrap_or_else(|| panic!("{stdout}"))
        .to_string();

    // The new array's tasks are exactly those four, and they complete.
    let second = all_ended(&r, rerun, 4).await;
    let indices: BTreeSet<u32> = second.iter().map(|(i, _)| *i).collect();
    assert_eq!(indices, BTreeSet::from([3, 7, 11, 19]), "{second:?}");
    assert!(failed(&second).is_empty(), "the rerun: {second:?}");
    // They ran where the array ran (they found their first run's marker).
    let log = run(
        &r,
        &[
            "cat",
            &format!("{rerun_dir}/slurm-logs/{name}-{rerun}/main-11.out"),
        ],
    )
    .await;
    assert!(
        log.stdout_lossy().contains("rerun of task 11"),
        "{}{}",
        log.stdout_lossy(),
        log.stderr_lossy()
    );

    // The rerun, all completed: nothing to rerun, nothing submitted.
    let id = rerun.to_string();
    let out = slurmdash_env(&dev_config(), &["rerun", &id, "--failed", "--json"], &env);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["job_id"], serde_json::Value::Null, "{stdout}");
    assert_eq!(v["indices"], serde_json::json!([]), "{stdout}");
    assert!(
        v["nothing"]
            .as_str()
            .is_some_and(|n| n.contains("all 4 tasks completed: nothing to rerun")),
        "{stdout}"
    );
}

/// `L` in the dashboard on a task of an array whose tasks 1 and 4 failed: the launch form
/// opens on exactly those indices and says so. Nothing is submitted (esc closes the form).
/// The dashboard runs while the array does: ended tasks stay on screen as they leave squeue.
#[tokio::test(flavor = "multi_thread")]
async fn l_on_an_array_task_opens_the_form_on_the_tasks_that_did_not_complete() {
    let r = remote();
    let state = tempfile::tempdir().expect("state dir");
    let name = format!("rerunl{}", std::process::id() % 10000);
    let command = "sleep 20; case $SLURM_ARRAY_TASK_ID in 1|4) exit 1;; esac";
    let (array, _) = submit_array(state.path(), &name, "0-5", command);
    let _cleanup = CancelOnDrop(array);
    let cfg_dir = tempfile::tempdir().expect("config dir");
    let t = Tmux::start_with(
        &fast_config(cfg_dir.path()),
        &[],
        &[("SLURMDASH_STATE_DIR", state.path().to_str().expect("utf-8"))],
    );
    t.wait("the first refresh", Duration::from_secs(60), refreshed);
    t.filter(&name, Duration::from_secs(60));
    let task = format!("{array}_4");
    t.wait(&format!("task {task} in the queue"), ENDS, |s| {
        s.contains(&task)
    });
    let tasks = all_ended(&r, array, 6).await;
    assert_eq!(failed(&tasks), BTreeSet::from([1, 4]), "{tasks:?}");
    // Until the dashboard has seen the tasks end, `L` says it relaunches finished jobs:
    // press it again after a refresh.
    let want = "rerun the 2 tasks that did not complete: 1,4";
    let screen = t.press_until(
        &["L"],
        "the rerun form",
        Duration::from_secs(8),
        Duration::from_secs(120),
        |s| s.contains(want),
        // A plain relaunch form (the dashboard saw a task still running): close it.
        |t, s| {
            if s.contains("ctrl-s submit · esc close") {
                t.keys(&["Escape"]);
            }
        },
    );
    assert!(
        screen.contains("array indices         1,4"),
        "{}",
        non_blank(&screen)
    );
    t.keys(&["Escape"]);
}
