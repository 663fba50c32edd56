//! "Starts sooner if…" for the selected pending job (`:sooner`): up to three changes of its
//! request (a shorter time limit, another partition, fewer GPUs or nodes, from
//! `slurm::why`), each checked by the scheduler with `sbatch --test-only` only when asked
//! (each check is two slurmctld RPCs); `:sooner N` asks before applying change N with the
//! `scontrol update` it shows.

use chrono::NaiveDateTime;

use super::component::{Out, View};
use super::confirm::{Answer, Choice, Confirm};
use crate::action::Cmd;
use crate::slurm::model::{Job, JobId};
use crate::slurm::why::{self, Alternative, Shape};

#[derive(Debug, Clone, Default)]
pub struct SoonerState {
    /// The job the alternatives are about.
    pub id: Option<JobId>,
    pub loading: bool,
    pub alternatives: Vec<Alternative>,
    pub error: Option<String>,
    /// When the scheduler answered (this machine's clock).
    pub at: Option<NaiveDateTime>,
    /// `:sooner` waited for the partitions of this job: asked again when they come.
    waiting: Option<JobId>,
}

/// The selected job when it is pending, else why `:sooner` has nothing to do.
fn pending_job<'a>(v: &View<'a>) -> Result<&'a Job, String> {
    let job = v
        .queue
        .selected_job()
        .ok_or_else(|| "no job selected: :sooner is about a pending job".to_string())?;
    match why::why_none(job) {
        Some(why) => Err(format!("no change starts job {} sooner: {why}", job.id)),
        None => Ok(job),
    }
}

impl SoonerState {
    /// What is shown for `id` (the alternatives of another job are not).
    pub fn for_job(&self, id: &JobId) -> Option<&SoonerState> {
        (self.id.as_ref() == Some(id)).then_some(self)
    }

    /// `:sooner`: the changes worth checking for the selected pending job, sent to the
    /// scheduler's test-only check; or why there are none.
    pub fn ask(&mut self, v: &View) -> Out {
        let job = match pending_job(v) {
            Ok(j) => j,
            Err(why) => return Out::note(why),
        };
        let c = v.cluster;
        // Its partitions as the pending read saw them, else the limits read for forms.
        let from_info = c
            .insight
            .pending
            .info
            .as_ref()
            .filter(|_| c.insight.pending.id.as_ref() == Some(&job.id))
            .map(|i| i.partitions.as_slice());
        let partitions = match (from_info, &c.partitions) {
            (Some(p), _) if !p.is_empty() => p,
            (_, Some(Ok(p))) => p.as_slice(),
            _ => &[],
        };
        if partitions.is_empty() {
            self.waiting = Some(job.id.clone());
            return Out::note(format!(
                "job {}: reading its partitions first; :sooner follows",
                job.id
            ))
            .with_cmd(Cmd::FetchLimits(c.ix));
        }
        let detail = v
            .detail
            .detail
            .as_ref()
            .filter(|_| v.detail.id.as_ref() == Some(&job.id));
        let shape = detail.map_or_else(|| Shape::of_job(job), Shape::of_detail);
        let cluster = why::Cluster {
            partitions,
            reservations: c.maintenance.items(),
            now: c.maintenance.cluster_now(v.now).unwrap_or(v.now),
        };
        let alternatives = why::alternatives(job, &shape, &cluster);
        *self = SoonerState {
            id: Some(job.id.clone()),
            ..SoonerState::default()
        };
        if alternatives.is_empty() {
            self.error =
                Some("no shorter limit, other partition or smaller request to offer".into());
            return Out::none();
        }
        self.loading = true;
        let n = alternatives.len();
        Out::note(format!(
            "asking the scheduler when job {} would start with {n} change{} (sbatch --test-only)…",
            job.id,
            if n == 1 { "" } else { "s" }
        ))
        .with_cmd(Cmd::CheckSooner {
            id: job.id.clone(),
            alternatives,
        })
    }

    /// The partitions came: a `:sooner` that waited for them is asked now, while its job
    /// is still the one selected.
    pub fn on_partitions(&mut self, v: &View) -> Out {
        let Some(id) = self.waiting.take() else {
            return Out::none();
        };
        if v.queue.selected_job().map(|j| &j.id) != Some(&id) {
            return Out::none();
        }
        self.ask(v)
    }

    /// The scheduler's answers.
    pub fn on_checked(
        &mut self,
        id: &JobId,
        result: Result<Vec<Alternative>, String>,
        at: NaiveDateTime,
    ) {
        if self.id.as_ref() != Some(id) {
            return;
        }
        self.loading = false;
        self.at = Some(at);
        match result {
            Ok(a) => {
                self.alternatives = a;
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// `:sooner N`: the question that shows change N's `scontrol update` before it runs.
    pub fn apply(&self, v: &View, n: usize) -> Out {
        let job = match pending_job(v) {
            Ok(j) => j,
            Err(why) => return Out::note(why),
        };
        if let Some(why) = v.read_only_refusal("changing a job") {
            return Out::note(why);
        }
        let Some(a) = self
            .for_job(&job.id)
            .and_then(|s| s.alternatives.get(n.wrapping_sub(1)))
        else {
            return Out::note(format!(
                "no change {n} for job {}: :sooner lists them first",
                job.id
            ));
        };
        let parts = match &v.cluster.partitions {
            Some(Ok(p)) => p.as_slice(),
            _ => &[],
        };
        if let Err(why) = why::check_apply(job, &a.change, parts) {
            return Out::note(why);
        }
        Out::confirm(Confirm {
            prompt: format!("run `{}`?", a.argv.join(" ")),
            choices: vec![Choice {
                key: 'y',
                label: a.change.words(),
                answer: Answer::Change(job.id.clone(), a.change.clone()),
            }],
        })
    }

    /// The change was applied (or refused): the alternatives checked before no longer hold.
    pub fn on_applied(&mut self, id: &JobId, words: &str, result: Result<(), String>) -> Out {
        if self.id.as_ref() == Some(id) {
            *self = SoonerState::default();
        }
        match result {
            Ok(()) => Out::note(format!("job {id}: {words}")),
            Err(e) => Out::note(format!("job {id} not changed: {e}")),
        }
    }
}

/// The detail pane's lines: each change, the scheduler's estimate (against the cluster's
/// clock `cnow`) and how to apply it; a minute after the check (this machine's clock
/// `now`), when it was made: a limit worked out to end before a window is that much
/// older.
pub fn lines(s: &SoonerState, cnow: NaiveDateTime, now: NaiveDateTime) -> Vec<String> {
    if s.loading {
        return vec!["asking the scheduler (sbatch --test-only)…".into()];
    }
    if let Some(e) = &s.error {
        return vec![e.clone()];
    }
    s.alternatives
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let when = match (a.estimated_start, &a.problem) {
                (Some(t), _) if t <= cnow + chrono::Duration::seconds(60) => {
                    "starts now".to_string()
                }
                (Some(t), _) => format!("starts {}", crate::queue::format::human_until(t, cnow)),
                (None, Some(p)) => format!("refused: {p}"),
                (None, None) => "no estimate".to_string(),
            };
            format!("{}. {} → {when} (:sooner {})", i + 1, a.words, i + 1)
        })
        .chain(
            s.at.filter(|at| (now - *at).num_seconds() >= 60 && !s.alternatives.is_empty())
                .map(|at| {
                    format!(
                        "checked {}: :sooner again for figures of now",
                        crate::queue::format::human_ago(at, now)
                    )
                }),
        )
        .collect()
}
