//! Turning squeue records into table rows: pending tasks of one array are
//! folded into one row unless the user expanded that array.

use std::collections::{HashMap, HashSet};

use crate::slurm::model::{ArrayKey, ArraySpec, Job, JobId, JobState};

/// More synthetic task rows than this from one collapsed record is not a
/// useful list: such an array stays collapsed.
pub const MAX_EXPANDED_TASKS: u64 = 10_000;

/// One row of the table, borrowed from the view: `job` is either one of
/// the squeue records or a synthetic record (a folded array, a task of an
/// expanded array) the view keeps beside them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueRow<'a> {
    /// For a collapsed row: the collapsed squeue record, or (from `squeue -r`)
    /// the first task with the id rewritten to `123_[4-99]`.
    pub job: &'a Job,
    pub kind: RowKind,
}

/// Where a row's job lives: by index, so that no squeue record is held twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Src {
    /// Index into the view's squeue records.
    Job(u32),
    /// Index into the view's synthetic records.
    Synth(u32),
}

/// A row as the view stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Row {
    pub(crate) src: Src,
    pub(crate) kind: RowKind,
}

/// The rows of one queue and the records they refer to.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rows {
    pub(crate) rows: Vec<Row>,
    pub(crate) synth: Vec<Job>,
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
    /// A sweep slurmdash launched: its tasks in the queue, running and pending, in one
    /// row; `total`: the sweep's runs (the rest have ended).
    Sweep {
        tasks: u64,
        running: u64,
        total: u64,
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
    Array(ArrayKey),
}

impl RowKey {
    /// What the selection follows for this row.
    pub(crate) fn of(row: &QueueRow<'_>) -> RowKey {
        match row.kind {
            RowKind::Collapsed { .. } | RowKind::Sweep { .. } => {
                RowKey::Array(row.job.id.array_key())
            }
            _ => RowKey::Job(row.job.id.clone()),
        }
    }

    /// `RowKey::of(row) == *self`, without cloning the id.
    pub(crate) fn matches(&self, row: &QueueRow<'_>) -> bool {
        match (self, row.kind) {
            (RowKey::Array(a), RowKind::Collapsed { .. } | RowKind::Sweep { .. }) => {
                *a == row.job.id.array_key()
            }
            (RowKey::Job(id), RowKind::Job | RowKind::Task { .. }) => *id == row.job.id,
            _ => false,
        }
    }
}

/// Lowercased id, cluster, name, state and partition of every row, for the filter:
/// one string and the end of each row's part, built only while a filter is
/// set.
#[derive(Debug, Clone, Default)]
pub(crate) struct Haystack {
    text: String,
    ends: Vec<u32>,
}

impl Haystack {
    pub(crate) fn build<'a>(rows: impl Iterator<Item = QueueRow<'a>>) -> Haystack {
        let mut h = Haystack::default();
        let mut part = String::new();
        for r in rows {
            let j = r.job;
            part.clear();
            for p in [
                j.id.as_str(),
                &j.cluster,
                &j.name,
                j.state.long_name(),
                j.state.short_code(),
                &j.partition,
            ] {
                part.push_str(p);
                part.push('\0');
            }
            if part.is_ascii() {
                part.make_ascii_lowercase();
                h.text.push_str(&part);
            } else {
                h.text.push_str(&part.to_lowercase());
            }
            h.ends.push(u32::try_from(h.text.len()).unwrap_or(u32::MAX));
        }
        h.text.shrink_to_fit();
        h
    }

    /// Whether row `i`'s text contains `needle` (already lowercased).
    pub(crate) fn contains(&self, i: usize, needle: &str) -> bool {
        let start = match i.checked_sub(1) {
            Some(p) => self.ends.get(p).map_or(usize::MAX, |&e| e as usize),
            None => 0,
        };
        let end = self.ends.get(i).map_or(0, |&e| e as usize);
        self.text
            .get(start..end)
            .is_some_and(|t| t.contains(needle))
    }
}

impl QueueRow<'_> {
    pub fn is_collapsed(&self) -> bool {
        matches!(self.kind, RowKind::Collapsed { .. } | RowKind::Sweep { .. })
    }

    /// The array this row belongs to, if it is a collapsed row or a task
    /// (pending or not) of an array.
    pub fn array_id(&self) -> Option<ArrayKey> {
        let id = &self.job.id;
        (id.array_pending().is_some() || id.array_task().is_some()).then(|| id.array_key())
    }
}

fn is_pending_task(j: &Job) -> bool {
    j.state == JobState::Pending && j.id.array_task().is_some() && j.id.het_offset().is_none()
}

/// Rows in squeue's order. A group of pending tasks takes the place of its
/// first task; an expanded array lists its tasks instead.
/// `sweeps`: the sweeps slurmdash launched (array -> its number of runs), each folded into
/// one row with every task of it in the queue, unless expanded.
pub(crate) fn build_rows(
    jobs: &[Job],
    expanded: &HashSet<ArrayKey>,
    sweeps: &HashMap<ArrayKey, u32>,
) -> Rows {
    // A sweep's members: every task of it (and its collapsed pending record).
    let mut sweep_members: HashMap<ArrayKey, Vec<usize>> = HashMap::new();
    if !sweeps.is_empty() {
        for (i, j) in jobs.iter().enumerate() {
            let key = j.id.array_key();
            let task = j.id.array_task().is_some() || j.id.array_pending().is_some();
            // Only the tasks still to run fold: an ended one keeps its row (and counts
            // among the sweep's ended runs).
            if task
                && !j.state.is_finished()
                && j.id.het_offset().is_none()
                && sweeps.contains_key(&key)
                && !expanded.contains(&key)
            {
                sweep_members.entry(key).or_default().push(i);
            }
        }
    }
    let folded: HashSet<usize> = sweep_members.values().flatten().copied().collect();
    // (array id, reason) -> indices of its pending tasks, for `squeue -r` output.
    let mut groups: HashMap<(ArrayKey, Option<&str>), Vec<usize>> = HashMap::new();
    for (i, j) in jobs.iter().enumerate() {
        if is_pending_task(j) {
            groups
                .entry((j.id.array_key(), j.reason.as_deref()))
                .or_default()
                .push(i);
        }
    }
    let mut out = Rows {
        rows: Vec::with_capacity(jobs.len()),
        synth: Vec::new(),
    };
    let real = |i: usize, kind: RowKind| Row {
        src: Src::Job(u32::try_from(i).unwrap_or(u32::MAX)),
        kind,
    };
    for (i, j) in jobs.iter().enumerate() {
        if let Some(members) = sweep_members
            .get(&j.id.array_key())
            .filter(|_| folded.contains(&i))
        {
            if members.first() == Some(&i) {
                let total = sweeps.get(&j.id.array_key()).copied().unwrap_or(0);
                let (job, kind) = fold_sweep(jobs, members, total);
                out.push_synth(job, kind);
            }
            continue;
        }
        if is_pending_task(j) {
            let members = groups
                .get(&(j.id.array_key(), j.reason.as_deref()))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            if members.len() <= 1 || expanded.contains(&j.id.array_key()) {
                let kind = if members.len() <= 1 {
                    RowKind::Job
                } else {
                    RowKind::Task { synthetic: false }
                };
                out.rows.push(real(i, kind));
            } else if members.first() == Some(&i) {
                let (job, kind) = fold_tasks(jobs, members);
                out.push_synth(job, kind);
            }
            continue;
        }
        match j.id.array_pending() {
            Some(spec) => {
                let expand = expanded.contains(&j.id.array_key())
                    && spec.task_count() <= MAX_EXPANDED_TASKS
                    && !spec.ranges.is_empty();
                if expand {
                    for job in task_jobs(j, spec) {
                        out.push_synth(job, RowKind::Task { synthetic: true });
                    }
                }
                // A cut list cannot be expanded honestly: the collapsed
                // record stays below the tasks that are known.
                if !expand || spec.truncated {
                    let kind = RowKind::Collapsed {
                        tasks: spec.task_count(),
                        truncated: spec.truncated,
                    };
                    out.rows.push(real(i, kind));
                }
            }
            None => out.rows.push(real(i, RowKind::Job)),
        }
    }
    out.rows.shrink_to_fit();
    out
}

impl Rows {
    fn push_synth(&mut self, job: Job, kind: RowKind) {
        let k = u32::try_from(self.synth.len()).unwrap_or(u32::MAX);
        self.synth.push(job);
        self.rows.push(Row {
            src: Src::Synth(k),
            kind,
        });
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Row `i` with its record: a squeue record from `jobs` (the ones the
    /// rows were built from) or a synthetic one. Panics if `i` is out of range.
    pub(crate) fn at<'a>(&'a self, jobs: &'a [Job], i: usize) -> QueueRow<'a> {
        let r = self.rows[i];
        let job = match r.src {
            Src::Job(k) => &jobs[k as usize],
            Src::Synth(k) => &self.synth[k as usize],
        };
        QueueRow { job, kind: r.kind }
    }

    pub(crate) fn iter<'a>(&'a self, jobs: &'a [Job]) -> impl Iterator<Item = QueueRow<'a>> + 'a {
        (0..self.rows.len()).map(move |i| self.at(jobs, i))
    }
}

/// One row standing for several pending tasks printed one per line.
fn fold_tasks(jobs: &[Job], members: &[usize]) -> (Job, RowKind) {
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
        let id = id.on(first.id.cluster());
        job.id = id;
    }
    job.array_task = Some(spec_text.into());
    let kind = RowKind::Collapsed {
        tasks: tasks.len() as u64,
        truncated: false,
    };
    (job, kind)
}

/// One row for a sweep's tasks in the queue: its id names them all (`123_[0-11]`, what a
/// cancel of the row cancels), its state is running while any task runs.
fn fold_sweep(jobs: &[Job], members: &[usize], total: u32) -> (Job, RowKind) {
    let mut tasks: Vec<u32> = Vec::new();
    let mut running = 0u64;
    for &i in members {
        let j = &jobs[i];
        if let Some(t) = j.id.array_task() {
            tasks.push(t);
            if j.state == JobState::Running {
                running += 1;
            }
        } else if let Some(spec) = j.id.array_pending() {
            if spec.task_count() <= MAX_EXPANDED_TASKS {
                tasks.extend(
                    spec.ranges
                        .iter()
                        .flat_map(|&(a, b, step)| (a..=b).step_by(step.max(1) as usize)),
                );
            }
        }
    }
    tasks.sort_unstable();
    tasks.dedup();
    let first = members
        .iter()
        .map(|&i| &jobs[i])
        .find(|j| j.state == JobState::Running)
        .unwrap_or(&jobs[members[0]]);
    let mut job = first.clone();
    let spec = ArraySpec {
        ranges: compress(&tasks),
        max_running: None,
        truncated: false,
    };
    let spec_text = spec.to_string();
    if let Ok(id) = format!("{}_[{spec_text}]", first.id.base()).parse::<JobId>() {
        job.id = id.on(first.id.cluster());
    }
    job.array_task = Some(spec_text.into());
    let kind = RowKind::Sweep {
        tasks: tasks.len() as u64,
        running,
        total: u64::from(total),
    };
    (job, kind)
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
fn task_jobs<'a>(record: &'a Job, spec: &'a ArraySpec) -> impl Iterator<Item = Job> + 'a {
    let base = record.id.base();
    spec.ranges
        .iter()
        .flat_map(|&(a, b, step)| (a..=b).step_by(step.max(1) as usize))
        .filter_map(move |t| {
            let id = format!("{base}_{t}")
                .parse::<JobId>()
                .ok()?
                .on(record.id.cluster());
            let mut job = record.clone();
            job.id = id;
            job.array_task = Some(t.to_string().into());
            Some(job)
        })
}
