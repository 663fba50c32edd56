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

/// One node as a partition offers it: what a single node can give one job, and what it
/// has free now (for the form's "starts now" line).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NodeShape {
    pub node: String,
    /// Without sinfo's `*` default marker.
    pub partition: String,
    pub cpus: u32,
    /// Memory in MiB (sinfo `%m`, Slurm's RealMemory).
    pub mem_mb: u64,
    pub gpus: u32,
    /// `idle`, `mixed`, `allocated`, `drained`, ... as sinfo prints it (`idle~`, `mixed-`
    /// with their flags); empty when not read.
    #[serde(default)]
    pub state: String,
    /// CPUs no job holds (the `I` of sinfo's `A/I/O/T`).
    #[serde(default)]
    pub cpus_idle: u32,
    /// Memory held by jobs, MiB (sinfo `AllocMem`).
    #[serde(default)]
    pub mem_alloc_mb: u64,
    /// GPUs held by jobs (sinfo `GresUsed`).
    #[serde(default)]
    pub gpus_used: u32,
}

impl NodeShape {
    /// Whether a job could start on it now, resources allowing: idle or mixed, not
    /// draining, down, powered off, rebooting or planned for another job.
    pub fn open(&self) -> bool {
        let flags = ['*', '~', '#', '!', '%', '$', '@', '^', '-'];
        let base = self.state.trim_end_matches(flags);
        (base == "idle" || base == "mixed") && base.len() == self.state.len()
    }

    pub fn gpus_free(&self) -> u32 {
        self.gpus.saturating_sub(self.gpus_used)
    }

    pub fn mem_free_mb(&self) -> u64 {
        self.mem_mb.saturating_sub(self.mem_alloc_mb)
    }
}

/// sinfo's `--Format` fields of [`nodes_argv`], in order.
const NODE_FIELDS: &[&str] = &[
    "NodeList",
    "Partition",
    "CPUs",
    "Memory",
    "Gres",
    "StateLong",
    "CPUsState",
    "AllocMem",
    "GresUsed",
];

const NODES_CMD: &str = "sinfo --Node";

/// `sinfo --Node`: one record per node and partition, its size and what jobs hold of it
/// (one slurmctld RPC, the same as without the use fields).
pub fn nodes_argv() -> Vec<String> {
    let fmt: Vec<String> = NODE_FIELDS
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let end = if i + 1 == NODE_FIELDS.len() {
                crate::slurm::command::RECORD_END
            } else {
                crate::slurm::command::FIELD_SEP
            };
            format!("{f}:0{end}")
        })
        .collect();
    vec![
        "sinfo".into(),
        "--noheader".into(),
        "--Node".into(),
        format!("--Format={}", fmt.join(",")),
    ]
}

/// Parses [`nodes_argv`]'s output. A record without every field, or whose CPU or memory
/// figures are not numbers, is an error naming its line.
pub fn parse_nodes(out: &str) -> Result<Vec<NodeShape>, String> {
    use crate::slurm::parse::{terminated_records, Row};
    let recs = terminated_records(NODES_CMD, out).map_err(|e| e.to_string())?;
    let mut v = Vec::with_capacity(recs.len());
    for rec in &recs {
        let r = Row::split_fields(NODES_CMD, rec, NODE_FIELDS.len()).map_err(|e| e.to_string())?;
        // A node whose resources sinfo cannot tell yet shows `0`/`1`; numbers are required.
        let num = |i: usize, name: &str| -> Result<u64, String> {
            r.str(i).trim().trim_end_matches('+').parse().map_err(|_| {
                r.err(format!("{name} is not a number: {:?}", r.str(i)))
                    .to_string()
            })
        };
        let cpus_state: Vec<&str> = r.str(6).trim().split('/').collect();
        let cpus_idle = match cpus_state.as_slice() {
            [_, idle, _, _] => idle.parse().map_err(|_| {
                r.err(format!("CPUsState: expected A/I/O/T, got {:?}", r.str(6)))
                    .to_string()
            })?,
            _ => {
                return Err(r
                    .err(format!("CPUsState: expected A/I/O/T, got {:?}", r.str(6)))
                    .to_string())
            }
        };
        v.push(NodeShape {
            node: r.str(0).trim().to_string(),
            partition: r.str(1).trim().trim_end_matches('*').to_string(),
            cpus: u32::try_from(num(2, "CPUs")?).unwrap_or(u32::MAX),
            mem_mb: num(3, "memory")?,
            gpus: gpus_in_gres_list(r.str(4).trim()),
            state: r.str(5).trim().to_string(),
            cpus_idle,
            mem_alloc_mb: num(7, "AllocMem").unwrap_or(0),
            gpus_used: gpus_in_gres_list(r.str(8).trim()),
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
        let nodes = parse_nodes(&fixture("26.05/sinfo_node_use.out")).unwrap();
        assert!(!nodes.is_empty());
        let short: Vec<&NodeShape> = nodes.iter().filter(|n| n.partition == "short").collect();
        assert!(!short.is_empty(), "{nodes:?}");
        assert!(
            short.iter().all(|n| n.cpus > 0 && n.mem_mb > 0),
            "{nodes:?}"
        );
        let rec = |fields: &[&str]| fields.join("\x1f") + "\x1e\n";
        let odd = parse_nodes(
            &(rec(&[
                "n1",
                "gpu*",
                "8",
                "1000",
                "gpu:a100:4(S:0-1),gpu:t4:2",
                "mixed",
                "3/5/0/8",
                "900",
                "gpu:a100:1(IDX:0),gpu:t4:0",
            ]) + &rec(&[
                "n2",
                "cpu",
                "64",
                "256000",
                "(null)",
                "drained",
                "0/0/64/64",
                "0",
                "(null)",
            ])),
        )
        .unwrap();
        assert_eq!(
            odd,
            [
                NodeShape {
                    node: "n1".into(),
                    partition: "gpu".into(),
                    cpus: 8,
                    mem_mb: 1000,
                    gpus: 6,
                    state: "mixed".into(),
                    cpus_idle: 5,
                    mem_alloc_mb: 900,
                    gpus_used: 1,
                },
                NodeShape {
                    node: "n2".into(),
                    partition: "cpu".into(),
                    cpus: 64,
                    mem_mb: 256000,
                    gpus: 0,
                    state: "drained".into(),
                    cpus_idle: 0,
                    mem_alloc_mb: 0,
                    gpus_used: 0,
                },
            ]
        );
        assert!(odd[0].open() && !odd[1].open());
        assert_eq!((odd[0].gpus_free(), odd[0].mem_free_mb()), (5, 100));
        let bad = parse_nodes(&rec(&[
            "n1", "gpu", "eight", "1000", "(null)", "idle", "0/8/0/8", "0", "(null)",
        ]))
        .unwrap_err();
        assert!(bad.contains("CPUs is not a number"), "{bad}");
        assert!(parse_nodes("n1\x1fgpu\x1f8\x1e\n").is_err());
    }

    /// Real `sinfo --Node` output of the dev cluster (22.05 and 26.05) with a job of 2-3
    /// CPUs, 1 GiB and 3 GPUs running on gpu01.
    #[test]
    fn node_use_from_real_output() {
        for v in ["22.05", "26.05"] {
            let nodes = parse_nodes(&fixture(&format!("{v}/sinfo_node_use.out"))).unwrap();
            assert_eq!(nodes.len(), 9, "{v}");
            let gpu01: Vec<&NodeShape> = nodes.iter().filter(|n| n.node == "gpu01").collect();
            assert_eq!(gpu01.len(), 3, "{v}: one record per partition");
            let n = gpu01[0];
            assert_eq!(
                (n.state.as_str(), n.gpus, n.gpus_used),
                ("mixed", 8, 3),
                "{v}"
            );
            assert!(
                n.open() && n.cpus_idle < 16 && n.mem_alloc_mb >= 1024,
                "{v}: {n:?}"
            );
            let spare = nodes.iter().find(|n| n.node == "spare01").unwrap();
            assert_eq!(
                (spare.partition.as_str(), spare.gpus_free(), spare.cpus_idle),
                ("spare", 2, 4)
            );
            assert!(
                nodes.iter().any(|n| n.partition == "short"),
                "the default marker goes"
            );
        }
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
