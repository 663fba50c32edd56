//! Golden tests of the generated sbatch scripts (tests/fixtures/launch/*.sbatch; run with
//! SLURMDASH_BLESS=1 to rewrite them after an intended change) and of validation.

use std::time::Duration;

use slurmdash::launch::facts::{NodeShape, PartitionInfo};
use slurmdash::launch::submit::prepare;
use slurmdash::launch::{ClusterFacts, Field, LaunchSpec};

fn part(name: &str, max_h: u64, nodes: u32) -> PartitionInfo {
    PartitionInfo {
        name: name.into(),
        is_default: name == "short",
        max_time: Some(Duration::from_secs(max_h * 60)),
        nodes,
        gpus_per_node: 8,
        gpus_total: 8 * nodes,
        gpus_idle: 8 * nodes,
        pending_jobs: 0,
        state: "UP".into(),
    }
}

fn facts() -> ClusterFacts {
    ClusterFacts {
        partitions: vec![
            part("short", 30, 1),
            part("polar", 240, 1),
            part("long", 2 * 24 * 60, 1),
            part("gpu4", 240, 4),
            part("mixed", 240, 2),
        ],
        accounts: Some(vec!["research".into(), "vision".into()]),
        pyxis: Some(true),
        nodes: ["short", "polar", "long"]
            .iter()
            .map(|p| node("n1", p, 16, 64 * 1024, 8))
            .chain((1..=4).map(|i| node(&format!("g{i}"), "gpu4", 32, 512 * 1024, 8)))
            .chain([
                node("c1", "mixed", 64, 256 * 1024, 0),
                node("g9", "mixed", 8, 64 * 1024, 4),
            ])
            .collect(),
        sbatch_env: Vec::new(),
    }
}

fn node(name: &str, partition: &str, cpus: u32, mem_mb: u64, gpus: u32) -> NodeShape {
    NodeShape {
        node: name.into(),
        partition: partition.into(),
        cpus,
        mem_mb,
        gpus,
        ..NodeShape::default()
    }
}

fn base() -> LaunchSpec {
    let mut s = LaunchSpec {
        name: "train".into(),
        partition: "polar".into(),
        account: "research".into(),
        time: "2h".into(),
        command: "python train.py --epochs 3 --out \"$TAO_API_RESULTS_DIR/$TAO_JOB_ID\"".into(),
        ..LaunchSpec::default()
    };
    s.env.insert("WANDB_MODE".into(), "offline".into());
    s.secrets = vec!["HF_TOKEN".into()];
    s
}

fn golden(name: &str, spec: &LaunchSpec) {
    let p = prepare(
        spec,
        &facts(),
        "/lustre/fsw/alice/results",
        "20261123-100000-abc123",
    )
    .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let mut text = p.script.clone();
    if let Some(c) = &p.conversion {
        text.push_str("\n# --- conversion step run on the login node before submitting ---\n# ");
        text.push_str(&slurmdash::slurm::command::shell_line(&c.argv()).expect("argv"));
        text.push('\n');
    }
    let path = format!(
        "{}/tests/fixtures/launch/{name}.sbatch",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("SLURMDASH_BLESS").is_some() {
        std::fs::write(&path, &text).expect("write golden");
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (run with SLURMDASH_BLESS=1 to create it)"));
    assert_eq!(text, want, "{name}: script differs from {path}");
}

#[test]
fn single_node_with_account() {
    golden("single_node", &base());
}

#[test]
fn single_node_without_account() {
    let mut s = base();
    s.account.clear();
    s.requeue = false;
    s.mem = "64G".into();
    golden("no_account", &s);
}

#[test]
fn resuming_with_a_signal_before_the_limit() {
    let mut s = base();
    s.secrets.clear();
    s.resume = "timeout,preempt".into();
    s.signal = "B:USR1@120".into();
    golden("resume_signal", &s);
    // Resuming needs the guard, which a launch with secrets does not get.
    let mut with_secret = s.clone();
    with_secret.secrets = vec!["HF_TOKEN".into()];
    one(
        &with_secret,
        Field::Secrets,
        "auto-resume is done by the guard job",
    );
    let mut bad = s.clone();
    bad.resume = "timeout,oom".into();
    one(&bad, Field::Extra, "resume `oom`");
    bad.resume = "timeout".into();
    bad.signal = "USR1@soon".into();
    one(&bad, Field::Extra, "signal `USR1@soon`");
}

#[test]
fn multi_node() {
    let mut s = base();
    s.partition = "gpu4".into();
    s.nodes = 2;
    s.gpus = 4;
    s.workdir = "lustre:///lustre/fsw/alice/code".into();
    golden("multi_node", &s);
}

#[test]
fn exclusive_gpu_mapping() {
    let mut s = base();
    s.partition = "gpu4".into();
    s.gpus = 16;
    s.extra_sbatch = vec!["--qos=high".into()];
    golden("exclusive_16_gpus", &s);
}

#[test]
fn container_image_forms() {
    for (name, image, cache) in [
        (
            "container_sqsh",
            "/lustre/fsw/alice/images/pytorch.sqsh",
            true,
        ),
        ("container_pyxis", "nvcr.io#nvidia/pytorch:24.01-py3", false),
        (
            "container_docker_cached",
            "docker://nvcr.io#nvidia/pytorch:24.01-py3",
            true,
        ),
        ("container_plain", "nvcr.io/nvidia/pytorch:24.01-py3", false),
    ] {
        let mut s = base();
        s.image = image.into();
        s.sqsh_cache = cache;
        s.conversion_partition = "cpu".into();
        s.container_mounts = "/lustre,/lustre/fsw/alice/data:/data".into();
        golden(name, &s);
    }
}

fn problems(s: &LaunchSpec) -> Vec<(Field, String)> {
    match prepare(s, &facts(), "/lustre/fsw/alice/results", "x") {
        Ok(_) => Vec::new(),
        Err(v) => v.into_iter().map(|p| (p.field, p.message)).collect(),
    }
}

fn one(s: &LaunchSpec, field: Field, needle: &str) {
    let p = problems(s);
    assert!(
        p.iter().any(|(f, m)| *f == field && m.contains(needle)),
        "expected {field:?} problem containing {needle:?}, got {p:?}"
    );
}

#[test]
fn rejections_name_the_field_and_the_limit() {
    let mut s = base();
    s.time = "5h".into();
    one(&s, Field::Time, "over partition polar's MaxTime 4:00:00");
    s.time = "twelve".into();
    one(&s, Field::Time, "is not a time limit");

    let mut s = base();
    s.gpus = 16;
    one(&s, Field::Gpus, "partition polar has 1 node(s)");
    s.gpus = 6;
    s.max_gpus_per_node = 16;
    s.partition = "short".into();
    s.time = "10m".into();
    assert!(problems(&s).is_empty(), "6 of 8 GPUs fit");
    s.gpus = 12;
    one(
        &s,
        Field::Gpus,
        "12 GPUs per node, but the largest node in short has 8",
    );

    let mut s = base();
    s.partition = "gpu".into();
    one(
        &s,
        Field::Partition,
        "unknown partition `gpu`; this cluster has: short, polar, long, gpu4, mixed",
    );
    s.partition = "polar".into();
    s.account = "physics".into();
    one(
        &s,
        Field::Account,
        "unknown account `physics`; yours are: research, vision",
    );

    let mut s = base();
    s.inputs = vec!["file:///home/alice/data".into()];
    one(&s, Field::Inputs, "file:// path on this machine");
    s.inputs = vec!["data/train".into()];
    one(&s, Field::Inputs, "is relative");
    s.inputs = vec!["s3://bucket/x".into()];
    one(&s, Field::Inputs, "stage the data onto the cluster");

    let mut s = base();
    s.name = "my job/1".into();
    one(&s, Field::Name, "letters, digits");
    let mut s = base();
    s.env.insert("HF_TOKEN".into(), "x".into());
    one(&s, Field::Secrets, "both a plain variable and a secret");
}

/// Requests no node can hold are refused with the limit named, per resource, against the
/// largest node of the listed partitions.
#[test]
fn requests_larger_than_the_largest_node_are_refused() {
    let mut s = base();
    s.gpus = 1;
    s.cpus_per_task = 17;
    one(
        &s,
        Field::Cpus,
        "17 CPUs per task, but the largest node in polar has 16: ask for at most 16 or pick partition gpu4, whose nodes hold it",
    );
    // Without GPUs the 64-CPU node of mixed holds it too.
    s.gpus = 0;
    one(
        &s,
        Field::Cpus,
        "or pick partition gpu4 or mixed, whose nodes hold it",
    );
    s.cpus_per_task = 40;
    one(
        &s,
        Field::Cpus,
        "or pick partition mixed, whose nodes hold it",
    );
    s.gpus = 1;
    s.cpus_per_task = 65;
    one(
        &s,
        Field::Cpus,
        "ask for less: no partition of this cluster has a node that holds it",
    );
    s.cpus_per_task = 16;
    s.mem = "65G".into();
    one(
        &s,
        Field::Mem,
        "65G memory per node, but the largest node in polar has 64G: ask for at most that or pick partition gpu4, whose nodes hold it",
    );
    s.mem = "64G".into();
    assert!(problems(&s).is_empty(), "{:?}", problems(&s));
    s.mem = "65537M".into();
    one(&s, Field::Mem, "the largest node in polar has 64G");
    // Several partitions: the largest node of any of them counts.
    let mut s = base();
    s.gpus = 1;
    s.partition = "polar,gpu4".into();
    s.cpus_per_task = 32;
    assert!(problems(&s).is_empty(), "{:?}", problems(&s));
    s.cpus_per_task = 33;
    one(
        &s,
        Field::Cpus,
        "33 CPUs per task, but the largest node in polar, gpu4 has 32",
    );
    // Each limit fits some node, but no node has all of it together.
    let mut s = base();
    s.partition = "mixed".into();
    s.cpus_per_task = 16;
    s.gpus = 2;
    s.max_gpus_per_node = 8;
    one(
        &s,
        Field::Cpus,
        "no single node in mixed has 16 CPUs and 2 GPUs together",
    );
    s.gpus = 0;
    assert!(problems(&s).is_empty(), "{:?}", problems(&s));
    // Unknown node sizes: nothing to check against.
    let mut f = facts();
    f.nodes.clear();
    let mut s = base();
    s.cpus_per_task = 500;
    assert!(prepare(&s, &f, "/lustre/r", "x").is_ok());
}

#[test]
fn accepted_paths_and_mapping() {
    let mut s = base();
    s.inputs = vec!["lustre:///lustre/fsw/alice/data".into(), "/lustre/x".into()];
    s.partition = "gpu4".into();
    s.gpus = 12;
    let p = prepare(&s, &facts(), "/lustre/fsw/alice/results/", "x").expect("valid");
    assert_eq!(p.plan.inputs, ["/lustre/fsw/alice/data", "/lustre/x"]);
    assert_eq!(
        (p.plan.nodes, p.plan.gpus_per_node, p.plan.exclusive),
        (2, 8, true)
    );
    assert_eq!(p.layout.job_dir, "/lustre/fsw/alice/results/x");
}

#[test]
fn container_refused_without_pyxis() {
    let mut f = facts();
    f.pyxis = Some(false);
    let mut s = base();
    s.image = "nvcr.io/nvidia/pytorch:24.01-py3".into();
    let e = prepare(&s, &f, "/lustre/r", "x").expect_err("no pyxis");
    assert!(
        e.iter()
            .any(|p| p.field == Field::Image && p.message.contains("no Pyxis")),
        "{e:?}"
    );
}

#[test]
fn container_command_runs_with_sh_unless_bash_is_asked_for() {
    let mut s = base();
    s.image = "nvcr.io/nvidia/pytorch:24.01-py3".into();
    s.sqsh_cache = false;
    s.shell = "bash".into();
    golden("container_bash", &s);
    s.shell = "zsh".into();
    one(
        &s,
        Field::Command,
        "shell `zsh`: use sh, bash or an absolute path",
    );
    s.shell = "/bin/sh; rm -rf /".into();
    one(&s, Field::Command, "use sh, bash or an absolute path");
}

#[test]
fn an_array_logs_each_task_to_its_own_file_in_the_arrays_directory() {
    let mut s = base();
    s.array = "0-19%4".into();
    golden("array", &s);
}

#[test]
fn array_indices_are_checked_and_array_belongs_in_its_field() {
    let mut s = base();
    s.array = "3-1".into();
    one(
        &s,
        Field::Extra,
        "array `3-1` is not a list of task indices",
    );
    let mut s = base();
    s.extra_sbatch = vec!["--array=0-5".into()];
    one(&s, Field::Extra, "set the array field instead");
    let mut s = base();
    s.extra_sbatch = vec!["-a3".into()];
    one(&s, Field::Extra, "set the array field instead");
    let mut s = base();
    s.array = "3,7-9,15".into();
    assert!(problems(&s).is_empty(), "{:?}", problems(&s));
    // Another option beginning with `--a` is not `--array`.
    s.extra_sbatch = vec!["--acctg-freq=30".into()];
    assert!(problems(&s).is_empty(), "{:?}", problems(&s));
}

/// The shipped multi-step example (examples/templates/serve-and-eval.toml) as the form and
/// `submit --template` render it: the server in the background, the wait for its ready URL,
/// its endpoint exported, the harness last with its exit code the job's.
#[test]
fn the_shipped_serve_and_eval_template() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/templates/serve-and-eval.toml"
    );
    let text = std::fs::read_to_string(path).expect("example template");
    let mut spec: LaunchSpec = toml::from_str(&text).expect("the example parses");
    spec.partition = "short".into();
    spec.account = "research".into();
    assert_eq!(spec.steps.len(), 2);
    golden("serve_and_eval", &spec);
    // A command beside steps, or steps in an array, are refused with the reason.
    let mut both = spec.clone();
    both.command = "echo x".into();
    one(&both, Field::Command, "leave the command empty");
    let mut array = spec.clone();
    array.array = "0-3".into();
    one(&array, Field::Extra, "cannot be an array");
}
