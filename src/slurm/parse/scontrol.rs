use super::keyvalue::parse_block;
use super::non_empty;
use super::sacct::exit_code;
use crate::slurm::error::ParseError;
use crate::slurm::jobid::JobId;
use crate::slurm::model::{JobDetail, Partition};
use crate::slurm::state::StateField;
use crate::slurm::time::{parse_time, SlurmDuration};

const CMD: &str = "scontrol";

/// Blocks separated by blank lines, each with its 1-based first line.
pub(crate) fn blocks(out: &str) -> Vec<(usize, String)> {
    let mut v = Vec::new();
    let mut cur = String::new();
    let mut start = 0;
    for (i, line) in out.lines().enumerate() {
        if line.trim().is_empty() {
            if !cur.is_empty() {
                v.push((start, std::mem::take(&mut cur)));
            }
            continue;
        }
        if cur.is_empty() {
            start = i + 1;
        }
        cur.push_str(line);
        cur.push('\n');
    }
    if !cur.is_empty() {
        v.push((start, cur));
    }
    v
}

struct Block<'a> {
    line: usize,
    text: &'a str,
    kv: Vec<(String, String)>,
}

impl Block<'_> {
    fn get(&self, k: &str) -> Option<&str> {
        self.kv
            .iter()
            .find(|(kk, _)| kk == k)
            .map(|(_, v)| v.as_str())
    }
    fn opt(&self, k: &str) -> Option<String> {
        self.get(k).and_then(non_empty)
    }
    fn err(&self, what: String) -> ParseError {
        ParseError::new(CMD, self.line, what, self.text.lines().next().unwrap_or(""))
    }
    fn time(&self, k: &str) -> Result<Option<chrono::NaiveDateTime>, ParseError> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => parse_time(v).map_err(|e| self.err(format!("{k}: {e}"))),
        }
    }
    fn duration(&self, k: &str) -> Result<Option<SlurmDuration>, ParseError> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => SlurmDuration::parse(v)
                .map(Some)
                .map_err(|e| self.err(format!("{k}: {e}"))),
        }
    }
    /// Leading number: `1`, `1-1`, `16`; None for words like `UNLIMITED`.
    fn lead_num<T: std::str::FromStr>(&self, k: &str) -> Option<T> {
        let v = self.get(k)?;
        let end = v
            .bytes()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(v.len());
        v[..end].parse().ok()
    }
}

/// `scontrol show job [ID]` (with or without `-d`). "No jobs in the
/// system" is an empty list; scontrol's "Invalid job id specified" goes to
/// stderr with exit status 1 and is for the caller to handle (fall back to sacct).
pub fn parse_scontrol_jobs(out: &str) -> Result<Vec<JobDetail>, ParseError> {
    if out.trim() == "No jobs in the system" {
        return Ok(Vec::new());
    }
    let mut jobs = Vec::new();
    for (line, text) in blocks(out) {
        let b = Block {
            line,
            kv: parse_block(&text),
            text: &text,
        };
        let Some(raw_id) = b.get("JobId").filter(|_| b.kv[0].0 == "JobId") else {
            return Err(b.err("record does not start with JobId=".into()));
        };
        let base: u64 = raw_id
            .trim()
            .parse()
            .map_err(|_| b.err(format!("JobId is not a number: {raw_id:?}")))?;
        let array_job_id = b.lead_num::<u64>("ArrayJobId");
        let array_task = b.opt("ArrayTaskId");
        let het_job_id = b.lead_num::<u64>("HetJobId");
        let het_offset = b.lead_num::<u32>("HetJobOffset");
        // The id users see: `A_T` for array tasks, `H+O` for het components.
        let shown = match (array_job_id, &array_task, het_job_id, het_offset) {
            (Some(a), Some(t), _, _) if t.bytes().all(|c| c.is_ascii_digit()) => format!("{a}_{t}"),
            (Some(a), Some(t), _, _) => format!("{a}_[{t}]"),
            (_, _, Some(h), Some(o)) => format!("{h}+{o}"),
            _ => base.to_string(),
        };
        let id = shown.parse::<JobId>().unwrap_or_else(|_| JobId::new(base));
        let (user, uid) = split_user(b.get("UserId"));
        let st = b.get("JobState").map(StateField::parse);
        let mut d = JobDetail {
            id: Some(id),
            name: b.get("JobName").unwrap_or("").to_string(),
            user,
            uid,
            account: b.opt("Account"),
            partition: b.opt("Partition"),
            qos: b.opt("QOS"),
            state: st.as_ref().map(|s| s.state.clone()),
            cancelled_by: None,
            reason: b.opt("Reason"),
            exit_code: b.get("ExitCode").and_then(exit_code),
            derived_exit_code: b.get("DerivedExitCode").and_then(exit_code),
            submit_time: b.time("SubmitTime")?,
            eligible_time: b.time("EligibleTime")?,
            start_time: b.time("StartTime")?,
            end_time: b.time("EndTime")?,
            elapsed: b.duration("RunTime")?,
            time_limit: b.duration("TimeLimit")?,
            priority: b.lead_num("Priority"),
            nodes: b.lead_num("NumNodes"),
            cpus: b.lead_num("NumCPUs"),
            node_list: b.opt("NodeList"),
            batch_host: b.opt("BatchHost"),
            // 22.05 prints TRES= (what the job holds, or asks for while pending); 24.11
            // and later print ReqTRES= and AllocTRES= (null until it runs) instead.
            tres: b
                .opt("TRES")
                .or_else(|| b.opt("AllocTRES"))
                .or_else(|| b.opt("ReqTRES")),
            tres_per_node: b.opt("TresPerNode").or_else(|| b.opt("Gres")),
            min_memory: b.opt("MinMemoryNode").or_else(|| b.opt("MinMemoryCPU")),
            work_dir: b.opt("WorkDir"),
            stdout: b.opt("StdOut"),
            stderr: b.opt("StdErr"),
            stdin: b.opt("StdIn"),
            command: b.opt("Command"),
            array_job_id,
            array_task,
            het_job_id,
            het_offset,
            dependency: b.opt("Dependency"),
            requeue: b.get("Requeue").map(|v| v.trim() == "1"),
            restarts: b.lead_num("Restarts"),
            fields: Vec::new(),
        };
        d.fields = b.kv;
        jobs.push(d);
    }
    Ok(jobs)
}

/// `sduser(1001)` → (Some("sduser"), Some(1001)).
fn split_user(v: Option<&str>) -> (Option<String>, Option<u32>) {
    let Some(v) = v else { return (None, None) };
    match v.split_once('(') {
        Some((name, rest)) => (non_empty(name), rest.trim_end_matches(')').parse().ok()),
        None => (non_empty(v), None),
    }
}

/// `scontrol show partition`.
pub fn parse_scontrol_partitions(out: &str) -> Result<Vec<Partition>, ParseError> {
    if out.trim() == "No partitions in the system" {
        return Ok(Vec::new());
    }
    let mut parts = Vec::new();
    for (line, text) in blocks(out) {
        let b = Block {
            line,
            kv: parse_block(&text),
            text: &text,
        };
        let Some(name) = b
            .get("PartitionName")
            .filter(|_| b.kv[0].0 == "PartitionName")
        else {
            return Err(b.err("record does not start with PartitionName=".into()));
        };
        let p = Partition {
            name: name.trim().to_string(),
            is_default: b.get("Default") == Some("YES"),
            state: b.get("State").unwrap_or("").to_string(),
            max_time: b.duration("MaxTime")?.unwrap_or(SlurmDuration::Unknown),
            default_time: b.duration("DefaultTime")?.unwrap_or(SlurmDuration::Unknown),
            nodes: b.get("Nodes").unwrap_or("").to_string(),
            total_cpus: b.lead_num("TotalCPUs").unwrap_or(0),
            total_nodes: b.lead_num("TotalNodes").unwrap_or(0),
            max_nodes: b.lead_num("MaxNodes"),
            priority_tier: b.lead_num("PriorityTier"),
            tres: b.opt("TRES"),
            fields: Vec::new(),
        };
        parts.push(Partition { fields: b.kv, ..p });
    }
    Ok(parts)
}
