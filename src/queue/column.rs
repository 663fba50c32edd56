//! The queue's columns: names in config, header labels, widths, cell text and
//! sort order.

use std::borrow::Cow;
use std::cmp::Ordering;

use chrono::NaiveDateTime;
use serde::{Deserialize, Serialize};

use super::format::{human_ago, human_until, one_line, time_used_limit, waited};
use super::rows::{QueueRow, RowKind};
use crate::slurm::model::{Job, Status};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    Fixed(u16),
    /// As wide as the widest value (or the label), within bounds.
    Data {
        min: u16,
        max: u16,
    },
    /// As wide as the widest value, down to `min` when space is short; first in line for
    /// the width the others leave (reasons, node lists).
    Grow {
        min: u16,
    },
    /// Shares what the others leave.
    Flex,
}

/// After the cluster's name on the rows of a cluster whose last refresh failed.
pub const STALE_MARK: &str = " (stale)";

/// Widest a growing column is measured (a node list can be very long).
const GROW_MAX: u16 = 60;

/// A queue column, named in config as `columns = ["id", "name", ...]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Column {
    Id,
    /// The cluster's name (shown only while the dashboard shows several).
    Cluster,
    Name,
    User,
    Account,
    Partition,
    Qos,
    State,
    /// Time used / time limit.
    Time,
    Nodes,
    Cpus,
    Memory,
    Gpus,
    Reason,
    NodeList,
    /// squeue's NODELIST(REASON): the reason while pending, the nodes once running.
    Where,
    /// Estimated start while pending (`in 2h13m`).
    Start,
    /// Submit age (`3h ago`).
    Submitted,
    /// Time spent in the queue: so far while pending, before the start once started.
    Waited,
    Priority,
    WorkDir,
    /// Exit code of a finished job (`:history`).
    Exit,
    /// CPU efficiency of a finished job (`:history`).
    CpuEff,
    /// Memory peak over the request of a finished job (`:history`).
    MemEff,
    /// Triage class of a finished job (`:history`).
    Triage,
    /// Progress read from the log and the estimated time left (`62% 5h10m`, `!` when the
    /// time limit comes first); known for jobs whose log was open this session.
    Progress,
}

impl Column {
    pub const ALL: &'static [Column] = &[
        Column::Id,
        Column::Cluster,
        Column::Name,
        Column::User,
        Column::Account,
        Column::Partition,
        Column::Qos,
        Column::State,
        Column::Time,
        Column::Nodes,
        Column::Cpus,
        Column::Memory,
        Column::Gpus,
        Column::Reason,
        Column::NodeList,
        Column::Where,
        Column::Start,
        Column::Submitted,
        Column::Waited,
        Column::Priority,
        Column::WorkDir,
        Column::Exit,
        Column::CpuEff,
        Column::MemEff,
        Column::Triage,
        Column::Progress,
    ];

    /// Whether the view's [`super::facts::RowFacts`] hold this column's values.
    pub fn is_fact(self) -> bool {
        matches!(
            self,
            Column::Exit | Column::CpuEff | Column::MemEff | Column::Triage
        )
    }

    pub fn defaults() -> Vec<Column> {
        vec![
            Column::Id,
            Column::Name,
            Column::Partition,
            Column::State,
            Column::Time,
            Column::Nodes,
            Column::Gpus,
            Column::Where,
            Column::Start,
            Column::Waited,
            Column::Submitted,
            // Last, so the first to go when the width is short; drawn only once a job's
            // progress is known.
            Column::Progress,
        ]
    }

    pub fn label(self) -> &'static str {
        match self {
            Column::Id => "JOBID",
            Column::Cluster => "CLUSTER",
            Column::Name => "NAME",
            Column::User => "USER",
            Column::Account => "ACCOUNT",
            Column::Partition => "PART",
            Column::Qos => "QOS",
            Column::State => "STATE",
            Column::Time => "TIME/LIMIT",
            Column::Nodes => "NODES",
            Column::Cpus => "CPUS",
            Column::Memory => "MEM",
            Column::Gpus => "GPUS",
            Column::Reason => "REASON",
            Column::NodeList => "NODELIST",
            Column::Where => "REASON/NODES",
            Column::Start => "START",
            Column::Submitted => "SUBMITTED",
            Column::Waited => "WAITED",
            Column::Priority => "PRIORITY",
            Column::WorkDir => "WORKDIR",
            Column::Exit => "EXIT",
            Column::CpuEff => "CPU%",
            Column::MemEff => "MEM%",
            Column::Triage => "TRIAGE",
            Column::Progress => "PROGRESS",
        }
    }

    pub fn width(self) -> Width {
        let data = |min, max| Width::Data { min, max };
        match self {
            // What the names need (with an array's task count), no more: spare width goes
            // to the columns that need it; the full name is in the detail pane.
            Column::Name => data(4, 40),
            Column::WorkDir => Width::Flex,
            Column::Id => data(5, 16),
            Column::Cluster => data(7, 24),
            Column::User | Column::Account | Column::Qos => data(4, 12),
            Column::Partition => data(4, 12),
            Column::State => data(5, 13),
            Column::Reason => Width::Grow { min: 6 },
            Column::NodeList => Width::Grow { min: 8 },
            Column::Where => Width::Grow { min: 12 },
            Column::Time => Width::Fixed(11),
            Column::Nodes => Width::Fixed(5),
            Column::Cpus => Width::Fixed(4),
            Column::Memory => Width::Fixed(5),
            Column::Gpus => Width::Fixed(4),
            Column::Start => Width::Fixed(9),
            Column::Submitted => Width::Fixed(10),
            Column::Waited => Width::Fixed(6),
            Column::Priority => Width::Fixed(8),
            Column::Exit => Width::Fixed(5),
            Column::CpuEff | Column::MemEff => Width::Fixed(5),
            Column::Triage => Width::Fixed(13),
            Column::Progress => Width::Fixed(11),
        }
    }

    pub fn right_aligned(self) -> bool {
        matches!(
            self,
            Column::Nodes
                | Column::Cpus
                | Column::Memory
                | Column::Gpus
                | Column::Priority
                | Column::Exit
                | Column::CpuEff
                | Column::MemEff
        )
    }

    /// The text of one cell. For `Name` the array task count is added by
    /// [`name_suffix`] so that truncation keeps it visible.
    pub fn text<'a>(self, row: &QueueRow<'a>, now: NaiveDateTime) -> Cow<'a, str> {
        let j: &'a Job = row.job;
        let pending = j.status() == Status::Pending;
        match self {
            Column::Id => Cow::Borrowed(j.id.as_str()),
            Column::Cluster => one_line(&j.cluster),
            Column::Name => one_line(&j.name),
            Column::User => one_line(&j.user),
            Column::Account => one_line(&j.account),
            Column::Partition => one_line(&j.partition),
            Column::Qos => one_line(&j.qos),
            Column::State => Cow::Borrowed(j.state.long_name()),
            Column::Time => Cow::Owned(time_used_limit(j)),
            Column::Nodes => Cow::Owned(j.nodes.to_string()),
            Column::Cpus => Cow::Owned(j.cpus.to_string()),
            Column::Memory => Cow::Borrowed(j.min_memory.as_deref().unwrap_or("")),
            Column::Gpus => match j.gpus() {
                0 => Cow::Borrowed("-"),
                n => Cow::Owned(n.to_string()),
            },
            Column::Reason => one_line(j.reason.as_deref().unwrap_or("")),
            Column::NodeList => one_line(j.node_list.as_deref().unwrap_or("")),
            Column::Where if pending => match j.reason.as_deref() {
                Some(r) => Cow::Owned(crate::slurm::reason::compact(r)),
                None => Cow::Borrowed(""),
            },
            Column::Where => one_line(where_text(j)),
            Column::Start => match (pending, j.start_time) {
                (true, Some(t)) => Cow::Owned(human_until(t, now)),
                (true, None) => Cow::Borrowed("-"),
                (false, _) => Cow::Borrowed(""),
            },
            Column::Submitted => match j.submit_time {
                Some(t) => Cow::Owned(human_ago(t, now)),
                None => Cow::Borrowed("-"),
            },
            Column::Waited => Cow::Owned(waited(j, now).unwrap_or_else(|| "-".into())),
            Column::Priority => match j.priority {
                Some(p) => Cow::Owned(p.to_string()),
                None => Cow::Borrowed("-"),
            },
            Column::WorkDir => one_line(&j.work_dir),
            // Drawn from the view's facts (see `QueueView::fact_text`) and its progress.
            Column::Exit | Column::CpuEff | Column::MemEff | Column::Triage | Column::Progress => {
                Cow::Borrowed("")
            }
        }
    }

    /// Orders two rows by this column, ascending; a missing value compares
    /// as None (the caller puts those last in either direction).
    pub fn compare(self, a: &QueueRow, b: &QueueRow) -> Option<Ordering> {
        let (x, y) = (a.job, b.job);
        fn opt<T: Ord>(a: Option<T>, b: Option<T>) -> Option<Ordering> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.cmp(&b)),
                _ => None,
            }
        }
        Some(match self {
            Column::Id => id_key(x).cmp(&id_key(y)),
            Column::Cluster => nocase(&x.cluster, &y.cluster),
            Column::Name => nocase(&x.name, &y.name),
            Column::User => nocase(&x.user, &y.user),
            Column::Account => nocase(&x.account, &y.account),
            Column::Partition => nocase(&x.partition, &y.partition),
            Column::Qos => nocase(&x.qos, &y.qos),
            Column::State => status_rank(x.status())
                .cmp(&status_rank(y.status()))
                .then_with(|| x.state.long_name().cmp(y.state.long_name())),
            Column::Time => x
                .time_used
                .known()
                .cmp(&y.time_used.known())
                .then_with(|| x.time_limit.known().cmp(&y.time_limit.known())),
            Column::Nodes => x.nodes.cmp(&y.nodes),
            Column::Cpus => x.cpus.cmp(&y.cpus),
            Column::Memory => return opt(mem_bytes(x), mem_bytes(y)),
            Column::Gpus => x.gpus().cmp(&y.gpus()),
            Column::Reason => return opt(x.reason.as_deref(), y.reason.as_deref()),
            Column::NodeList => return opt(x.node_list.as_deref(), y.node_list.as_deref()),
            Column::Where => nocase(where_text(x), where_text(y)),
            Column::Start => return opt(x.start_time, y.start_time),
            Column::Submitted => return opt(x.submit_time, y.submit_time),
            Column::Waited => return opt(wait_key(x), wait_key(y)),
            Column::Priority => return opt(x.priority, y.priority),
            Column::WorkDir => x.work_dir.cmp(&y.work_dir),
            Column::Exit | Column::CpuEff | Column::MemEff | Column::Triage | Column::Progress => {
                return None
            }
        })
    }
}

/// The array task count shown after a collapsed row's name.
pub fn name_suffix(row: &QueueRow) -> Option<String> {
    match row.kind {
        RowKind::Collapsed { tasks, truncated } => Some(match (tasks, truncated) {
            (1, false) => " (1 task)".to_string(),
            (n, false) => format!(" ({n} tasks)"),
            (n, true) => format!(" ({n}+ tasks)"),
        }),
        RowKind::Sweep {
            tasks,
            running,
            total,
        } => {
            let pending = tasks.saturating_sub(running);
            let ended = total.saturating_sub(tasks);
            let mut parts = Vec::new();
            for (n, what) in [(running, "running"), (pending, "pending"), (ended, "ended")] {
                if n > 0 {
                    parts.push(format!("{n} {what}"));
                }
            }
            Some(format!(" (sweep of {total}: {})", parts.join(", ")))
        }
        _ => None,
    }
}

fn where_text(j: &Job) -> &str {
    match j.status() {
        Status::Pending => j.reason.as_deref().unwrap_or(""),
        _ => j.node_list.as_deref().unwrap_or(""),
    }
}

fn nocase(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a
            .bytes()
            .map(|c| c.to_ascii_lowercase())
            .cmp(b.bytes().map(|c| c.to_ascii_lowercase()));
    }
    a.chars()
        .flat_map(char::to_lowercase)
        .cmp(b.chars().flat_map(char::to_lowercase))
}

fn id_key(j: &Job) -> (u64, u32, u32) {
    let task =
        j.id.array_task()
            .or_else(|| {
                j.id.array_pending()
                    .and_then(|s| s.ranges.first())
                    .map(|r| r.0)
            })
            .unwrap_or(0);
    (j.id.base(), task, j.id.het_offset().unwrap_or(0))
}

fn status_rank(s: Status) -> u8 {
    match s {
        Status::Running => 0,
        Status::Pending => 1,
        Status::Paused => 2,
        Status::Complete => 3,
        Status::Error => 4,
        Status::Canceled => 5,
        Status::Unknown => 6,
    }
}

/// Seconds in the queue, with pending jobs (still waiting) after every
/// started one and among themselves by submit time, oldest (longest) last.
fn wait_key(j: &Job) -> Option<(bool, i64)> {
    let submit = j.submit_time?;
    if j.status() == Status::Pending {
        Some((true, -submit.and_utc().timestamp()))
    } else {
        let start = j.start_time?;
        Some((false, (start - submit).num_seconds()))
    }
}

/// `4G`, `500M`, `100`, `2T` → bytes (a bare number is MiB, as in Slurm).
fn mem_bytes(j: &Job) -> Option<u64> {
    let s = j.min_memory.as_deref()?.trim();
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "M"),
    };
    let n: f64 = num.parse().ok()?;
    let mult: f64 = match unit.chars().next() {
        Some('K') | Some('k') => 1024.0,
        Some('M') | Some('m') => 1024.0 * 1024.0,
        Some('G') | Some('g') => 1024.0 * 1024.0 * 1024.0,
        Some('T') | Some('t') => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some((n * mult) as u64)
}

/// Formats a sort direction marker for a header.
pub fn arrow(descending: bool) -> &'static str {
    if descending {
        "▼"
    } else {
        "▲"
    }
}

/// Width of a data-sized column over every row; None for the others.
pub fn data_width<'a>(
    col: Column,
    rows: impl Iterator<Item = QueueRow<'a>>,
    now: NaiveDateTime,
) -> Option<u16> {
    use unicode_width::UnicodeWidthStr;
    let (min, max) = match col.width() {
        Width::Data { min, max } => (min, max),
        Width::Grow { min } => (min, GROW_MAX),
        Width::Fixed(_) | Width::Flex => return None,
    };
    let w = rows
        .map(|r| {
            let suffix = match col {
                Column::Name => name_suffix(&r).map_or(0, |s| s.width()),
                // Room for the mark of a cluster that could not be refreshed.
                Column::Cluster => STALE_MARK.width(),
                _ => 0,
            };
            col.text(&r, now).width() + suffix
        })
        .max()
        .unwrap_or(0)
        .max(col.label().len() + 1);
    Some((w.min(usize::from(max)) as u16).max(min))
}
