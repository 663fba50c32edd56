use super::{terminated_records, Row};
use crate::slurm::command::SPRIO_FIELDS;
use crate::slurm::error::ParseError;
use crate::slurm::model::SprioRow;

const CMD: &str = "sprio";

/// Output of `command::sprio`.
pub fn parse_sprio(out: &str) -> Result<Vec<SprioRow>, ParseError> {
    let recs = terminated_records(CMD, out)?;
    let mut rows = Vec::with_capacity(recs.len());
    for rec in &recs {
        let r = Row::split(
            CMD,
            rec,
            crate::slurm::command::FIELD_SEP,
            SPRIO_FIELDS.len(),
            false,
        )?;
        rows.push(SprioRow {
            id: r.job_id(0, "job id")?,
            partition: r.str(1).trim().to_string(),
            user: r.str(2).trim().to_string(),
            priority: r.num(3, "priority")?,
            age: r.num(4, "age")?,
            fairshare: r.num(5, "fairshare")?,
            job_size: r.num(6, "jobsize")?,
            partition_factor: r.num(7, "partition")?,
            qos: r.num(8, "qos")?,
            nice: r.num(9, "nice")?,
            tres: r.str(10).trim().to_string(),
        });
    }
    Ok(rows)
}
