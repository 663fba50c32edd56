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
                held: app.detail.view.held.as_deref(),
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
                sweep: app.detail.view.sweep.as_deref(),
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
                progress: app.detail.view.progress.as_ref(),
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
        waited: app.detail.view.waited,
        as_of: p.as_of.filter(|_| mine),
        maintenance: app.detail.view.maintenance.as_deref(),
        sooner: &app.detail.view.sooner,
    }
}
