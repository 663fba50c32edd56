#![allow(clippy::unwrap_used)]
use super::*;

fn probe(fixture: &str, uid: u32, guards: &str) -> Probe {
    let out = format!("{uid}\n{SHOW}\n{fixture}{GUARDS}\n{guards}");
    parse_probe(&out).unwrap()
}

const R2205: &str = include_str!("../../tests/fixtures/slurm/scontrol_adopt_2205.out");
const R2605: &str = include_str!("../../tests/fixtures/slurm/scontrol_adopt_2605.out");
const P2411: &str = include_str!("../../tests/fixtures/slurm/scontrol_adopt_2411_pending.out");

/// A running job of 22.05 submitted with `sbatch -p short -J "my job" -o … -e … --gres=gpu:1
/// --mem=50M -t 4 --no-requeue -x cpu01`: the same options again, the output into the layout.
#[test]
fn a_running_job_is_resubmitted_with_its_own_options() {
    for (text, gres) in [(R2205, "--gres=gpu:1"), (R2605, "--gres=gpu:1")] {
        let p = probe(text, 1001, "");
        let id = p.job.id.as_ref().unwrap().to_string().parse().unwrap();
        let a = check(id, &p, "/lustre/fsw/sduser/results").unwrap();
        assert_eq!(a.name, "my job");
        assert_eq!(a.dir_name, "my-job");
        assert_eq!(a.state, "RUNNING");
        for want in [
            "--job-name=my job",
            "--partition=short",
            "--account=research",
            "--qos=normal",
            "--time=00:04:00",
            "--nodes=1",
            "--ntasks=1",
            "--cpus-per-task=1",
            "--mem=50M",
            gres,
            "--chdir=/tmp/adt",
            "--no-requeue",
        ] {
            assert!(
                a.sbatch.iter().any(|o| o == want),
                "{want} in {:?}",
                a.sbatch
            );
        }
        assert!(
            !a.sbatch.iter().any(|o| o == "--exclusive"),
            "{:?}",
            a.sbatch
        );
        assert_eq!(a.exclude, "cpu01");
        assert!(!a.requeue);
        assert!(a.stdout.as_deref().unwrap().starts_with("/tmp/adt/out-"));
        assert!(
            a.left_out
                .iter()
                .any(|l| l.starts_with("output: this attempt writes to /tmp/adt/out-")),
            "{:?}",
            a.left_out
        );
    }
}

/// A pending job of 24.11 (`-n 2 --mem-per-cpu=100M --gpus=2 --exclusive`, requeue by default).
#[test]
fn a_pending_job_with_gpus_per_job_and_exclusive() {
    let p = probe(P2411, 1001, "");
    let a = check(2415549, &p, "/r").unwrap();
    assert_eq!(a.state, "PENDING");
    for want in [
        "--ntasks=2",
        "--mem-per-cpu=100M",
        "--gpus=2",
        "--exclusive",
        "--requeue",
    ] {
        assert!(
            a.sbatch.iter().any(|o| o == want),
            "{want} in {:?}",
            a.sbatch
        );
    }
    assert!(a.requeue);
    assert_eq!(a.exclude, "");
}

#[test]
fn refusals_say_why() {
    // Another user's job.
    let e = check(2209823, &probe(R2205, 1002, ""), "/r").unwrap_err();
    assert!(
        e.contains("belongs to sduser (uid 1001), not to you (uid 1002)"),
        "{e}"
    );
    // A finished one.
    let done = R2205.replace("JobState=RUNNING", "JobState=COMPLETED");
    let e = check(2209823, &probe(&done, 1001, ""), "/r").unwrap_err();
    assert_eq!(
        e,
        "job 2209823 is COMPLETED: only a running or pending job can be adopted"
    );
    // One a guard already waits on.
    let e = check(
        2209823,
        &probe(
            R2205,
            1001,
            "77|sdguard-x|afternotok:2209823(unfulfilled)\n",
        ),
        "/r",
    )
    .unwrap_err();
    assert!(e.contains("guard job 77 waits on it"), "{e}");
    // One running in a job directory of slurmdash's.
    let e = check(2209823, &probe(R2205, 1001, ""), "/tmp").unwrap_err();
    assert!(e.contains("was launched by slurmdash"), "{e}");
    // No batch script.
    let inter = R2205.replace("BatchFlag=1", "BatchFlag=0");
    let e = check(2209823, &probe(&inter, 1001, ""), "/r").unwrap_err();
    assert!(e.contains("no batch script"), "{e}");
    assert!(parse_id("12_3").is_err());
    assert_eq!(parse_id(" 42 ").unwrap(), 42);
}

#[test]
fn names_and_guard_lines() {
    assert_eq!(dir_name("my job/x"), "my-job-x");
    assert_eq!(dir_name("..."), "job");
    assert_eq!(parse_armed("noise\nslurmdash-guard 991\n"), Some(991));
    let p = probe(
        R2205,
        1001,
        "5|other|afternotok:1\n6|sdguard-a|afternotok:9(unfulfilled)\n",
    );
    assert_eq!(p.guards, vec![(6, 9)]);
}
