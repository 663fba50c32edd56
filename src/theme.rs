//! Styles for every pane. Without colour (NO_COLOR, or `color = false`)
//! only bold, reverse and underline are used, so nothing relies on hue.

use ratatui::style::{Color, Modifier, Style};

use crate::slurm::model::Status;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Theme { color: true }
    }
}

impl Theme {
    pub fn new(color: bool) -> Theme {
        Theme { color }
    }

    /// Colour unless NO_COLOR is set to a non-empty value (no-color.org).
    pub fn from_env() -> Theme {
        Theme::from_no_color(std::env::var_os("NO_COLOR").as_deref())
    }

    pub fn from_no_color(no_color: Option<&std::ffi::OsStr>) -> Theme {
        Theme {
            color: no_color.is_none_or(|v| v.is_empty()),
        }
    }

    pub fn status_style(&self, status: Status) -> Style {
        let s = Style::new();
        if self.color {
            match status {
                Status::Pending => s.fg(Color::Yellow),
                Status::Running => s.fg(Color::Green),
                Status::Complete => s.fg(Color::Blue),
                Status::Error => s.fg(Color::Red).add_modifier(Modifier::BOLD),
                Status::Canceled => s.fg(Color::Magenta),
                Status::Paused => s.fg(Color::Cyan),
                Status::Unknown => s,
            }
        } else {
            match status {
                Status::Running => s.add_modifier(Modifier::BOLD),
                Status::Error => s.add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
                _ => s,
            }
        }
    }

    /// The selected row: a blue bar in the focused pane (cells keep their colours on it),
    /// grey without focus; without colour reversed, or underlined without focus.
    pub fn selected(&self, focused: bool) -> Style {
        match (focused, self.color) {
            (true, true) => Style::new().bg(Color::Blue).add_modifier(Modifier::BOLD),
            (true, false) => Style::new().add_modifier(Modifier::REVERSED),
            (false, true) => Style::new().bg(Color::DarkGray),
            (false, false) => Style::new().add_modifier(Modifier::UNDERLINED),
        }
    }

    pub fn header(&self) -> Style {
        let s = Style::new().add_modifier(Modifier::BOLD);
        if self.color {
            s.fg(Color::Cyan)
        } else {
            s.add_modifier(Modifier::UNDERLINED)
        }
    }

    pub fn border(&self, focused: bool) -> Style {
        match (focused, self.color) {
            (true, true) => Style::new().fg(Color::Cyan),
            (false, true) => Style::new().fg(Color::DarkGray),
            (true, false) => Style::new().add_modifier(Modifier::BOLD),
            (false, false) => Style::new(),
        }
    }

    pub fn title(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    /// Key names in help.
    pub fn key(&self) -> Style {
        if self.color {
            Style::new().fg(Color::Yellow)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        }
    }

    /// Secondary text: task counts, hints, "3h ago".
    pub fn dim(&self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        }
    }

    /// Field names in the detail pane.
    pub fn label(&self) -> Style {
        if self.color {
            Style::new().fg(Color::Cyan)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        }
    }

    pub fn error(&self) -> Style {
        let s = Style::new().add_modifier(Modifier::BOLD);
        if self.color {
            s.fg(Color::Red)
        } else {
            s
        }
    }

    /// Something the user should act on: a job that will never start.
    pub fn warn(&self) -> Style {
        if self.color {
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn no_color_env() {
        assert!(Theme::from_no_color(None).color);
        assert!(Theme::from_no_color(Some(OsStr::new(""))).color);
        assert!(!Theme::from_no_color(Some(OsStr::new("1"))).color);
    }

    #[test]
    fn without_colour_only_modifiers() {
        let t = Theme::new(false);
        let all = [
            Status::Pending,
            Status::Running,
            Status::Complete,
            Status::Error,
            Status::Canceled,
            Status::Paused,
            Status::Unknown,
        ];
        let mut styles: Vec<Style> = all.iter().map(|s| t.status_style(*s)).collect();
        styles.extend([
            t.selected(true),
            t.selected(false),
            t.header(),
            t.border(true),
            t.border(false),
            t.dim(),
            t.label(),
            t.error(),
            t.warn(),
            t.key(),
            t.title(),
        ]);
        for s in styles {
            assert_eq!((s.fg, s.bg), (None, None), "{s:?}");
        }
        assert_ne!(
            t.status_style(Status::Running),
            t.status_style(Status::Pending)
        );
        assert_ne!(
            t.status_style(Status::Error),
            t.status_style(Status::Running)
        );
    }
}
