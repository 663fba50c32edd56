use super::*;
use crate::slurm::parse::{parse_scontrol_jobs, parse_scontrol_partitions};
use crate::slurm::reservation::parse_reservations;
use crate::slurm::time::parse_time;

const VERSIONS: [&str; 3] = ["22.05", "24.11", "26.05"];

fn fixture(v: &str, name: &str, ext: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/slurm/{v}/{name}.{ext}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn at(s: &str) -> NaiveDateTime {
    parse_time(s).unwrap().unwrap()
}

fn mins(m: u64) -> SlurmDuration {
    SlurmDuration::from_secs(m * 60)
}

/// The dev cluster's partitions (scripts/dev-cluster.d/configs.sh).
fn partitions() -> Vec<Partition> {
    let text = "\
PartitionName=short\n   MaxTime=00:30:00 Nodes=gpu[01-02] State=UP TotalCPUs=32 TotalNodes=2 TRES=cpu=32,mem=32G,node=2,billing=32,gres/gpu=16\n\n\
PartitionName=polar\n   MaxTime=04:00:00 Nodes=gpu[01-02] State=UP TotalCPUs=32 TotalNodes=2 TRES=cpu=32,mem=32G,node=2,billing=32,gres/gpu=16\n\n\
PartitionName=cpu\n   MaxTime=04:00:00 Nodes=cpu01 State=UP TotalCPUs=8 TotalNodes=1 TRES=cpu=8,mem=8G,node=1,billing=8\n\n\
PartitionName=spare\n   MaxTime=00:30:00 Nodes=spare[01-02] State=UP TotalCPUs=8 TotalNodes=2 TRES=cpu=8,mem=8G,node=2,billing=8,gres/gpu=4\n";
    parse_scontrol_partitions(text).unwrap()
}

/// 26.05's pending capture (8 CPUs, 100M, 20 minutes in short), moved to `partition` with
/// `limit` and `tres` per node.
fn pending(partition: &str, limit: u64, tres: Option<&str>) -> (Job, JobDetail) {
    let mut d = parse_scontrol_jobs(&fixture("26.05", "scontrol_job_pending", "out"))
        .unwrap()
        .remove(0);
    d.partition = Some(partition.into());
    d.time_limit = Some(mins(limit));
    d.tres_per_node = tres.map(str::to_string);
    let job = d.to_job().unwrap();
    (job, d)
}

fn maint() -> Vec<Reservation> {
    parse_reservations(&fixture("22.05", "scontrol_reservation", "out")).unwrap()
}

#[test]
fn the_test_only_argv_asks_about_the_jobs_own_shape() {
    let (job, d) = pending("spare", 30, Some("gres/gpu:2"));
    let s = Shape::of_detail(&d);
    assert_eq!(
        s.test_only_argv(),
        [
            "sbatch",
            "--test-only",
            "--job-name=slurmdash-why",
            "--output=/dev/null",
            "--partition=spare",
            "--account=research",
            "--qos=normal",
            "--time=30:00",
            "--nodes=1",
            "--ntasks=1",
            "--cpus-per-task=8",
            "--mem=100M",
            "--gres=gpu:2",
            "--wrap=true",
        ]
    );
    // From the queue's row alone: memory left to the default.
    let q = Shape::of_job(&job);
    assert_eq!(
        (q.ntasks, q.cpus_per_task, q.mem_per_node),
        (Some(1), Some(8), None)
    );
    assert_eq!(q.gres.as_deref(), Some("gpu:2"));
    // Every version's capture of a GPU job reads (22.05 prints TRES=, later ReqTRES=).
    for v in VERSIONS {
        let d = parse_scontrol_jobs(&fixture(v, "scontrol_job_gpu_polar", "out"))
            .unwrap()
            .remove(0);
        let a = Shape::of_detail(&d).test_only_argv();
        assert!(a.contains(&"--gres=gpu:1".to_string()), "{v}: {a:?}");
        assert!(a.contains(&"--partition=polar".to_string()), "{v}: {a:?}");
    }
}

#[test]
fn a_job_running_into_the_maintenance_gets_the_limit_that_ends_before_it() {
    let parts = partitions();
    let res = maint();
    let cluster = Cluster {
        partitions: &parts,
        reservations: &res,
        now: at("2026-12-28T21:17:03"),
    };
    let (job, d) = pending("spare", 30, None);
    let alts = alternatives(&job, &Shape::of_detail(&d), &cluster);
    let words: Vec<&str> = alts.iter().map(|a| a.words.as_str()).collect();
    assert_eq!(
        words,
        [
            "time limit 19:00 instead of 30:00: it ends before the maintenance 2026-12-28 21:36–23:36 on spare[01-02]",
            "partition short instead of spare",
        ]
    );
    assert_eq!(
        alts[0].argv,
        ["scontrol", "update", "JobId=82", "TimeLimit=19:00"]
    );
    assert!(alts[0].check.contains(&"--time=19:00".to_string()));
    assert_eq!(
        alts[1].argv,
        ["scontrol", "update", "JobId=82", "Partition=short"]
    );
    assert!(alts[1].check.contains(&"--partition=short".to_string()));
    assert!(alts[1].check.contains(&"--time=30:00".to_string()));
    assert!(
        alts.iter().all(|a| a.estimated_start.is_none()),
        "unchecked"
    );
    let w = window(&job, &cluster).unwrap();
    assert_eq!(w.longest, Some(mins(19)));
}

#[test]
fn without_a_window_half_the_limit_and_fewer_gpus_are_offered() {
    let parts = partitions();
    let cluster = Cluster {
        partitions: &parts,
        reservations: &[],
        now: at("2026-12-28T21:17:03"),
    };
    let (job, d) = pending("short", 30, Some("gres/gpu:4"));
    let alts = alternatives(&job, &Shape::of_detail(&d), &cluster);
    let changes: Vec<&Change> = alts.iter().map(|a| &a.change).collect();
    assert_eq!(
        changes,
        [
            &Change::TimeLimit {
                from: mins(30),
                to: mins(15)
            },
            &Change::Partition {
                from: "short".into(),
                to: "polar".into()
            },
            &Change::Gpus {
                kind: None,
                from: 4,
                to: 2
            },
        ]
    );
    assert_eq!(
        alts[2].argv,
        ["scontrol", "update", "JobId=82", "TresPerNode=gres/gpu:2"]
    );
    assert!(alts[2].check.contains(&"--gres=gpu:2".to_string()));
    // A typed request keeps its type; a CPU partition cannot take a GPU job.
    let (job, mut d) = pending("short", 30, Some("gres/gpu:a100:2"));
    for (k, v) in d.fields.iter_mut() {
        if k == "Features" {
            *v = "a100".into();
        }
    }
    let alts = alternatives(&job, &Shape::of_detail(&d), &cluster);
    assert_eq!(
        alts[2].argv[3], "TresPerNode=gres/gpu:a100:1",
        "{:?}",
        alts[2]
    );
    assert!(alts[2].check.contains(&"--constraint=a100".to_string()));
    assert!(alts.iter().all(|a| a.change
        != Change::Partition {
            from: "short".into(),
            to: "cpu".into()
        }));
}

#[test]
fn a_limit_over_the_partitions_maxtime_is_lowered_to_it_and_two_nodes_become_one() {
    let parts = partitions();
    let cluster = Cluster {
        partitions: &parts,
        reservations: &[],
        now: at("2026-12-28T21:17:03"),
    };
    let (mut job, _) = pending("polar", 600, None);
    job.nodes = 2;
    job.cpus = 2;
    let alts = alternatives(&job, &Shape::of_job(&job), &cluster);
    assert_eq!(
        alts[0].change,
        Change::TimeLimit {
            from: mins(600),
            to: mins(240)
        }
    );
    assert_eq!(alts.last().unwrap().argv[3], "NumNodes=1");
    let check = &alts.last().unwrap().check;
    assert!(check.contains(&"--nodes=1".to_string()), "{check:?}");
    assert!(check.contains(&"--ntasks=1".to_string()), "{check:?}");
}

#[test]
fn held_dependent_and_running_jobs_get_no_alternatives() {
    let parts = partitions();
    let cluster = Cluster {
        partitions: &parts,
        reservations: &[],
        now: at("2026-12-28T21:17:03"),
    };
    for (reason, words) in [
        ("JobHeldUser", "held"),
        ("Dependency", "dependency"),
        ("BeginTime", "begin time"),
    ] {
        let (mut job, d) = pending("short", 30, None);
        job.reason = Some(reason.into());
        assert!(why_none(&job).unwrap().contains(words), "{reason}");
        assert!(alternatives(&job, &Shape::of_detail(&d), &cluster).is_empty());
    }
    let (mut job, _) = pending("short", 30, None);
    job.state = JobState::Running;
    assert_eq!(why_none(&job).unwrap(), "job 82 is RUNNING, not pending");
    let (mut job, _) = pending("short", 30, None);
    job.reason = Some("ReqNodeNotAvail, Reserved for maintenance".into());
    assert!(why_none(&job).is_none());
}

#[test]
fn changes_are_checked_before_anything_is_sent() {
    let parts = partitions();
    let (job, _) = pending("spare", 20, None);
    let lower = Change::TimeLimit {
        from: mins(20),
        to: mins(10),
    };
    assert_eq!(check_apply(&job, &lower, &parts), Ok(()));
    // Up to the partition's MaxTime Slurm lets a user raise a pending job's limit.
    let raise = Change::TimeLimit {
        from: mins(20),
        to: mins(30),
    };
    assert_eq!(check_apply(&job, &raise, &parts), Ok(()));
    let past = Change::TimeLimit {
        from: mins(20),
        to: mins(40),
    };
    let e = check_apply(&job, &past, &parts).unwrap_err();
    assert!(
        e.contains("a user may lower a time limit, and raise a pending job's only up to its partition's MaxTime (30:00)"),
        "{e}"
    );
    let e = check_apply(
        &job,
        &Change::Partition {
            from: "spare".into(),
            to: "nosuch".into(),
        },
        &parts,
    )
    .unwrap_err();
    assert_eq!(e, "no partition nosuch on this cluster");
    let (gpu, _) = pending("spare", 20, Some("gres/gpu:1"));
    let e = check_apply(
        &gpu,
        &Change::Partition {
            from: "spare".into(),
            to: "cpu".into(),
        },
        &parts,
    )
    .unwrap_err();
    assert!(e.contains("1 GPUs > its 0 GPUs"), "{e}");
    let mut running = job.clone();
    running.state = JobState::Running;
    let e = check_apply(&running, &lower, &parts).unwrap_err();
    assert!(e.contains("is RUNNING"), "{e}");
}

#[test]
fn slurms_refusal_to_raise_a_limit_is_explained_on_every_version() {
    let raise = Change::TimeLimit {
        from: mins(5),
        to: mins(40),
    };
    for v in VERSIONS {
        assert_eq!(
            fixture(v, "scontrol_update_time_raise", "status").trim(),
            "1"
        );
        let said = fixture(v, "scontrol_update_time_raise", "err");
        let words = refusal(&raise, &said);
        assert!(
            words.starts_with("Slurm refused to raise the time limit: a user may lower"),
            "{v}: {words}"
        );
        assert!(words.contains("(Slurm said: Access/permission denied for job "));
    }
    let p = Change::Partition {
        from: "a".into(),
        to: "b".into(),
    };
    let said = "Invalid partition name specified for job 2206811\n";
    assert!(refusal(&p, said).starts_with("Slurm does not know that partition"));
    // The capture of a partition change of a job that had started meanwhile.
    let said = fixture("26.05", "scontrol_update_bad_partition", "err");
    assert_eq!(
        refusal(&p, &said),
        "the job is no longer pending (Slurm said: Job is no longer pending execution for job 85)"
    );
}

#[test]
fn every_versions_test_only_answer_reads() {
    for v in VERSIONS {
        let e =
            crate::launch::stage::parse_test_only(&fixture(v, "sbatch_test_only", "err")).unwrap();
        assert!(parse_time(&e.start).unwrap().is_some(), "{v}: {e:?}");
        assert_eq!(e.partition, "spare");
    }
}
