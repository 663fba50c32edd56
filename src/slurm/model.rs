//! What the parsers produce. Raw text is kept where the dashboard may want
//! to show Slurm's own words.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use chrono::NaiveDateTime;

pub use super::jobid::{ArrayKey, ArrayPart, ArraySpec, JobId};
pub use super::shared::SharedStr;
pub use super::state::{JobState, StateField, Status};
pub use super::time::SlurmDuration;

/// One squeue row, shared: a clone is a reference count, so the previous refresh's list,
/// the next one and the refresh's cache of unchanged records hold each record once. It
/// reads as its [`JobRecord`]; writing to a field copies the record first when another
/// list still holds it (`Arc::make_mut`).
#[derive(Clone, PartialEq)]
pub struct Job(Arc<JobRecord>);

impl Job {
    pub fn new(record: JobRecord) -> Job {
        Job(Arc::new(record))
    }

    /// The same record (not only an equal one): what a refresh that reused it gives.
    pub fn same(&self, other: &Job) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The same records in the same order: a refresh in which nothing at all changed (each
/// record reused, see `parse::squeue::Reuse`). A pointer comparison per row.
pub fn same_list(a: &[Job], b: &[Job]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
}

impl From<JobRecord> for Job {
    fn from(record: JobRecord) -> Job {
        Job::new(record)
    }
}

impl Deref for Job {
    type Target = JobRecord;
    fn deref(&self) -> &JobRecord {
        &self.0
    }
}

impl DerefMut for Job {
    fn deref_mut(&mut self) -> &mut JobRecord {
        Arc::make_mut(&mut self.0)
    }
}

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// The fields of one squeue row. The fields that repeat across a queue (user, account,
/// partition, QoS, working directory) share their text between rows.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    pub id: JobId,
    /// The cluster's name when the dashboard shows several (empty otherwise).
    pub cluster: SharedStr,
    /// %F: the array's leader id (the job id itself for non-array jobs).
    pub array_job_id: Option<u64>,
    /// %K as printed: `7`, `0-99`, `1,3,5-7%2`; None for `N/A`.
    pub array_task: Option<Box<str>>,
    pub name: SharedStr,
    pub user: SharedStr,
    pub account: SharedStr,
    pub partition: SharedStr,
    pub state: JobState,
    /// None when Slurm says `None`.
    pub reason: Option<SharedStr>,
    pub time_used: SlurmDuration,
    pub time_limit: SlurmDuration,
    pub nodes: u32,
    pub cpus: u32,
    /// e.g. `4G`, `500M`, `0`.
    pub min_memory: Option<SharedStr>,
    /// %b (tres-per-node), e.g. `gres:gpu:2`; None for `N/A`.
    pub tres_per_node: Option<SharedStr>,
    /// `tres-alloc`: what a running job holds or a pending one asks for, e.g.
    /// `cpu=3,mem=50M,node=1,billing=3,gres/gpu=3`; None for `N/A` and in captures of the
    /// older `-o` format, which had no such field.
    pub tres: Option<SharedStr>,
    pub node_list: Option<Box<str>>,
    pub submit_time: Option<NaiveDateTime>,
    /// Actual start, or the scheduler's estimate for a pending job.
    pub start_time: Option<NaiveDateTime>,
    pub work_dir: SharedStr,
    pub qos: SharedStr,
    pub priority: Option<u64>,
    /// %E: what the job waits on, as `scontrol` prints `Dependency=`
    /// (`afterok:12(unfulfilled)`); None for `(null)` and for rows not read from squeue.
    pub dependency: Option<Box<str>>,
    /// Set when squeue's record of this job did not read cleanly: what was wrong. The row
    /// shows what could be read, with a mark.
    pub problem: Option<Box<str>>,
}

impl JobRecord {
    pub fn status(&self) -> Status {
        self.state.status()
    }

    /// The nodes it runs on, one name each (its node list expanded); none before it runs.
    pub fn nodes(&self) -> Vec<String> {
        self.node_list
            .as_deref()
            .map(super::hostlist::expand)
            .unwrap_or_default()
    }

    /// GPUs the job holds or asked for in all, however it asked (`--gres`, `--gpus`,
    /// `--gpus-per-node`, `--gpus-per-task`): from its TRES, else (a row without them)
    /// GPUs per node × nodes.
    pub fn gpus(&self) -> u32 {
        match self.tres.as_deref().map(gpus_in_tres) {
            Some(n) if n > 0 => n,
            _ => self
                .tres_per_node
                .as_deref()
                .map(|t| gpus_in_tres(t).saturating_mul(self.nodes.max(1)))
                .unwrap_or(0),
        }
    }
}

/// One `squeue --start` row.
#[derive(Debug, Clone, PartialEq)]
pub struct StartEstimate {
    pub id: JobId,
    pub partition: String,
    pub user: String,
    pub state: JobState,
    /// None when the scheduler has no estimate yet (`N/A`).
    pub start_time: Option<NaiveDateTime>,
    pub nodes: u32,
    /// %Y: nodes the scheduler expects to use; None for `(null)`.
    pub sched_nodes: Option<String>,
    pub reason: Option<String>,
    pub name: String,
}

/// A job as described by `scontrol show job` or `sacct`. Fields Slurm did
/// not report are None; `fields` keeps every key=value seen, in order, for
/// a raw view.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobDetail {
    pub id: Option<JobId>,
    pub name: String,
    pub user: Option<String>,
    pub uid: Option<u32>,
    pub account: Option<String>,
    pub partition: Option<String>,
    pub qos: Option<String>,
    pub state: Option<JobState>,
    pub cancelled_by: Option<u32>,
    pub reason: Option<String>,
    /// (exit code, signal) from `ExitCode=1:0`.
    pub exit_code: Option<(i32, i32)>,
    pub derived_exit_code: Option<(i32, i32)>,
    pub submit_time: Option<NaiveDateTime>,
    pub eligible_time: Option<NaiveDateTime>,
    pub start_time: Option<NaiveDateTime>,
    pub end_time: Option<NaiveDateTime>,
    pub elapsed: Option<SlurmDuration>,
    pub time_limit: Option<SlurmDuration>,
    pub priority: Option<u64>,
    pub nodes: Option<u32>,
    pub cpus: Option<u32>,
    pub node_list: Option<String>,
    pub batch_host: Option<String>,
    /// `cpu=4,mem=4G,node=1,billing=4,gres/gpu=2` (allocated, else requested).
    pub tres: Option<String>,
    pub tres_per_node: Option<String>,
    pub min_memory: Option<String>,
    pub work_dir: Option<String>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub stdin: Option<String>,
    pub command: Option<String>,
    pub array_job_id: Option<u64>,
    /// `ArrayTaskId=` as printed: `7` or `0-99` for the pending remainder.
    pub array_task: Option<String>,
    pub het_job_id: Option<u64>,
    pub het_offset: Option<u32>,
    pub dependency: Option<String>,
    pub requeue: Option<bool>,
    pub restarts: Option<u32>,
    pub fields: Vec<(String, String)>,
}

impl JobDetail {
    /// A queue row from a sacct record.
    pub fn to_job(&self) -> Option<Job> {
        let d = self;
        let id = d.id.clone()?;
        Some(Job::new(JobRecord {
            id,
            cluster: "".into(),
            array_job_id: d.array_job_id,
            array_task: d.array_task.as_deref().map(Into::into),
            name: d.name.as_str().into(),
            user: d.user.clone().unwrap_or_default().into(),
            account: d.account.clone().unwrap_or_default().into(),
            partition: d.partition.clone().unwrap_or_default().into(),
            state: d.state.clone().unwrap_or(JobState::Unknown("".into())),
            reason: d.reason.as_deref().map(SharedStr::from),
            time_used: d.elapsed.unwrap_or_default(),
            time_limit: d.time_limit.unwrap_or(SlurmDuration::Unknown),
            nodes: d.nodes.unwrap_or(0),
            cpus: d.cpus.unwrap_or(0),
            min_memory: d.min_memory.as_deref().map(SharedStr::from),
            tres_per_node: d
                .tres_per_node
                .clone()
                .or_else(|| {
                    d.tres.as_deref().and_then(|t| {
                        let g = gpus_in_tres(t);
                        let n = d.nodes.unwrap_or(1).max(1);
                        (g > 0).then(|| format!("gres:gpu:{}", g / n))
                    })
                })
                .map(SharedStr::from),
            tres: d.tres.as_deref().map(SharedStr::from),
            node_list: d.node_list.as_deref().map(Into::into),
            submit_time: d.submit_time,
            start_time: d.start_time,
            work_dir: d.work_dir.clone().unwrap_or_default().into(),
            qos: d.qos.clone().unwrap_or_default().into(),
            priority: d.priority,
            dependency: d
                .dependency
                .as_deref()
                .filter(|d| *d != "(null)")
                .map(Into::into),
            problem: None,
        }))
    }

    pub fn status(&self) -> Option<Status> {
        self.state.as_ref().map(JobState::status)
    }

    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// GPUs from the allocated/requested TRES, else per-node request × nodes.
    pub fn gpus(&self) -> u32 {
        if let Some(n) = self.tres.as_deref().map(gpus_in_tres).filter(|n| *n > 0) {
            return n;
        }
        self.tres_per_node
            .as_deref()
            .map(|t| gpus_in_tres(t).saturating_mul(self.nodes.unwrap_or(1).max(1)))
            .unwrap_or(0)
    }
}

/// One partition from `scontrol show partition`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Partition {
    pub name: String,
    pub is_default: bool,
    pub state: String,
    pub max_time: SlurmDuration,
    pub default_time: SlurmDuration,
    pub nodes: String,
    pub total_cpus: u32,
    pub total_nodes: u32,
    pub max_nodes: Option<u32>,
    pub priority_tier: Option<u32>,
    pub tres: Option<String>,
    pub fields: Vec<(String, String)>,
}

impl Partition {
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Per partition and node state, from sinfo.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionUsage {
    /// Without sinfo's `*` default marker.
    pub partition: String,
    pub is_default: bool,
    /// `up`, `down`, `drain`, `inact`.
    pub avail: String,
    pub time_limit: SlurmDuration,
    pub nodes: u32,
    /// `idle`, `mixed`, `allocated`, `drained`, ... (sinfo may add `*`, `~`, `#`).
    pub node_state: String,
    pub cpus_alloc: u32,
    pub cpus_idle: u32,
    pub cpus_other: u32,
    pub cpus_total: u32,
    /// e.g. `gpu:8`, `(null)` → None.
    pub gres: Option<String>,
    pub gres_used: Option<String>,
    pub node_list: String,
}

impl PartitionUsage {
    pub fn gpus_total(&self) -> u32 {
        self.gres.as_deref().map(gpus_in_gres_list).unwrap_or(0) * self.nodes.max(1)
    }
    pub fn gpus_used(&self) -> u32 {
        self.gres_used
            .as_deref()
            .map(gpus_in_gres_list)
            .unwrap_or(0)
    }
}

/// One partition from sinfo rows (which sinfo splits by node state).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PartitionSummary {
    pub partition: String,
    pub is_default: bool,
    pub avail: String,
    pub time_limit: SlurmDuration,
    /// (node state, node count), in sinfo's order.
    pub nodes_by_state: Vec<(String, u32)>,
    pub cpus_alloc: u32,
    pub cpus_idle: u32,
    pub cpus_total: u32,
    pub gpus_total: u32,
    pub gpus_used: u32,
}

/// Folds sinfo rows into one summary per partition, in first-seen order.
pub fn summarize_partitions(rows: &[PartitionUsage]) -> Vec<PartitionSummary> {
    let mut out: Vec<PartitionSummary> = Vec::new();
    for r in rows {
        let i = match out.iter().position(|p| p.partition == r.partition) {
            Some(i) => i,
            None => {
                out.push(PartitionSummary {
                    partition: r.partition.clone(),
                    is_default: r.is_default,
                    avail: r.avail.clone(),
                    time_limit: r.time_limit,
                    ..PartitionSummary::default()
                });
                out.len() - 1
            }
        };
        let p = &mut out[i];
        p.nodes_by_state.push((r.node_state.clone(), r.nodes));
        p.cpus_alloc += r.cpus_alloc;
        p.cpus_idle += r.cpus_idle;
        p.cpus_total += r.cpus_total;
        p.gpus_total += r.gpus_total();
        p.gpus_used += r.gpus_used();
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
pub struct SprioRow {
    pub id: JobId,
    pub partition: String,
    pub user: String,
    pub priority: u64,
    pub age: f64,
    pub fairshare: f64,
    pub job_size: f64,
    pub partition_factor: f64,
    pub qos: f64,
    pub nice: i64,
    pub tres: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SshareRow {
    pub account: String,
    /// None for the account's own row.
    pub user: Option<String>,
    pub raw_shares: Option<u64>,
    pub norm_shares: Option<f64>,
    pub raw_usage: Option<u64>,
    pub effective_usage: Option<f64>,
    pub fairshare: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmitReply {
    pub job_id: u64,
    pub cluster: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelOutcome {
    Cancelled,
    /// Slurm no longer knows the id (finished and purged, or never existed).
    AlreadyGone,
    /// The job had already finished or is completing.
    AlreadyFinished,
    Failed(String),
}

impl CancelOutcome {
    /// What Slurm's message about one job id means, the same for scancel and scontrol
    /// (hold, release, requeue, top, update): gone, already finished, or a refusal that
    /// is kept word for word.
    pub fn from_message(msg: &str) -> CancelOutcome {
        let m = msg.to_ascii_lowercase();
        const GONE: [&str; 3] = ["invalid job id", "unknown job", "does not exist"];
        const FINISHED: [&str; 3] = [
            "already finished",
            "already complete",
            "already completing or completed",
        ];
        if GONE.iter().any(|g| m.contains(g)) {
            CancelOutcome::AlreadyGone
        } else if FINISHED.iter().any(|f| m.contains(f)) {
            CancelOutcome::AlreadyFinished
        } else {
            CancelOutcome::Failed(msg.to_string())
        }
    }
}

/// GPUs in one TRES/GRES string: `gres:gpu:2`, `gres/gpu=4`,
/// `gpu:a100:2`, `gres/gpu:a100=2`, `cpu=4,mem=8G,gres/gpu=2`.
/// Typed entries next to an untyped total (`gres/gpu=2,gres/gpu:a100=2`)
/// are not double counted.
pub fn gpus_in_tres(tres: &str) -> u32 {
    let mut untyped: Option<u32> = None;
    let mut typed: u32 = 0;
    for item in tres.split(',') {
        let item = item.trim();
        let item = item
            .strip_prefix("gres/")
            .or_else(|| item.strip_prefix("gres:"))
            .unwrap_or(item);
        let Some(rest) = item.strip_prefix("gpu") else {
            continue;
        };
        // rest: "", ":2", "=4", ":a100:2", ":a100=2", "(IDX:0-1)" forms
        let rest = rest.split('(').next().unwrap_or("");
        let (is_typed, count) = if let Some(n) = rest.strip_prefix('=') {
            (false, n.parse::<u32>().ok())
        } else if let Some(r) = rest.strip_prefix(':') {
            match r.rsplit_once(['=', ':']) {
                Some((_ty, n)) => (true, n.parse::<u32>().ok()),
                None => match r.parse::<u32>() {
                    Ok(n) => (false, Some(n)),
                    Err(_) => (true, Some(1)),
                },
            }
        } else if rest.is_empty() {
            (false, Some(1))
        } else {
            continue;
        };
        let n = count.unwrap_or(0);
        if is_typed {
            typed = typed.saturating_add(n);
        } else {
            untyped = Some(untyped.unwrap_or(0).saturating_add(n));
        }
    }
    untyped.unwrap_or(typed)
}

/// Like [`gpus_in_tres`] for sinfo's GRES lists, which may include socket
/// info: `gpu:8(S:0)`, `gpu:a100:4(S:0-1),gpu:v100:2`.
pub fn gpus_in_gres_list(gres: &str) -> u32 {
    // Commas also appear inside `(S:0,1)`: drop parenthesised parts first.
    let mut clean = String::with_capacity(gres.len());
    let mut depth = 0u32;
    for c in gres.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => clean.push(c),
            _ => {}
        }
    }
    let mut total = 0u32;
    for item in clean.split(',') {
        total = total.saturating_add(gpus_in_tres(item));
    }
    total
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn gpu_counts_from_every_spelling() {
        assert_eq!(gpus_in_tres("gres:gpu:2"), 2);
        assert_eq!(gpus_in_tres("gres/gpu=4"), 4);
        assert_eq!(gpus_in_tres("gpu:a100:2"), 2);
        assert_eq!(gpus_in_tres("gres/gpu:a100=2"), 2);
        assert_eq!(gpus_in_tres("cpu=4,mem=8G,node=1,billing=4,gres/gpu=2"), 2);
        assert_eq!(gpus_in_tres("gres/gpu=2,gres/gpu:a100=2"), 2);
        assert_eq!(gpus_in_tres("gres:gpu"), 1);
        assert_eq!(gpus_in_tres("cpu=4,mem=8G"), 0);
        assert_eq!(gpus_in_tres("N/A"), 0);
        assert_eq!(gpus_in_tres("gres:gpumem:10"), 0);
        assert_eq!(gpus_in_gres_list("gpu:8(S:0)"), 8);
        assert_eq!(gpus_in_gres_list("gpu:a100:4(S:0,1),gpu:v100:2"), 6);
        assert_eq!(gpus_in_gres_list("gpu:2(IDX:0-1)"), 2);
        assert_eq!(gpus_in_gres_list("(null)"), 0);
    }
}
