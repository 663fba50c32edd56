//! Job top (`t`) in the real binary, in a real terminal (tmux), against the dev cluster with
//! the default settings (the RPC budget on): a job whose batch script starts `sh -c` with
//! `sleep | cat` and a busy `yes` marked as a GPU user (the stand-in nvidia-smi reports the
//! processes whose environment holds SLURMDASH_FAKE_GPU_MIB); the pane shows the job's node,
//! the steps from `scontrol listpids`, `yes` under its parent shell with real CPU use and the
//! GPU memory against its pid; `r` reads again; the command log lists the read as "job top"
//! with its srun and its cost (2 slurmctld RPCs); esc closes the pane.

use crate::common;

use std::time::Duration;

use common::tmux::*;
use common::*;

/// The pane's row of process `pid`: its words after the frame.
fn proc_row(screen: &str, pid: u64) -> Option<Vec<String>> {
    let pid = pid.to_string();
    screen.lines().find_map(|l| {
        let words: Vec<String> = l
            .trim_matches(['│', ' '])
            .split_whitespace()
            .map(String::from)
            .collect();
        (words.first() == Some(&pid)).then_some(words)
    })
}

/// Where `pid`'s row is and how far its command is indented (the tree).
fn row_at(screen: &str, pid: u64) -> Option<(usize, usize)> {
    let pid = pid.to_string();
    screen.lines().enumerate().find_map(|(i, l)| {
        let t = l.trim_matches(['│', ' ']);
        (t.split_whitespace().next() == Some(pid.as_str())).then(|| {
            let col = l.find("└ ").map(|c| l[..c].chars().count()).unwrap_or(0);
            (i, col)
        })
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn t_shows_the_jobs_process_tree_with_cpu_and_gpu_memory_per_pid() {
    let r = remote();
    let dir = scratch(&r, "top").await;
    let name = format!("top{}", rand_suffix() % 100_000);
    put(
        &r,
        &format!("{dir}/job.sh"),
        "#!/bin/sh\nsh -c 'echo $$ > sh.pid; sleep 300 | cat & SLURMDASH_FAKE_GPU_MIB=1536 yes > /dev/null & echo $! > yes.pid; wait'\n",
    )
    .await;
    let id = sbatch(
        &r,
        &[
            "-J",
            &name,
            "-p",
            "short",
            "--gres=gpu:1",
            "-c",
            "1",
            "-t",
            "5",
            &format!("--chdir={dir}"),
            "-o",
            "/dev/null",
            &format!("{dir}/job.sh"),
        ],
    )
    .await;
    let _cancel = CancelOnDrop(id);
    wait_job_running(&r, id, "the top job", Duration::from_secs(120)).await;
    let node = job_nodes(&r, id).await;
    let (sh, yes) = wait_for("the job's pids", Duration::from_secs(60), || async {
        let sh = run(&r, &["cat", &format!("{dir}/sh.pid")]).await;
        let yes = run(&r, &["cat", &format!("{dir}/yes.pid")]).await;
        let (sh, yes) = (sh.stdout_lossy(), yes.stdout_lossy());
        match (sh.trim().parse::<u64>(), yes.trim().parse::<u64>()) {
            (Ok(a), Ok(b)) => Some((a, b)),
            _ => None,
        }
    })
    .await;

    let t = Tmux::start(&dev_config_default(), &[]);
    t.wait("the dashboard", Duration::from_secs(30), refreshed);
    t.filter(&name, Duration::from_secs(30));
    t.wait("the running job", Duration::from_secs(60), |s| {
        row(s, id).is_some_and(|l| l.contains("RUNNING") || l.contains(" R "))
    });

    // t: the pane, read at once (the user's read, never held by the budget).
    t.keys(&["t"]);
    let s = t.wait(
        "the job's processes in job top",
        Duration::from_secs(60),
        |s| s.contains("job top") && proc_row(s, yes).is_some() && proc_row(s, sh).is_some(),
    );
    eprintln!("job top on Slurm {}:\n{}", dev_slurm(), non_blank(&s));
    assert!(s.contains(&format!("job top · {id} {name}")), "{s}");
    // The job's node, with its steps from scontrol listpids.
    let node_line = s
        .lines()
        .find(|l| {
            l.trim_start_matches(['│', ' '])
                .starts_with(&format!("{node} "))
        })
        .unwrap_or_else(|| panic!("no line for node {node}:\n{s}"));
    assert!(
        node_line.contains("steps: scontrol listpids"),
        "{node_line}"
    );

    // yes: running, busy, in the batch step, right under its parent shell.
    let y = proc_row(&s, yes).unwrap_or_default();
    assert_eq!(y.get(1).map(String::as_str), Some("batch"), "{y:?}");
    assert!(y[2].starts_with('R'), "yes is running: {y:?}");
    let cpu: f64 = y[3].parse().unwrap_or(0.0);
    assert!(cpu >= 5.0, "yes is busy: {cpu} %CPU ({y:?})");
    assert_eq!(y.last().map(String::as_str), Some("yes"), "{y:?}");
    // The GPU memory the stand-in nvidia-smi reports for that pid, 1536 MiB.
    assert!(
        y.iter().any(|w| w.starts_with("gpu")) && y.iter().any(|w| w == "1.5G"),
        "GPU memory against yes's pid: {y:?}"
    );
    let (sh_at, sh_col) = row_at(&s, sh).unwrap_or_default();
    let (yes_at, yes_col) = row_at(&s, yes).unwrap_or_default();
    assert!(yes_at > sh_at, "yes comes after its parent shell:\n{s}");
    assert!(
        yes_col > sh_col,
        "yes is indented under its parent shell ({yes_col} vs {sh_col}):\n{s}"
    );
    // Only yes holds GPU memory; the shell holds none.
    let p = proc_row(&s, sh).unwrap_or_default();
    assert!(!p.iter().any(|w| w == "1.5G"), "{p:?}");
    // The probe's own step is not shown.
    assert!(!s.contains("slurmdash-top"), "{s}");

    // r reads again at once: the age starts over.
    tokio::time::sleep(Duration::from_secs(3)).await;
    t.keys(&["r"]);
    t.wait("a fresh read after r", Duration::from_secs(30), |s| {
        s.contains("refreshed 0s ago") || s.contains("refreshed 1s ago")
    });

    // esc closes it; the command log shows the reads as "job top", with their srun.
    t.keys(&["Escape"]);
    t.wait("the queue again", Duration::from_secs(5), |s| {
        !s.contains("job top ·")
    });
    t.keys(&["@"]);
    let s = t.wait("job top in the command log", Duration::from_secs(15), |s| {
        s.lines()
            .any(|l| l.contains("job top") && l.contains("srun") && l.contains(&id.to_string()))
    });
    let line = s
        .lines()
        .find(|l| l.contains("job top") && l.contains("srun"))
        .unwrap_or_default();
    assert!(line.contains("job top     0 "), "exit 0: {line}");
    // when, "job", "top", exit, took, in, CTLD, DBD: one srun, 2 slurmctld RPCs, in the ledger.
    let f: Vec<&str> = line.trim_start_matches('│').split_whitespace().collect();
    assert_eq!(
        f.get(6).copied(),
        Some("2"),
        "slurmctld RPCs of one read: {line}"
    );
    t.keys(&["Escape", "q"]);
    let s = t.wait("slurmdash to exit", Duration::from_secs(10), |s| {
        s.contains("EXITED:")
    });
    assert!(s.contains("EXITED:0"), "{s}");
}
