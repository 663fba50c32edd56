//! slurmdash on accounts as people have them (scripts/dev-cluster.d/accounts.sh): login shells
//! tcsh, fish, zsh, ksh and dash, dotfiles that print on stdout and stderr for every shell,
//! and a bash account that sets every Slurm output variable to something odd. For each:
//! `doctor` passes, `submit` launches, `jobs --json` lists the job with its times, `logs`
//! prints exactly what the job wrote (no welcome line), and `cancel` cancels a held job.
//! And an account whose Slurm is found only through the `SLURM_CONF` its login environment
//! sets: the same, and the retry guard's resubmission from inside a job.

use crate::common;
use crate::guard_helpers;

use std::time::Duration;

use common::*;
use serde_json::Value;

fn ok(user: &str, what: &str, out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{user}: `slurmdash {what}` failed ({:?}):\n{}{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// `prints`: whether the account's dotfile prints a line on each stream before every command.
async fn matrix(user: &str, prints: bool) {
    let cfg = dev_config_as(user);
    let state = tempfile::tempdir().expect("state dir");
    let env = [("SLURMDASH_STATE_DIR", state.path().to_str().expect("utf-8"))];
    let sd = |args: &[&str]| slurmdash_env(&cfg, args, &env);

    let doctor = ok(user, "doctor", &sd(&["doctor"]));
    assert!(!doctor.contains("Welcome"), "{user}: doctor:\n{doctor}");
    let login = if prints {
        "your login prints 1 line to stdout and 1 to stderr before each command: slurmdash ignores them"
    } else {
        "it prints nothing around commands"
    };
    assert!(
        doctor
            .lines()
            .any(|l| l.contains("login shell: /") && l.contains(login)),
        "{user}: doctor:\n{doctor}"
    );

    // A launch: the form's checks read sinfo, scontrol and sacctmgr through the login shell.
    let out = sd(&[
        "submit",
        "--set",
        "name=shell-matrix",
        "--set",
        "gpus=0",
        "--set",
        "cpus_per_task=1",
        "--set",
        "time=1m",
        "--",
        "sh",
        "-c",
        "echo \"it's $((6 * 7)) \\$HOME\"; sleep 15",
    ]);
    let said = ok(user, "submit", &out);
    let id: u64 = said
        .lines()
        .find_map(|l| l.strip_prefix("Submitted job "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{user}: no job id in:\n{said}"));

    // Listed with its times (SLURM_TIME_FORMAT=relative would make them unreadable).
    let listed = wait_for(
        &format!("{user}'s job {id} in jobs --json"),
        Duration::from_secs(60),
        || async {
            let out = sd(&["jobs", "--json"]);
            let jobs: Vec<Value> = serde_json::from_str(&ok(user, "jobs --json", &out))
                .unwrap_or_else(|e| panic!("{user}: jobs --json: {e}"));
            jobs.into_iter()
                .find(|j| j["id"].as_str() == Some(id.to_string().as_str()))
        },
    )
    .await;
    assert_eq!(listed["name"], "shell-matrix", "{user}: {listed}");
    assert!(listed["problem"].is_null(), "{user}: {listed}");
    assert!(listed["submit_time"].is_string(), "{user}: {listed}");

    // Its output, exactly: nothing of the login's welcome lines.
    let logs = wait_for(
        &format!("{user}'s job {id} output"),
        Duration::from_secs(120),
        || async {
            let out = sd(&["logs", &id.to_string()]);
            let t = text(&out.stdout);
            (out.status.success() && t.ends_with('\n')).then_some(t)
        },
    )
    .await;
    assert_eq!(logs, "it's 42 $HOME\n", "{user}: logs of {id}");

    // Cancel: a held job, cancelled in one go (SCANCEL_INTERACTIVE would ask and wait).
    let r = remote_as(&format!(
        "slurmdash-dev-{}",
        user.strip_prefix("sd").unwrap_or(user)
    ));
    let held = sbatch(
        &r,
        &[
            "--hold",
            "-J",
            "shell-held",
            "-c",
            "1",
            "-t",
            "1",
            "--wrap",
            "true",
        ],
    )
    .await;
    let out = sd(&["cancel", &held.to_string()]);
    let said = ok(user, "cancel", &out);
    assert!(
        said.lines().any(|l| l == format!("{held}: cancelled")),
        "{user}: cancel said:\n{said}"
    );
    println!("{user}: doctor, submit ({id}), jobs --json, logs, cancel ({held}): ok");
}

#[tokio::test]
async fn tcsh_with_a_cshrc_that_prints() {
    matrix("sdtcsh", true).await;
}

#[tokio::test]
async fn fish_with_a_config_that_prints() {
    matrix("sdfish", true).await;
}

#[tokio::test]
async fn zsh_with_a_zshenv_that_prints() {
    matrix("sdzsh", true).await;
}

#[tokio::test]
async fn ksh() {
    matrix("sdksh", false).await;
}

#[tokio::test]
async fn dash_as_the_login_shell() {
    matrix("sddash", false).await;
}

#[tokio::test]
async fn bash_with_a_bashrc_that_prints() {
    matrix("sdbashrc", true).await;
}

#[tokio::test]
async fn bash_with_every_slurm_output_variable_set() {
    matrix("sdvars", false).await;
    // Its .bashrc also sets SBATCH_TIMELIMIT=7 and SBATCH_JOB_NAME: the launch's own time
    // limit and name win (the matrix saw the name), and submit says so.
    let cfg = dev_config_as("sdvars");
    let state = tempfile::tempdir().expect("state dir");
    let out = slurmdash_env(
        &cfg,
        &[
            "submit",
            "--set",
            "name=sbatch-env",
            "--set",
            "gpus=0",
            "--set",
            "cpus_per_task=1",
            "--set",
            "time=2m",
            "--",
            "sleep",
            "30",
        ],
        &[("SLURMDASH_STATE_DIR", state.path().to_str().expect("utf-8"))],
    );
    let said = ok("sdvars", "submit", &out);
    let id = printed_job_id(&said);
    let warned = text(&out.stderr);
    assert!(
        warned.contains("your login environment sets SBATCH_JOB_NAME, SBATCH_TIMELIMIT: not used"),
        "{warned}"
    );
    let r = remote_as("slurmdash-dev-vars");
    let limit = run(&r, &["squeue", "-h", "-j", &id.to_string(), "-o", "%l"]).await;
    assert_eq!(limit.stdout_lossy().trim(), "2:00", "the form's time limit");
    run(&r, &["scancel", &id.to_string()]).await;
}

/// A site that serves several clusters from one login node: `SLURM_CONF` (set by the login
/// environment, and by Slurm in each job) is the only way to this account's Slurm
/// (configs.sh `site_conf`). Reads and launches keep it, and so does the retry guard, which
/// resubmits from inside a job and once unset every `SLURM_*` variable.
#[tokio::test(flavor = "multi_thread")]
async fn slurm_found_only_through_slurm_conf_from_the_login_environment() {
    let r = remote_as("slurmdash-dev-site");
    let without = run(&r, &["env", "-u", "SLURM_CONF", "sinfo", "-h"]).await;
    assert!(
        !without.success() && without.stderr_lossy().contains("Permission denied"),
        "sdsite reaches Slurm without SLURM_CONF: the account is not set up as a site's: {}",
        without.stderr_lossy()
    );
    matrix("sdsite", false).await;

    // The guard resubmits an infrastructure failure (NCCL) from inside its job.
    let name = guard_helpers::tag("site");
    let l = guard_helpers::submit_with(
        &dev_config_as("sdsite"),
        &name,
        "if [ -e \"$SLURMDASH_JOB_DIR/once\" ]; then echo second attempt ok; else touch \"$SLURMDASH_JOB_DIR/once\"; echo 'gpu01:1:1 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12' >&2; exit 1; fi",
        &[],
        &[],
    );
    let d = guard_helpers::decision_for(&r, &l.dir, l.job).await;
    let second = d
        .next_id()
        .unwrap_or_else(|| panic!("the guard did not resubmit as sdsite: {d:?}"));
    assert_eq!(
        final_state(&r, second, guard_helpers::WAIT).await,
        "COMPLETED"
    );
    guard_helpers::wait_quiet(&r, &l.dir).await;
    println!("sdsite: guard retried {} as {second}", l.job);
}
