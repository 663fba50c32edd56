//! Launching through `slurmdash submit` on the dev cluster over real SSH: the TAO job
//! directory, logs, registry, rejections that submit nothing, --test-only, and secrets that
//! never appear in a file, the registry or a command line on the login node.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::launch::LaunchSetup;
use common::*;

const LIMIT: Duration = Duration::from_secs(120);

async fn setup(tag: &str) -> LaunchSetup {
    LaunchSetup::new(&format!("launch-{tag}")).await
}

/// `slurmdash submit` with `--set` before each of `sets`, then `rest` (`--` and the command),
/// with `env` for slurmdash.
fn submit(s: &LaunchSetup, sets: &[&str], rest: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = s.submit_command();
    for kv in sets {
        c.arg("--set").arg(kv);
    }
    c.args(rest)
        .envs(env.iter().copied())
        .output()
        .expect("run slurmdash submit")
}

/// What a submission that succeeded printed (the test fails with all it said otherwise).
fn submitted(out: &Output) -> String {
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "submit failed: {stdout}{}",
        text(&out.stderr)
    );
    stdout
}

/// All a submission said, stdout then stderr.
fn said(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

#[tokio::test]
async fn submit_runs_the_job_in_the_tao_layout_and_records_it() {
    let s = setup("cli").await;
    let out = submit(
        &s,
        &["name=cli-hello", "gpus=1", "cpus_per_task=1", "time=2m", "env=GREETING=hi there"],
        &["--", "bash", "-c", "echo \"$GREETING from $SLURM_JOB_ID on $NUM_GPU_PER_NODE gpu, results $TAO_API_RESULTS_DIR/$TAO_JOB_ID\"; pwd"],
        &[],
    );
    let stdout = submitted(&out);
    let id = printed_job_id(&stdout);
    let job_dir = printed_field(&stdout, "job dir:").to_string();
    assert!(job_dir.starts_with(&format!("{}/", s.root)), "{job_dir}");
    let local_id = job_dir.rsplit('/').next().expect("local id").to_string();
    let main_out = printed_field(&stdout, "stdout:").to_string();
    assert_eq!(
        main_out,
        format!("{job_dir}/slurm-logs/cli-hello-{id}/main.out")
    );
    assert_eq!(
        printed_field(&stdout, "stderr:"),
        format!("{job_dir}/slurm-logs/cli-hello-{id}/main.err")
    );

    assert_eq!(final_state(&remote(), id, LIMIT).await, "COMPLETED");
    assert_eq!(
        cat(&remote(), &main_out).await,
        format!("hi there from {id} on 1 gpu, results {job_dir}\n{job_dir}\n")
    );
    // The layout TAO tooling expects.
    let listing = run(&remote(), &["find", &job_dir, "-type", "f"])
        .await
        .stdout_lossy();
    for f in [
        format!("{job_dir}/sbatch/job_{local_id}.sbatch"),
        format!("{job_dir}/specs/launch.json"),
        format!("{job_dir}/env/env.json"),
        format!("{job_dir}/meta/request.json"),
        format!("{job_dir}/meta/registry.json"),
    ] {
        assert!(
            listing.lines().any(|l| l == f),
            "{f} missing in:\n{listing}"
        );
    }
    let script = cat(
        &remote(),
        &format!("{job_dir}/sbatch/job_{local_id}.sbatch"),
    )
    .await;
    assert!(
        script.contains("#SBATCH --requeue\n") && script.contains("#SBATCH --account=research\n")
    );
    assert!(script.contains("#SBATCH --time=2:00\n"), "{script}");

    // Private by default: only the user can enter the job directory or its parts.
    for d in [
        job_dir.clone(),
        format!("{job_dir}/env"),
        format!("{job_dir}/slurm-logs"),
    ] {
        let st = run(&remote(), &["stat", "-c", "%a", &d]).await;
        assert_eq!(st.stdout_lossy().trim(), "700", "mode of {d}");
    }
    // Recorded locally and on the cluster, the same record.
    let entries = s.registry().load().expect("registry loads");
    let e = entries
        .iter()
        .find(|e| e.local_id == local_id)
        .expect("registry entry");
    assert_eq!(
        (e.job_id, e.cluster.as_str(), e.name.as_str()),
        (id, "dev", "cli-hello")
    );
    assert_eq!(e.attempts.len(), 1);
    let remote_meta: slurmdash::registry::Entry =
        serde_json::from_str(&cat(&remote(), &format!("{job_dir}/meta/registry.json")).await)
            .expect("meta json");
    assert_eq!(&remote_meta, e);
}

/// Launches whose names start with `tag` that Slurm has seen in the last minutes.
async fn sacct_names(tag: &str) -> Vec<String> {
    let out = run(
        &remote(),
        &[
            "sacct",
            "-X",
            "-n",
            "-P",
            "-a",
            "-S",
            "now-10minutes",
            "-o",
            "JobName",
        ],
    )
    .await;
    assert!(out.success(), "sacct: {}", out.stderr_lossy());
    out.stdout_lossy()
        .lines()
        .filter(|l| l.starts_with(tag))
        .map(str::to_string)
        .collect()
}

/// The largest node of `partition` as sinfo reports it: (CPUs, MiB, GPUs) maxima per node,
/// and how many nodes the partition has.
struct Largest {
    cpus: u32,
    mem_mb: u64,
    gpus: u32,
    nodes: u32,
}

/// The partitions other than `except` with a node of at least `cpus` CPUs (sinfo).
async fn partitions_with_cpus(cpus: u32, except: &str) -> Vec<String> {
    let out = run(
        &remote(),
        &["sinfo", "--noheader", "--Node", "--format=%P|%c"],
    )
    .await;
    assert!(out.success(), "sinfo: {}", out.stderr_lossy());
    let mut parts: Vec<String> = out
        .stdout_lossy()
        .lines()
        .filter_map(|l| l.split_once('|'))
        .filter(|(_, c)| c.trim().parse::<u32>().is_ok_and(|c| c >= cpus))
        .map(|(p, _)| p.trim_end_matches('*').to_string())
        .filter(|p| p != except)
        .collect();
    parts.sort();
    parts.dedup();
    parts
}

async fn largest_node(partition: &str) -> Largest {
    let out = run(
        &remote(),
        &[
            "sinfo",
            "--noheader",
            "--Node",
            "--partition",
            partition,
            "--format=%N|%c|%m|%G",
        ],
    )
    .await;
    assert!(out.success(), "sinfo: {}", out.stderr_lossy());
    let text = out.stdout_lossy();
    let mut l = Largest {
        cpus: 0,
        mem_mb: 0,
        gpus: 0,
        nodes: 0,
    };
    for line in text.lines().filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split('|').collect();
        assert_eq!(f.len(), 4, "{line}");
        l.cpus = l.cpus.max(f[1].parse().expect("cpus"));
        l.mem_mb = l.mem_mb.max(f[2].parse().expect("memory"));
        l.gpus = l.gpus.max(slurmdash::slurm::model::gpus_in_gres_list(f[3]));
        l.nodes += 1;
    }
    assert!(l.nodes > 0, "partition {partition} has no nodes: {text}");
    l
}

#[tokio::test]
async fn each_rejection_names_the_problem_and_submits_nothing() {
    let s = setup("reject").await;
    let tag = format!("rej{}", std::process::id());
    let missing = format!("{}/no-such-dataset", s.root);
    // The dev cluster's login node is this machine: a file in a directory only this user
    // can search stands for a file that exists on the laptop only.
    let private = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(
        private.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .expect("chmod");
    let laptop_only = private.path().join("train.json");
    std::fs::write(&laptop_only, b"{}").expect("write");
    let missing_msg = format!("input path not found on slurmdash-dev: {missing}");
    // The limits come from what sinfo reports for the partition the launch uses.
    let big = largest_node("short").await;
    let (cpus, mem, gpus, nodes) = (big.cpus + 1, big.mem_mb + 1, big.gpus + 1, big.nodes);
    let cpu_msg = format!(
        "{cpus} CPUs per task, but the largest node in short has {}",
        big.cpus
    );
    let mem_msg = format!("{mem}M memory per node, but the largest node in short has");
    let gpu_msg = format!(
        "{gpus} GPUs per node, but the largest node in short has {}",
        big.gpus
    );
    let many_msg = format!("partition short has {nodes} node(s)");
    // Too many CPUs for partition cpu's nodes: the refusal names the partitions whose nodes
    // hold the request (from sinfo: every other partition with a node that large).
    let cpu_part = largest_node("cpu").await;
    let want_cpus = cpu_part.cpus + 1;
    let mut holders = partitions_with_cpus(want_cpus, "cpu").await;
    holders.sort();
    let where_msg = match holders.as_slice() {
        [] => "no partition of this cluster has a node that holds it".to_string(),
        [one] => format!("pick partition {one}, whose nodes hold it"),
        [first @ .., last] => format!(
            "pick partition {} or {last}, whose nodes hold it",
            first.join(", ")
        ),
    };
    let elsewhere_msg = format!(
        "{want_cpus} CPUs per task, but the largest node in cpu has {}: ask for at most {} or {where_msg}",
        cpu_part.cpus, cpu_part.cpus
    );
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["time=1h".into()],
            "over partition short's MaxTime 30:00",
        ),
        (vec![format!("cpus_per_task={cpus}")], &cpu_msg),
        (
            vec!["partition=cpu".into(), format!("cpus_per_task={want_cpus}")],
            &elsewhere_msg,
        ),
        (vec![format!("mem={mem}M")], &mem_msg),
        (
            vec![
                format!("gpus={gpus}"),
                format!("max_gpus_per_node={}", gpus + 1),
            ],
            &gpu_msg,
        ),
        (
            vec![
                format!("gpus={}", big.gpus.max(1) * (nodes + 1)),
                format!("max_gpus_per_node={}", big.gpus.max(1)),
            ],
            &many_msg,
        ),
        (
            vec!["partition=gpu-xl".into()],
            "unknown partition `gpu-xl`; this cluster has: ",
        ),
        (vec!["account=physics".into()], "unknown account `physics`"),
        (vec![format!("inputs={missing}")], &missing_msg),
        (
            vec![format!("inputs={}", laptop_only.display())],
            "exists on this machine only",
        ),
        (
            vec!["inputs=file:///home/me/data".into()],
            "file:// path on this machine",
        ),
    ];
    for (i, (sets, want)) in cases.iter().enumerate() {
        let name = format!("name={tag}-{i}");
        let mut args: Vec<&str> = vec![&name, "cpus_per_task=1", "gpus=0", "time=1m"];
        args.extend(sets.iter().map(String::as_str));
        let out = submit(&s, &args, &["--", "true"], &[]);
        let all = said(&out);
        assert!(!out.status.success(), "case {i} was accepted: {all}");
        assert!(all.contains(want), "case {i}: want {want:?} in:\n{all}");
        assert!(!all.contains("Submitted job"), "{all}");
    }
    // Nothing reached Slurm, the results root or the registry.
    assert!(sacct_names(&tag).await.is_empty());
    let ls = run(&remote(), &["ls", "-A", &s.root]).await;
    assert!(
        ls.stdout_lossy().trim().is_empty(),
        "job dirs created: {}",
        ls.stdout_lossy()
    );
    assert!(s.registry().load().expect("registry").is_empty());
}

#[tokio::test]
async fn test_only_shows_the_estimate_and_queues_nothing() {
    let s = setup("testonly").await;
    let tag = format!("to{}", std::process::id());
    let name = format!("name={tag}");
    let out = submit(
        &s,
        &[&name, "gpus=1", "cpus_per_task=1", "time=1m"],
        &["--test-only", "--", "true"],
        &[],
    );
    let stdout = submitted(&out);
    assert!(stdout.starts_with("estimated start 20"), "{stdout}");
    // The node sbatch names is one of the partition's (whatever the machine is called).
    let nodes = run(
        &remote(),
        &[
            "sinfo",
            "--noheader",
            "--Node",
            "--partition",
            "short",
            "--format=%N",
        ],
    )
    .await;
    let on = stdout
        .split(" on ")
        .nth(1)
        .and_then(|r| r.split(" in partition short").next())
        .unwrap_or_else(|| panic!("no node in {stdout}"));
    assert!(
        nodes.stdout_lossy().lines().any(|n| n.trim() == on),
        "{on} is not a node of short: {stdout}"
    );
    assert!(s.registry().load().expect("registry").is_empty());
    let ls = run(&remote(), &["ls", "-A", &s.root]).await;
    assert!(ls.stdout_lossy().trim().is_empty());
}

#[tokio::test]
async fn a_secret_reaches_the_job_but_no_file_registry_or_command_line() {
    let s = setup("secret").await;
    let secret = format!(
        "hf_SeCrEt{}x{}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or(7)
    );
    // Sample every process's argv on the login node while submitting.
    let ps_file = format!("{}/ps-samples", s.root.trim_end_matches("/results"));
    let sampler = Command::new("ssh")
        .arg("-F")
        .arg(ssh_config())
        .arg("slurmdash-dev")
        // For sh whatever the login shell (tcsh on 24.11): the script in single quotes,
        // which every shell passes on as it is.
        .arg(format!(
            "sh -c 'end=$(($(date +%s)+25)); while [ ! -e {ps_file}.stop ] && [ $(date +%s) -lt $end ]; do ps -eo args; done > {ps_file}'"
        ))
        .stdin(Stdio::null())
        .spawn()
        .expect("start the ps sampler");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let out = submit(
        &s,
        &[
            "name=secret-job",
            "gpus=1",
            "cpus_per_task=1",
            "time=1m",
            "secrets=HF_TOKEN",
        ],
        &[
            "--",
            "bash",
            "-c",
            "test -n \"$HF_TOKEN\" && echo token-present len=${#HF_TOKEN}",
        ],
        &[("HF_TOKEN", &secret)],
    );
    let stop = run(&remote(), &["touch", &format!("{ps_file}.stop")]).await;
    assert!(stop.success());
    let stdout = submitted(&out);
    assert!(!stdout.contains(&secret) && !text(&out.stderr).contains(&secret));
    let id = printed_job_id(&stdout);
    let job_dir = printed_field(&stdout, "job dir:").to_string();
    assert_eq!(final_state(&remote(), id, LIMIT).await, "COMPLETED");
    // It reached the job...
    assert_eq!(
        cat(&remote(), printed_field(&stdout, "stdout:")).await,
        format!("token-present len={}\n", secret.len())
    );
    let waited = tokio::task::spawn_blocking(move || sampler.wait_with_output()).await;
    assert!(
        waited.is_ok_and(|w| w.is_ok()),
        "the ps sampler did not finish"
    );
    // ...and nowhere else: files under the job dir, the registry, any process's argv.
    let grep = run(&remote(), &["grep", "-r", "-l", "-F", &secret, &job_dir]).await;
    assert_eq!(
        grep.code,
        Some(1),
        "secret found in: {}",
        grep.stdout_lossy()
    );
    let env_json = cat(&remote(), &format!("{job_dir}/env/env.json")).await;
    assert!(
        env_json.contains("\"secrets\":[\"HF_TOKEN\"]"),
        "the name (only) is kept for retries: {env_json}"
    );
    for entry in std::fs::read_dir(s.state.path()).expect("state dir") {
        let p = entry.expect("entry").path();
        let body = std::fs::read(&p).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&body).contains(&secret),
            "secret in {}",
            p.display()
        );
    }
    let samples = cat(&remote(), &ps_file).await;
    // Every command slurmdash runs is a framed sh program whose argv travels base64-encoded
    // on the command line (remote/frame.rs): read those programs too, or a secret put in an
    // argv would hide there.
    let programs = framed_programs(&samples);
    assert!(
        programs
            .iter()
            .any(|p| p.contains("sbatch") || p.contains("scontrol")),
        "the sampler did not see the submission's commands; samples were too sparse ({} lines, {} framed programs)",
        samples.lines().count(),
        programs.len()
    );
    assert!(
        !samples.contains(&secret) && !programs.iter().any(|p| p.contains(&secret)),
        "secret seen in a process argv on the login node"
    );
}

/// The sh programs in `ps` samples of framed commands (`printf %s BASE64 | base64 -d`),
/// decoded.
fn framed_programs(samples: &str) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    for l in samples.lines() {
        if let Some(b64) = l
            .split("printf %s ")
            .nth(1)
            .and_then(|r| r.split(" | base64 -d").next())
        {
            seen.insert(b64.to_string());
        }
    }
    seen.into_iter()
        .filter_map(|b64| {
            let mut child = Command::new("base64")
                .arg("-d")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .ok()?;
            use std::io::Write;
            child.stdin.take()?.write_all(b64.as_bytes()).ok()?;
            let out = child.wait_with_output().ok()?;
            Some(String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .collect()
}

#[tokio::test]
async fn registry_jobs_are_found_again_through_sacct_after_leaving_squeue() {
    let s = setup("reattach").await;
    let out = submit(
        &s,
        &["name=reattach", "gpus=1", "cpus_per_task=1", "time=1m"],
        &["--", "true"],
        &[],
    );
    let stdout = submitted(&out);
    let id = printed_job_id(&stdout);
    assert_eq!(final_state(&remote(), id, LIMIT).await, "COMPLETED");
    // Gone from squeue (MinJobAge) but the registry still finds it, with its final state.
    let r = remote();
    wait_for(
        "the job to leave squeue",
        Duration::from_secs(60),
        || async {
            let out = run(&r, &["squeue", "-h", "-j", &id.to_string()]).await;
            (!out.stdout_lossy().contains(&id.to_string())).then_some(())
        },
    )
    .await;
    let entries = s.registry().load().expect("registry");
    let jobs = slurmdash::io::fetch::registry_jobs(&r, "dev", &entries, T)
        .await
        .expect("sacct");
    let job = jobs
        .iter()
        .find(|j| j.id.as_str() == id.to_string())
        .expect("registry job from sacct");
    assert_eq!(job.state, slurmdash::slurm::model::JobState::Completed);
    assert_eq!(job.name, "reattach", "{jobs:?}");
    assert!(
        slurmdash::io::fetch::registry_jobs(&r, "other", &entries, T)
            .await
            .expect("sacct")
            .is_empty()
    );
}

#[tokio::test]
async fn hostile_paths_and_values_stay_single_arguments() {
    // Input paths with spaces, quotes and `$(...)` are tested as paths, never run.
    let s = setup("hostile").await;
    let r = remote();
    let base = s.root.trim_end_matches("/results").to_string();
    let odd = format!("{base}/data set 'q' \"dq\" $(touch {base}/pwned)");
    let mk = run(&r, &["mkdir", "-p", &odd]).await;
    assert!(mk.success());
    let inputs = format!("inputs=lustre://{odd}");
    let out = submit(
        &s,
        &["name=hostile", "gpus=1", "time=1m", &inputs],
        &["--dry-run", "--", "echo", "a b; $(id)"],
        &[],
    );
    let all = said(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("dry run: valid; nothing was submitted"),
        "{all}"
    );
    assert!(all.contains("bash -c 'echo '\\''a b; $(id)'\\'''"), "{all}");
    let pwned = run(&r, &["test", "-e", &format!("{base}/pwned")]).await;
    assert_eq!(pwned.code, Some(1), "a path was run through a shell");
    let missing = format!("inputs={odd}/nope");
    let out = submit(
        &s,
        &["name=hostile", "gpus=1", "time=1m", &missing],
        &["--dry-run", "--", "true"],
        &[],
    );
    let all = said(&out);
    assert!(
        !out.status.success() && all.contains(&format!("{odd}/nope")),
        "{all}"
    );
}

#[tokio::test]
async fn the_sqsh_conversion_step_reuses_the_cache_and_leaves_no_partial_image() {
    use slurmdash::launch::container::{conversion, parse_image};
    use slurmdash::remote::Remote;
    let r = remote();
    let base = scratch(&r, "sqsh").await;
    let cache = format!("{base}/sqsh-cache");
    let pinned = parse_image("nvcr.io/nvidia/pytorch:24.01-py3").expect("image");
    let c = conversion(&pinned, true, true, &cache, "short").expect("conversion");
    // Cached: nothing runs, even with force (the tag is pinned).
    let mk = run(&r, &["mkdir", "-p", &cache]).await;
    assert!(mk.success());
    let put = run(&r, &["sh", "-c", "echo sqsh > \"$1\"", "sh", &c.sqsh]).await;
    assert!(put.success());
    let out = r.run(&c.argv(), None, T).await.expect("run");
    assert!(out.success(), "{}", out.stderr_lossy());
    assert_eq!(out.stdout_lossy().trim(), "cached");
    // Not cached, and the registry has no such image: `enroot import` fails, nothing
    // half-written stays.
    common::containers::ready();
    let missing = format!(
        "{}/team/no-such-image:latest",
        common::containers::registry()
    );
    let latest = parse_image(&missing).expect("image");
    // (in `cpu`: the step then does not wait behind the jobs of the tests running beside it)
    let c = conversion(&latest, true, false, &cache, "cpu").expect("conversion");
    let out = r.run(&c.argv(), None, T).await.expect("run");
    assert!(!out.success(), "{}", out.stdout_lossy());
    let ls = run(&r, &["ls", "-A", &cache]).await.stdout_lossy();
    assert_eq!(
        ls.trim(),
        slurmdash::launch::container::sqsh_name("nvcr.io#nvidia/pytorch:24.01-py3"),
        "leftovers: {ls}"
    );
}

#[tokio::test]
async fn the_job_dir_mode_comes_from_the_config_and_other_refusals_keep_slurms_words() {
    let s = setup("mode").await;
    let tag = format!("md{}", std::process::id());
    let name = format!("name={tag}");
    let out = submit(
        &s,
        &[
            &name,
            "gpus=0",
            "cpus_per_task=1",
            "time=1m",
            "job_dir_mode=0750",
        ],
        &["--", "true"],
        &[],
    );
    let stdout = submitted(&out);
    let job_dir = printed_field(&stdout, "job dir:").to_string();
    let st = run(
        &remote(),
        &["stat", "-c", "%a", &job_dir, &format!("{job_dir}/meta")],
    )
    .await;
    assert_eq!(st.stdout_lossy(), "750\n750\n");
    let out = submit(&s, &["job_dir_mode=0077", "gpus=0"], &["--", "true"], &[]);
    let all = said(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("job_dir_mode `0077` must give you (the owner) rwx"),
        "{all}"
    );
    // A mode that lets others write the job directory would let them swap the script.
    for mode in ["0770", "0777", "0702"] {
        let set = format!("job_dir_mode={mode}");
        let out = submit(&s, &[&set, "gpus=0"], &["--", "true"], &[]);
        let all = said(&out);
        assert_eq!(out.status.code(), Some(2), "{all}");
        assert!(
            all.contains(&format!(
                "job_dir_mode `{mode}` lets other users write the job directory"
            )),
            "{all}"
        );
    }

    // A request validation cannot see (an extra sbatch option) that Slurm refuses: its own
    // words, what to change, and nothing left queued.
    let name = format!("name={tag}-x");
    let out = submit(
        &s,
        &[
            &name,
            "gpus=0",
            "time=1m",
            "extra_sbatch=--gres=nosuchthing:1",
        ],
        &["--", "true"],
        &[],
    );
    let all = said(&out);
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains("sbatch refused the job: Invalid generic resource (gres) specification"),
        "Slurm's own words: {all}"
    );
    assert!(all.contains("change the GPU (--gres) request"), "{all}");
    assert!(all.contains("nothing was queued"), "{all}");
    let q = run(&remote(), &["squeue", "--me", "--noheader", "--format=%j"]).await;
    assert!(
        !q.stdout_lossy().lines().any(|l| l == format!("{tag}-x")),
        "left queued: {}",
        q.stdout_lossy()
    );
    assert_eq!(s.registry().load().expect("registry").len(), 1);
}
