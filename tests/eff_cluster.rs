//! Efficiency of finished jobs against the dev cluster: a job that burns two cores and holds
//! about 300 MB gets a report whose figures are sacct's own; a TIMEOUT job's verdict asks
//! for more time and its suggestion prefills a longer limit; `slurmdash history` lists both.

use crate::common;

use std::time::Duration;

use common::*;
use slurmdash::efficiency::Efficiency;
use slurmdash::io::{history, ops};
use slurmdash::remote::Remote;
use slurmdash::slurm::model::JobId;

/// Submits `args` and waits for its end; a job ended by a node failure (other tests on the
/// shared dev cluster set nodes down) is submitted again, up to three times.
async fn submit_to_end(r: &dyn Remote, args: &[&str]) -> (u64, String) {
    for _ in 0..3 {
        let id = sbatch(r, args).await;
        let state = final_state(r, id, Duration::from_secs(240)).await;
        if state != "NODE_FAIL" {
            return (id, state);
        }
    }
    panic!("three node failures in a row for {args:?}");
}

/// sacct's own figures, asked plainly: (TotalCPU, CPUTimeRAW, largest MaxRSS in KiB).
async fn sacct_figures(r: &dyn Remote, id: u64) -> (String, u64, u64) {
    let out = run(
        r,
        &[
            "sacct",
            "-n",
            "-P",
            "--units=K",
            "-o",
            "JobID,TotalCPU,CPUTimeRAW,MaxRSS",
            "-j",
            &id.to_string(),
        ],
    )
    .await;
    let text = out.stdout_lossy();
    let mut total = String::new();
    let mut core = 0;
    let mut rss = 0u64;
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        if f[0] == id.to_string() {
            total = f[1].to_string();
            core = f[2].parse().unwrap_or(0);
        }
        let k = f[3].trim_end_matches('K');
        if let Ok(v) = k.parse::<f64>() {
            rss = rss.max(v as u64);
        }
    }
    (total, core, rss)
}

/// The report as the dashboard and `slurmdash eff` make it, once its steps' figures are in.
async fn report(r: &dyn Remote, id: u64) -> Efficiency {
    let parts = ops::partitions(r, T).await.expect("partitions");
    wait_for(
        &format!("job {id}'s steps in sacct"),
        Duration::from_secs(60),
        || async {
            let p = history::jobs(r, &[JobId::new(id)], T).await.expect("sacct");
            let u = p
                .items
                .into_iter()
                .find(|u| u.detail.id == Some(JobId::new(id)))?;
            (!u.steps.is_empty()).then(|| Efficiency::compute(&u, &parts))
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_job_and_a_timeout_are_reported_with_sacct_figures_and_a_verdict() {
    let r = remote();
    let dir = scratch(&r, "eff").await;
    let tag = format!("eff{}", common::tmux::rand_suffix() % 100_000);
    // Two busy processes for 40 s (so the 30 s sampling sees them) holding ~300 MB.
    let burn = format!("{tag}-burn");
    let script = "python3 -c 'b=bytearray(300*1024*1024)\nfor i in range(0,len(b),4096): b[i]=1\nimport time; time.sleep(42)' & \
                  timeout 40 sh -c 'while :; do :; done' & timeout 40 sh -c 'while :; do :; done' & wait";
    let busy_args = [
        "--chdir", &dir, "-J", &burn, "-c", "2", "--mem=1G", "-t", "5", "--wrap", script,
    ];
    let slow = format!("{tag}-slow");
    let tmo_args = [
        "--chdir",
        &dir,
        "-J",
        &slow,
        "-c",
        "1",
        "--mem=100M",
        "-t",
        "1",
        "--wrap",
        "sleep 600",
    ];
    let ((busy, busy_state), (tmo, tmo_state)) =
        tokio::join!(submit_to_end(&r, &busy_args), submit_to_end(&r, &tmo_args));
    assert_eq!(busy_state, "COMPLETED");
    assert_eq!(tmo_state, "TIMEOUT");

    let e = report(&r, busy).await;
    let (total, core, rss_k) = sacct_figures(&r, busy).await;
    println!(
        "busy job {busy}: {}\n  sacct TotalCPU {total}, CPUTimeRAW {core}, MaxRSS {rss_k}K",
        e.figures()
    );
    assert_eq!(e.cpus, Some(2));
    assert_eq!(e.mem_requested_bytes, Some(1 << 30));
    // The same numbers as sacct's.
    let total_s = slurmdash::slurm::model::SlurmDuration::parse(&total)
        .expect("TotalCPU")
        .known()
        .expect("TotalCPU known")
        .as_secs_f64();
    assert!((e.cpu_time_s.expect("cpu time") - total_s).abs() < 0.01);
    assert!((e.cpu_efficiency.expect("cpu eff") - total_s / core as f64).abs() < 0.001);
    let peak = e.mem_peak_bytes.expect("a memory peak after 40 s");
    assert!(peak.abs_diff(rss_k * 1024) <= 1024, "{peak} vs {rss_k}K");
    assert!((250..400).contains(&(peak >> 20)), "~300 MB held: {peak}");
    assert!(e.verdict.contains("asked 1G, peaked"), "{}", e.verdict);
    assert_eq!(e.triage.as_deref(), Some("COMPLETE"));

    let t = report(&r, tmo).await;
    println!("timeout job {tmo}: {}", t.verdict);
    assert_eq!(t.state, "TIMEOUT");
    assert_eq!(t.triage.as_deref(), Some("ERR_TIMEOUT"));
    assert!(
        t.verdict.starts_with("ran out of time at 1:00: 2m"),
        "{}",
        t.verdict
    );
    assert_eq!(t.suggestion.time_s, Some(120), "a longer limit to prefill");

    // The command line prints the same.
    let out = slurmdash(&["eff", &busy.to_string(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    for k in [
        "id",
        "name",
        "state",
        "exit_code",
        "elapsed_s",
        "time_limit_s",
        "cpus",
        "cpu_efficiency",
        "mem_requested_bytes",
        "mem_peak_bytes",
        "mem_efficiency",
        "gpus",
        "triage",
        "verdict",
    ] {
        assert!(v.get(k).is_some(), "key {k} in {v}");
    }
    assert_eq!(v["mem_peak_bytes"].as_u64(), Some(peak));
    let out = slurmdash(&["eff", &tmo.to_string()]);
    assert!(
        text(&out.stdout).contains("ran out of time at 1:00"),
        "{}",
        text(&out.stdout)
    );

    // `history` lists both; slurmdbd's end-time selection lags `sacct -j` a little.
    let listed = wait_for(
        "both jobs in slurmdash history",
        Duration::from_secs(60),
        || async {
            let out = slurmdash(&["history", "--days", "1", "--json"]);
            assert!(out.status.success(), "{}", text(&out.stderr));
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            let ids: Vec<String> = v
                .as_array()
                .expect("array")
                .iter()
                .filter_map(|j| j["id"].as_str().map(String::from))
                .collect();
            (ids.contains(&busy.to_string()) && ids.contains(&tmo.to_string())).then_some(v)
        },
    )
    .await;
    let row = listed
        .as_array()
        .expect("array")
        .iter()
        .find(|j| j["id"].as_str() == Some(busy.to_string().as_str()))
        .expect("busy row");
    assert_eq!(row["mem_peak_bytes"].as_u64(), Some(peak));
    let out = slurmdash(&["history", "--days", "1"]);
    let table = text(&out.stdout);
    assert!(table.contains(&burn) && table.contains(&slow), "{table}");
}

/// `L` on a launch that ran out of time opens the form with a longer time limit, from the
/// spec staged in its job directory and the job's sacct figures. The job rewrote that spec
/// to export one more secret of yours: the form keeps the names this laptop recorded, and
/// warns that the spec is not the one launched.
#[tokio::test(flavor = "multi_thread")]
async fn relaunch_after_a_timeout_prefills_a_longer_time() {
    let r = remote();
    let tag = format!("relaunch{}", common::tmux::rand_suffix() % 100_000);
    let mut launched = None;
    let mut failed = Vec::new();
    // Other tests on the shared cluster set nodes down: after a node failure, launch again
    // (without requeue, under a new name, recorded in a registry of its own, so that neither
    // Slurm nor the dashboard's automatic retry runs the failed one again).
    for attempt in 0..3 {
        let state = tempfile::tempdir().expect("tempdir");
        let state_dir = state.path().display().to_string();
        let name = format!("{tag}-{attempt}");
        let out = slurmdash_env(
            &dev_config(),
            &[
                "submit",
                "--set",
                &format!("name={name}"),
                "--set",
                "time=1m",
                "--set",
                "gpus=0",
                "--set",
                "cpus_per_task=1",
                "--set",
                "mem=100M",
                "--set",
                "requeue=false",
                "--",
                "sh",
                "-c",
                REWRITES_ITS_SPEC,
            ],
            &[("SLURMDASH_STATE_DIR", state_dir.as_str())],
        );
        assert!(out.status.success(), "submit: {}", text(&out.stderr));
        let id: u64 = text(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("Submitted job "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("job id in {}", text(&out.stdout)));
        match final_state(&r, id, Duration::from_secs(240)).await.as_str() {
            "NODE_FAIL" => failed.push(id),
            s => {
                assert_eq!(s, "TIMEOUT");
                launched = Some((id, state));
                break;
            }
        }
    }
    let (id, state) = launched.expect("a launch that ran into its time limit");
    let dir = run(&r, &["scontrol", "show", "job", &id.to_string()]).await;
    let spec_path = dir
        .stdout_lossy()
        .split_whitespace()
        .find_map(|w| w.strip_prefix("StdOut="))
        .and_then(|o| o.split("/slurm-logs/").next())
        .map(|d| format!("{d}/specs/launch.json"))
        .unwrap_or_else(|| panic!("no StdOut for {id}: {}", dir.stdout_lossy()));
    let rewritten = run(&r, &["cat", &spec_path]).await.stdout_lossy();
    assert!(
        rewritten.contains("\"secrets\":[\"AWS_SECRET_ACCESS_KEY\"]"),
        "the job did not rewrite its spec: {rewritten}"
    );
    let state_dir = state.path().display().to_string();
    let env = [("SLURMDASH_STATE_DIR", state_dir.as_str())];

    let ui = common::tmux::Tmux::start_with(&dev_config(), &[], &env);
    ui.wait("the launch in the queue", Duration::from_secs(60), |s| {
        common::tmux::row(s, id).is_some_and(|r| r.contains("TIMEOUT"))
    });
    // By its id: its name also matches its retry guard's (`sdguard-NAME`).
    ui.filter(&id.to_string(), Duration::from_secs(30));
    ui.wait(
        "its Efficiency lines and verdict",
        Duration::from_secs(60),
        |s| s.contains("ran out of time at 1:00") && s.contains("Efficiency"),
    );
    ui.keys(&["L"]);
    let s = ui.wait(
        "the form prefilled with a longer time",
        Duration::from_secs(60),
        |s| {
            s.contains("launch a job on")
                && s.contains(&format!("relaunch of {id}: time 2m (was 1m)"))
        },
    );
    let time_row = s
        .lines()
        .find(|l| l.contains("time limit"))
        .expect("time limit row");
    assert!(time_row.contains(" 2m "), "{time_row}");
    assert!(
        s.contains("sh -c \"sed -i 's/"),
        "the command comes from the staged spec:\n{s}"
    );
    let secrets_row = s
        .lines()
        .find(|l| l.contains("secrets (names)"))
        .expect("secrets row");
    assert!(
        !secrets_row.contains("AWS_SECRET_ACCESS_KEY"),
        "a secret name from the rewritten spec: {secrets_row}"
    );
    // The spec is not the one launched (by the hash the laptop recorded): the form says so.
    assert!(
        s.contains("⚠ the job's specs/launch.json changed since it was launched"),
        "no warning of the rewritten spec:\n{s}"
    );
    ui.keys(&["Escape", "q"]);
}

/// What the relaunched job runs: it adds a secret's name to its own staged spec, then
/// sleeps past its time limit.
const REWRITES_ITS_SPEC: &str = r#"sed -i 's/"secrets":\[\]/"secrets":["AWS_SECRET_ACCESS_KEY"]/' "$SLURMDASH_JOB_DIR/specs/launch.json"; exec sleep 600"#;

/// A job slurmdash did not launch: its batch script is recovered while slurmctld knows it
/// (the command of a `--wrap` script), and after it left, `L` says plainly what is missing.
#[tokio::test(flavor = "multi_thread")]
async fn recovering_a_job_slurmdash_did_not_launch() {
    use slurmdash::slurm::eff::recover::wrapped_command;
    let r = remote();
    let dir = scratch(&r, "recover").await;
    let name = format!("recover{}", common::tmux::rand_suffix() % 100_000);
    let id = sbatch(
        &r,
        &[
            "--chdir",
            &dir,
            "-J",
            &name,
            "-c",
            "1",
            "--mem=60M",
            "-t",
            "3",
            "--wrap",
            "sleep 120",
        ],
    )
    .await;
    let job = JobId::new(id);
    // While slurmctld knows it (pending or running), scontrol gives the script.
    // (Until slurmdbd has its record, sacct may show an older job of the same id from an
    // earlier life of the dev cluster's database.)
    let rec = wait_for("the job in sacct", Duration::from_secs(60), || async {
        history::recover(&r, &job, T, None)
            .await
            .ok()
            .filter(|rec| rec.used.detail.name == name)
    })
    .await;
    assert_eq!(rec.script_from, "scontrol write batch_script");
    assert_eq!(
        rec.script.as_deref().and_then(wrapped_command).as_deref(),
        Some("sleep 120")
    );
    assert_eq!(rec.used.detail.name, name);
    // Whose it is: the job's user and you on the cluster are the same (no warning in the
    // form); as the other test user, the same job is someone else's.
    assert_eq!(rec.me.as_deref(), Some("sduser"));
    assert_eq!(rec.used.detail.user.as_deref(), Some("sduser"));
    let other = remote_as(OTHER_ALIAS);
    let theirs = history::recover(&other, &job, T, None)
        .await
        .expect("recover as the other user");
    assert_eq!(theirs.me.as_deref(), Some(OTHER_USER));
    assert_eq!(theirs.used.detail.user.as_deref(), Some("sduser"));
    run(&r, &["scancel", &id.to_string()]).await;
    // Once slurmctld forgot it (MinJobAge), only sacct -B could have it, and the dev cluster
    // does not store scripts: said so.
    let rec = wait_for(
        "slurmctld to forget the job",
        Duration::from_secs(120),
        || async {
            let rec = history::recover(&r, &job, T, None).await.expect("recover");
            rec.script.is_none().then_some(rec)
        },
    )
    .await;
    assert!(
        rec.script_from.contains("does not store batch scripts"),
        "{}",
        rec.script_from
    );
}

/// The multi-line batch script a user submits with plain `sbatch script.sh`.
const USER_SCRIPT: &str = r#"#!/bin/bash
#SBATCH -J NAME
#SBATCH -p short
#SBATCH -c 2
#SBATCH --mem=100M
#SBATCH --time=3
#SBATCH --output=OUT
#SBATCH --no-requeue

# Several steps, quotes and expansions: it must run as written.
echo "cpus=$SLURM_CPUS_PER_TASK args=$#"
for i in 1 2 3; do
  echo "step $i of 'the' \"script\""
done
srun -n 1 sh -c 'echo "in a step: $SLURM_STEP_ID"'
echo script-finished
"#;

/// A job submitted with plain sbatch from a multi-line script, finished, is relaunched through
/// the dashboard's App and real workers (`L` asks for `Cmd::Recover`; the form opens with the
/// recovered script as its command and the script's options; submitting it stages the
/// script): the new job prints what the first printed and runs with the same options.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_submitted_from_a_multi_line_script_is_relaunched_from_its_own_script() {
    use common::app_driver::Driver;
    use slurmdash::action::Cmd;
    use slurmdash::app::LaunchContext;
    use std::sync::Arc;

    let state = tempfile::tempdir().unwrap();
    let remote: Arc<dyn Remote> = Arc::new(remote());
    let r = remote.as_ref();
    let dir = scratch(r, "rescript").await;
    let name = format!("rescript{}", common::tmux::rand_suffix() % 100_000);
    let path = format!("{dir}/train.sh");
    let text = USER_SCRIPT
        .replace("NAME", &name)
        .replace("OUT", &format!("{dir}/first-%j.out"));
    put(r, &path, &text).await;
    let (first, state_end) = loop {
        let id = sbatch(r, &["--chdir", &dir, &path]).await;
        match final_state(r, id, Duration::from_secs(240)).await.as_str() {
            "NODE_FAIL" => continue,
            s => break (id, s.to_string()),
        }
    };
    assert_eq!(state_end, "COMPLETED");
    let first_out = run(r, &["cat", &format!("{dir}/first-{first}.out")])
        .await
        .stdout_lossy()
        .to_string();
    assert!(first_out.contains("script-finished"), "{first_out}");

    // At once (slurmctld forgets a finished job after MinJobAge; the dev cluster does not
    // store scripts in slurmdbd): what `L` asks for.
    // The launch is recorded in a registry of this test's own.
    let mut d = Driver::with_registry(&remote, state.path());
    d.app.clusters[0].launch = LaunchContext {
        defaults: slurmdash::launch::LaunchSpec::default(),
        results_root: Some(format!("{dir}/results")),
        ..LaunchContext::default()
    };
    d.hub.run(Cmd::Recover(JobId::new(first)));
    let (start, limit) = (std::time::Instant::now(), Duration::from_secs(240));
    let new_id = d
        .submit_form(start, limit, |app| {
            let note = app.note.clone().unwrap_or_default();
            println!("note: {note}");
            let f = app.overlays.form.as_ref().unwrap();
            println!(
                "form: time {} mem {} cpus {} extra {:?}",
                f.spec.time, f.spec.mem, f.spec.cpus_per_task, f.spec.extra_sbatch
            );
            assert!(
                note.contains(
                    "-line batch script from scontrol write batch_script runs as the command"
                ),
                "{note}"
            );
            assert!(note.contains("--output="), "{note}");
            assert_eq!(
                f.spec.batch_script_summary().as_deref(),
                Some("the job's recovered batch script: 16 lines (type a command to replace it)")
            );
            assert_eq!(f.spec.batch_script, text);
            assert!(!f.spec.requeue);
        })
        .await;
    let log = d
        .follow_log(start, limit, |t| t.contains("script-finished"))
        .await;
    d.hub.stop();
    let new_id: u64 = new_id.parse().unwrap();
    println!("job {first} printed:\n{first_out}job {new_id} (relaunched) printed:\n{log}");
    // The same script ran: the same lines, in order (the step id may differ).
    let lines = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect()
    };
    assert_eq!(lines(&log), lines(&first_out));
    // With the recovered options: sacct of both jobs.
    let opts = |id: u64| {
        let r = remote.clone();
        async move {
            sacct_fields(r.as_ref(), id, "Partition,AllocCPUS,ReqMem,Timelimit")
                .await
                .stdout_lossy()
                .trim()
                .to_string()
        }
    };
    // slurmdbd completes a job's record a little after it ends (22.05 first shows no
    // partition and a placeholder memory): both are asked again until they have theirs.
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let (mut a, mut b) = (opts(first).await, opts(new_id).await);
    while !(a.starts_with("short|") && b.starts_with("short|"))
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_secs(1)).await;
        (a, b) = (opts(first).await, opts(new_id).await);
    }
    println!("options: {a} / {b}");
    assert_eq!(a, b);
    assert!(a.starts_with("short|2|100M|00:03:00"), "{a}");
}
