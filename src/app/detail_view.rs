//! Works out what the detail pane shows from several states: the selected job's
//! sweep values, progress, the maintenance window it runs into, `:sooner`'s lines, how long
//! jobs like it waited, and when a read held by the RPC budget goes. App works it out after
//! each message it handles (the clock's included), for the selected job only, so drawing
//! only reads it.

use super::budget::Kind;
use super::component::View;
use super::detail::{DetailView, ProgressView};
use super::progress::ProgressState;
use super::sooner::SoonerState;
use crate::slurm::model::Job;

/// The view of `v`'s selected job; `v.cluster` is the cluster on screen. `edit_key`: the
/// key that edits a pending job, named in the text where editing is allowed.
pub fn derive(
    v: &View,
    progress: &ProgressState,
    sooner: &SoonerState,
    edit_key: Option<&str>,
) -> DetailView {
    let Some(job) = v.queue.selected_job() else {
        return DetailView {
            held: held(v),
            ..DetailView::default()
        };
    };
    let c = v.cluster;
    let now = v.now;
    let cnow = c.maintenance.cluster_now(now);
    DetailView {
        sweep: c
            .chains
            .get(&job.id.base())
            .and_then(|ch| ch.sweep_text(job.id.array_task())),
        progress: progress_of(v, progress, job),
        held: held(v),
        waited: c.waits.for_job(job),
        maintenance: maintenance(v, job, edit_key),
        sooner: sooner
            .for_job(&job.id)
            .map(|s| super::sooner::lines(s, cnow.unwrap_or(now), now))
            .unwrap_or_default(),
    }
}

/// `job`'s progress, read from its log, with its own cluster's launch for the advice.
fn progress_of(v: &View, progress: &ProgressState, job: &Job) -> Option<ProgressView> {
    let cluster = v.cluster_by_ix(job.id.cluster());
    let summary = progress.summary(job, cluster.and_then(|c| c.status.last_ok))?;
    let chain = cluster
        .filter(|_| job.id.array().is_none())
        .and_then(|c| c.chains.get(&job.id.base()));
    Some(ProgressView {
        summary,
        advice: super::progress::advice(job, chain),
    })
}

/// The maintenance window the pending `job`'s time limit runs into, in words, once its
/// pending read (with the partitions) is in.
fn maintenance(v: &View, job: &Job, edit_key: Option<&str>) -> Option<String> {
    let c = v.cluster;
    let p = &c.insight.pending;
    let info = p.info.as_ref().filter(|_| p.id.as_ref() == Some(&job.id))?;
    let m = &c.maintenance;
    let hit = m.hit(job, &info.partitions, v.now)?;
    let cnow = m.cluster_now(v.now)?;
    // No "E to edit" hint where editing is refused.
    let edit_key = edit_key.filter(|_| !c.read_only);
    Some(super::maintenance::explain(&hit, job, cnow, edit_key))
}

/// While the selected job's detail read waits for the RPC budget, when it goes (the pane
/// would otherwise say "loading" for up to a minute).
fn held(v: &View) -> Option<String> {
    let b = &v.cluster.budget;
    if !v.detail.loading || !b.holds(Kind::Detail) {
        return None;
    }
    let h = b.held().iter().find(|h| h.kind == Kind::Detail)?;
    let at = b.fits_at(v.now, h.cost, h.who);
    // The user's read, held only while the selection moves faster than a row a second:
    // it goes at the next second.
    if at.is_some_and(|t| t <= v.now) {
        return None;
    }
    Some(match at {
        Some(t) => format!(
            "details wait for the RPC budget ({}/min): in {} s",
            b.per_minute,
            (t - v.now).num_seconds().max(0)
        ),
        None => format!("details wait for the RPC budget ({}/min)", b.per_minute),
    })
}
