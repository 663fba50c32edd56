//! The cluster at a glance: one row per partition from sinfo (node states, GPUs), scontrol
//! (MaxTime and rules) and an all-users squeue (running/pending jobs, pending GPU demand).
//! Pure; the fetch is `io::partitions`, shared by anything that needs partition data.

use super::command::{self, FIELD_SEP, RECORD_END};
use super::error::ParseError;
use super::fit::{fits, JobRequest};
use super::model::{gpus_in_tres, Partition, PartitionUsage, SlurmDuration};
use super::parse::{parse_scontrol_partitions, parse_sinfo, terminated_records, Row};

/// squeue fields for the demand listing: partition(s), state, tres-per-node, nodes.
const DEMAND_FIELDS: &[&str] = &["%P", "%T", "%b", "%D"];

/// The three commands of one partitions fetch, in section order.
pub fn commands() -> Vec<Vec<String>> {
    let mut f = DEMAND_FIELDS.join(&FIELD_SEP.to_string());
    f.push(RECORD_END);
    // --local: this cluster only, no federation lookup (one slurmctld RPC fewer each).
    let mut sinfo = command::sinfo();
    sinfo.insert(1, "--local".into());
    vec![
        sinfo,
        command::scontrol_show_partition(),
        vec![
            "squeue".into(),
            "--noheader".into(),
            "--local".into(),
            "--all".into(),
            "--states=PENDING,RUNNING".into(),
            format!("--format={f}"),
        ],
    ]
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PartitionRow {
    pub name: String,
    pub is_default: bool,
    pub avail: String,
    pub max_time: SlurmDuration,
    pub idle: u32,
    pub mixed: u32,
    pub allocated: u32,
    pub down: u32,
    pub drained: u32,
    pub other: u32,
    pub cpus_idle: u32,
    pub cpus_total: u32,
    pub gpus_total: u32,
    pub gpus_used: u32,
    pub running: u32,
    pub pending: u32,
    pub pending_gpus: u32,
    /// The scontrol record, for fit checks.
    pub config: Option<Partition>,
}

impl PartitionRow {
    pub fn gpus_free(&self) -> u32 {
        self.gpus_total.saturating_sub(self.gpus_used)
    }
}

fn node_bucket(row: &mut PartitionRow, state: &str, n: u32) {
    let s = state.trim_end_matches(['*', '~', '#', '!', '%', '$', '@', '^', '-']);
    match s {
        "idle" => row.idle += n,
        "mixed" => row.mixed += n,
        "allocated" | "completing" => row.allocated += n,
        s if s.starts_with("down") || s == "fail" || s == "failing" || s == "not_responding" => {
            row.down += n
        }
        s if s.starts_with("drain") => row.drained += n,
        _ => row.other += n,
    }
}

/// Rows in sinfo's order from the three outputs.
pub fn parse(sinfo: &str, scontrol: &str, squeue: &str) -> Result<Vec<PartitionRow>, ParseError> {
    let usage: Vec<PartitionUsage> = parse_sinfo(sinfo)?;
    let parts = parse_scontrol_partitions(scontrol)?;
    let mut rows: Vec<PartitionRow> = Vec::new();
    for u in &usage {
        let i = match rows.iter().position(|r| r.name == u.partition) {
            Some(i) => i,
            None => {
                rows.push(PartitionRow {
                    name: u.partition.clone(),
                    is_default: u.is_default,
                    avail: u.avail.clone(),
                    max_time: u.time_limit,
                    ..PartitionRow::default()
                });
                rows.len() - 1
            }
        };
        let r = &mut rows[i];
        node_bucket(r, &u.node_state, u.nodes);
        r.cpus_idle += u.cpus_idle;
        r.cpus_total += u.cpus_total;
        r.gpus_total += u.gpus_total();
        r.gpus_used += u.gpus_used();
    }
    for p in parts {
        match rows.iter_mut().find(|r| r.name == p.name) {
            Some(r) => {
                if p.max_time != SlurmDuration::Unknown {
                    r.max_time = p.max_time;
                }
                r.config = Some(p);
            }
            None => rows.push(PartitionRow {
                name: p.name.clone(),
                is_default: p.is_default,
                avail: p.state.to_lowercase(),
                max_time: p.max_time,
                config: Some(p),
                ..PartitionRow::default()
            }),
        }
    }
    for rec in &terminated_records("squeue", squeue)? {
        let r = Row::split_fields("squeue", rec, DEMAND_FIELDS.len())?;
        let running = r.str(1).trim() == "RUNNING";
        let nodes: u32 = r.num(3, "nodes (%D)")?;
        let gpus = r.opt(2).map(|t| gpus_in_tres(&t)).unwrap_or(0) * nodes.max(1);
        for name in r.str(0).split(',') {
            if let Some(row) = rows.iter_mut().find(|x| x.name == name.trim()) {
                if running {
                    row.running += 1;
                } else {
                    row.pending += 1;
                    row.pending_gpus += gpus;
                }
            }
        }
    }
    Ok(rows)
}

/// For one request: each partition's verdict, best first. `Ok(true)` fits and has room
/// now; `Ok(false)` fits but must wait; `Err` cannot run it.
pub fn rank_for(rows: &[PartitionRow], req: &JobRequest) -> Vec<(String, Result<bool, String>)> {
    let mut v: Vec<(&PartitionRow, Result<bool, String>)> = rows
        .iter()
        .map(|r| {
            let fit = match &r.config {
                Some(p) => fits(p, req),
                None => Ok(()),
            };
            let room = r.cpus_idle >= req.cpus && r.gpus_free() >= req.gpus;
            (r, fit.map(|()| room))
        })
        .collect();
    v.sort_by_key(|(r, f)| match f {
        Ok(true) => (0, r.pending, r.pending_gpus),
        Ok(false) => (1, r.pending, r.pending_gpus),
        Err(_) => (2, 0, 0),
    });
    v.into_iter().map(|(r, f)| (r.name.clone(), f)).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const SINFO: &str = include_str!("../../tests/fixtures/slurm/sinfo.out");
    const PARTS: &str = include_str!("../../tests/fixtures/slurm/scontrol_partition.out");

    fn demand() -> String {
        [
            "short\x1fRUNNING\x1fgres:gpu:2\x1f1\x1e",
            "short,polar\x1fPENDING\x1fgres:gpu:4\x1f1\x1e",
            "polar\x1fPENDING\x1fN/A\x1f2\x1e",
            "nowhere\x1fPENDING\x1fN/A\x1f1\x1e",
        ]
        .join("\n")
            + "\n"
    }

    #[test]
    fn rows_from_real_sinfo_and_scontrol() {
        let rows = parse(SINFO, PARTS, &demand()).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["short", "polar", "long"]);
        let short = &rows[0];
        assert!(short.is_default);
        assert_eq!(short.gpus_total, 8);
        assert_eq!(short.max_time.to_slurm(), "30:00");
        assert_eq!(
            (short.running, short.pending, short.pending_gpus),
            (1, 1, 4)
        );
        assert_eq!((rows[1].pending, rows[1].pending_gpus), (2, 4));
        assert_eq!(
            short.idle + short.mixed + short.allocated + short.down + short.drained + short.other,
            1
        );
    }

    #[test]
    fn soonest_partition_first() {
        let mut rows = parse(SINFO, PARTS, &demand()).unwrap();
        for r in &mut rows {
            r.cpus_idle = 16;
            r.gpus_used = 0;
        }
        let req = JobRequest {
            time_limit: SlurmDuration::parse("2:00:00").unwrap(),
            nodes: 1,
            cpus: 2,
            gpus: 1,
            ..JobRequest::default()
        };
        let v = rank_for(&rows, &req);
        assert_eq!(v[0], ("long".to_string(), Ok(true)));
        assert_eq!(v[1], ("polar".to_string(), Ok(true)));
        assert!(matches!(&v[2], (n, Err(e)) if n == "short" && e.contains("MaxTime")));
    }
}
