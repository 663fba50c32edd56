//! Drawing. Every pane only reads state; `layout` is shared with mouse handling so a click
//! lands where the user sees the row.

pub mod cmdlog;
pub mod columns;
pub mod custom;
pub mod deps;
pub mod detail;
pub mod edit;
pub mod efficiency;
pub mod events;
pub mod files;
pub mod form;
pub mod grep;
pub mod help;
mod insight;
pub mod keys_doc;
pub mod log;
pub mod overlay;
pub mod partitions;
pub mod queue;
pub mod stats;
pub mod status;
pub mod text;
pub mod top;
pub mod triage;
pub mod usage;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod insight_tests;

pub use crate::layout::Areas;
/// Styles live below ui/ (App holds the theme); the old path still works.
pub use crate::theme;

use ratatui::Frame;

use crate::app::App;
use crate::keymap::Pane;
use crate::logview::Stream;

/// Where each pane goes, as App sees it (zoom, focus, one or two log files).
/// Drawing follows the frame's size (it can differ from the last resize event).
pub fn layout(size: (u16, u16), app: &App) -> Areas {
    crate::layout::areas(size, app.zoom, app.focus, app.logs.one_file())
}

pub fn draw(f: &mut Frame, app: &App) {
    let size = f.area();
    let areas = layout((size.width, size.height), app);
    if areas.queue.height > 0 {
        f.render_widget(
            queue::QueueWidget {
                view: app.queue.shown(),
                theme: &app.theme,
                now: app.now,
                focused: app.focus == Pane::Queue,
            },
            areas.queue,
        );
    }
    if let Some(r) = areas.detail {
        f.render_widget(
            detail::DetailWidget {
                job: app.queue.shown().selected_job(),
                detail: app.detail.detail.as_ref(),
                loading: app.detail.loading,
                held: detail_held(app),
                error: app.detail.error.as_deref(),
                theme: &app.theme,
                now: app.now,
                focused: app.focus == Pane::Detail,
                triage: app.detail.triage.as_ref(),
                chain: app
                    .queue
                    .shown()
                    .selected_job()
                    .filter(|j| j.id.array().is_none())
                    .and_then(|j| app.shown().chains.get(&j.id.base())),
                sweep: app.queue.shown().selected_job().and_then(|j| {
                    let c = app.shown().chains.get(&j.id.base())?;
                    c.sweep_text(j.id.array_task())
                }),
                pending: detail_pending(app),
                efficiency: app.detail.id.as_ref().and_then(|id| app.history.report(id)),
                live: detail_live(app),
                deps: Some(&app.overlays.deps.graph),
                listed_at: app
                    .queue
                    .shown()
                    .selected_job()
                    .and_then(|j| app.cluster_by_ix(j.id.cluster()))
                    .and_then(|c| c.status.last_ok),
                progress: detail_progress(app),
            }
            .scrolled(app.detail.scroll),
            r,
        );
    }
    let focused_log = app.focus == Pane::Log;
    let (first, second) = match app.logs.shown_stream() {
        Stream::Stdout => (&app.logs.stdout, &app.logs.stderr),
        Stream::Stderr => (&app.logs.stderr, &app.logs.stdout),
    };
    if let Some(r) = areas.log {
        f.render_widget(
            log::LogWidget {
                pane: first,
                focused: focused_log,
                color: app.theme.color,
                merged: app.logs.one_file(),
            },
            r,
        );
    }
    if let Some(r) = areas.log2 {
        f.render_widget(
            log::LogWidget {
                pane: second,
                focused: false,
                color: app.theme.color,
                merged: false,
            },
            r,
        );
    }
    f.render_widget(status::StatusWidget { app }, areas.status);
    overlay::draw(f, app, &areas);
}

/// The selected job's progress, read from its log.
fn detail_progress(app: &App) -> Option<detail::ProgressView> {
    let job = app.queue.shown().selected_job()?;
    let cluster = app.cluster_by_ix(job.id.cluster());
    let summary = app
        .progress
        .summary(job, cluster.and_then(|c| c.status.last_ok))?;
    let chain = cluster
        .filter(|_| job.id.array().is_none())
        .and_then(|c| c.chains.get(&job.id.base()));
    Some(detail::ProgressView {
        summary,
        advice: crate::app::progress::advice(job, chain),
    })
}

/// The selected running job's live use.
fn detail_live(app: &App) -> detail::LiveView<'_> {
    let id = app.queue.shown().selected_id();
    detail::LiveView {
        shown: true,
        job: id.and_then(|id| app.live.job(id)),
        sampling: id.is_some_and(|id| app.live.sampling(id)),
        idle_minutes: app.live.idle_minutes,
        low: app.live.rules(),
    }
}

/// The selected pending job's extra information, when it is the one selected.
fn detail_pending(app: &App) -> detail::PendingView<'_> {
    let ins = &app.shown().insight;
    let selected = app.queue.shown().selected_id();
    let p = &ins.pending;
    let mine = p.id.is_some() && p.id.as_ref() == selected;
    detail::PendingView {
        info: p.info.as_ref().filter(|_| mine),
        loading: mine && p.loading,
        error: p.error.as_deref().filter(|_| mine),
        // No "E to edit" hint where editing is refused or unbound.
        edit_key: app.edit_key.as_deref().filter(|_| !app.shown().read_only),
        waited: app
            .queue
            .shown()
            .selected_job()
            .and_then(|j| app.shown().waits.for_job(j)),
        as_of: p.as_of.filter(|_| mine),
        maintenance: p
            .info
            .as_ref()
            .filter(|_| mine)
            .and_then(|info| maintenance_line(app, info)),
        sooner: selected
            .and_then(|id| app.sooner.for_job(id))
            .map(|s| {
                let m = &app.shown().maintenance;
                crate::app::sooner::lines(s, m.cluster_now(app.now).unwrap_or(app.now), app.now)
            })
            .unwrap_or_default(),
    }
}

/// The maintenance window the selected pending job's time limit runs into, in words.
fn maintenance_line(app: &App, info: &crate::slurm::pending::PendingInfo) -> Option<String> {
    let job = app.queue.shown().selected_job()?;
    let m = &app.shown().maintenance;
    let hit = m.hit(job, &info.partitions, app.now)?;
    let cnow = m.cluster_now(app.now)?;
    let edit_key = app.edit_key.as_deref().filter(|_| !app.shown().read_only);
    Some(crate::app::maintenance::explain(&hit, job, cnow, edit_key))
}

/// While the selected job's detail read waits for the RPC budget, when it goes (the pane
/// would otherwise say "loading" for up to a minute).
fn detail_held(app: &App) -> Option<String> {
    use crate::app::budget::Kind;
    let b = &app.shown().budget;
    if !app.detail.loading || !b.holds(Kind::Detail) {
        return None;
    }
    let h = b.held().iter().find(|h| h.kind == Kind::Detail)?;
    let at = b.fits_at(app.now, h.cost, h.who);
    // The user's read, held only while the selection moves faster than a row a second:
    // it goes at the next second.
    if at.is_some_and(|t| t <= app.now) {
        return None;
    }
    Some(match at {
        Some(t) => format!(
            "details wait for the RPC budget ({}/min): in {} s",
            b.per_minute,
            (t - app.now).num_seconds().max(0)
        ),
        None => format!("details wait for the RPC budget ({}/min)", b.per_minute),
    })
}
