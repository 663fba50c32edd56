//! Your own batch script on the dev cluster (issue 40): `slurmdash submit FILE --json -- ARGS`
//! with a script of fifteen `#SBATCH` lines, some slurmdash reads (partition, nodes, time,
//! CPUs, memory, mail, requeue, signal, name, tasks), some it passes to Slurm unchanged
//! (`--comment` with a quoted `#`, `--nice`, `--kill-on-invalid-dep`), some it leaves out
//! (`--output`, `--open-mode`); a `--set` wins over the script's memory and name. The job
//! runs, its main.out in the job directory layout shows the script's output and its
//! arguments, each one word and unexpanded; `scontrol show job` shows the passed options
//! took effect; the registry records the launch with the guard.

use crate::common;

use std::time::Duration;

use common::launch::LaunchSetup;
use common::*;

const RUNS: Duration = Duration::from_secs(180);

fn script() -> String {
    r#"#!/bin/bash
# A script as researchers keep them: options first, then the work.
#SBATCH --job-name=from-the-script
#SBATCH -p cpu
#SBATCH -N 1
#SBATCH -t 0:05:00
#SBATCH --cpus-per-task=1
#SBATCH --mem 50M
#SBATCH --ntasks 1
#SBATCH --mail-type=FAIL          # mail if it fails
#SBATCH --no-requeue
#SBATCH --signal=USR1@30
#SBATCH --comment="bring your own # script"
#SBATCH --nice=7
#SBATCH --kill-on-invalid-dep yes
#SBATCH --open-mode=append
#SBATCH --output=/tmp/not-here-%j.out

set -euo pipefail
#SBATCH --comment=after-the-first-command-is-not-read
echo "script ran on $(hostname) with $# args"
for a in "$@"; do printf 'arg<%s>\n' "$a"; done
echo "job dir ${SLURMDASH_JOB_DIR:-unset}"
sleep 20
echo done
"#
    .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn your_own_script_runs_with_its_directives_and_arguments_under_slurmdashs_care() {
    let r = remote();
    let setup = LaunchSetup::new("submit-script").await;
    let local = tempfile::tempdir().expect("tempdir");
    let path = local.path().join("train.sbatch");
    std::fs::write(&path, script()).expect("write the script");
    let name = format!("sdscript{}", std::process::id() % 100000);
    let name_set = format!("name={name}");
    let out = setup
        .submit_command()
        .arg(&path)
        .args(["--json", "--set", "mem=60M", "--set", &name_set, "--"])
        .args(["two words", "$HOME", "it's", "*"])
        .output()
        .expect("run slurmdash submit");
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let id = v["job_id"].as_u64().unwrap_or_else(|| panic!("{stdout}"));
    let _cancel = CancelOnDrop(id);
    let job_dir = v["job_dir"].as_str().expect("job_dir").to_string();
    assert!(job_dir.starts_with(&setup.root), "{stdout}");
    assert_eq!(v["name"], name, "{stdout}");
    // What it did with each option, said on stderr.
    assert!(
        stderr.contains("passed to Slurm unchanged: --comment=\"bring your own # script\" --nice=7 --kill-on-invalid-dep=yes"),
        "{stderr}"
    );
    assert!(
        stderr.contains("left out: --output=/tmp/not-here-%j.out"),
        "{stderr}"
    );

    wait_job_running(&r, id, "the script's job to run", RUNS).await;
    let show = run(&r, &["scontrol", "show", "job", &id.to_string()])
        .await
        .stdout_lossy();
    for want in [
        "Comment=bring your own # script",
        "Nice=7",
        "Partition=cpu",
        "Requeue=0",
        &format!("JobName={name}"),
        "MinMemoryNode=60M",
        "TimeLimit=00:05:00",
    ] {
        assert!(
            show.contains(want),
            "no {want} in scontrol show job:\n{show}"
        );
    }
    assert!(!show.contains("not-here"), "{show}");

    // The registry knows the launch, with its guard.
    let entries = setup.registry().load().expect("registry");
    let e = entries
        .iter()
        .find(|e| e.job_id == id)
        .unwrap_or_else(|| panic!("job {id} not in the registry: {entries:?}"));
    assert_eq!(e.job_dir, job_dir);
    assert!(
        e.guard.is_some(),
        "no guard recorded: {e:?}\nsubmit said: {stderr}"
    );

    let state = final_state(&r, id, RUNS).await;
    let logs = format!("{job_dir}/slurm-logs/{name}-{id}");
    if !state.starts_with("COMPLETED") {
        let err = run(&r, &["cat", &format!("{logs}/main.err")]).await;
        panic!("job {id} ended {state}; main.err:\n{}", err.stdout_lossy());
    }
    let main_out = cat(&r, &format!("{logs}/main.out")).await;
    assert!(main_out.contains("with 4 args"), "{main_out}");
    assert!(
        main_out.contains("arg<two words>\narg<$HOME>\narg<it's>\narg<*>\n"),
        "{main_out}"
    );
    assert!(
        main_out.contains(&format!("job dir {job_dir}")),
        "{main_out}"
    );
    assert!(main_out.contains("done"), "{main_out}");
    // The script is staged verbatim in the job directory.
    assert_eq!(
        cat(&r, &format!("{job_dir}/sbatch/recovered.sh")).await,
        script()
    );
}

/// `o` in the dashboard's launch form reads the same script from this machine: the form
/// says which options became fields, which pass to Slurm unchanged and which are left out;
/// ctrl-s submits it, and Slurm runs it with those options, as the batch step in the job
/// directory layout.
#[tokio::test(flavor = "multi_thread")]
async fn the_form_reads_your_script_with_o_and_submits_it() {
    let r = remote();
    let setup = LaunchSetup::new("form-script").await;
    let local = tempfile::tempdir().expect("tempdir");
    // A name with a space: the path is typed as it is, never split.
    let path = local.path().join("my train.sbatch");
    std::fs::write(&path, script()).expect("write the script");
    let state = setup.state.path().display().to_string();
    let ui = common::tmux::Tmux::start_with(
        &setup.config,
        &[],
        &[("SLURMDASH_STATE_DIR", state.as_str())],
    );
    ui.wait(
        "the dashboard",
        Duration::from_secs(60),
        common::tmux::refreshed,
    );
    ui.keys(&["n"]);
    ui.wait("the form", Duration::from_secs(30), |s| {
        s.contains("launch a job on")
    });
    ui.keys(&["o"]);
    ui.wait("the path prompt", Duration::from_secs(10), |s| {
        s.contains("read this file (on this machine")
    });
    ui.type_text(&path.display().to_string());
    ui.keys(&["Enter"]);
    let s = ui.wait(
        "the script read into the form",
        Duration::from_secs(30),
        |s| s.contains("my train.sbatch: runs as the batch step"),
    );
    let said = s.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "--comment=\"bring your own # script\"",
        "--nice=7",
        "left out: --output=/tmp/not-here-%j.out",
    ] {
        assert!(said.contains(want), "the form does not say `{want}`:\n{s}");
    }
    let name_row = s
        .lines()
        .find(|l| l.contains("job name"))
        .expect("name row");
    assert!(name_row.contains("from-the-script"), "{name_row}");
    ui.keys(&["C-s"]);
    let id = ui.submitted_job(Duration::from_secs(120));
    let _cancel = CancelOnDrop(id);
    ui.keys(&["q"]);

    wait_job_running(&r, id, "the script's job to run", RUNS).await;
    let show = run(&r, &["scontrol", "show", "job", &id.to_string()])
        .await
        .stdout_lossy();
    for want in [
        "Comment=bring your own # script",
        "Nice=7",
        "Partition=cpu",
        "Requeue=0",
        "JobName=from-the-script",
        "TimeLimit=00:05:00",
    ] {
        assert!(
            show.contains(want),
            "no {want} in scontrol show job:\n{show}"
        );
    }
    assert!(!show.contains("not-here"), "{show}");
    let entries = setup.registry().load().expect("registry");
    let e = entries
        .iter()
        .find(|e| e.job_id == id)
        .unwrap_or_else(|| panic!("job {id} not in the registry: {entries:?}"));
    let job_dir = e.job_dir.clone();
    let state = final_state(&r, id, RUNS).await;
    let logs = format!("{job_dir}/slurm-logs/from-the-script-{id}");
    if !state.starts_with("COMPLETED") {
        let err = run(&r, &["cat", &format!("{logs}/main.err")]).await;
        panic!("job {id} ended {state}; main.err:\n{}", err.stdout_lossy());
    }
    let main_out = cat(&r, &format!("{logs}/main.out")).await;
    assert!(main_out.contains("with 0 args"), "{main_out}");
    assert!(
        main_out.contains(&format!("job dir {job_dir}")),
        "{main_out}"
    );
    assert_eq!(
        cat(&r, &format!("{job_dir}/sbatch/recovered.sh")).await,
        script()
    );
}

/// A script slurmdash cannot take is refused on this machine, naming the line; nothing is
/// submitted and nothing recorded.
#[test]
fn a_script_with_a_node_range_is_refused_naming_its_line() {
    let setup = LaunchSetup::under("/lustre/fsw/sduser/unused".into());
    let local = tempfile::tempdir().expect("tempdir");
    let path = local.path().join("bad.sh");
    std::fs::write(&path, "#!/bin/sh\n#SBATCH -p cpu\n#SBATCH -N 2-4\necho x\n").expect("write");
    let out = setup
        .submit_command()
        .arg(&path)
        .output()
        .expect("run slurmdash submit");
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("line 3") && stderr.contains("-N 2-4"),
        "{stderr}"
    );
    assert!(setup.registry().load().expect("registry").is_empty());
}
