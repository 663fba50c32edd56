//! A shell inside a running job, as a user opens it: `x` in the dashboard (tmux), and
//! `slurmdash shell ID`; the shell runs in the job's allocation on its node, and the dashboard
//! is back when it exits.

use crate::common;

use std::time::Duration;

use common::tmux::{fast_config, rand_suffix, row, Tmux};
use common::{dev_config, remote, run, sbatch, slurmdash_with, text, wait_for};

const LIMIT: Duration = Duration::from_secs(60);

async fn running_job(tag: &str) -> (u64, String) {
    let r = remote();
    let id = sbatch(
        &r,
        &["-J", tag, "-c", "1", "-t", "3", "--wrap", "sleep 170"],
    )
    .await;
    let node = wait_for("the job to run", LIMIT, || async {
        let out = run(&r, &["squeue", "-h", "-o", "%T %N", "-j", &id.to_string()]).await;
        let line = out.stdout_lossy().trim().to_string();
        line.strip_prefix("RUNNING ").map(str::to_string)
    })
    .await;
    (id, node)
}

#[tokio::test]
async fn x_opens_a_shell_in_the_job_on_its_node_and_the_dashboard_comes_back() {
    let tag = format!("shell-{}", rand_suffix());
    let (id, node) = running_job(&tag).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = fast_config(tmp.path());
    let t = Tmux::start(&cfg, &[]);
    t.wait("the running job", LIMIT, |s| row(s, id).is_some());
    t.filter(&tag, Duration::from_secs(30));
    t.wait("only the job", LIMIT, |s| {
        s.contains("jobs 1") && row(s, id).is_some()
    });
    t.keys(&["x"]);
    t.wait("the shell's prompt", LIMIT, |s| {
        s.contains(&format!("a shell in job {id} on {node}"))
            && s.trim_end().ends_with(['$', '#', '>'])
    });
    // Typed into the user's own login shell (tcsh on 24.11): backquotes, which sh, bash,
    // zsh and tcsh all read.
    t.keys(&["echo JOB=$SLURM_JOB_ID ON=`hostname`", "Enter"]);
    let s = t.wait("the job's id and node from inside", LIMIT, |s| {
        s.contains(&format!("JOB={id} ON={node}"))
    });
    assert!(
        !s.contains("jobs 1"),
        "the dashboard is put away meanwhile:\n{s}"
    );
    t.keys(&["exit", "Enter"]);
    let s = t.wait("the dashboard back", LIMIT, |s| {
        s.contains(&format!("back from the shell in job {id}")) && row(s, id).is_some()
    });
    assert!(t.alternate_screen_on(), "{s}");
    t.keys(&["q"]);
    t.wait("the dashboard exits", LIMIT, |s| s.contains("EXITED:0"));
    run(&remote(), &["scancel", &id.to_string()]).await;
}

#[tokio::test]
async fn slurmdash_shell_runs_in_the_job_and_refuses_a_pending_one() {
    let tag = format!("shellcli-{}", rand_suffix());
    let (id, node) = running_job(&tag).await;
    let cfg = dev_config();
    let bin = env!("CARGO_BIN_EXE_slurmdash");
    let t = Tmux::spawn(
        format!("sdshell-{}", rand_suffix()),
        120,
        30,
        &format!(
            "{bin} --config {} shell {id}; echo EXITED:$?; sleep 60",
            cfg.display()
        ),
    );
    t.wait("the shell's prompt", LIMIT, |s| {
        s.trim_end().ends_with(['$', '#', '>'])
    });
    t.keys(&["echo JOB=$SLURM_JOB_ID ON=`hostname`; exit 3", "Enter"]);
    let s = t.wait("the shell's answer and its exit status", LIMIT, |s| {
        s.contains("EXITED:3")
    });
    assert!(s.contains(&format!("JOB={id} ON={node}")), "{s}");

    let r = remote();
    let pending = sbatch(
        &r,
        &[
            "-J",
            &format!("{tag}-held"),
            "--hold",
            "-t",
            "1",
            "--wrap",
            "true",
        ],
    )
    .await;
    let out = slurmdash_with(&cfg, &["shell", &pending.to_string()]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains(&format!("job {pending} is pending")),
        "{}",
        text(&out.stderr)
    );
    run(&r, &["scancel", &id.to_string(), &pending.to_string()]).await;
}
