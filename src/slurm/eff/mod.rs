//! How a finished job used what it asked for: one sacct read of the job and every step,
//! parsed purely (`read_eff`), then turned into figures and a verdict (`report`).
//!
//! The format is framed like every other sacct read (`parse::frame`): the job id first and
//! last, the name last but one, a separator that cannot occur in a name. The use fields
//! come right after the opening id, before the usual sacct fields, so the rest of each
//! record is exactly a record of `command::SACCT_FIELDS` and reads with the same code.

pub mod recover;
pub mod size;

use super::command::{FIELD_SEP, SACCT_FIELDS};
use super::error::ParseError;
use super::jobid::JobId;
use super::model::JobDetail;
use super::parse::frame::framed_records;
use super::parse::{sacct, Parsed, Record};
use super::time::SlurmDuration;

const CMD: &str = "sacct";

/// Use fields, after the opening JobID and before `SACCT_FIELDS`.
pub const USE_FIELDS: &[&str] = &[
    "ElapsedRaw",
    "TimelimitRaw",
    "NTasks",
    "TotalCPU",
    "CPUTimeRAW",
    "MaxRSS",
    "MaxRSSNode",
    "TRESUsageInMax",
    "TRESUsageInAve",
];

/// Final states, as `sacct --state` takes them (history reads only these).
pub const ENDED_STATES: &str = "BF,CA,CD,DL,F,NF,OOM,PR,TO";

/// The whole `--format=` list.
pub fn eff_format() -> String {
    let mut f = vec!["JobID"];
    f.extend_from_slice(USE_FIELDS);
    f.extend_from_slice(SACCT_FIELDS);
    f.join(",")
}

fn base() -> Vec<String> {
    vec![
        "sacct".to_string(),
        "--noheader".into(),
        "--parsable2".into(),
        format!("--delimiter={FIELD_SEP}"),
        format!("--format={}", eff_format()),
    ]
}

/// These jobs with every step (no `--allocations`), among the jobs eligible or running since
/// `since` (see [`super::command::sacct_jobs`] for why a start is always given).
pub fn sacct_eff_jobs(ids: &[JobId], since: Edge) -> Vec<String> {
    let mut a = base();
    let ids: Vec<&str> = ids.iter().map(JobId::as_str).collect();
    a.push(format!("--jobs={}", ids.join(",")));
    a.push(format!("--starttime={}", since.arg()));
    a
}

pub use super::time::Edge;

/// The newest window ends a minute after `now`: 22.05's sacct leaves out jobs that ended
/// seconds before `--endtime=now`.
pub const NEWEST_END: Edge = Edge::Ago(-60);

/// Own jobs that ended in `[start, end]`. `steps` adds every step (for the use figures);
/// without it one line per job (the list).
pub fn sacct_ended(start: Edge, end: Edge, steps: bool) -> Vec<String> {
    let mut a = base();
    if !steps {
        a.push("--allocations".into());
    }
    a.push(format!("--state={ENDED_STATES}"));
    a.push(format!("--starttime={}", start.arg()));
    a.push(format!("--endtime={}", end.arg()));
    a
}

/// `days` back from now in windows of `window_days`, newest first; the newest ends at
/// [`NEWEST_END`].
pub fn windows(from_days: u32, days: u32, window_days: u32) -> Vec<(Edge, Edge)> {
    let w = i64::from(window_days.max(1)) * 86_400;
    let mut out = Vec::new();
    let mut end = i64::from(from_days) * 86_400;
    let stop = i64::from(from_days + days) * 86_400;
    while end < stop {
        let start = (end + w).min(stop);
        let e = if end == 0 { NEWEST_END } else { Edge::Ago(end) };
        out.push((Edge::Ago(start), e));
        end = start;
    }
    out
}

/// One step's figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepUse {
    /// `batch`, `extern`, `0`, ...
    pub step: String,
    pub name: String,
    pub state: Option<super::model::JobState>,
    pub elapsed_s: Option<u64>,
    pub ntasks: Option<u32>,
    pub total_cpu_s: Option<f64>,
    /// Largest resident set of any task of the step; None when not recorded.
    pub max_rss: Option<u64>,
    pub max_rss_node: Option<String>,
    /// `gres/gpuutil` of TRESUsageInAve (percent), where the site records it.
    pub gpu_util: Option<f64>,
    pub gpu_mem: Option<u64>,
}

/// A job's allocation record, its use figures and its steps.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobUse {
    pub detail: JobDetail,
    pub elapsed_s: Option<u64>,
    /// From TimelimitRaw (minutes); None when unlimited or unknown.
    pub time_limit_s: Option<u64>,
    /// TotalCPU of the allocation: the sum over its steps.
    pub total_cpu_s: Option<f64>,
    /// CPUTimeRAW: allocated CPUs × elapsed seconds.
    pub core_s: Option<u64>,
    pub gpu_util: Option<f64>,
    pub steps: Vec<StepUse>,
}

/// Reads `sacct_eff_jobs` / `sacct_ended` output: one `JobUse` per job, steps attached to
/// their job. A record that does not read is left out and named in `problems`; a step whose
/// job is not in the output is dropped (its job was not asked for).
pub fn read_eff(out: &str) -> Parsed<JobUse> {
    let total = 1 + USE_FIELDS.len() + SACCT_FIELDS.len();
    let mut parsed: Parsed<JobUse> = Parsed::default();
    let Some(recs) = framed_records(out, "\n", total) else {
        if !out.trim().is_empty() {
            parsed.problems.push(ParseError::new(
                CMD,
                1,
                "not the expected format (no record closed by its job id)",
                out.lines().next().unwrap_or(""),
            ));
        }
        return parsed;
    };
    let mut pending_steps: Vec<(JobId, StepUse)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for f in recs {
        match one(f.line, f.text, f.complete) {
            Ok(Row::Job(u)) => {
                if let Some(id) = &u.detail.id {
                    index.insert(id.as_str().to_string(), parsed.items.len());
                }
                parsed.items.push(*u);
            }
            Ok(Row::Step(job, s)) => pending_steps.push((job, *s)),
            Err(e) => parsed.problems.push(e),
        }
    }
    for (job, s) in pending_steps {
        if let Some(&i) = index.get(job.as_str()) {
            parsed.items[i].steps.push(s);
        }
    }
    parsed
}

/// [`read_eff`], failing on the first record that does not read.
pub fn parse_eff(out: &str) -> Result<Vec<JobUse>, ParseError> {
    read_eff(out).strict()
}

enum Row {
    Job(Box<JobUse>),
    Step(JobId, Box<StepUse>),
}

fn err(line: usize, text: &str, what: impl Into<String>) -> ParseError {
    ParseError::new(CMD, line, what, text)
}

fn one(line: usize, text: &str, complete: bool) -> Result<Row, ParseError> {
    let n = 1 + USE_FIELDS.len();
    let mut parts = text.splitn(n + 1, FIELD_SEP);
    let head: Vec<&str> = parts.by_ref().take(n).collect();
    let rest = parts.next().ok_or_else(|| {
        err(
            line,
            text,
            format!("expected at least {} fields, found {}", n + 1, head.len()),
        )
    })?;
    let rec = Record { line, text: rest };
    let detail = sacct::one(&rec, true, complete)?;
    let id = detail
        .id
        .clone()
        .ok_or_else(|| err(line, text, "no job id"))?;
    if head[0].trim() != id.as_str() {
        return Err(err(line, text, "the two job id fields differ"));
    }
    let g = |i: usize| head[i + 1].trim();
    let num_u64 = |i: usize, name: &str| -> Result<Option<u64>, ParseError> {
        match g(i) {
            "" => Ok(None),
            s => s
                .parse::<u64>()
                .map(Some)
                .map_err(|_| err(line, text, format!("field {name}: not a number: {s:?}"))),
        }
    };
    let elapsed_s = num_u64(0, "ElapsedRaw")?;
    let time_limit_s = match g(1) {
        "" | "UNLIMITED" | "Partition_Limit" | "INVALID" => None,
        s => Some(
            s.parse::<u64>()
                .map_err(|_| err(line, text, format!("field TimelimitRaw: {s:?}")))?
                * 60,
        ),
    };
    let ntasks = num_u64(2, "NTasks")?.map(|n| n.min(u64::from(u32::MAX)) as u32);
    let total_cpu_s = match g(3) {
        "" => None,
        s => Some(
            SlurmDuration::parse(s)
                .ok()
                .and_then(|d| d.known())
                .ok_or_else(|| err(line, text, format!("field TotalCPU: {s:?}")))?
                .as_secs_f64(),
        ),
    };
    let core_s = num_u64(4, "CPUTimeRAW")?;
    let max_rss = match g(5) {
        "" | "0" => None,
        s => Some(
            size::parse_bytes(s, 1024)
                .ok_or_else(|| err(line, text, format!("field MaxRSS: {s:?}")))?,
        ),
    };
    let max_rss_node = super::parse::non_empty(g(6));
    let tres_max = g(7);
    let tres_ave = g(8);
    let gpu_util = tres_value(tres_ave, "gres/gpuutil")
        .or_else(|| tres_value(tres_max, "gres/gpuutil"))
        .and_then(|v| v.parse::<f64>().ok());
    match id.step() {
        Some(step) => Ok(Row::Step(
            id.without_step(),
            Box::new(StepUse {
                step: step.to_string(),
                name: detail.name.clone(),
                state: detail.state.clone(),
                elapsed_s,
                ntasks,
                total_cpu_s,
                max_rss,
                max_rss_node,
                gpu_util,
                gpu_mem: tres_value(tres_max, "gres/gpumem").and_then(|v| size::parse_bytes(v, 1)),
            }),
        )),
        None => Ok(Row::Job(Box::new(JobUse {
            detail,
            elapsed_s,
            time_limit_s,
            total_cpu_s,
            core_s,
            gpu_util,
            steps: Vec::new(),
        }))),
    }
}

/// `key=value` in a TRES list (`cpu=00:00:17,mem=317732K,gres/gpuutil=87`).
pub fn tres_value<'a>(tres: &'a str, key: &str) -> Option<&'a str> {
    tres.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == key).then(|| v.trim())
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
