//! Could this partition run that request? Pure checks against `scontrol show partition`.

use super::model::{gpus_in_tres, Partition, SlurmDuration};

/// What a job asks for, as far as partition rules go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobRequest {
    pub time_limit: SlurmDuration,
    pub nodes: u32,
    pub cpus: u32,
    pub gpus: u32,
    pub account: String,
    pub qos: String,
}

fn listed(list: Option<&str>, name: &str) -> bool {
    match list {
        None | Some("ALL") | Some("") => true,
        Some(l) => l.split(',').any(|x| x.trim() == name),
    }
}

/// `Ok` when `p` could run `r` (when free), else why not, in a few words.
pub fn fits(p: &Partition, r: &JobRequest) -> Result<(), String> {
    if !p.state.eq_ignore_ascii_case("UP") && !p.state.is_empty() {
        return Err(format!("partition is {}", p.state.to_lowercase()));
    }
    if let (Some(want), Some(max)) = (r.time_limit.known(), p.max_time.known()) {
        if want > max {
            return Err(format!(
                "time {} > MaxTime {}",
                r.time_limit.to_slurm(),
                p.max_time.to_slurm()
            ));
        }
    }
    if let Some(max) = p.max_nodes {
        if r.nodes > max {
            return Err(format!("{} nodes > MaxNodes {max}", r.nodes));
        }
    }
    if p.total_nodes > 0 && r.nodes > p.total_nodes {
        return Err(format!("{} nodes > its {} nodes", r.nodes, p.total_nodes));
    }
    if p.total_cpus > 0 && r.cpus > p.total_cpus {
        return Err(format!("{} CPUs > its {} CPUs", r.cpus, p.total_cpus));
    }
    let gpus = p.tres.as_deref().map(gpus_in_tres).unwrap_or(0);
    if r.gpus > 0 && r.gpus > gpus {
        return Err(format!("{} GPUs > its {gpus} GPUs", r.gpus));
    }
    if !r.account.is_empty() && !listed(p.field("AllowAccounts"), &r.account) {
        return Err(format!("account {} not allowed", r.account));
    }
    if let Some(deny) = p.field("DenyAccounts") {
        if deny.split(',').any(|x| x.trim() == r.account) {
            return Err(format!("account {} denied", r.account));
        }
    }
    if !r.qos.is_empty() && !listed(p.field("AllowQos"), &r.qos) {
        return Err(format!("QOS {} not allowed", r.qos));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::slurm::parse::parse_scontrol_partitions;

    const PARTS: &str = include_str!("../../tests/fixtures/slurm/scontrol_partition.out");

    #[test]
    fn ten_hours_fits_long_only() {
        let parts = parse_scontrol_partitions(PARTS).unwrap();
        let r = JobRequest {
            time_limit: SlurmDuration::parse("10:00:00").unwrap(),
            nodes: 1,
            cpus: 2,
            gpus: 1,
            account: "research".into(),
            qos: "normal".into(),
        };
        let res: Vec<(String, Result<(), String>)> = parts
            .iter()
            .map(|p| (p.name.clone(), fits(p, &r)))
            .collect();
        assert_eq!(res[0].1, Err("time 10:00:00 > MaxTime 30:00".into()));
        assert_eq!(res[1].1, Err("time 10:00:00 > MaxTime 4:00:00".into()));
        assert_eq!(res[2], ("long".into(), Ok(())));
        let big = JobRequest {
            gpus: 9,
            ..r.clone()
        };
        assert_eq!(fits(&parts[2], &big), Err("9 GPUs > its 8 GPUs".into()));
        let mut p = parts[2].clone();
        p.fields.push(("AllowAccounts".into(), "vision".into()));
        p.fields.retain(|(k, v)| k != "AllowAccounts" || v != "ALL");
        assert_eq!(fits(&p, &r), Err("account research not allowed".into()));
    }
}
