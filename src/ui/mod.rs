//! Drawing. Every pane only reads state; `layout` is shared with mouse handling so a click
//! lands where the user sees the row.

pub mod detail;
pub mod edit;
pub mod events;
pub mod form;
pub mod help;
pub mod log;
pub mod partitions;
pub mod queue;
pub mod stats;
pub mod status;
pub mod theme;
pub mod triage;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod insight_tests;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::Frame;

use crate::app::App;
use crate::keymap::Pane;
use crate::logview::Stream;

/// Where each pane goes for a terminal of `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub queue: Rect,
    pub detail: Option<Rect>,
    pub log: Option<Rect>,
    /// The second log stream, when the terminal is tall enough to show both.
    pub log2: Option<Rect>,
    pub status: Rect,
}

/// Rows from which stdout and stderr are both shown.
const BOTH_LOGS_FROM: u16 = 48;

pub fn layout(size: (u16, u16), app: &App) -> Areas {
    let full = Rect::new(0, 0, size.0, size.1);
    let [main, status] = Layout::vertical([Constraint::Min(3), Constraint::Length(2)]).areas(full);
    let none = Areas {
        queue: Rect::default(),
        detail: None,
        log: None,
        log2: None,
        status,
    };
    if app.zoom {
        return match app.focus {
            Pane::Queue => Areas {
                queue: main,
                ..none
            },
            Pane::Detail => Areas {
                detail: Some(main),
                ..none
            },
            Pane::Log => Areas {
                log: Some(main),
                ..none
            },
        };
    }
    let [queue, bottom] =
        Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(main);
    let [detail, logs] =
        Layout::horizontal([Constraint::Percentage(38), Constraint::Percentage(62)]).areas(bottom);
    // One pane when stdout and stderr are the same file: the same text twice helps no one.
    let (log, log2) = if size.1 >= BOTH_LOGS_FROM && !same_log_file(app) {
        let [a, b] =
            Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(logs);
        (a, Some(b))
    } else {
        (logs, None)
    };
    Areas {
        queue,
        detail: Some(detail),
        log: Some(log),
        log2,
        status,
    }
}

/// stdout and stderr go to one file (Slurm's default without `--error`).
fn same_log_file(app: &App) -> bool {
    app.logs.paths.as_ref().is_some_and(|(o, e)| o == e)
}

pub fn draw(f: &mut Frame, app: &App) {
    let size = f.area();
    let areas = layout((size.width, size.height), app);
    if areas.queue.height > 0 {
        f.render_widget(
            queue::QueueWidget {
                view: &app.queue,
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
                job: app.queue.selected_job(),
                detail: app.detail.detail.as_ref(),
                loading: app.detail.loading,
                error: app.detail.error.as_deref(),
                theme: &app.theme,
                now: app.now,
                focused: app.focus == Pane::Detail,
                triage: app.detail.triage.as_ref(),
                chain: app
                    .queue
                    .selected_job()
                    .filter(|j| j.id.array().is_none())
                    .and_then(|j| app.chains.get(&j.id.base())),
                pending: detail_pending(app),
            }
            .scrolled(app.detail.scroll),
            r,
        );
    }
    let focused_log = app.focus == Pane::Log;
    let (first, second) = match app.logs.shown {
        Stream::Stdout => (&app.logs.stdout, &app.logs.stderr),
        Stream::Stderr => (&app.logs.stderr, &app.logs.stdout),
    };
    if let Some(r) = areas.log {
        f.render_widget(
            log::LogWidget {
                pane: first,
                focused: focused_log,
                color: app.theme.color,
                merged: same_log_file(app),
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
    if let Some(v) = app.insight.view {
        let [main, _] = Layout::vertical([Constraint::Min(3), Constraint::Length(2)]).areas(size);
        match v {
            crate::app::insight::View::Partitions => {
                f.render_widget(partitions::PartitionsWidget { app }, main)
            }
            crate::app::insight::View::Stats => f.render_widget(stats::StatsWidget { app }, main),
        }
    }
    if app.events.open {
        let over = Rect::new(
            0,
            0,
            size.width,
            size.height.saturating_sub(areas.status.height),
        );
        f.render_widget(
            events::EventsWidget {
                events: &app.events,
                theme: &app.theme,
            },
            over,
        );
    }
    if let Some(form) = &app.edit {
        f.render_widget(
            edit::EditWidget {
                form,
                theme: &app.theme,
                partitions: app.partitions.as_ref(),
            },
            size,
        );
    }
    if let Some(form) = &app.form {
        f.render_widget(form::FormWidget { app, form }, size);
    }
    if app.help {
        f.render_widget(help::HelpWidget { app }, size);
    }
}

/// The selected pending job's extra information, when it is the one selected.
fn detail_pending(app: &App) -> detail::PendingView<'_> {
    let ins = &app.insight;
    let selected = app.queue.selected_id();
    let p = &ins.pending;
    let mine = p.id.is_some() && p.id.as_ref() == selected;
    detail::PendingView {
        info: p.info.as_ref().filter(|_| mine),
        loading: mine && p.loading,
        error: p.error.as_deref().filter(|_| mine),
        // No "E to edit" hint where editing is refused or unbound.
        edit_key: app.edit_key.as_deref().filter(|_| !app.read_only),
    }
}
