use super::{non_empty, Record, Row};
use crate::slurm::command::{FIELD_SEP, SACCT_FIELDS};
use crate::slurm::error::ParseError;
use crate::slurm::model::JobDetail;
use crate::slurm::state::StateField;

const CMD: &str = "sacct";

/// `0:0`, `1:0`, `0:9` → (code, signal).
pub(crate) fn exit_code(s: &str) -> Option<(i32, i32)> {
    let (a, b) = s.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// sacct has no record terminator and prints a newline inside a job name
/// raw. The name is the last field, so a line without any separator right
/// after a complete row continues that row's name.
fn records(out: &str) -> Result<Vec<Record<'_>>, ParseError> {
    // (line number, byte start, byte end) of each record
    let mut spans: Vec<(usize, usize, usize)> = Vec::new();
    let mut offset = 0;
    for (i, line) in out.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        let text = line.trim_end_matches(['\n', '\r']);
        if !text.contains(FIELD_SEP) {
            if let (Some(last), false) = (spans.last_mut(), text.is_empty()) {
                last.2 = start + text.len();
                continue;
            }
            if text.trim().is_empty() {
                continue;
            }
        }
        spans.push((i + 1, start, start + text.len()));
    }
    Ok(spans
        .into_iter()
        .map(|(line, a, b)| Record {
            line,
            text: &out[a..b],
        })
        .collect())
}

/// Output of `command::sacct_jobs` / `sacct_since`: one JobDetail per row
/// (allocations only, so no `.batch`/`.extern` steps unless asked for).
pub fn parse_sacct(out: &str) -> Result<Vec<JobDetail>, ParseError> {
    let mut rows = Vec::new();
    for rec in records(out)? {
        let r = Row::split(CMD, &rec, FIELD_SEP, SACCT_FIELDS.len(), true)?;
        let st = StateField::parse(r.str(7));
        let mut d = JobDetail {
            id: Some(r.job_id(0, "JobID")?),
            user: r.opt(2),
            uid: r.opt_num(3, "UID")?,
            account: r.opt(4),
            partition: r.opt(5),
            qos: r.opt(6),
            state: Some(st.state),
            cancelled_by: st.cancelled_by,
            reason: r.opt(8),
            exit_code: exit_code(r.str(9)),
            derived_exit_code: exit_code(r.str(10)),
            submit_time: r.time(11, "Submit")?,
            eligible_time: r.time(12, "Eligible")?,
            start_time: r.time(13, "Start")?,
            end_time: r.time(14, "End")?,
            elapsed: Some(r.duration(15, "Elapsed")?),
            time_limit: Some(r.duration(16, "Timelimit")?),
            priority: r.opt_num(17, "Priority")?,
            nodes: r.opt_num(18, "NNodes")?,
            cpus: r.opt_num(19, "NCPUS")?,
            node_list: non_empty(r.str(20)).filter(|n| n != "None assigned"),
            tres: non_empty(r.str(22)).or_else(|| non_empty(r.str(21))),
            min_memory: r.opt(23),
            work_dir: r.opt(24),
            name: r.string(25),
            ..JobDetail::default()
        };
        // JobIDRaw of an array task is its own unique id; JobID is `A_T`.
        if let Some(id) = &d.id {
            if id.array_task().is_some() {
                d.array_job_id = Some(id.base());
                d.array_task = id.array_task().map(|t| t.to_string());
            }
            if let Some(off) = id.het_offset() {
                d.het_job_id = Some(id.base());
                d.het_offset = Some(off);
            }
        }
        d.fields = SACCT_FIELDS
            .iter()
            .zip(r.fields.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        rows.push(d);
    }
    Ok(rows)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn row(id: &str, name: &str) -> String {
        let mut f = vec![""; SACCT_FIELDS.len()];
        f[0] = id;
        f[7] = "COMPLETED";
        f[25] = name;
        f.join("\x1f")
    }

    #[test]
    fn newline_in_name_joins_continuation_lines() {
        let out = format!("{}\n{}\n", row("5", "a\nb\nc"), row("6", "x"));
        let rows = parse_sacct(&out).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name, "a\nb\nc");
        assert_eq!(rows[1].name, "x");
    }

    #[test]
    fn short_row_is_an_error() {
        let out = format!("{}\n5\x1f6\n", row("5", "a"));
        let e = parse_sacct(&out).unwrap_err();
        assert_eq!(e.line, 2);
    }
}
