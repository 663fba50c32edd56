//! Search across an array's logs (`:grep`, `:errors`/`!`) in the real binary, in a real
//! terminal (tmux), against the dev cluster with the default settings (the RPC budget on): a
//! 10-task array on the cpu partition where every task prints a common line and task 7
//! prints a Python traceback ending in `RuntimeError: boom` to stderr and exits 1. `:grep`
//! for the common line lists all 10 tasks; the first-error preset lists task 7 first with
//! its RuntimeError line; enter opens task 7's stderr at that line.
//!
//! On Slurm 22.05, sacct keeps no log paths: a task that slurmctld has forgotten (after
//! MinJobAge) is found by Slurm's default name only, so there the array writes both
//! streams to that default file.

use crate::common;

use std::time::Duration;

use common::tmux::*;
use common::*;

/// The job rows of the search pane: `ID_T  … · ended …` or `… · not ended …`.
fn job_rows(s: &str, id: u64) -> Vec<String> {
    let prefix = format!("{id}_");
    s.lines()
        .map(|l| l.trim_start_matches('│').trim())
        .filter(|l| l.starts_with(&prefix) && (l.contains("· ended") || l.contains("· not ended")))
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_lists_every_task_and_the_first_error_is_task_7_opened_at_its_line() {
    let r = remote();
    let dir = scratch(&r, "grep").await;
    let name = format!("gr{}", rand_suffix() % 100_000);
    let marker = format!("common-{name}");
    // Task 7 fails after 30 s (the dashboard sees it running first); the others end after
    // 40 s (cpu01 runs 8 at a time: tasks 8 and 9 start when 7 and another have ended).
    let script = format!(
        "#!/bin/sh\necho \"{marker} from task $SLURM_ARRAY_TASK_ID\"\n\
         if [ \"$SLURM_ARRAY_TASK_ID\" = 7 ]; then sleep 30\n\
         printf 'Traceback (most recent call last):\\n  File \"train.py\", line 3, in <module>\\nRuntimeError: boom\\n' >&2\n\
         exit 1\nfi\nsleep 40\n"
    );
    put(&r, &format!("{dir}/job.sh"), &script).await;
    let split = dev_slurm() != "22.05";
    let out_arg = format!("--output={dir}/out-%A_%a.out");
    let err_arg = format!("--error={dir}/err-%A_%a.err");
    let mut args = vec![
        "-J",
        &name,
        "-p",
        "cpu",
        "-c",
        "1",
        "--mem=100M",
        "-t",
        "5",
        "--array=0-9",
        "-D",
        &dir,
    ];
    if split {
        args.extend([out_arg.as_str(), err_arg.as_str()]);
    }
    let job = format!("{dir}/job.sh");
    args.push(&job);
    let id = sbatch(&r, &args).await;
    // Task 7 running before the dashboard's first refresh, so that it has a row.
    let task7 = format!("{id}_7");
    wait_for("task 7 running", Duration::from_secs(120), || async {
        let out = run(&r, &["squeue", "-h", "-o", "%T", "-j", &task7]).await;
        (out.stdout_lossy().trim() == "RUNNING").then_some(())
    })
    .await;

    let t = Tmux::start(&dev_config_default(), &[]);
    t.wait("the dashboard", Duration::from_secs(30), refreshed);
    t.filter(&name, Duration::from_secs(30));
    // Task 7 fails; the dashboard keeps its row once it has left the queue.
    t.wait("task 7's row as failed", Duration::from_secs(150), |s| {
        s.lines().any(|l| l.contains(&task7) && l.contains("FAIL"))
    });

    let states = common::arrays::all_ended(&r, id, 10).await;
    assert_eq!(
        common::arrays::failed(&states),
        [7].into_iter().collect(),
        "{states:?}"
    );

    // :grep for the common line: all 10 tasks, each with its line.
    t.keys(&[":"]);
    t.type_text(&format!("grep {marker}"));
    t.keys(&["Enter"]);
    let s = t.wait("the search's answer", Duration::from_secs(60), |s| {
        job_rows(s, id).len() == 10
    });
    assert!(
        s.contains("10 jobs' logs") && s.contains(&format!("of array {id}")),
        "the pane says what was searched:\n{s}"
    );
    for i in 0..10 {
        assert!(
            s.contains(&format!("{marker} from task {i}")),
            "task {i}'s line is listed:\n{s}"
        );
    }
    t.keys(&["Escape"]);
    t.wait("the queue again", Duration::from_secs(5), |s| {
        !s.contains("search in logs")
    });

    // !: the first error. Task 7 on top, its traceback and its RuntimeError line.
    t.keys(&["!"]);
    let s = t.wait("the first error", Duration::from_secs(60), |s| {
        s.contains("first error") && !job_rows(s, id).is_empty() && s.contains("RuntimeError: boom")
    });
    let rows = job_rows(&s, id);
    assert_eq!(rows.first(), Some(&task7), "task 7 broke first:\n{s}");
    assert!(s.contains("the first to break on top"), "{s}");
    // One file for both streams (22.05): the common line comes first.
    let (stream, line) = if split { ("stderr", 3) } else { ("stdout", 4) };
    assert!(
        s.contains(&format!("{stream}:{line} ")) && s.contains("RuntimeError: boom"),
        "the RuntimeError line with its number:\n{s}"
    );
    // The first line selected is the traceback's; j moves to the RuntimeError, enter opens it.
    t.keys(&["j", "Enter"]);
    let s = t.wait("task 7's log at the line", Duration::from_secs(60), |s| {
        !s.contains("search in logs") && s.contains("RuntimeError: boom") && s.contains("Traceback")
    });
    let path = if split {
        format!("err-{id}_7.err")
    } else {
        format!("slurm-{id}_7.out")
    };
    assert!(
        s.contains(&path),
        "the log pane shows task 7's {stream}:\n{s}"
    );
    assert!(
        s.contains(&format!("{id}_7")),
        "task 7 is the selected job:\n{s}"
    );

    // The command log shows the search's two commands as the user's: the lookup (sacct and
    // scontrol in one exec) and the grep program with the pattern as its own argument.
    t.keys(&["@"]);
    let s = t.wait(
        "the search in the command log",
        Duration::from_secs(15),
        |s| {
            s.contains("command log")
                && s.lines()
                    .any(|l| l.contains("your key") && l.contains("sacct; scontrol"))
                && s.lines()
                    .any(|l| l.contains("your key") && l.contains(&marker) && l.contains(" F "))
        },
    );
    eprintln!("the command log on Slurm {}:\n{s}", dev_slurm());
    t.keys(&["Escape"]);

    t.keys(&["q"]);
    let s = t.wait("slurmdash to exit", Duration::from_secs(10), |s| {
        s.contains("EXITED:")
    });
    assert!(s.contains("EXITED:0"), "{s}");
    let _ = run(&r, &["scancel", &id.to_string()]).await;
}

/// A sweep slurmdash launched, ended and forgotten by slurmctld (its tasks' logs are in the
/// launch's job directory, `slurm-logs/<name>-<id>/main-<task>.err`): `!` finds the failed
/// point there on every version, with its values, not under Slurm's default name (which is
/// all a 22.05 sacct could say).
#[tokio::test(flavor = "multi_thread")]
async fn the_first_error_of_an_ended_sweep_is_found_in_its_job_directory() {
    let r = remote();
    let state = tempfile::tempdir().expect("state dir");
    let state_s = state.path().to_str().expect("utf-8").to_string();
    let env = [("SLURMDASH_STATE_DIR", state_s.as_str())];
    let name = format!("grsw{}", rand_suffix() % 100_000);
    let name_set = format!("name={name}");
    let out = slurmdash_env(
        &dev_config(),
        &[
            "submit",
            "--json",
            "--set",
            &name_set,
            "--set",
            "sweep=P=1,2,3,4",
            "--set",
            "partition=cpu",
            "--set",
            "gpus=0",
            "--set",
            "cpus_per_task=1",
            "--set",
            "mem=50M",
            "--set",
            "time=5m",
            "--set",
            "requeue=false",
            "--",
            "sh",
            "-c",
            r#"echo "point $P"; if [ "$P" = 3 ]; then echo "RuntimeError: bad point $P" >&2; exit 1; fi"#,
        ],
        &env,
    );
    assert!(out.status.success(), "submit: {}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout))
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    let id = v["job_id"].as_u64().unwrap_or_else(|| panic!("{v}"));
    let _cancel = CancelOnDrop(id);
    let states = common::arrays::all_ended(&r, id, 4).await;
    assert_eq!(
        common::arrays::failed(&states),
        [2].into_iter().collect(),
        "{states:?}"
    );
    // Until slurmctld forgets the array (MinJobAge), scontrol would still say where the
    // logs are; the search must find them without it.
    wait_for(
        "slurmctld to forget the array",
        Duration::from_secs(120),
        || async {
            let out = run(&r, &["scontrol", "show", "job", &id.to_string()]).await;
            (!out.success()).then_some(())
        },
    )
    .await;

    let t = Tmux::start_with(&dev_config_default(), &[], &env);
    t.wait("the dashboard", Duration::from_secs(30), refreshed);
    t.filter(&name, Duration::from_secs(30));
    t.wait("the sweep's rows", Duration::from_secs(60), |s| {
        s.lines()
            .any(|l| l.contains(&format!("{id}_2")) && l.contains("FAIL"))
    });
    t.keys(&["!"]);
    let s = t.wait("the first error", Duration::from_secs(60), |s| {
        s.contains("first error") && s.contains("RuntimeError: bad point 3")
    });
    let rows = job_rows(&s, id);
    assert_eq!(
        rows.first().map(String::as_str),
        Some(format!("{id}_2").as_str()),
        "{s}"
    );
    assert!(s.contains("P=3"), "the failed point's values:\n{s}");
    assert!(
        !s.contains("Slurm's default names") && !s.contains("not written yet"),
        "every task's log was found in the job directory:\n{s}"
    );
    t.keys(&["Escape", "q"]);
}
