//! Turning squeue records into table rows: pending tasks of one array are
//! folded into one row unless the user expanded that array.

use std::collections::{HashMap, HashSet};

use crate::slurm::model::{ArraySpec, Job, JobId, JobState};

/// More synthetic task rows than this from one collapsed record is not a
/// useful list: such an array stays collapsed.
pub const MAX_EXPANDED_TASKS: u64 = 10_000;

#[derive(Debug, Clone, PartialEq)]
pub struct QueueRow {
    /// For a collapsed row: the collapsed squeue record, or (from `squeue -r`)
    /// the first task with the id rewritten to `123_[4-99]`.
    pub job: Job,
    pub kind: RowKind,
    pub(crate) key: RowKey,
    /// Lowercased id, name, state and partition for the filter.
    pub(crate) haystack: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Job,
    /// Pending tasks of one array. `truncated`: squeue cut the task list,
    /// so `tasks` counts only the listed ones.
    Collapsed {
        tasks: u64,
        truncated: bool,
    },
    /// One task of an expanded array. `synthetic`: squeue printed only the
    /// collapsed record and this row was made from its task list.
    Task {
        synthetic: bool,
    },
}

/// What the selection follows across refreshes. A collapsed array is
/// followed by its array id, since its printed id changes as tasks start.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum RowKey {
    Job(JobId),
    Array(u64),
}

impl QueueRow {
    fn new(job: Job, kind: RowKind) -> QueueRow {
        let key = match kind {
            RowKind::Collapsed { .. } => RowKey::Array(job.id.base()),
            _ => RowKey::Job(job.id.clone()),
        };
        let mut haystack = String::with_capacity(48 + job.name.len());
        for part in [
            job.id.as_str(),
            &job.name,
            job.state.long_name(),
            job.state.short_code(),
            &job.partition,
        ] {
            haystack.push_str(part);
            haystack.push('\0');
        }
        QueueRow {
            job,
            kind,
            key,
            haystack: haystack.to_lowercase(),
        }
    }

    pub fn is_collapsed(&self) -> bool {
        matches!(self.kind, RowKind::Collapsed { .. })
    }

    /// The array this row belongs to, if it is a collapsed row or a task
    /// (pending or not) of an array.
    pub fn array_id(&self) -> Option<u64> {
        let id = &self.job.id;
        (id.array_pending().is_some() || id.array_task().is_some()).then(|| id.base())
    }
}

fn is_pending_task(j: &Job) -> bool {
    j.state == JobState::Pending && j.id.array_task().is_some() && j.id.het_offset().is_none()
}

/// Rows in squeue's order. A group of pending tasks takes the place of its
/// first task; an expanded array lists its tasks instead.
pub(crate) fn build_rows(jobs: &[Job], expanded: &HashSet<u64>) -> Vec<QueueRow> {
    // (array id, reason) -> indices of its pending tasks, for `squeue -r` output.
    let mut groups: HashMap<(u64, Option<&str>), Vec<usize>> = HashMap::new();
    for (i, j) in jobs.iter().enumerate() {
        if is_pending_task(j) {
            groups
                .entry((j.id.base(), j.reason.as_deref()))
                .or_default()
                .push(i);
        }
    }
    let mut rows = Vec::with_capacity(jobs.len());
    for (i, j) in jobs.iter().enumerate() {
        if is_pending_task(j) {
            let members = groups
                .get(&(j.id.base(), j.reason.as_deref()))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            if members.len() <= 1 || expanded.contains(&j.id.base()) {
                let kind = if members.len() <= 1 {
                    RowKind::Job
                } else {
                    RowKind::Task { synthetic: false }
                };
                rows.push(QueueRow::new(j.clone(), kind));
            } else if members.first() == Some(&i) {
                rows.push(fold_tasks(jobs, members));
            }
            continue;
        }
        match j.id.array_pending() {
            Some(spec) => {
                let expand = expanded.contains(&j.id.base())
                    && spec.task_count() <= MAX_EXPANDED_TASKS
                    && !spec.ranges.is_empty();
                if expand {
                    rows.extend(task_rows(j, spec));
                }
                // A cut list cannot be expanded honestly: the collapsed
                // record stays below the tasks that are known.
                if !expand || spec.truncated {
                    let kind = RowKind::Collapsed {
                        tasks: spec.task_count(),
                        truncated: spec.truncated,
                    };
                    rows.push(QueueRow::new(j.clone(), kind));
                }
            }
            None => rows.push(QueueRow::new(j.clone(), RowKind::Job)),
        }
    }
    rows
}

/// One row standing for several pending tasks printed one per line.
fn fold_tasks(jobs: &[Job], members: &[usize]) -> QueueRow {
    let mut tasks: Vec<u32> = members
        .iter()
        .filter_map(|&i| jobs[i].id.array_task())
        .collect();
    tasks.sort_unstable();
    tasks.dedup();
    let spec = ArraySpec {
        ranges: compress(&tasks),
        max_running: None,
        truncated: false,
    };
    let first = &jobs[members[0]];
    let mut job = first.clone();
    let spec_text = spec.to_string();
    if let Ok(id) = format!("{}_[{spec_text}]", first.id.base()).parse::<JobId>() {
        job.id = id;
    }
    job.array_task = Some(spec_text);
    QueueRow::new(
        job,
        RowKind::Collapsed {
            tasks: tasks.len() as u64,
            truncated: false,
        },
    )
}

fn compress(tasks: &[u32]) -> Vec<(u32, u32, u32)> {
    let mut ranges: Vec<(u32, u32, u32)> = Vec::new();
    for &t in tasks {
        match ranges.last_mut() {
            Some(r) if r.1.checked_add(1) == Some(t) => r.1 = t,
            _ => ranges.push((t, t, 1)),
        }
    }
    ranges
}

/// The tasks of a collapsed record, each as a pending job of its own.
fn task_rows<'a>(record: &'a Job, spec: &'a ArraySpec) -> impl Iterator<Item = QueueRow> + 'a {
    let base = record.id.base();
    spec.ranges
        .iter()
        .flat_map(|&(a, b, step)| (a..=b).step_by(step.max(1) as usize))
        .filter_map(move |t| {
            let id = format!("{base}_{t}").parse::<JobId>().ok()?;
            let mut job = record.clone();
            job.id = id;
            job.array_task = Some(t.to_string());
            Some(QueueRow::new(job, RowKind::Task { synthetic: true }))
        })
}
