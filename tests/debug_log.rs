//! `--log FILE` / `SLURMDASH_LOG`: a debug log a user can attach to a bug report. Every
//! remote command with its argv and exit status, every error, never a secret's value.
//! Uses the dev cluster; the submit test submits one short 1-CPU job, which fits beside the
//! jobs of the tests running at the same time.

use crate::common;

use std::process::Command;

use common::{dev_config, slurmdash, text};

fn with_log(args: &[&str]) -> (std::process::Output, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("debug.log");
    let mut all = vec!["--log", log.to_str().expect("utf-8 path")];
    all.extend_from_slice(args);
    let out = slurmdash(&all);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    (out, text)
}

#[test]
fn jobs_with_log_records_the_squeue_argv_and_its_exit_status() {
    let (out, log) = with_log(&["jobs"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = log
        .lines()
        .find(|l| l.contains("slurmdash::remote") && l.contains("argv=\"squeue "))
        .unwrap_or_else(|| panic!("no squeue line in the log:\n{log}"));
    assert!(line.contains("--me"), "{line}");
    assert!(line.contains("exit=0"), "{line}");
    assert!(line.contains("ms="), "{line}");
    assert!(line.contains("stdout_bytes="), "{line}");
}

#[test]
fn the_environment_variable_turns_it_on_and_errors_are_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("env.log");
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .args(["--config"])
        .arg(dev_config())
        .args(["logs", "999999999"])
        .env("SLURMDASH_LOG", &log)
        .output()
        .expect("run");
    assert!(!out.status.success(), "an unknown job should fail");
    let text = std::fs::read_to_string(&log).expect("the log file was written");
    let scontrol = text
        .lines()
        .find(|l| l.contains("argv=\"scontrol --local show job 999999999\""))
        .unwrap_or_else(|| panic!("no scontrol line:\n{text}"));
    assert!(scontrol.contains("exit=1"), "{scontrol}");
    assert!(
        scontrol.contains("Invalid job id"),
        "its stderr: {scontrol}"
    );
    assert!(
        text.lines().any(|l| l.contains("ERROR")
            && l.contains("stopped with an error")
            && l.contains("999999999 is unknown")),
        "the final error is not in the log:\n{text}"
    );
}

#[test]
fn no_log_file_without_the_option() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(dev_config())
        .arg("jobs")
        .current_dir(dir.path())
        .env_remove("SLURMDASH_LOG")
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("dir").count(),
        0,
        "something was written"
    );
}

#[test]
fn a_secret_passed_to_submit_never_reaches_the_log() {
    let secret = format!("s3cr3t-value-{}", std::process::id());
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("submit.log");
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(dev_config())
        .arg("--log")
        .arg(&log)
        .args([
            "submit",
            "--set",
            "secrets=SD_LOG_TEST_SECRET",
            "--set",
            "gpus=0",
            "--set",
            "cpus_per_task=1",
            "--set",
            "time=2m",
            "--",
            "true",
        ])
        .env("SD_LOG_TEST_SECRET", &secret)
        .output()
        .expect("run");
    let said = text(&out.stdout);
    let job = said
        .lines()
        .find_map(|l| l.strip_prefix("Submitted job "))
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string);
    if let Some(id) = &job {
        let _ = slurmdash(&["cancel", id]);
    }
    assert!(
        out.status.success(),
        "submit failed: {said}{}",
        text(&out.stderr)
    );
    assert!(job.is_some(), "no job id in: {said}");
    let text = std::fs::read_to_string(&log).expect("log written");
    assert!(
        text.lines()
            .any(|l| l.contains("slurmdash::remote") && l.contains("sbatch")),
        "the submission is not in the log:\n{text}"
    );
    // The secret's value went over stdin: only its size is recorded.
    assert!(
        text.lines()
            .any(|l| l.contains("sbatch") && !l.contains("stdin_bytes=0")),
        "no command carried stdin:\n{text}"
    );
    assert!(!text.contains(&secret), "the secret is in the log:\n{text}");
}

/// A name planted at the log path (a link to a file of the user's, as another local user
/// could leave in a shared /tmp) stops slurmdash before it writes anything, and the file it
/// points at keeps its bytes and mode; a log slurmdash creates is the user's alone (0600).
#[test]
fn a_link_at_the_log_path_is_refused_and_the_log_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let victim = dir.path().join("authorized_keys");
    std::fs::write(&victim, "ssh-ed25519 AAAA me\n").expect("write");
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let link = dir.path().join("debug.log");
    std::os::unix::fs::symlink(&victim, &link).expect("symlink");
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(dev_config())
        .arg("--log")
        .arg(&link)
        .arg("jobs")
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("symbolic link") && err.contains(&link.display().to_string()),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&victim).expect("read"),
        "ssh-ed25519 AAAA me\n"
    );
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&victim), 0o644);

    let fresh = dir.path().join("fresh.log");
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(dev_config())
        .arg("--log")
        .arg(&fresh)
        .arg("jobs")
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        std::fs::read_to_string(&fresh)
            .expect("log")
            .contains("slurmdash started"),
        "nothing logged"
    );
    assert_eq!(mode(&fresh), 0o600);
}
