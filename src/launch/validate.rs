//! Pure validation of a [`LaunchSpec`] against what the cluster offers. Every problem names
//! the field, so the form can show it inline; the command line prints them all.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::launch::container::{self, Image};
use crate::launch::facts::{ClusterFacts, NodeShape, PartitionInfo};
use crate::launch::spec::LaunchSpec;
use crate::slurm::time::SlurmDuration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    Name,
    Partition,
    Account,
    Nodes,
    Gpus,
    Cpus,
    Mem,
    Time,
    Image,
    Mounts,
    Workdir,
    Command,
    Env,
    Secrets,
    Extra,
    Inputs,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: Field,
    pub message: String,
}

/// A spec that passed validation, with every value resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub name: String,
    pub partition: String,
    pub account: Option<String>,
    pub nodes: u32,
    pub gpus_per_node: u32,
    /// Whole nodes (`--exclusive`): GPUs at or above the per-node maximum.
    pub exclusive: bool,
    pub cpus_per_task: u32,
    pub mem: Option<String>,
    pub time: Duration,
    /// `--array` (as sbatch takes it); None: a single job.
    pub array: Option<String>,
    /// A sweep's runs, by array index (empty: not a sweep); see [`crate::launch::sweep`].
    pub sweep: Vec<crate::launch::sweep::Run>,
    pub image: Option<Image>,
    pub container_mounts: String,
    pub workdir: Option<String>,
    pub command: String,
    /// A recovered batch script run instead of `command` (see [`LaunchSpec::batch_script`]).
    pub batch_script: Option<String>,
    /// The arguments the batch script runs with.
    pub script_args: Vec<String>,
    /// The program that runs `command` with `-c` (e.g. `/bin/sh`, `bash`).
    pub shell: String,
    pub env: BTreeMap<String, String>,
    pub secrets: Vec<String>,
    pub extra_sbatch: Vec<String>,
    pub inputs: Vec<String>,
    pub requeue: bool,
    pub master_port: u16,
    /// Mode of the job directory (e.g. 0o700).
    pub job_dir_mode: u32,
    /// Auto-resume after these (names of [`crate::launch::resume::ON`]); empty: none.
    pub resume: Vec<String>,
    pub max_resumes: u32,
    /// Steps run in order in the allocation instead of `command` (empty: the command).
    pub steps: Vec<crate::launch::steps::PlanStep>,
}

impl Plan {
    /// What this launch sets beyond what every launch sets (for `sbatch_env`).
    pub fn sbatch_sets(&self) -> crate::launch::sbatch_env::Sets {
        crate::launch::sbatch_env::Sets {
            account: self.account.is_some(),
            mem: self.mem.is_some(),
        }
    }
}

/// `4h`, `90m`, `1d12h`, `45s`, or Slurm's own forms (`04:00:00`, `2-00:00:00`, bare
/// minutes).
pub fn parse_time(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let bad = || format!("`{s}` is not a time limit (use e.g. 4h, 90m, 1d12h or Slurm's HH:MM:SS)");
    if s.is_empty() {
        return Err("a time limit is required (e.g. 4h)".into());
    }
    let too_long = || crate::slurm::time::limit_too_long(s);
    if s.ends_with(['d', 'h', 'm', 's']) {
        let mut total = 0u64;
        let mut num = String::new();
        for c in s.chars() {
            if c.is_ascii_digit() {
                num.push(c);
                continue;
            }
            let n: u64 = match num.parse() {
                Ok(n) => n,
                Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => {
                    return Err(too_long())
                }
                Err(_) => return Err(bad()),
            };
            num.clear();
            let unit = match c {
                'd' => 86400,
                'h' => 3600,
                'm' => 60,
                's' => 1,
                _ => return Err(bad()),
            };
            total = n
                .checked_mul(unit)
                .and_then(|secs| total.checked_add(secs))
                .ok_or_else(too_long)?;
        }
        return crate::slurm::time::check_time_limit(Duration::from_secs(total))
            .map_err(|_| too_long());
    }
    match SlurmDuration::parse(s) {
        Ok(SlurmDuration::Known(d)) => {
            crate::slurm::time::check_time_limit(d).map_err(|_| too_long())
        }
        _ => Err(bad()),
    }
}

fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn is_env_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// A cluster path as the job will see it. `lustre:///abs` becomes `/abs`; `file://`, other
/// schemes, `~` and relative paths are refused with the reason.
pub fn cluster_path(p: &str) -> Result<String, String> {
    let p = p.trim();
    if let Some(rest) = p.strip_prefix("lustre://") {
        return if rest.starts_with('/') {
            Ok(rest.to_string())
        } else {
            Err(format!(
                "`{p}`: lustre:// paths are absolute: lustre:///path/on/lustre"
            ))
        };
    }
    if p.starts_with("file://") {
        return Err(format!(
            "`{p}` is a file:// path on this machine; the job runs on the cluster and cannot read it: copy the data to the shared filesystem and give that path (e.g. lustre:///lustre/fsw/...)"
        ));
    }
    if let Some((scheme, _)) = p.split_once("://") {
        return Err(format!(
            "`{p}`: {scheme}:// inputs are not fetched by slurmdash; stage the data onto the cluster's shared filesystem first and give that path"
        ));
    }
    if p.starts_with('~') {
        return Err(format!(
            "`{p}`: ~ is not expanded; give the absolute path on the cluster"
        ));
    }
    if !p.starts_with('/') {
        return Err(format!(
            "`{p}` is relative; give the absolute path on the cluster (e.g. /lustre/...)"
        ));
    }
    if p.contains(['\n', '\r', '\0']) {
        return Err("paths cannot contain line breaks".into());
    }
    Ok(p.to_string())
}

/// Checks `spec` against `facts`. `partition`/`account` must already hold the cluster
/// defaults (see [`LaunchSpec::with_cluster_defaults`]).
pub fn validate(spec: &LaunchSpec, facts: &ClusterFacts) -> Result<Plan, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut bad = |field: Field, message: String| problems.push(Problem { field, message });

    if !is_word(&spec.name) {
        bad(
            Field::Name,
            format!(
                "job name `{}` must be letters, digits, `.`, `_` or `-` (it names the log directory)",
                spec.name
            ),
        );
    }

    let partition = if spec.partition.is_empty() {
        facts.default_partition().map(|p| p.name.clone())
    } else {
        Some(spec.partition.trim().to_string())
    };
    // Slurm takes several partitions (`short,polar`): the job runs in whichever can start it.
    let mut parts: Vec<&PartitionInfo> = Vec::new();
    match &partition {
        None => bad(
            Field::Partition,
            "no partition given and the cluster has no default partition".into(),
        ),
        Some(list) => {
            for name in list.split(',').map(str::trim) {
                match facts.partition(name) {
                    Some(p) => parts.push(p),
                    None => {
                        let known: Vec<&str> =
                            facts.partitions.iter().map(|p| p.name.as_str()).collect();
                        bad(
                            Field::Partition,
                            format!(
                                "unknown partition `{name}`; this cluster has: {}",
                                if known.is_empty() {
                                    "none listed".to_string()
                                } else {
                                    known.join(", ")
                                }
                            ),
                        );
                    }
                }
            }
        }
    }
    let partition = partition.map(|p| p.split(',').map(str::trim).collect::<Vec<_>>().join(","));
    // Only when every listed partition is known are the limits below checked.
    let all_known = partition
        .as_deref()
        .is_some_and(|p| p.split(',').count() == parts.len());
    let part_names = parts
        .iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");

    let account = (!spec.account.is_empty()).then(|| spec.account.clone());
    if let (Some(a), Some(known)) = (&account, &facts.accounts) {
        if !known.iter().any(|k| k == a) {
            bad(
                Field::Account,
                format!("unknown account `{a}`; yours are: {}", known.join(", ")),
            );
        }
    } else if let Some(a) = &account {
        if !is_word(a) {
            bad(Field::Account, format!("`{a}` is not an account name"));
        }
    }

    let time = match parse_time(&spec.time) {
        Ok(t) if t.is_zero() => {
            bad(Field::Time, "the time limit must be more than zero".into());
            None
        }
        Ok(t) => Some(t),
        Err(e) => {
            bad(Field::Time, e);
            None
        }
    };
    if let (Some(t), true) = (time, all_known) {
        // Refused only when no listed partition allows it.
        let over = |p: &&PartitionInfo| p.max_time.is_some_and(|max| t > max);
        if !parts.is_empty() && parts.iter().all(over) {
            let limits: Vec<String> = parts
                .iter()
                .map(|p| format!("partition {}'s MaxTime {}", p.name, p.max_time_text()))
                .collect();
            bad(
                Field::Time,
                format!(
                    "time {} is over {}: shorten it or pick a partition with a longer limit",
                    SlurmDuration::Known(t).to_slurm(),
                    limits.join(" and ")
                ),
            );
        }
    }

    // GPUs: at or above the per-node maximum the job takes whole nodes.
    let max_per_node = spec.max_gpus_per_node.max(1);
    let (nodes, mut gpus_per_node, exclusive) = if spec.gpus >= max_per_node {
        let need = spec.gpus.div_ceil(max_per_node);
        (spec.nodes.max(need), max_per_node, true)
    } else {
        (spec.nodes.max(1), 0, false)
    };
    if spec.nodes == 0 {
        bad(Field::Nodes, "nodes must be at least 1".into());
    }
    if !exclusive && spec.gpus > 0 {
        if !spec.gpus.is_multiple_of(nodes) {
            bad(
                Field::Gpus,
                format!(
                    "{} GPUs do not split evenly over {nodes} nodes; use a multiple of {nodes}",
                    spec.gpus
                ),
            );
        }
        gpus_per_node = spec.gpus.div_ceil(nodes);
    }
    if all_known && !parts.is_empty() {
        let max_gpus = parts.iter().map(|p| p.gpus_per_node).max().unwrap_or(0);
        let max_nodes = parts.iter().map(|p| p.nodes).max().unwrap_or(0);
        if gpus_per_node > max_gpus {
            bad(
                Field::Gpus,
                format!(
                    "{gpus_per_node} GPUs per node, but the largest node in {part_names} has {max_gpus}: ask for at most {max_gpus} per node (more GPUs take more nodes) or pick a partition with larger nodes"
                ),
            );
        } else if max_nodes > 0 && nodes > max_nodes {
            let p = parts
                .iter()
                .max_by_key(|p| p.nodes)
                .copied()
                .unwrap_or(parts[0]);
            bad(
                Field::Gpus,
                format!(
                    "{} GPUs need {nodes} nodes of {gpus_per_node}, but partition {} has {} node(s) with {} GPUs in total",
                    spec.gpus.max(gpus_per_node.saturating_mul(nodes)),
                    p.name,
                    p.nodes,
                    p.gpus_total
                ),
            );
        }
    }
    if spec.cpus_per_task == 0 {
        bad(Field::Cpus, "CPUs per task must be at least 1".into());
    }
    let mem = spec.mem.trim();
    let mem_mib = if mem.is_empty() {
        None
    } else {
        match mem_mb(mem) {
            Some(m) => Some(m),
            None => {
                bad(
                    Field::Mem,
                    format!("memory `{mem}` is not a Slurm size (e.g. 64G, 500M)"),
                );
                None
            }
        }
    };
    if all_known {
        let want = NodeNeed {
            cpus: spec.cpus_per_task,
            mem_mb: mem_mib,
            mem_text: mem,
            gpus: gpus_per_node,
        };
        for p in fit_nodes(&want, &parts, &part_names, facts) {
            bad(p.field, p.message);
        }
    }

    let image = if spec.image.trim().is_empty() {
        None
    } else {
        match container::parse_image(&spec.image) {
            Ok(i) => {
                if facts.pyxis == Some(false) {
                    bad(
                        Field::Image,
                        "this cluster has no Pyxis (srun --help does not list --container-image): a container job would fail at start; clear the image or use a cluster with Pyxis/Enroot".into(),
                    );
                }
                Some(i)
            }
            Err(e) => {
                bad(Field::Image, e);
                None
            }
        }
    };
    if image.is_some() {
        for m in spec
            .container_mounts
            .split(',')
            .filter(|m| !m.trim().is_empty())
        {
            let src = m.split(':').next().unwrap_or(m);
            if let Err(e) = cluster_path(src) {
                bad(Field::Mounts, format!("container mount {e}"));
            }
        }
        if spec.container_mounts.contains(char::is_whitespace) {
            bad(
                Field::Mounts,
                "container mounts are comma-separated, without spaces".into(),
            );
        }
    }

    let workdir = if spec.workdir.trim().is_empty() {
        None
    } else {
        match cluster_path(&spec.workdir) {
            Ok(p) => Some(p),
            Err(e) => {
                bad(Field::Workdir, format!("working directory {e}"));
                None
            }
        }
    };
    let recovered = spec.command.trim().is_empty() && !spec.batch_script.is_empty();
    if recovered && !spec.image.trim().is_empty() {
        bad(
            Field::Command,
            "a recovered batch script runs as the batch step, outside any container: clear the container image or type a command".into(),
        );
    }
    let multi = !spec.steps.is_empty();
    if spec.command.trim().is_empty() && !recovered && !multi {
        bad(Field::Command, "a command to run is required".into());
    }
    let steps = if multi {
        if !spec.command.trim().is_empty() {
            bad(
                Field::Command,
                "this launch runs its steps (see the steps line): leave the command empty, or pick a template without steps".into(),
            );
        }
        if !spec.array.trim().is_empty() {
            bad(
                Field::Extra,
                "a launch with steps cannot be an array: clear the array indices".into(),
            );
        }
        if facts.pyxis == Some(false) && spec.steps.iter().any(|s| !s.image.trim().is_empty()) {
            bad(
                Field::Image,
                "this cluster has no Pyxis (srun --help does not list --container-image): the steps' containers would fail at start".into(),
            );
        }
        match crate::launch::steps::validate(
            &spec.steps,
            &spec.shell,
            image.is_some(),
            resolve_shell,
            parse_time,
        ) {
            Ok(s) => s,
            Err(messages) => {
                for m in messages {
                    bad(Field::Command, m);
                }
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    let shell = match resolve_shell(&spec.shell, image.is_some()) {
        Ok(s) => s,
        Err(e) => {
            bad(Field::Command, e);
            String::new()
        }
    };
    for k in spec.env.keys() {
        if !is_env_name(k) {
            bad(
                Field::Env,
                format!("`{k}` is not an environment variable name"),
            );
        }
    }
    for s in &spec.secrets {
        if !is_env_name(s) {
            bad(
                Field::Secrets,
                format!("secret `{s}` is not an environment variable name"),
            );
        } else if spec.env.contains_key(s) {
            bad(
                Field::Secrets,
                format!("`{s}` is both a plain variable and a secret; a secret's value must not be written in the script"),
            );
        }
    }
    for o in &spec.extra_sbatch {
        if !o.starts_with('-') || o.contains(['\n', '\r', '\0']) {
            bad(
                Field::Extra,
                format!("extra sbatch option `{o}` must be one option like --qos=high"),
            );
        } else if is_array_option(o) {
            bad(
                Field::Extra,
                format!("extra sbatch option `{o}`: set the array field instead, so that each task gets its own log"),
            );
        }
    }
    let array = spec.array.trim();
    let parsed = if array.is_empty() {
        None
    } else {
        match crate::slurm::jobid::ArraySpec::parse(array) {
            Ok(a) if a.ranges.is_empty() => None,
            Ok(a) => Some(a),
            Err(_) => {
                bad(
                    Field::Extra,
                    format!("array `{array}` is not a list of task indices like 0-19 or 3,7-9%2"),
                );
                None
            }
        }
    };
    let mut array = parsed.as_ref().map(|_| array.to_string());
    let sweep = match spec.sweep.points() {
        Ok(p) => p,
        Err(e) => {
            bad(Field::Extra, e);
            Vec::new()
        }
    };
    if !sweep.is_empty() {
        match crate::launch::sweep::array_for(sweep.len(), parsed.as_ref(), spec.sweep.throttle) {
            Ok(a) => array = Some(a),
            Err(e) => bad(Field::Extra, e),
        }
        if !spec.steps.is_empty() {
            bad(
                Field::Extra,
                "a launch with steps cannot be a sweep: clear the sweep".into(),
            );
        }
    }
    let mut extra_sbatch = spec.extra_sbatch.clone();
    match mail_options(&spec.mail_type, &spec.mail_user) {
        Ok(o) => extra_sbatch.extend(o),
        Err(e) => bad(Field::Extra, e),
    }
    match crate::launch::resume::signal_option(&spec.signal) {
        Ok(o) => extra_sbatch.extend(o),
        Err(e) => bad(Field::Extra, e),
    }
    let resume = match crate::launch::resume::parse(&spec.resume) {
        Ok(r) => r,
        Err(e) => {
            bad(Field::Extra, e);
            Vec::new()
        }
    };
    if !resume.is_empty() && !spec.secrets.is_empty() {
        bad(
            Field::Secrets,
            "auto-resume is done by the guard job on the cluster, which a launch with secrets does not get (a secret never touches the cluster's disk): clear resume or the secrets".into(),
        );
    }
    if !resume.is_empty() && spec.max_resumes == 0 {
        bad(
            Field::Extra,
            "max_resumes is 0: no resume would happen (set it, or clear resume)".into(),
        );
    }
    let job_dir_mode = match parse_mode(&spec.job_dir_mode) {
        Ok(m) => m,
        Err(e) => {
            bad(Field::Workdir, e);
            0o700
        }
    };
    let mut inputs = Vec::new();
    for i in &spec.inputs {
        match cluster_path(i) {
            Ok(p) => inputs.push(p),
            Err(e) => bad(Field::Inputs, format!("input {e}")),
        }
    }

    if !problems.is_empty() {
        problems.sort_by_key(|p| p.field);
        return Err(problems);
    }
    Ok(Plan {
        name: spec.name.clone(),
        partition: partition.unwrap_or_default(),
        account,
        nodes,
        gpus_per_node,
        exclusive,
        cpus_per_task: spec.cpus_per_task,
        mem: (!mem.is_empty()).then(|| mem.to_string()),
        time: time.unwrap_or_default(),
        array,
        sweep,
        image,
        container_mounts: spec.container_mounts.trim().to_string(),
        workdir,
        command: spec.command.trim().to_string(),
        batch_script: recovered.then(|| spec.batch_script.clone()),
        script_args: if recovered {
            spec.script_args.clone()
        } else {
            Vec::new()
        },
        shell,
        env: spec.env.clone(),
        secrets: spec.secrets.clone(),
        extra_sbatch,
        inputs,
        requeue: spec.requeue,
        master_port: spec.master_port,
        job_dir_mode,
        resume,
        max_resumes: spec.max_resumes,
        steps,
    })
}

/// sbatch's `--array`/`-a` option (`--array=0-19`, `-a3`, `-a`), which the array field
/// replaces.
pub fn is_array_option(o: &str) -> bool {
    o.starts_with("--array") || (o.starts_with("-a") && !o.starts_with("--"))
}

/// The program that runs the command: `sh` is `/bin/sh` (in every image), `bash` is found
/// on the PATH (it is `/bin/bash` or `/usr/bin/bash`), an absolute path is used as is.
/// Unset: `/bin/sh` in a container, where bash may be missing (busybox, distroless), and
/// bash on the node itself.
pub fn resolve_shell(shell: &str, container: bool) -> Result<String, String> {
    match shell.trim() {
        "" if container => Ok("/bin/sh".into()),
        "" | "bash" => Ok("bash".into()),
        "sh" => Ok("/bin/sh".into()),
        p if p.starts_with('/')
            && p.len() > 1
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b)) =>
        {
            Ok(p.to_string())
        }
        other => Err(format!(
            "shell `{other}`: use sh, bash or an absolute path like /usr/bin/zsh"
        )),
    }
}

/// An octal directory mode (`0700`, `750`) that leaves the owner full access.
pub fn parse_mode(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let m = u32::from_str_radix(t, 8)
        .ok()
        .filter(|m| *m <= 0o777 && !t.is_empty())
        .ok_or_else(|| format!("job_dir_mode `{t}` is not an octal mode like 0700 or 0750"))?;
    if m & 0o700 != 0o700 {
        return Err(format!(
            "job_dir_mode `{t}` must give you (the owner) rwx, or slurmdash and the job cannot write the job directory"
        ));
    }
    if m & 0o022 != 0 {
        return Err(format!(
            "job_dir_mode `{t}` lets other users write the job directory, where they could replace the script that runs as you: use 0700 (private) or 0750 (your group may read)"
        ));
    }
    Ok(m)
}

/// A Slurm size (`64G`, `500M`, `1T`, `2048K`, bare MiB) in MiB; None when it is not one
/// or does not fit in 64 bits.
pub fn mem_mb(s: &str) -> Option<u64> {
    let digits = s.trim_end_matches(['K', 'M', 'G', 'T', 'k', 'm', 'g', 't']);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || s.len() - digits.len() > 1
    {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    match s[digits.len()..].to_ascii_uppercase().as_str() {
        "K" => Some(n.div_ceil(1024)),
        "" | "M" => Some(n),
        "G" => n.checked_mul(1024),
        "T" => n.checked_mul(1024 * 1024),
        _ => None,
    }
}

/// Which of a launch's sizes the user gave for this launch (a flag, the form): those are
/// checked as they are; the others are defaults that [`fit_defaults`] may fit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Chosen {
    pub cpus: bool,
    pub mem: bool,
}

/// The partitions a launch names (`short,polar`), else the cluster's default one.
pub fn chosen_partitions(spec: &LaunchSpec, facts: &ClusterFacts) -> Vec<String> {
    if spec.partition.trim().is_empty() {
        facts
            .default_partition()
            .map(|p| vec![p.name.clone()])
            .unwrap_or_default()
    } else {
        spec.partition
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()
    }
}

/// Fits the defaults the user did not choose (CPUs per task, memory) to the nodes of the
/// spec's partitions (or the cluster's default one) when they are more than the largest
/// node there has: with GPUs, the node's share for the GPUs asked (a node of 8 CPUs and 4
/// GPUs gives 2 CPUs a GPU), else the whole node. Returns each value changed (its field)
/// with a line saying what and why; changes nothing when the node sizes are unknown, when what the user
/// chose alone does not fit (validation says so), or when the default fits.
pub fn fit_defaults(
    spec: &mut LaunchSpec,
    facts: &ClusterFacts,
    chosen: Chosen,
) -> Vec<(Field, String)> {
    let names = chosen_partitions(spec, facts);
    // GPUs a node must hold (as the checks count them: at or above max_gpus_per_node the
    // job takes whole nodes).
    let max_per_node = spec.max_gpus_per_node.max(1);
    let gpus_per_node = if spec.gpus >= max_per_node {
        max_per_node
    } else {
        spec.gpus.div_ceil(spec.nodes.max(1))
    };
    let nodes: Vec<&NodeShape> = facts
        .nodes
        .iter()
        .filter(|n| names.contains(&n.partition) && n.gpus >= gpus_per_node)
        .collect();
    // The node the job most likely gets all of it on: the one with the most CPUs.
    let Some(node) = nodes.iter().max_by_key(|n| (n.cpus, n.mem_mb)) else {
        return Vec::new();
    };
    let share = |whole: u64| -> u64 {
        if gpus_per_node > 0 && node.gpus > 0 {
            (whole * u64::from(gpus_per_node) / u64::from(node.gpus)).max(1)
        } else {
            whole
        }
    };
    let how = if gpus_per_node > 0 && node.gpus > 0 {
        format!(
            "its share for {gpus_per_node} GPU{} of a node with {} CPUs, {} GPUs and {}",
            if gpus_per_node == 1 { "" } else { "s" },
            node.cpus,
            node.gpus,
            mib_text(node.mem_mb)
        )
    } else {
        format!(
            "a whole node of {} CPUs and {}",
            node.cpus,
            mib_text(node.mem_mb)
        )
    };
    let part = names.join(",");
    let mut said = Vec::new();
    if !chosen.cpus && spec.cpus_per_task > node.cpus {
        let fitted = u32::try_from(share(u64::from(node.cpus))).unwrap_or(node.cpus);
        said.push((
            Field::Cpus,
            format!(
                "CPUs per task: {fitted}, not the default {} (more than the largest node in {part} has): {how}",
                spec.cpus_per_task
            ),
        ));
        spec.cpus_per_task = fitted;
    }
    let mem = spec.mem.trim().to_string();
    if !chosen.mem && mem_mb(&mem).is_some_and(|m| m > node.mem_mb) {
        let fitted = mib_text(share(node.mem_mb));
        said.push((
            Field::Mem,
            format!(
                "memory: {fitted}, not the default {mem} (more than the largest node in {part} has): {how}"
            ),
        ));
        spec.mem = fitted;
    }
    said
}

/// What one node must hold for the job (one task per node).
struct NodeNeed<'a> {
    cpus: u32,
    mem_mb: Option<u64>,
    mem_text: &'a str,
    gpus: u32,
}

fn mib_text(m: u64) -> String {
    if m >= 1024 && m.is_multiple_of(1024) {
        format!("{}G", m / 1024)
    } else {
        format!("{m}M")
    }
}

/// Where else the request fits: "pick partition long or short, whose nodes hold it", or,
/// when no partition of the cluster has such a node, says so (what the user should change).
fn elsewhere(want: &NodeNeed<'_>, chosen: &[&PartitionInfo], facts: &ClusterFacts) -> String {
    let mut fit: Vec<&str> = facts
        .nodes
        .iter()
        .filter(|n| !chosen.iter().any(|p| p.name == n.partition))
        .filter(|n| {
            n.cpus >= want.cpus && n.gpus >= want.gpus && want.mem_mb.is_none_or(|m| n.mem_mb >= m)
        })
        .map(|n| n.partition.as_str())
        .collect();
    fit.sort_unstable();
    fit.dedup();
    match fit.as_slice() {
        [] => "ask for less: no partition of this cluster has a node that holds it".into(),
        [one] => format!("pick partition {one}, whose nodes hold it"),
        [first @ .., last] => format!(
            "pick partition {} or {last}, whose nodes hold it",
            first.join(", ")
        ),
    }
}

/// Checks the request against the largest node of the listed partitions (sinfo per node),
/// naming the limit; nothing when the node sizes are unknown.
fn fit_nodes(
    want: &NodeNeed<'_>,
    parts: &[&PartitionInfo],
    names: &str,
    facts: &ClusterFacts,
) -> Vec<Problem> {
    let nodes: Vec<&NodeShape> = facts
        .nodes
        .iter()
        .filter(|n| parts.iter().any(|p| p.name == n.partition))
        .collect();
    let mut out = Vec::new();
    let (Some(max_cpus), Some(max_mem)) = (
        nodes.iter().map(|n| n.cpus).max(),
        nodes.iter().map(|n| n.mem_mb).max(),
    ) else {
        return out;
    };
    if want.cpus > max_cpus {
        out.push(Problem {
            field: Field::Cpus,
            message: format!(
                "{} CPUs per task, but the largest node in {names} has {max_cpus}: ask for at most {max_cpus} or {}",
                want.cpus,
                elsewhere(want, parts, facts)
            ),
        });
    }
    if want.mem_mb.is_some_and(|m| m > max_mem) {
        out.push(Problem {
            field: Field::Mem,
            message: format!(
                "{} memory per node, but the largest node in {names} has {}: ask for at most that or {}",
                want.mem_text,
                mib_text(max_mem),
                elsewhere(want, parts, facts)
            ),
        });
    }
    // GPUs per node are checked against the partition's largest node above.
    // Each limit alone fits: is there one node that holds all of it at once?
    let fits = |n: &NodeShape| {
        n.cpus >= want.cpus && n.gpus >= want.gpus && want.mem_mb.is_none_or(|m| n.mem_mb >= m)
    };
    if out.is_empty() && !nodes.iter().any(|n| fits(n)) {
        let mut shapes: Vec<String> = nodes
            .iter()
            .map(|n| format!("{} CPUs, {} GPUs, {}", n.cpus, n.gpus, mib_text(n.mem_mb)))
            .collect();
        shapes.sort();
        shapes.dedup();
        out.push(Problem {
            field: Field::Cpus,
            message: format!(
                "no single node in {names} has {} CPUs and {} GPUs{} together (its nodes have: {}): ask for less per node or {}",
                want.cpus,
                want.gpus,
                if want.mem_mb.is_some() { format!(" and {}", want.mem_text) } else { String::new() },
                shapes.join("; "),
                elsewhere(want, parts, facts)
            ),
        });
    }
    out
}

/// `--mail-type` values sbatch accepts.
const MAIL_TYPES: &[&str] = &[
    "NONE",
    "BEGIN",
    "END",
    "FAIL",
    "REQUEUE",
    "ALL",
    "INVALID_DEPEND",
    "STAGE_OUT",
    "TIME_LIMIT",
    "TIME_LIMIT_90",
    "TIME_LIMIT_80",
    "TIME_LIMIT_50",
    "ARRAY_TASKS",
];

/// The sbatch options for a launch's mail settings, or what is wrong with them.
pub fn mail_options(mail_type: &str, mail_user: &str) -> Result<Vec<String>, String> {
    let (t, u) = (mail_type.trim(), mail_user.trim());
    let mut v = Vec::new();
    if !t.is_empty() {
        for part in t.split(',') {
            if !MAIL_TYPES.contains(&part.trim().to_ascii_uppercase().as_str()) {
                return Err(format!(
                    "mail type `{part}` is not one of {}",
                    MAIL_TYPES.join(", ")
                ));
            }
        }
        v.push(format!(
            "--mail-type={}",
            t.split(',')
                .map(|p| p.trim().to_ascii_uppercase())
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    if !u.is_empty() {
        if u.contains(|c: char| c.is_whitespace() || c.is_control() || c == '\'' || c == '"') {
            return Err(format!("mail user `{u}` must be one address"));
        }
        v.push(format!("--mail-user={u}"));
    }
    Ok(v)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn mail_options_are_checked() {
        assert_eq!(
            mail_options("end,fail", "me@example.org").unwrap(),
            ["--mail-type=END,FAIL", "--mail-user=me@example.org"]
        );
        assert!(mail_options("sometimes", "").is_err());
        assert!(mail_options("", "a b").is_err());
        assert!(mail_options("", "").unwrap().is_empty());
    }

    /// `debug`: 8-CPU nodes with 4 GPUs and 32G; `cpu`: 8 CPUs, no GPU; `short` (the
    /// default): 16 CPUs, 8 GPUs.
    fn small_nodes() -> ClusterFacts {
        let part = |name: &str, gpus: u32, default: bool| PartitionInfo {
            name: name.into(),
            is_default: default,
            max_time: Some(Duration::from_secs(4 * 3600)),
            nodes: 2,
            gpus_per_node: gpus,
            gpus_total: 2 * gpus,
            gpus_idle: 2 * gpus,
            pending_jobs: 0,
            state: "UP".into(),
        };
        let node = |node: &str, partition: &str, cpus: u32, gpus: u32| NodeShape {
            node: node.into(),
            partition: partition.into(),
            cpus,
            mem_mb: 32 * 1024,
            gpus,
            ..NodeShape::default()
        };
        ClusterFacts {
            partitions: vec![
                part("debug", 4, false),
                part("cpu", 0, false),
                part("short", 8, true),
            ],
            accounts: None,
            pyxis: Some(true),
            nodes: vec![
                node("d1", "debug", 8, 4),
                node("d2", "debug", 8, 4),
                node("c1", "cpu", 8, 0),
                node("g1", "short", 16, 8),
            ],
            sbatch_env: Vec::new(),
        }
    }

    /// What `slurmdash session --gpus 1 --time 5m --partition debug` asks with the
    /// built-in defaults (16 CPUs per task).
    fn session_on(partition: &str, gpus: u32) -> LaunchSpec {
        LaunchSpec {
            name: "session-x".into(),
            partition: partition.into(),
            gpus,
            time: "5m".into(),
            command: "sleep 1".into(),
            ..LaunchSpec::default()
        }
    }

    fn cpu_problems(spec: &LaunchSpec) -> Vec<String> {
        match validate(spec, &small_nodes()) {
            Ok(_) => Vec::new(),
            Err(ps) => ps
                .into_iter()
                .filter(|p| p.field == Field::Cpus || p.field == Field::Mem)
                .map(|p| p.message)
                .collect(),
        }
    }

    #[test]
    fn a_default_that_no_node_holds_is_fitted_and_said() {
        let mut spec = session_on("debug", 1);
        assert_eq!(spec.cpus_per_task, 16, "the built-in default");
        assert!(cpu_problems(&spec)[0]
            .starts_with("16 CPUs per task, but the largest node in debug has 8"));
        let said = fit_defaults(&mut spec, &small_nodes(), Chosen::default());
        assert_eq!(spec.cpus_per_task, 2, "1 GPU of 4 on an 8-CPU node");
        assert_eq!(
            said,
            [(Field::Cpus, "CPUs per task: 2, not the default 16 (more than the largest node in debug has): its share for 1 GPU of a node with 8 CPUs, 4 GPUs and 32G".to_string())]
        );
        assert!(cpu_problems(&spec).is_empty(), "{:?}", cpu_problems(&spec));

        // No GPUs: the whole node; a default memory over the node's is fitted too.
        let mut spec = session_on("cpu", 0);
        spec.mem = "64G".into();
        let said = fit_defaults(&mut spec, &small_nodes(), Chosen::default());
        assert_eq!((spec.cpus_per_task, spec.mem.as_str()), (8, "32G"));
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[1].0 == Field::Mem && said[1].1.starts_with("memory: 32G, not the default 64G"),
            "{said:?}"
        );
        assert!(cpu_problems(&spec).is_empty(), "{:?}", cpu_problems(&spec));

        // 2 GPUs of 4, memory too: half the node.
        let mut spec = session_on("debug", 2);
        spec.mem = "64G".into();
        fit_defaults(&mut spec, &small_nodes(), Chosen::default());
        assert_eq!((spec.cpus_per_task, spec.mem.as_str()), (4, "16G"));
    }

    #[test]
    fn what_the_user_chose_and_defaults_that_fit_are_left_alone() {
        // --cpus 16 on debug: refused as asked, naming the limit.
        let mut spec = session_on("debug", 1);
        let chosen = Chosen {
            cpus: true,
            mem: true,
        };
        spec.mem = "64G".into();
        assert!(fit_defaults(&mut spec, &small_nodes(), chosen).is_empty());
        assert_eq!((spec.cpus_per_task, spec.mem.as_str()), (16, "64G"));
        assert!(cpu_problems(&spec)[0]
            .starts_with("16 CPUs per task, but the largest node in debug has 8"));
        // The default partition's nodes hold the default: nothing changes.
        let mut spec = session_on("", 1);
        assert!(fit_defaults(&mut spec, &small_nodes(), Chosen::default()).is_empty());
        assert_eq!(spec.cpus_per_task, 16);
        // Node sizes unknown: nothing to fit to.
        let mut facts = small_nodes();
        facts.nodes.clear();
        let mut spec = session_on("debug", 1);
        assert!(fit_defaults(&mut spec, &facts, Chosen::default()).is_empty());
        assert_eq!(spec.cpus_per_task, 16);
    }
}
