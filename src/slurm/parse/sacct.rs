use super::frame::framed_records;
use super::{non_empty, Parsed, Record, Row};
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

/// Older output without the closing job id (captured fixtures): sacct has no record
/// terminator and prints a newline inside a job name raw. The name is the last field, so
/// a line without any separator right after a complete row continues that row's name.
fn records(out: &str) -> Vec<Record<'_>> {
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
    spans
        .into_iter()
        .map(|(line, a, b)| Record {
            line,
            text: &out[a..b],
        })
        .collect()
}

/// Fields before the free text (work dir, job id, name).
const FIXED: usize = 24;

/// Output of `command::sacct_jobs` / `sacct_since`: one JobDetail per row
/// (allocations only, so no `.batch`/`.extern` steps unless asked for). A record that does
/// not read is left out and named in `problems`; the others still read.
pub fn read_sacct(out: &str) -> Parsed<JobDetail> {
    let mut parsed = Parsed::default();
    let recs: Vec<(Record<'_>, bool, bool)> = match framed_records(out, "\n", SACCT_FIELDS.len()) {
        Some(v) => v
            .into_iter()
            .map(|f| {
                (
                    Record {
                        line: f.line,
                        text: f.text,
                    },
                    true,
                    f.complete,
                )
            })
            .collect(),
        None => records(out).into_iter().map(|r| (r, false, true)).collect(),
    };
    for (rec, framed, complete) in recs {
        match one(&rec, framed, complete) {
            Ok(d) => parsed.items.push(d),
            Err(e) => parsed.problems.push(e),
        }
    }
    parsed
}

/// Output of `command::sacct_jobs` / `sacct_since`, failing on the first record that does
/// not read.
pub fn parse_sacct(out: &str) -> Result<Vec<JobDetail>, ParseError> {
    read_sacct(out).strict()
}

pub(crate) fn one(rec: &Record<'_>, framed: bool, complete: bool) -> Result<JobDetail, ParseError> {
    let r = Row::split(CMD, rec, FIELD_SEP, FIXED + 1, true)?;
    if !complete {
        return Err(r.err("record not closed by its job id (output cut off)"));
    }
    let id = r.job_id(0, "JobID")?;
    let tail = r.str(FIXED);
    let (work_dir, name) = if framed {
        let mid = format!("{FIELD_SEP}{}{FIELD_SEP}", id.as_str());
        match tail.find(&mid) {
            Some(i) => (&tail[..i], &tail[i + mid.len()..]),
            None => match tail.strip_prefix(&mid[1..]) {
                Some(name) => ("", name),
                None => return Err(r.err("work dir and name not separated by the job id")),
            },
        }
    } else {
        tail.split_once(FIELD_SEP)
            .ok_or_else(|| r.err(format!("expected {} fields, found {FIXED}", FIXED + 2)))?
    };
    let st = StateField::parse(r.str(7));
    let mut d = JobDetail {
        id: Some(id),
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
        work_dir: non_empty(work_dir),
        name: name.to_string(),
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
    d.fields = SACCT_FIELDS[..FIXED]
        .iter()
        .zip(r.fields.iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain([
            ("WorkDir".to_string(), work_dir.to_string()),
            ("JobName".to_string(), name.to_string()),
        ])
        .collect();
    Ok(d)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fields<'a>(id: &'a str, dir: &'a str, name: &'a str) -> Vec<&'a str> {
        let mut f = vec![""; SACCT_FIELDS.len()];
        f[0] = id;
        f[7] = "COMPLETED";
        f[FIXED] = dir;
        f[FIXED + 1] = id;
        f[FIXED + 2] = name;
        f[FIXED + 3] = id;
        f
    }

    fn row(id: &str, dir: &str, name: &str) -> String {
        fields(id, dir, name).join("\x1f")
    }

    #[test]
    fn newlines_and_separators_in_name_and_work_dir_stay_in_their_record() {
        let out = format!(
            "{}\n{}\n{}\n",
            row("5", "/a\x1fb\nc", "a\nb\x1f\nc"),
            row("6", "/d", "x"),
            row("7_2", "", "\n")
        );
        let p = read_sacct(&out);
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        let got: Vec<(&str, Option<&str>, &str)> = p
            .items
            .iter()
            .map(|d| {
                (
                    d.id.as_ref().unwrap().as_str(),
                    d.work_dir.as_deref(),
                    d.name.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("5", Some("/a\x1fb\nc"), "a\nb\x1f\nc"),
                ("6", Some("/d"), "x"),
                ("7_2", None, "\n")
            ]
        );
        assert_eq!(p.items[0].field("JobName"), Some("a\nb\x1f\nc"));
    }

    #[test]
    fn a_bad_record_is_left_out_and_named() {
        let mut f = fields("6", "/d", "x");
        f[11] = "soon";
        let bad = f.join("\x1f");
        let out = format!("{}\n{bad}\n{}\n", row("5", "/d", "a"), row("7", "/d", "b"));
        let p = read_sacct(&out);
        let ids: Vec<&str> = p
            .items
            .iter()
            .map(|d| d.id.as_ref().unwrap().as_str())
            .collect();
        assert_eq!(ids, ["5", "7"]);
        assert_eq!(p.problems.len(), 1);
        assert_eq!(p.problems[0].line, 2);
    }

    #[test]
    fn older_output_without_the_closing_id_still_reads() {
        let old = |id: &str, name: &str| {
            let mut f = vec![""; FIXED + 2];
            f[0] = id;
            f[7] = "COMPLETED";
            f[FIXED + 1] = name;
            f.join("\x1f")
        };
        let out = format!("{}\n{}\n", old("5", "a\nb\nc"), old("6", "x"));
        let rows = parse_sacct(&out).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name, "a\nb\nc");
        assert_eq!(rows[1].name, "x");
        let out = format!("{}\n5\x1f6\n", old("5", "a"));
        let e = parse_sacct(&out).unwrap_err();
        assert_eq!(e.line, 2);
    }
}
