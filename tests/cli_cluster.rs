//! The command line against the dev cluster over real SSH: jobs, logs, cancel, sacct.

use crate::common;

use std::io::Read;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use slurmdash::remote::{ReadPos, Remote};

/// `slurmdash logs ID`, which must succeed.
fn logs_ok(id: u64) -> Output {
    let logs = slurmdash(&["logs", &id.to_string()]);
    assert!(
        logs.status.success(),
        "{:?} {}",
        logs.status,
        text(&logs.stderr)
    );
    logs
}

/// Runs the slurmdash binary like `slurmdash`, but kills it and fails the test if it has
/// not ended within `limit` (`logs --follow` would otherwise wait forever if the job's
/// end were never noticed).
fn slurmdash_within(args: &[&str], limit: Duration) -> Output {
    let mut child = slurmdash_command(&dev_config())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run slurmdash");
    let end = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for slurmdash") {
            break st;
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            let mut out = String::new();
            if let Some(mut o) = child.stdout.take() {
                let _ = o.read_to_string(&mut out);
            }
            panic!("slurmdash {args:?} still running after {limit:?}; it printed {out:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_end(&mut stdout);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_end(&mut stderr);
    }
    Output {
        status,
        stdout,
        stderr,
    }
}

fn jobs_json() -> Vec<Value> {
    let out = slurmdash(&["jobs", "--json"]);
    assert!(out.status.success(), "jobs --json: {}", text(&out.stderr));
    serde_json::from_slice::<Vec<Value>>(&out.stdout).expect("jobs --json is a JSON array")
}

fn job_in(jobs: &[Value], id: u64) -> Option<Value> {
    jobs.iter()
        .find(|j| j["id"].as_str() == Some(id.to_string().as_str()))
        .cloned()
}

#[tokio::test]
async fn a_submitted_job_shows_in_jobs_runs_and_ends_completed_in_sacct() {
    let r = remote();
    let dir = scratch(&r, "lifecycle").await;
    let name = "life|cycle, \"quoted\" 'name' ✓";
    let id = sbatch(
        &r,
        &[
            "-J",
            name,
            "-c",
            "1",
            "-t",
            "1",
            "-D",
            &dir,
            "--wrap",
            "echo started; sleep 6; echo finished",
        ],
    )
    .await;

    // Listed by `slurmdash jobs` with its odd name intact, pending or running.
    let seen = wait_for(
        "the job in `jobs --json`",
        Duration::from_secs(20),
        || async { job_in(&jobs_json(), id) },
    )
    .await;
    assert_eq!(seen["name"], name);
    assert!(
        ["PENDING", "RUNNING", "CONFIGURING"].contains(&seen["state"].as_str().unwrap_or("")),
        "{seen}"
    );
    let table = text(&slurmdash(&["jobs"]).stdout);
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().next() == Some(id.to_string().as_str())),
        "{table}"
    );

    wait_for("the job to run", Duration::from_secs(60), || async {
        job_in(&jobs_json(), id).filter(|j| j["state"] == "RUNNING")
    })
    .await;

    // After it ends and leaves squeue (MinJobAge), sacct has it as COMPLETED.
    wait_for(
        "the job to leave squeue",
        Duration::from_secs(90),
        || async { job_in(&jobs_json(), id).is_none().then_some(()) },
    )
    .await;
    assert_eq!(sacct_state(&r, id).await, "COMPLETED");
    let logs = slurmdash(&["logs", &id.to_string()]);
    assert_eq!(text(&logs.stdout), "started\nfinished\n");

    // Once slurmctld forgets the job (MinJobAge), squeue and scontrol reject its id.
    wait_for(
        "slurmctld to forget the job",
        Duration::from_secs(60),
        || async {
            let out = run(&r, &["scontrol", "show", "job", &id.to_string()]).await;
            (!out.success()).then_some(())
        },
    )
    .await;

    // Slurm no longer reports the output path; `logs` falls back to the work dir from
    // sacct and Slurm's default file name, and says so.
    let logs = logs_ok(id);
    assert_eq!(text(&logs.stdout), "started\nfinished\n");
    assert!(
        text(&logs.stderr).contains(&format!("{dir}/slurm-{id}.out")),
        "{}",
        text(&logs.stderr)
    );
    run(&r, &["rm", "-rf", &dir]).await;
}

#[tokio::test]
async fn output_of_a_running_job_is_read_incrementally_and_followed_to_the_end() {
    let r = remote();
    let dir = scratch(&r, "follow").await;
    let out_path_pattern = format!("{dir}/progress-%j.out");
    let id = sbatch(
        &r,
        &[
            "-J",
            "progress",
            "-c",
            "1",
            "-t",
            "1",
            "-o",
            &out_path_pattern,
            "--wrap",
            "for i in 1 2 3 4 5 6; do echo line $i; sleep 1; done",
        ],
    )
    .await;
    let path = format!("{dir}/progress-{id}.out");

    // First read: whatever is there; later reads fetch only bytes past the offset.
    let first = wait_for("the first line", Duration::from_secs(60), || async {
        r.read_file(&path, ReadPos::Offset(0), 1 << 20)
            .await
            .ok()
            .filter(|c| !c.data.is_empty())
    })
    .await;
    let mut offset = first.next_offset();
    let mut all = first.data.clone();
    let mut reads_with_new_bytes = 1;
    // The job prints a line a second: a minute is ample, and the deadline turns output that
    // stops into a failure instead of a test that never ends.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !text(&all).contains("line 6") {
        assert!(
            Instant::now() < deadline,
            "line 6 never came; read so far: {:?}",
            text(&all)
        );
        tokio::time::sleep(Duration::from_millis(700)).await;
        let c = r
            .read_file(&path, ReadPos::Offset(offset), 1 << 20)
            .await
            .expect("read");
        assert_eq!(c.offset, offset, "a read starts where the last one ended");
        assert!(c.size >= offset);
        assert_eq!(c.data.len() as u64, c.size - offset, "only the new bytes");
        if !c.data.is_empty() {
            reads_with_new_bytes += 1;
        }
        offset = c.next_offset();
        all.extend_from_slice(&c.data);
    }
    assert!(reads_with_new_bytes >= 2, "the file grew between reads");
    let expected: String = (1..=6).map(|i| format!("line {i}\n")).collect();
    assert_eq!(text(&all), expected);

    // `slurmdash logs` prints the whole file; `--follow` also ends by itself once the
    // job has finished.
    let logs = logs_ok(id);
    assert_eq!(text(&logs.stdout), expected);
    let id2 = sbatch(
        &r,
        &[
            "-J",
            "follow-me",
            "-c",
            "1",
            "-t",
            "1",
            "-o",
            &format!("{dir}/f-%j.out"),
            "-e",
            &format!("{dir}/f-%j.err"),
            "--wrap",
            "sleep 2; for i in a b c; do echo out $i; echo err $i >&2; sleep 1; done",
        ],
    )
    .await;
    let followed = tokio::task::spawn_blocking(move || {
        slurmdash_within(
            &["logs", "--follow", "--err", &id2.to_string()],
            Duration::from_secs(120),
        )
    })
    .await
    .expect("join");
    assert!(followed.status.success(), "{}", text(&followed.stderr));
    assert_eq!(text(&followed.stdout), "err a\nerr b\nerr c\n");
    run(&r, &["rm", "-rf", &dir]).await;
}

#[tokio::test]
async fn cancel_a_pending_job_and_treat_finished_and_unknown_ids_as_cancelled() {
    let r = remote();
    let pending = sbatch_true(&r, "to-cancel", &["--hold"]).await;
    let done = sbatch_true(&r, "quick", &[]).await;
    wait_for(
        "the quick job to finish",
        Duration::from_secs(60),
        || async {
            let s = sacct_state(&r, done).await;
            (s == "COMPLETED").then_some(())
        },
    )
    .await;

    let out = slurmdash(&["cancel", &pending.to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout)
            .lines()
            .any(|l| l == format!("{pending}: cancelled")),
        "{}",
        text(&out.stdout)
    );
    wait_for("CANCELLED in sacct", Duration::from_secs(30), || async {
        sacct_state(&r, pending)
            .await
            .starts_with("CANCELLED")
            .then_some(())
    })
    .await;

    let missing = "987654321";
    let out = slurmdash(&["cancel", &done.to_string(), missing]);
    let said = text(&out.stdout);
    assert!(
        out.status.success(),
        "finished/unknown ids count as cancelled: {said}"
    );
    assert!(said.contains(&format!("{done}: already")), "{said}");
    assert!(said.contains(&format!("{missing}: already gone")), "{said}");

    let out = slurmdash(&["cancel", "12x"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("`12x` is not a Slurm job id"));
}

#[tokio::test]
async fn own_jobs_by_default_all_users_and_partition_filters_on_request() {
    let r = remote();
    let mut o = slurmdash::remote::SshOptions::new(vec!["slurmdash-dev-other".into()]);
    o.ssh_config = Some(ssh_config());
    let other = slurmdash::remote::SshRemote::new(o).expect("remote");
    let theirs = sbatch_true(&other, "not-mine", &["--hold"]).await;
    let mine = sbatch_true(&r, "mine-polar", &["-p", "polar", "--hold"]).await;

    let ids = |args: &[&str]| -> Vec<String> {
        let out = slurmdash(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        serde_json::from_slice::<Vec<Value>>(&out.stdout)
            .expect("json")
            .iter()
            .filter_map(|j| j["id"].as_str().map(str::to_string))
            .collect()
    };
    let own = ids(&["jobs", "--json"]);
    assert!(
        own.contains(&mine.to_string()) && !own.contains(&theirs.to_string()),
        "{own:?}"
    );
    let all = ids(&["jobs", "--all", "--json"]);
    assert!(
        all.contains(&mine.to_string()) && all.contains(&theirs.to_string()),
        "{all:?}"
    );
    let short = ids(&["jobs", "--partition", "short", "--json"]);
    assert!(!short.contains(&mine.to_string()), "{short:?}");
    let polar = ids(&["jobs", "--partition", "polar", "--json"]);
    assert!(polar.contains(&mine.to_string()), "{polar:?}");

    run(&other, &["scancel", &theirs.to_string()]).await;
    run(&r, &["scancel", &mine.to_string()]).await;
}

/// A job's output that sets the terminal's title and writes its clipboard (OSC 0, OSC 52)
/// does neither through `slurmdash logs` in a terminal: the text and its colours show, the
/// title stays. Piped, and with `--raw` in a terminal, the bytes are the job's own (and the
/// title then changes: the check sees an escape that gets through).
#[tokio::test]
async fn logs_in_a_terminal_keep_a_jobs_escapes_from_it_and_raw_or_piped_they_pass() {
    let r = remote();
    let dir = scratch(&r, "logs-escapes").await;
    let id = sbatch(
        &r,
        &[
            "-J",
            "logs-escapes",
            "-c",
            "1",
            "-t",
            "1",
            "-D",
            &dir,
            "--wrap",
            r"printf 'before \033]0;pwned-title\007\033[31mred\033[0m\033]52;c;aGk=\007 after\n'",
        ],
    )
    .await;
    let state = final_state(&r, id, Duration::from_secs(90)).await;
    assert_eq!(state, "COMPLETED");
    let job_bytes: &[u8] =
        b"before \x1b]0;pwned-title\x07\x1b[31mred\x1b[0m\x1b]52;c;aGk=\x07 after\n";
    assert_eq!(
        logs_ok(id).stdout,
        job_bytes,
        "piped: the bytes as they are"
    );

    let in_terminal = |extra: &str| {
        let cmd = format!(
            "{} --config {} logs {id}{extra}; echo EXITED:$?; sleep 60",
            env!("CARGO_BIN_EXE_slurmdash"),
            dev_config().display()
        );
        let name = format!("sdtest-logs-{}-{}", std::process::id(), tmux::rand_suffix());
        let t = tmux::Tmux::spawn(
            name,
            100,
            10,
            &format!("env -u SLURM_HOSTNAME sh -c '{cmd}'"),
        );
        let screen = t.wait("logs to end", Duration::from_secs(60), |s| {
            s.contains("EXITED:")
        });
        let title = t
            .cmd()
            .args(["display-message", "-p", "-t", &t.name, "#{pane_title}"])
            .output()
            .expect("tmux display-message");
        (screen, text(&title.stdout).trim().to_string())
    };
    let (screen, title) = in_terminal("");
    assert!(screen.contains("before red after"), "{screen}");
    assert!(screen.contains("EXITED:0"), "{screen}");
    assert_ne!(title, "pwned-title", "the job set the terminal's title");
    let (screen, title) = in_terminal(" --raw");
    assert!(screen.contains("before red after"), "{screen}");
    assert_eq!(title, "pwned-title", "--raw passes the job's bytes");
    run(&r, &["rm", "-rf", &dir]).await;
}
