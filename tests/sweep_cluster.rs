//! A sweep on the dev cluster (issue 40): `slurmdash submit --set 'sweep=LR=0.1,0.2,0.3
//! SEED=1,2,3,4 %3'` submits one array of 12 tasks, each of which sees its own values as
//! environment variables; no more than 3 ever run at once (each task records when it ran,
//! and Slurm shows the throttle); the two points that fail are exactly the ones the command
//! fails on; `slurmdash rerun ID --failed` reruns only those two, with their own values.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::arrays::{all_ended, failed, submit_on_cpu};
use common::*;

/// The most tasks whose [start, end) spans overlap at one moment.
fn most_at_once(spans: &[(f64, f64)]) -> usize {
    let mut edges: Vec<(f64, i32)> = spans.iter().flat_map(|&(a, b)| [(a, 1), (b, -1)]).collect();
    // An end and a start at the same instant do not overlap.
    edges.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

#[tokio::test(flavor = "multi_thread")]
async fn a_12_point_sweep_runs_3_at_most_and_reruns_its_2_failed_points_with_their_values() {
    let r = remote();
    let state = tempfile::tempdir().expect("state dir");
    let env = [("SLURMDASH_STATE_DIR", state.path().to_str().expect("utf-8"))];
    let name = format!("sweep{}", std::process::id() % 10000);
    // Each run says its values, records when it ran (the working directory is the job
    // directory, shared by the rerun), and the points LR=0.2 SEED=2 and LR=0.3 SEED=4 fail
    // on their first run only.
    let command = r#"me="$LR-$SEED"; echo "run LR=$LR SEED=$SEED task $SLURM_ARRAY_TASK_ID"; s=$(date +%s.%N); sleep 3; echo "$s $(date +%s.%N)" > "span-$SLURM_ARRAY_JOB_ID-$SLURM_ARRAY_TASK_ID"; if [ -e "first-$me" ]; then echo "rerun of $me"; exit 0; fi; touch "first-$me"; case "$me" in 0.2-2|0.3-4) exit 1;; esac"#;
    let (array, dir) = submit_on_cpu(
        state.path(),
        &name,
        &["sweep=LR=0.1,0.2,0.3 SEED=1,2,3,4 %3"],
        &["sh", "-c", command],
    );
    let _cancel = CancelOnDrop(array);

    // Slurm holds the throttle: ArrayTaskThrottle=3 on the array.
    let show = run(&r, &["scontrol", "show", "job", &array.to_string()])
        .await
        .stdout_lossy();
    assert!(show.contains("ArrayTaskThrottle=3"), "{show}");

    let first = all_ended(&r, array, 12).await;
    assert_eq!(
        failed(&first),
        BTreeSet::from([5, 11]),
        "the first run (index = LR's position * 4 + SEED's): {first:?}"
    );
    // Each task saw its own point of the grid, the last name varying fastest.
    let mut seen = BTreeMap::new();
    for i in 0..12u32 {
        let log = cat(&r, &format!("{dir}/slurm-logs/{name}-{array}/main-{i}.out")).await;
        let lr = ["0.1", "0.2", "0.3"][i as usize / 4];
        let seed = (i % 4 + 1).to_string();
        let want = format!("run LR={lr} SEED={seed} task {i}");
        assert!(log.contains(&want), "task {i}: want `{want}` in\n{log}");
        seen.insert(i, want);
    }
    assert_eq!(seen.len(), 12);
    // Never more than 3 at once, by the tasks' own clocks (one node's clock).
    let mut spans = Vec::new();
    for i in 0..12u32 {
        let span = cat(&r, &format!("{dir}/span-{array}-{i}")).await;
        let mut it = span.split_whitespace().map(|x| x.parse::<f64>());
        match (it.next(), it.next()) {
            (Some(Ok(a)), Some(Ok(b))) => spans.push((a, b)),
            _ => panic!("task {i}'s span: `{span}`"),
        }
    }
    let most = most_at_once(&spans);
    assert!(
        (1..=3).contains(&most),
        "{most} tasks ran at once (throttle 3): {spans:?}"
    );

    // The registry keeps each run's values, for the detail.
    let entries = slurmdash::registry::Registry::open(state.path())
        .load()
        .expect("registry");
    let e = entries
        .iter()
        .find(|e| e.job_id == array)
        .unwrap_or_else(|| panic!("array {array} not in the registry: {entries:?}"));
    assert_eq!(e.sweep.len(), 12, "{e:?}");
    assert_eq!(e.sweep[5], "LR=0.2 SEED=2");

    // Rerun only the failed points: indices 5 and 11, with their own values.
    let id = array.to_string();
    let out = slurmdash_env(&dev_config(), &["rerun", &id, "--failed", "--json"], &env);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let rerun = v["job_id"]
        .as_u64()
        .unwrap_or_else(|| panic!("no job_id: {stdout}"));
    let _cancel_rerun = CancelOnDrop(rerun);
    let rerun_dir = v["submissions"][0]["job_dir"]
        .as_str()
        .unwrap_or_else(|| panic!("{stdout}"))
        .to_string();
    let second = all_ended(&r, rerun, 2).await;
    let indices: BTreeSet<u32> = second.iter().map(|(i, _)| *i).collect();
    assert_eq!(indices, BTreeSet::from([5, 11]), "{second:?}");
    assert!(failed(&second).is_empty(), "the rerun: {second:?}");
    for (i, point) in [(5, "LR=0.2 SEED=2"), (11, "LR=0.3 SEED=4")] {
        let log = cat(
            &r,
            &format!("{rerun_dir}/slurm-logs/{name}-{rerun}/main-{i}.out"),
        )
        .await;
        assert!(
            log.contains(&format!("run {point} task {i}")),
            "rerun task {i}:\n{log}"
        );
        let me = point.replace("LR=", "").replace(" SEED=", "-");
        assert!(
            log.contains(&format!("rerun of {me}")),
            "rerun task {i}:\n{log}"
        );
    }
}

#[test]
fn overlapping_spans_are_counted_and_touching_ones_are_not() {
    assert_eq!(most_at_once(&[(0.0, 2.0), (1.0, 3.0), (1.5, 2.5)]), 3);
    assert_eq!(most_at_once(&[(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]), 1);
    assert_eq!(most_at_once(&[]), 0);
}

/// The dashboard, with the settings a user gets, shows a running sweep as one row with its
/// counts; enter lists its tasks, and the detail of a task names its values.
#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_folds_a_running_sweep_into_one_row_and_a_task_shows_its_values() {
    use common::tmux::Tmux;
    let state = tempfile::tempdir().expect("state dir");
    let state_dir = state.path().to_str().expect("utf-8");
    let env = [("SLURMDASH_STATE_DIR", state_dir)];
    let name = format!("sweepui{}", std::process::id() % 10000);
    let (array, _) = submit_on_cpu(
        state.path(),
        &name,
        &["sweep=OPT=adam,sgd SIZE=s,m,l %2"],
        &["sleep", "90"],
    );
    let _cancel = CancelOnDrop(array);

    let t = Tmux::start_with(&dev_config(), &[], &env);
    let folded = format!("{array}_[0-5]");
    // Other tests' jobs share the queue (sduser's): the sweep's row may be below the
    // screen's last row until the queue shows only its name.
    t.filter(&name, Duration::from_secs(60));
    let screen = t.wait(
        "the sweep as one row with its counts",
        Duration::from_secs(120),
        |s| s.contains(&folded) && s.contains("(sweep of 6: ") && s.contains(" running"),
    );
    let task_row = format!("{array}_0 ");
    assert!(
        !screen.contains(&task_row),
        "a task row beside the folded sweep:\n{screen}"
    );
    // enter lists the tasks; the first running one's detail names its values.
    t.keys(&["Enter"]);
    t.wait("the sweep's tasks listed", Duration::from_secs(30), |s| {
        s.contains(&task_row)
    });
    // Task 4 (OPT=sgd SIZE=m), pending behind the throttle or running.
    t.filter(&format!("{array}_4"), Duration::from_secs(30));
    let screen = t.wait(
        "task 4's values in the detail",
        Duration::from_secs(30),
        |s| s.contains("OPT=sgd SIZE=m · task 4 of 6 runs"),
    );
    assert!(screen.contains("Sweep"), "{screen}");
}
