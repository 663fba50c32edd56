use crate::slurm::jobid::JobId;
use crate::slurm::model::CancelOutcome;

/// Classifies the stderr of `command::scancel` (`--verbose`) per requested
/// id. scancel prints `scancel: error: Kill job error on job id ID: MESSAGE`
/// per failed id; ids with no such line were cancelled. Slurm 22.05 exits 0
/// for unknown and finished ids, 1 for a malformed id, and Slurm's errno
/// & 0xff (210 for "Access/permission denied") for refusals. A failure that
/// names no id (bad syntax, controller unreachable) applies to every id
/// without its own line when the exit status is non-zero.
pub fn parse_scancel(ids: &[JobId], stderr: &str, exit_status: i32) -> Vec<(JobId, CancelOutcome)> {
    let mut per_id: Vec<(String, CancelOutcome)> = Vec::new();
    let mut general: Vec<&str> = Vec::new();
    for line in stderr.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("scancel: Terminating job") || line.starts_with("scancel: Signal ") {
            continue;
        }
        match id_and_message(line) {
            Some((id, msg)) => per_id.push((id.to_string(), CancelOutcome::from_message(msg))),
            None => general.push(line),
        }
    }
    ids.iter()
        .map(|id| {
            let hit = per_id
                .iter()
                .find(|(s, _)| s == id.as_str())
                .or_else(|| per_id.iter().find(|(s, _)| same_job(s, id)));
            let outcome = match hit {
                Some((_, o)) => o.clone(),
                None if exit_status != 0 && per_id.is_empty() && !general.is_empty() => {
                    CancelOutcome::Failed(general.join("; "))
                }
                None if exit_status != 0 && per_id.is_empty() => {
                    CancelOutcome::Failed(format!("scancel exited with status {exit_status}"))
                }
                None => CancelOutcome::Cancelled,
            };
            (id.clone(), outcome)
        })
        .collect()
}

fn same_job(s: &str, id: &JobId) -> bool {
    s.parse::<JobId>().map(|p| p == *id).unwrap_or(false)
}

fn id_and_message(line: &str) -> Option<(&str, &str)> {
    let at = line.find("job id ")?;
    let rest = &line[at + "job id ".len()..];
    let (id, msg) = rest.split_once(':')?;
    let id = id.trim();
    if id.is_empty() || !id.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    Some((id, msg.trim()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<JobId> {
        v.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn classifies_each_id() {
        let err = "scancel: error: Kill job error on job id 5: Invalid job id specified\n\
                   scancel: error: Kill job error on job id 6: Job/step already completing or completed\n\
                   scancel: error: Kill job error on job id 8: Access/permission denied\n";
        let out = parse_scancel(&ids(&["5", "6", "7", "8"]), err, 1);
        let got: Vec<_> = out.into_iter().map(|(_, o)| o).collect();
        assert_eq!(
            got,
            vec![
                CancelOutcome::AlreadyGone,
                CancelOutcome::AlreadyFinished,
                CancelOutcome::Cancelled,
                CancelOutcome::Failed("Access/permission denied".into()),
            ]
        );
    }

    #[test]
    fn het_component_refusal_from_real_stderr() {
        let err = "scancel: Terminating job 251+1\n\
                   scancel: error: Kill job error on job id 251+1: Operation not permitted on individual component of heterogeneous job\n";
        let out = parse_scancel(&ids(&["251+1"]), err, 60);
        assert!(matches!(&out[0].1, CancelOutcome::Failed(m) if m.contains("heterogeneous")));
    }

    #[test]
    fn unattributed_failure_applies_to_all() {
        let out = parse_scancel(
            &ids(&["5"]),
            "scancel: error: Unable to contact slurm controller\n",
            1,
        );
        assert!(matches!(out[0].1, CancelOutcome::Failed(_)));
        let out = parse_scancel(&ids(&["5"]), "", 0);
        assert_eq!(out[0].1, CancelOutcome::Cancelled);
    }
}
