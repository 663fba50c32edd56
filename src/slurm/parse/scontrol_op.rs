use crate::slurm::jobid::JobId;
use crate::slurm::model::CancelOutcome;

/// Classifies the stderr of `scontrol uhold|release|requeue|top|update` per
/// requested id. scontrol prints `MESSAGE for job ID` for every id it refused
/// and exits 1; a summary line (`slurm_suspend error: MESSAGE`) names no id.
/// Ids without their own line succeeded. A failure that names no id (the
/// controller down, bad syntax) applies to every id when the status is non-zero.
/// The outcomes reuse `CancelOutcome`: `AlreadyGone` for ids Slurm does not know,
/// `AlreadyFinished` for jobs that ended; the caller decides whether those count
/// as success (they do not for hold or requeue).
pub fn parse_scontrol_op(
    ids: &[JobId],
    stderr: &str,
    exit_status: i32,
) -> Vec<(JobId, CancelOutcome)> {
    let mut per_id: Vec<(&str, CancelOutcome)> = Vec::new();
    let mut general: Vec<&str> = Vec::new();
    for line in stderr.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("slurm_suspend error:") || line.starts_with("slurm_requeue error:") {
            continue; // repeats the per-id message
        }
        match line.rsplit_once(" for job ") {
            Some((msg, id)) if id.bytes().next().is_some_and(|b| b.is_ascii_digit()) => {
                per_id.push((id.trim(), CancelOutcome::from_message(msg.trim())));
            }
            _ => general.push(line),
        }
    }
    ids.iter()
        .map(|id| {
            let hit = per_id.iter().find(|(s, _)| {
                *s == id.as_str() || s.parse::<JobId>().map(|p| p == *id).unwrap_or(false)
            });
            let outcome = match hit {
                Some((_, o)) => o.clone(),
                None if exit_status != 0 && per_id.is_empty() => {
                    CancelOutcome::Failed(if general.is_empty() {
                        format!("scontrol exited with status {exit_status}")
                    } else {
                        general.join("; ")
                    })
                }
                None => CancelOutcome::Cancelled,
            };
            (id.clone(), outcome)
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> (String, i32) {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slurm/");
        let err = std::fs::read_to_string(format!("{dir}{name}.err")).unwrap_or_default();
        let status = std::fs::read_to_string(format!("{dir}{name}.status")).unwrap();
        (err, status.trim().parse().unwrap())
    }

    /// The job id scontrol's message names (`... for job 838`).
    fn named_id(err: &str) -> &str {
        err.split(" for job ")
            .nth(1)
            .unwrap()
            .lines()
            .next()
            .unwrap()
    }

    fn ids(v: &[&str]) -> Vec<JobId> {
        v.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn mixed_hold_names_the_unknown_id_only() {
        let (err, st) = fixture("scontrol_uhold_mixed");
        let bad = named_id(&err);
        let out = parse_scontrol_op(&ids(&["838", bad]), &err, st);
        assert_eq!(out[0].1, CancelOutcome::Cancelled);
        assert_eq!(out[1].1, CancelOutcome::AlreadyGone);
    }

    #[test]
    fn refusals_carry_scontrol_message() {
        for (name, want) in [
            ("scontrol_uhold_denied", "Invalid user id"),
            ("scontrol_requeue_pending", "Job is pending execution"),
            ("scontrol_top_pending", "Access/permission denied"),
            ("scontrol_update_denied", "Access/permission denied"),
            (
                "scontrol_update_bad_partition",
                "Invalid partition name specified",
            ),
        ] {
            let (err, st) = fixture(name);
            let id = named_id(&err);
            let out = parse_scontrol_op(&ids(&[id]), &err, st);
            assert_eq!(out[0].1, CancelOutcome::Failed(want.into()), "{name}");
        }
    }

    #[test]
    fn finished_and_gone() {
        let (err, st) = fixture("scontrol_uhold_finished");
        let id = named_id(&err);
        let out = parse_scontrol_op(&ids(&[id]), &err, st);
        assert_eq!(out[0].1, CancelOutcome::AlreadyFinished);
        let (err, st) = fixture("scontrol_update_gone");
        let out = parse_scontrol_op(&ids(&["99999998"]), &err, st);
        assert_eq!(out[0].1, CancelOutcome::AlreadyGone);
    }

    #[test]
    fn success_and_anonymous_failure() {
        let (err, st) = fixture("scontrol_release_ok");
        assert_eq!(
            parse_scontrol_op(&ids(&["5"]), &err, st)[0].1,
            CancelOutcome::Cancelled
        );
        let out = parse_scontrol_op(
            &ids(&["5", "6"]),
            "scontrol: error: Unable to contact slurm controller (connect failure)\n",
            1,
        );
        assert!(out.iter().all(
            |(_, o)| matches!(o, CancelOutcome::Failed(m) if m.contains("Unable to contact"))
        ));
    }
}
