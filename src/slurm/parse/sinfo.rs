use super::{terminated_records, Row};
use crate::slurm::command::SINFO_FIELDS;
use crate::slurm::error::ParseError;
use crate::slurm::model::PartitionUsage;

const CMD: &str = "sinfo";

/// Output of `command::sinfo`: one row per partition and node state.
pub fn parse_sinfo(out: &str) -> Result<Vec<PartitionUsage>, ParseError> {
    let recs = terminated_records(CMD, out)?;
    let mut rows = Vec::with_capacity(recs.len());
    for rec in &recs {
        let r = Row::split_fields(CMD, rec, SINFO_FIELDS.len())?;
        let part = r.str(0).trim();
        let (partition, is_default) = match part.strip_suffix('*') {
            Some(p) => (p.to_string(), true),
            None => (part.to_string(), false),
        };
        let cpus: Vec<&str> = r.str(5).trim().split('/').collect();
        let cpu = |i: usize| -> Result<u32, ParseError> {
            cpus.get(i).and_then(|c| c.parse().ok()).ok_or_else(|| {
                r.err(format!(
                    "field CPUsState: expected A/I/O/T, got {:?}",
                    r.str(5)
                ))
            })
        };
        rows.push(PartitionUsage {
            partition,
            is_default,
            avail: r.str(1).trim().to_string(),
            time_limit: r.duration(2, "Time")?,
            nodes: r.num(3, "Nodes")?,
            node_state: r.str(4).trim().to_string(),
            cpus_alloc: cpu(0)?,
            cpus_idle: cpu(1)?,
            cpus_other: cpu(2)?,
            cpus_total: cpu(3)?,
            gres: r.opt(6),
            gres_used: r.opt(7),
            node_list: r.str(8).trim().to_string(),
        });
    }
    Ok(rows)
}
