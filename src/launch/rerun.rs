//! Rerunning the tasks of an array that did not complete (`L` on an array, `slurmdash rerun
//! ID --failed`), planned purely from the array's own sacct records: which indices to run
//! again (every task not COMPLETED, tasks that never started because the array was
//! cancelled included), as compact `--array` lists of at most MaxArraySize tasks each, and
//! the time and memory sized from those tasks' own figures with relaunch's headroom rules
//! ([`crate::efficiency::Efficiency`]): the largest need among them.

use std::fmt;

use crate::efficiency::{Efficiency, Suggestion};
use crate::launch::spec::{apply_suggestion, LaunchSpec};
use crate::slurm::eff::size;
use crate::slurm::eff::JobUse;
use crate::slurm::jobid::ArrayPart;
use crate::slurm::model::{JobState, Partition};

/// Slurm's default MaxArraySize, used when `scontrol show config` does not say.
pub const DEFAULT_MAX_ARRAY_SIZE: u32 = 1001;

/// `scontrol show config`, whose MaxArraySize line [`max_array_size`] reads.
pub fn show_config_argv() -> Vec<String> {
    vec!["scontrol".into(), "show".into(), "config".into()]
}

/// `MaxArraySize = 1001` in `scontrol show config`; None when the line is missing or odd.
pub fn max_array_size(config: &str) -> Option<u32> {
    config.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "MaxArraySize")
            .then(|| v.trim().parse::<u32>().ok())
            .flatten()
    })
}

/// What a rerun of an array's unfinished tasks submits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RerunPlan {
    /// The array's tasks that sacct lists (ranges of never-started tasks counted one by one).
    pub total: usize,
    /// The indices that did not complete, ascending.
    pub indices: Vec<u32>,
    /// `--array` of each submission (`3,7-9,15`), at most MaxArraySize tasks each.
    pub arrays: Vec<String>,
    /// Time (and a partition that allows it) and memory, where the tasks' need differs
    /// from what they asked (only what should change).
    pub sizing: Suggestion,
    /// Why: the verdicts of the tasks whose need set the time or the memory.
    pub why: Vec<String>,
}

impl RerunPlan {
    /// `rerun the 4 tasks that did not complete: 3,7,11,19`.
    pub fn line(&self) -> String {
        format!(
            "rerun the {} task{} that did not complete: {}",
            self.indices.len(),
            if self.indices.len() == 1 { "" } else { "s" },
            self.arrays.join(" + ")
        )
    }
}

/// Why there is nothing to rerun.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoRerun {
    /// sacct lists no task of the array (not an array, or not in its records).
    NoTasks,
    /// Tasks still pending or running: (how many, of how many).
    NotEnded(usize, usize),
    /// Every task completed.
    AllCompleted(usize),
}

impl fmt::Display for NoRerun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoRerun::NoTasks => f.write_str("sacct lists no task of it: not a job array"),
            NoRerun::NotEnded(n, of) => write!(
                f,
                "{n} of its {of} tasks have not ended yet: rerun when the array has ended"
            ),
            NoRerun::AllCompleted(n) => {
                write!(f, "all {n} tasks completed: nothing to rerun")
            }
        }
    }
}

/// `3,7-9,15` for ascending, distinct indices.
pub fn compact(indices: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let start = indices[i];
        let mut end = start;
        while i + 1 < indices.len() && indices[i + 1] == end + 1 {
            i += 1;
            end = indices[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// [`compact`] lists of at most `max` tasks each (at least one).
pub fn split(indices: &[u32], max: u32) -> Vec<String> {
    indices.chunks(max.max(1) as usize).map(compact).collect()
}

/// The indices of a [`compact`] list (empty when it does not read).
pub fn expand(list: &str) -> Vec<u32> {
    crate::slurm::jobid::ArraySpec::parse(list)
        .map(|a| {
            a.ranges
                .iter()
                .flat_map(|&(a, b, s)| (a..=b).step_by(s.max(1) as usize))
                .collect()
        })
        .unwrap_or_default()
}

/// One task as sacct reports it: its indices (a range when it never started) and its state.
fn indices_of(u: &JobUse, base: u64) -> Option<Vec<u32>> {
    let id = u.detail.id.as_ref()?;
    if id.base() != base || id.step().is_some() {
        return None;
    }
    match id.array()? {
        ArrayPart::Task(i) => Some(vec![*i]),
        ArrayPart::Pending(spec) => Some(
            spec.ranges
                .iter()
                .flat_map(|&(a, b, s)| (a..=b).step_by(s.max(1) as usize))
                .collect(),
        ),
    }
}

/// Plans the rerun of array `base` from its tasks' records (`sacct --jobs=BASE` with every
/// step, [`crate::slurm::eff::read_eff`]); `partitions` (may be empty) name where a longer
/// time fits.
pub fn plan(
    base: u64,
    tasks: &[JobUse],
    partitions: &[Partition],
    max_array_size: u32,
) -> Result<RerunPlan, NoRerun> {
    let mut seen: Vec<(u32, &JobUse)> = Vec::new();
    for u in tasks {
        for i in indices_of(u, base).unwrap_or_default() {
            if !seen.iter().any(|(j, _)| *j == i) {
                seen.push((i, u));
            }
        }
    }
    if seen.is_empty() {
        return Err(NoRerun::NoTasks);
    }
    seen.sort_by_key(|(i, _)| *i);
    let state = |u: &JobUse| u.detail.state.clone().unwrap_or(JobState::Pending);
    let live = seen.iter().filter(|(_, u)| !state(u).is_finished()).count();
    if live > 0 {
        return Err(NoRerun::NotEnded(live, seen.len()));
    }
    let failed: Vec<(u32, &JobUse)> = seen
        .iter()
        .filter(|(_, u)| state(u) != JobState::Completed)
        .copied()
        .collect();
    if failed.is_empty() {
        return Err(NoRerun::AllCompleted(seen.len()));
    }
    let indices: Vec<u32> = failed.iter().map(|(i, _)| *i).collect();
    let (sizing, why) = size_for(&failed, partitions);
    Ok(RerunPlan {
        total: seen.len(),
        arrays: split(&indices, max_array_size),
        indices,
        sizing,
        why,
    })
}

/// The largest need among the failed tasks that ran: each task's need is relaunch's
/// suggestion where it has one, else what it asked; a value is suggested only where the
/// largest need differs from the largest request.
fn size_for(failed: &[(u32, &JobUse)], partitions: &[Partition]) -> (Suggestion, Vec<String>) {
    let mut asked_time: Option<u64> = None;
    let mut asked_mem: Option<u64> = None;
    // (need, task index, suggested partition, verdict)
    let mut time: Option<(u64, u32, Option<String>, Option<String>)> = None;
    let mut mem: Option<(u64, u32, Option<String>, Option<String>)> = None;
    let mut done: Vec<*const JobUse> = Vec::new();
    for (i, u) in failed {
        // A range of never-started tasks is one record: size it once.
        let p = *u as *const JobUse;
        if done.contains(&p) {
            continue;
        }
        done.push(p);
        let e = Efficiency::compute(u, partitions);
        let s = &e.suggestion;
        asked_time = asked_time.max(e.time_limit_s);
        asked_mem = asked_mem.max(e.mem_requested_bytes);
        let t_need = s.time_s.or(e.time_limit_s);
        if let Some(t) = t_need {
            if time.as_ref().is_none_or(|(b, ..)| t > *b) {
                let verdict = s.time_s.map(|_| e.verdict.clone());
                time = Some((t, *i, s.partition.clone(), verdict));
            }
        }
        let m_suggested = s
            .mem
            .as_deref()
            .and_then(|m| size::parse_bytes(m, 1 << 20).map(|b| (b, m.to_string())));
        let m_need = m_suggested
            .as_ref()
            .map(|(b, _)| *b)
            .or(e.mem_requested_bytes);
        if let Some(m) = m_need {
            if mem.as_ref().is_none_or(|(b, ..)| m > *b) {
                let text = m_suggested.map(|(_, t)| t);
                let verdict = text.as_ref().map(|_| e.verdict.clone());
                mem = Some((m, *i, text, verdict));
            }
        }
    }
    let mut s = Suggestion::default();
    let mut why = Vec::new();
    if let Some((t, i, part, Some(v))) = time {
        if Some(t) != asked_time {
            s.time_s = Some(t);
            s.partition = part;
            why.push(format!("task {i}: {v}"));
        }
    }
    if let Some((m, i, Some(text), Some(v))) = mem {
        if Some(m) != asked_mem {
            s.mem = Some(text);
            let line = format!("task {i}: {v}");
            if !why.contains(&line) {
                why.push(line);
            }
        }
    }
    (s, why)
}

/// Turns the array's spec into the rerun's: `array` the indices of this submission (one of
/// [`RerunPlan::arrays`]), any `--array` among the extra options dropped (the array field
/// replaces it), the working directory the array's job directory when it ran there (the
/// rerun's tasks see what the others wrote) and the plan's sizing applied. Returns what
/// changed, in words.
pub fn respec(
    spec: &mut LaunchSpec,
    plan: &RerunPlan,
    array: &str,
    job_dir: Option<&str>,
) -> Vec<String> {
    spec.extra_sbatch
        .retain(|o| !crate::launch::validate::is_array_option(o));
    spec.array = array.to_string();
    if spec.workdir.trim().is_empty() {
        if let Some(d) = job_dir {
            spec.workdir = d.to_string();
        }
    }
    let mut changed = apply_suggestion(spec, &plan.sizing);
    changed.extend(plan.why.iter().map(|w| format!("({w})")));
    changed
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
