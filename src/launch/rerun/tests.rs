use super::*;
use crate::slurm::eff::parse_eff;
use crate::slurm::model::JobId;

fn fixture(v: &str) -> Vec<JobUse> {
    let text = match v {
        "22.05" => include_str!("../../../tests/fixtures/slurm/22.05/sacct_eff_array.out"),
        _ => include_str!("../../../tests/fixtures/slurm/26.05/sacct_eff_array.out"),
    };
    parse_eff(text).unwrap()
}

/// The arrays of the fixture: (6 tasks, 1 and 4 exit 1), (10 tasks %1, cancelled while
/// task 6 ran: 7-9 never started).
fn arrays(v: &str) -> (u64, u64) {
    match v {
        "22.05" => (799, 800),
        _ => (887, 888),
    }
}

#[test]
fn the_tasks_that_exited_non_zero_are_rerun() {
    for v in ["22.05", "26.05"] {
        let tasks = fixture(v);
        let p = plan(arrays(v).0, &tasks, &[], 1001).unwrap();
        assert_eq!(p.total, 6, "{v}");
        assert_eq!(p.indices, [1, 4], "{v}");
        assert_eq!(p.arrays, ["1,4"], "{v}");
        assert_eq!(p.line(), "rerun the 2 tasks that did not complete: 1,4");
    }
}

#[test]
fn tasks_a_cancelled_array_never_started_are_rerun_too() {
    for v in ["22.05", "26.05"] {
        let tasks = fixture(v);
        let p = plan(arrays(v).1, &tasks, &[], 1001).unwrap();
        assert_eq!(p.total, 10, "{v}");
        assert_eq!(p.indices, [6, 7, 8, 9], "{v}");
        assert_eq!(p.arrays, ["6-9"], "{v}");
    }
}

#[test]
fn an_array_whose_tasks_all_completed_has_nothing_to_rerun() {
    let mut tasks = fixture("22.05");
    for t in &mut tasks {
        t.detail.state = Some(JobState::Completed);
    }
    assert_eq!(plan(799, &tasks, &[], 1001), Err(NoRerun::AllCompleted(6)));
    assert_eq!(
        NoRerun::AllCompleted(6).to_string(),
        "all 6 tasks completed: nothing to rerun"
    );
    // Another job's id, or a job that is not an array: nothing to plan from.
    assert_eq!(plan(12345, &tasks, &[], 1001), Err(NoRerun::NoTasks));
}

#[test]
fn an_array_with_tasks_still_running_is_not_rerun_yet() {
    let mut tasks = fixture("22.05");
    for t in &mut tasks {
        if t.detail.id.as_ref().map(JobId::as_str) == Some("799_2") {
            t.detail.state = Some(JobState::Running);
        }
    }
    assert_eq!(plan(799, &tasks, &[], 1001), Err(NoRerun::NotEnded(1, 6)));
}

#[test]
fn indices_are_written_as_compact_ranges() {
    assert_eq!(compact(&[3, 7, 8, 9, 15]), "3,7-9,15");
    assert_eq!(compact(&[0, 1]), "0-1");
    assert_eq!(compact(&[5]), "5");
    assert_eq!(compact(&[]), "");
    assert_eq!(compact(&[3, 7, 11, 19]), "3,7,11,19");
    assert_eq!(expand("3,7-9,15"), [3, 7, 8, 9, 15]);
    assert_eq!(expand("x"), Vec::<u32>::new());
}

#[test]
fn more_tasks_than_max_array_size_are_split_into_several_submissions() {
    let idx: Vec<u32> = (0..10).chain(20..25).collect();
    assert_eq!(split(&idx, 1001), ["0-9,20-24"]);
    assert_eq!(split(&idx, 6), ["0-5", "6-9,20-21", "22-24"]);
    assert_eq!(split(&idx, 0), split(&idx, 1));
    let big: Vec<u32> = (0..2500).collect();
    assert_eq!(split(&big, 1001), ["0-1000", "1001-2001", "2002-2499"]);
    // Through the plan: the 4 unfinished tasks of the cancelled array in twos.
    let p = plan(800, &fixture("22.05"), &[], 2).unwrap();
    assert_eq!(p.arrays, ["6-7", "8-9"]);
}

#[test]
fn max_array_size_is_read_from_scontrol_show_config() {
    for v in [
        include_str!("../../../tests/fixtures/slurm/22.05/scontrol_show_config.out"),
        include_str!("../../../tests/fixtures/slurm/26.05/scontrol_show_config.out"),
    ] {
        assert_eq!(max_array_size(v), Some(1001));
    }
    assert_eq!(max_array_size("MaxArraySize = 40001\n"), Some(40001));
    assert_eq!(max_array_size("MaxJobCount = 10000\n"), None);
}

fn set_task(tasks: &mut [JobUse], id: &str, f: impl Fn(&mut JobUse)) {
    let t = tasks
        .iter_mut()
        .find(|t| t.detail.id.as_ref().map(JobId::as_str) == Some(id))
        .unwrap();
    f(t);
}

#[test]
fn tasks_that_exited_with_headroom_to_spare_keep_their_request() {
    // Exit 1 after two seconds at 50M: no suggestion, nothing changes.
    let p = plan(799, &fixture("22.05"), &[], 1001).unwrap();
    assert!(p.sizing.is_empty(), "{:?}", p.sizing);
    assert!(p.why.is_empty());
}

#[test]
fn the_largest_need_among_the_failed_tasks_sizes_the_rerun() {
    let mut tasks = fixture("26.05");
    // Task 1 ran out of time at its 2-minute limit, task 4 out of its 50M.
    set_task(&mut tasks, "887_1", |t| {
        t.detail.state = Some(JobState::Timeout);
        t.elapsed_s = Some(120);
    });
    set_task(&mut tasks, "887_4", |t| {
        t.detail.state = Some(JobState::OutOfMemory)
    });
    let p = plan(887, &tasks, &[], 1001).unwrap();
    assert_eq!(p.indices, [1, 4]);
    // Relaunch's rules: a quarter more time (rounded to minutes), a fifth more memory
    // then a quarter of headroom (rounded to 50M).
    assert_eq!(p.sizing.time_s, Some(180));
    assert_eq!(p.sizing.mem.as_deref(), Some("100M"));
    assert_eq!(
        p.why,
        [
            "task 1: ran out of time at 2:00: ask for 3m",
            "task 4: ran out of memory at 50M: ask for 100M"
        ]
    );
    // A completed task's figures do not count: only the failed ones size the rerun.
    let mut quiet = fixture("26.05");
    set_task(&mut quiet, "887_0", |t| {
        t.detail.state = Some(JobState::Completed);
        t.elapsed_s = Some(120);
    });
    assert!(plan(887, &quiet, &[], 1001).unwrap().sizing.is_empty());
}

#[test]
fn a_timeout_among_tasks_that_fit_sets_the_time_of_all() {
    let mut tasks = fixture("22.05");
    set_task(&mut tasks, "800_6", |t| {
        t.detail.state = Some(JobState::Timeout);
        t.elapsed_s = t.time_limit_s;
    });
    let p = plan(800, &tasks, &[], 1001).unwrap();
    assert_eq!(p.indices, [6, 7, 8, 9]);
    assert_eq!(p.sizing.time_s, Some(180));
    assert_eq!(p.sizing.mem, None);
}

#[test]
fn the_rerun_spec_runs_the_failed_indices_where_the_array_ran() {
    let mut tasks = fixture("26.05");
    set_task(&mut tasks, "887_4", |t| {
        t.detail.state = Some(JobState::OutOfMemory)
    });
    let p = plan(887, &tasks, &[], 1001).unwrap();
    let mut spec = LaunchSpec {
        array: "0-5".into(),
        mem: "50M".into(),
        extra_sbatch: vec!["--qos=normal".into(), "--array=0-5".into(), "-a".into()],
        ..LaunchSpec::default()
    };
    let changed = respec(&mut spec, &p, &p.arrays[0], Some("/r/results/L1"));
    assert_eq!(spec.array, "1,4");
    assert_eq!(spec.extra_sbatch, ["--qos=normal"]);
    assert_eq!(spec.workdir, "/r/results/L1");
    assert_eq!(spec.mem, "100M");
    assert_eq!(
        changed,
        [
            "memory 100M (was 50M)",
            "(task 4: ran out of memory at 50M: ask for 100M)"
        ]
    );
    // A working directory of its own is kept.
    let mut own = LaunchSpec {
        workdir: "/data/run".into(),
        ..LaunchSpec::default()
    };
    respec(&mut own, &p, "1", Some("/r/results/L1"));
    assert_eq!(own.workdir, "/data/run");
}
