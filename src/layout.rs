//! Where each pane goes on a terminal of a given size: geometry only, shared by drawing
//! (ui/) and by App (paging, mouse hits, the queue's visible rows), so neither imports the
//! other for it.

use ratatui::layout::{Constraint, Layout, Rect};

use crate::keymap::Pane;

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

pub fn areas(size: (u16, u16), zoom: bool, focus: Pane, same_log: bool) -> Areas {
    let full = Rect::new(0, 0, size.0, size.1);
    let [main, status] = Layout::vertical([Constraint::Min(3), Constraint::Length(2)]).areas(full);
    let none = Areas {
        queue: Rect::default(),
        detail: None,
        log: None,
        log2: None,
        status,
    };
    if zoom {
        return match focus {
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
    let (log, log2) = if size.1 >= BOTH_LOGS_FROM && !same_log {
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

/// Rows of jobs a queue pane of `area_height` shows (borders and the header take three).
pub fn queue_body_height(area_height: u16) -> usize {
    usize::from(area_height.saturating_sub(3))
}
