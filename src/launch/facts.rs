//! What validation needs to know about the cluster: partitions (MaxTime, GPUs per node, idle
//! GPUs, pending jobs), the user's accounts and whether Pyxis is installed. Built by pure
//! functions from command output; `io::facts::fetch` runs the commands.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::slurm::model::{gpus_in_gres_list, summarize_partitions, Partition, PartitionUsage};
use crate::slurm::time::SlurmDuration;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PartitionInfo {
    pub name: String,
    pub is_default: bool,
    /// `None`: UNLIMITED.
    pub max_time: Option<Duration>,
    pub nodes: u32,
    /// GPUs on the biggest node of the partition.
    pub gpus_per_node: u32,
    pub gpus_total: u32,
    pub gpus_idle: u32,
    pub pending_jobs: u32,
    pub state: String,
}

impl PartitionInfo {
    pub fn max_time_text(&self) -> String {
        match self.max_time {
            Some(d) => SlurmDuration::Known(d).to_slurm(),
            None => "UNLIMITED".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterFacts {
    pub partitions: Vec<PartitionInfo>,
    /// The user's Slurm accounts; `None` when they could not be listed (no check then).
    pub accounts: Option<Vec<String>>,
    /// Whether `srun --help` lists `--container-image`; `None` when unknown.
    pub pyxis: Option<bool>,
    /// Every node of every partition with its size (sinfo per node); empty when unknown
    /// (then requests are not checked against node sizes).
    pub nodes: Vec<NodeShape>,
    /// The `SBATCH_*` variables the user's login environment sets (shown in the preview).
    pub sbatch_env: Vec<(String, String)>,
}

/// One node as a partition offers it: what a single node can give one job.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NodeShape {
    pub node: String,
    /// Without sinfo's `*` default marker.
    pub partition: String,
    pub cpus: u32,
    /// Memory in MiB (sinfo `%m`, Slurm's RealMemory).
    pub mem_mb: u64,
    pub gpus: u32,
}

/// `sinfo --Node`: one line per node and partition, `node|partition|cpus|memory MiB|gres`.
pub fn nodes_argv() -> Vec<String> {
    ["sinfo", "--noheader", "--Node", "--format=%N|%P|%c|%m|%G"]
        .map(String::from)
        .to_vec()
}

/// Parses [`nodes_argv`]'s output. A line that does not have five fields, or whose CPU or
/// memory count is not a number, is an error naming the line.
pub fn parse_nodes(out: &str) -> Result<Vec<NodeShape>, String> {
    let mut v = Vec::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('|').map(str::trim).collect();
        let bad = |why: &str| format!("sinfo --Node line {line:?}: {why}");
        if f.len() != 5 {
            return Err(bad(&format!("expected 5 fields, found {}", f.len())));
        }
        // A node whose resources sinfo cannot tell yet shows `0`/`1`; numbers are required.
        let cpus = f[2]
            .trim_end_matches('+')
            .parse()
            .map_err(|_| bad("CPUs is not a number"))?;
        let mem_mb = f[3]
            .trim_end_matches('+')
            .parse()
            .map_err(|_| bad("memory is not a number"))?;
        v.push(NodeShape {
            node: f[0].to_string(),
            partition: f[1].trim_end_matches('*').to_string(),
            cpus,
            mem_mb,
            gpus: gpus_in_gres_list(f[4]),
        });
    }
    Ok(v)
}

impl ClusterFacts {
    pub fn partition(&self, name: &str) -> Option<&PartitionInfo> {
        self.partitions.iter().find(|p| p.name == name)
    }
    pub fn default_partition(&self) -> Option<&PartitionInfo> {
        self.partitions.iter().find(|p| p.is_default)
    }
}

/// Joins `scontrol show partition`, sinfo rows and the partitions of pending jobs
/// (squeue `%P`, one line per job, comma-separated when a job names several).
pub fn partitions(
    parts: &[Partition],
    usage: &[PartitionUsage],
    pending: &str,
) -> Vec<PartitionInfo> {
    let summaries = summarize_partitions(usage);
    parts
        .iter()
        .map(|p| {
            let rows = usage.iter().filter(|u| u.partition == p.name);
            let gpus_per_node = rows
                .map(|u| u.gres.as_deref().map(gpus_in_gres_list).unwrap_or(0))
                .max()
                .unwrap_or(0);
            let s = summaries.iter().find(|s| s.partition == p.name);
            let pending_jobs = pending
                .lines()
                .filter(|l| l.split(',').any(|x| x.trim() == p.name))
                .count() as u32;
            PartitionInfo {
                name: p.name.clone(),
                is_default: p.is_default,
                max_time: match p.max_time {
                    SlurmDuration::Known(d) => Some(d),
                    _ => None,
                },
                nodes: p.total_nodes,
                gpus_per_node,
                gpus_total: s.map_or(0, |s| s.gpus_total),
                gpus_idle: s.map_or(0, |s| s.gpus_total.saturating_sub(s.gpus_used)),
                pending_jobs,
                state: p.state.clone(),
            }
        })
        .collect()
}

/// sacctmgr's `-n -P format=account` lines, deduplicated.
pub fn parse_accounts(out: &str) -> Vec<String> {
    let out = out.split(SBATCH_ENV_MARK).next().unwrap_or("");
    let mut v: Vec<String> = Vec::new();
    for l in out.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !v.iter().any(|a| a == l) {
            v.push(l.to_string());
        }
    }
    v
}

/// Pyxis adds `--container-image` to srun's options.
pub fn pyxis_in_srun_help(help: &str) -> bool {
    help.contains("--container-image")
}

pub fn pending_argv() -> Vec<String> {
    ["squeue", "--noheader", "--states=PENDING", "--format=%P"]
        .map(String::from)
        .to_vec()
}

/// The calling user's associations. A fixed script: `id -un` names the user on the
/// login node (the SSH user may be an alias).
/// Then, after [`SBATCH_ENV_MARK`], the login environment's `SBATCH_*` variables (the same
/// command: no extra round trip).
pub fn accounts_argv() -> Vec<String> {
    [
        "sh".to_string(),
        "-c".into(),
        format!("sacctmgr --noheader --parsable2 show assoc user=\"$(id -un)\" format=account; st=$?; echo {SBATCH_ENV_MARK}; env | grep '^SBATCH_'; exit $st"),
    ]
    .to_vec()
}

/// Separates the accounts from the `SBATCH_*` variables in [`accounts_argv`]'s output.
pub const SBATCH_ENV_MARK: &str = "slurmdash-sbatch-env-follows";

/// The `SBATCH_*` variables in [`accounts_argv`]'s output.
pub fn parse_sbatch_env(out: &str) -> Vec<(String, String)> {
    out.split_once(SBATCH_ENV_MARK)
        .map(|(_, env)| crate::launch::sbatch_env::parse(env))
        .unwrap_or_default()
}

pub fn srun_help_argv() -> Vec<String> {
    vec!["srun".into(), "--help".into()]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::slurm::parse::{parse_scontrol_partitions, parse_sinfo};

    fn fixture(name: &str) -> String {
        let p = format!("{}/tests/fixtures/slurm/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn partitions_from_real_output() {
        let parts = parse_scontrol_partitions(&fixture("scontrol_partition.out")).unwrap();
        let usage = parse_sinfo(&fixture("sinfo.out")).unwrap();
        let info = partitions(&parts, &usage, "short\nshort,polar\nlong\n");
        let short = info.iter().find(|p| p.name == "short").unwrap();
        assert!(short.is_default);
        assert_eq!(short.max_time, Some(Duration::from_secs(1800)));
        assert_eq!((short.nodes, short.gpus_per_node), (1, 8));
        assert_eq!(short.pending_jobs, 2);
        assert_eq!(short.max_time_text(), "30:00");
        let long = info.iter().find(|p| p.name == "long").unwrap();
        assert_eq!(long.max_time, Some(Duration::from_secs(2 * 86400)));
    }

    #[test]
    fn node_shapes_from_real_output() {
        let nodes = parse_nodes(&fixture("sinfo_nodes.out")).unwrap();
        assert!(!nodes.is_empty());
        let short: Vec<&NodeShape> = nodes.iter().filter(|n| n.partition == "short").collect();
        assert!(!short.is_empty(), "{nodes:?}");
        assert!(
            short.iter().all(|n| n.cpus > 0 && n.mem_mb > 0),
            "{nodes:?}"
        );
        let odd =
            parse_nodes("n1|gpu*|8|1000|gpu:a100:4(S:0-1),gpu:t4:2\nn2|cpu|64|256000|(null)\n")
                .unwrap();
        assert_eq!(
            odd,
            [
                NodeShape {
                    node: "n1".into(),
                    partition: "gpu".into(),
                    cpus: 8,
                    mem_mb: 1000,
                    gpus: 6
                },
                NodeShape {
                    node: "n2".into(),
                    partition: "cpu".into(),
                    cpus: 64,
                    mem_mb: 256000,
                    gpus: 0
                },
            ]
        );
        assert!(parse_nodes("n1|gpu|eight|1000|(null)\n")
            .unwrap_err()
            .contains("CPUs is not a number"));
        assert!(parse_nodes("n1|gpu|8\n")
            .unwrap_err()
            .contains("expected 5 fields"));
    }

    #[test]
    fn accounts_and_pyxis() {
        assert_eq!(
            parse_accounts(
                "vision\nresearch\nvision\nslurmdash-sbatch-env-follows\nSBATCH_QOS=high\n"
            ),
            ["vision", "research"]
        );
        assert!(!pyxis_in_srun_help(
            "      --container             Path to OCI container bundle"
        ));
        assert!(pyxis_in_srun_help(
            "      --container-image=[REMOTE#]IMAGE[:TAG]|PATH"
        ));
    }
}
