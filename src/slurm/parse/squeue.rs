use super::{terminated_records, Row};
use crate::slurm::command::{SQUEUE_FIELDS, SQUEUE_START_FIELDS};
use crate::slurm::error::ParseError;
use crate::slurm::model::{Job, StartEstimate};
use crate::slurm::shared::Interner;
use crate::slurm::state::JobState;

const CMD: &str = "squeue";

/// Output of `command::squeue`.
pub fn parse_squeue(out: &str) -> Result<Vec<Job>, ParseError> {
    let recs = terminated_records(CMD, out)?;
    let mut jobs = Vec::with_capacity(recs.len());
    let mut shared = Interner::default();
    for rec in &recs {
        let r = Row::split_fields(CMD, rec, SQUEUE_FIELDS.len())?;
        let array_job_id = r.opt_num::<u64>(1, "array job id (%F)")?;
        jobs.push(Job {
            id: r.job_id(0, "job id (%i)")?,
            array_job_id,
            array_task: r.opt(2),
            user: shared.get(r.str(3)),
            account: shared.get(r.str(4)),
            partition: shared.get(r.str(5)),
            state: JobState::parse(r.str(6)),
            reason: r.opt(7),
            time_used: r.duration(8, "time used (%M)")?,
            time_limit: r.duration(9, "time limit (%l)")?,
            nodes: r.num(10, "nodes (%D)")?,
            cpus: r.num(11, "cpus (%C)")?,
            min_memory: r.opt(12),
            tres_per_node: r.opt(13),
            node_list: r.opt(14),
            submit_time: r.time(15, "submit time (%V)")?,
            start_time: r.time(16, "start time (%S)")?,
            qos: shared.get(r.str(17)),
            priority: r.opt_num(18, "priority (%Q)")?,
            work_dir: shared.get(r.str(19)),
            name: r.string(20),
        });
    }
    Ok(jobs)
}

/// Output of `command::squeue_start`.
pub fn parse_squeue_start(out: &str) -> Result<Vec<StartEstimate>, ParseError> {
    let recs = terminated_records(CMD, out)?;
    let mut rows = Vec::with_capacity(recs.len());
    for rec in &recs {
        let r = Row::split_fields(CMD, rec, SQUEUE_START_FIELDS.len())?;
        rows.push(StartEstimate {
            id: r.job_id(0, "job id (%i)")?,
            partition: r.string(1),
            user: r.string(2),
            state: JobState::parse(r.str(3)),
            start_time: r.time(4, "start time (%S)")?,
            nodes: r.num(5, "nodes (%D)")?,
            sched_nodes: r.opt(6),
            reason: r.opt(7),
            name: r.string(8),
        });
    }
    Ok(rows)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::slurm::state::Status;

    fn row(fields: &[&str]) -> String {
        format!("{}\x1e\n", fields.join("\x1f"))
    }

    const RUNNING: &[&str] = &[
        "42",
        "42",
        "N/A",
        "sduser",
        "acct",
        "short",
        "RUNNING",
        "None",
        "1:02",
        "30:00",
        "1",
        "2",
        "1G",
        "gres:gpu:2",
        "node1",
        "2026-11-23T08:12:44",
        "2026-11-23T08:12:45",
        "normal",
        "4294901758",
        "/home/sduser",
        "name | with, \"quotes\" ünïcode",
    ];

    #[test]
    fn parses_a_row_with_hostile_name() {
        let jobs = parse_squeue(&row(RUNNING)).unwrap();
        let j = &jobs[0];
        assert_eq!(j.id.as_str(), "42");
        assert_eq!(j.name, "name | with, \"quotes\" ünïcode");
        assert_eq!(j.status(), Status::Running);
        assert_eq!(j.gpus(), 2);
        assert_eq!(j.reason, None);
        assert_eq!(j.time_used.known().unwrap().as_secs(), 62);
    }

    #[test]
    fn name_may_hold_separators_and_newlines() {
        let mut f = RUNNING.to_vec();
        f[20] = "a\x1fb\nc";
        let out = format!("{}{}", row(&f), row(RUNNING));
        let jobs = parse_squeue(&out).unwrap();
        assert_eq!(jobs[0].name, "a\x1fb\nc");
        assert_eq!(jobs.len(), 2);
    }

    #[test]
    fn short_row_is_an_error_with_line_number() {
        let out = format!("{}{}", row(RUNNING), row(&RUNNING[..5]));
        let e = parse_squeue(&out).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.what.contains("expected 21 fields, found 5"), "{e}");
    }

    #[test]
    fn unterminated_tail_is_an_error() {
        let out = format!("{}42\x1f42", row(RUNNING));
        let e = parse_squeue(&out).unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn empty_output_is_no_jobs() {
        assert!(parse_squeue("").unwrap().is_empty());
        assert!(parse_squeue("\n").unwrap().is_empty());
    }
}
