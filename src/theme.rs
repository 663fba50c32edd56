//! Styles for every pane, in one of three palettes (`[ui] theme`: dark, light, high-contrast).
//! Without colour (NO_COLOR) only bold, reverse and underline are used, so nothing relies on
//! hue, whatever the palette.

use ratatui::style::{Color, Modifier, Style};
use serde::{Deserialize, Serialize};

use crate::slurm::model::Status;

/// The colours, for the terminal's background.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Palette {
    /// The 16 terminal colours, for a dark background.
    #[default]
    Dark,
    /// Darker shades (the 256-colour cube) that read on a white background: no yellow or
    /// light grey text.
    Light,
    /// Bold bright text and solid bars, for low vision or a projector: no dim grey, the
    /// selection in black on white, errors and warnings on a coloured ground.
    HighContrast,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
    pub palette: Palette,
}

impl Default for Theme {
    fn default() -> Self {
        Theme::new(true)
    }
}

/// Dark orange, green, cyan and blue of the 256-colour cube, for the light palette.
const ORANGE: Color = Color::Indexed(130);
const GREEN: Color = Color::Indexed(28);
const TEAL: Color = Color::Indexed(30);
const NAVY: Color = Color::Indexed(25);
const GREY: Color = Color::Indexed(243);
const PALE_BLUE: Color = Color::Indexed(153);
const PALE_GREY: Color = Color::Indexed(252);

impl Theme {
    pub fn new(color: bool) -> Theme {
        Theme {
            color,
            palette: Palette::Dark,
        }
    }

    pub fn with_palette(self, palette: Palette) -> Theme {
        Theme { palette, ..self }
    }

    /// Colour unless NO_COLOR is set to a non-empty value (no-color.org).
    pub fn from_env() -> Theme {
        Theme::from_no_color(std::env::var_os("NO_COLOR").as_deref())
    }

    pub fn from_no_color(no_color: Option<&std::ffi::OsStr>) -> Theme {
        Theme::new(no_color.is_none_or(|v| v.is_empty()))
    }

    fn light(&self) -> bool {
        self.color && self.palette == Palette::Light
    }

    fn high(&self) -> bool {
        self.color && self.palette == Palette::HighContrast
    }

    pub fn status_style(&self, status: Status) -> Style {
        let s = Style::new();
        if self.light() {
            return match status {
                Status::Pending => s.fg(ORANGE),
                Status::Running => s.fg(GREEN),
                Status::Complete => s.fg(NAVY),
                Status::Error => s.fg(Color::Red).add_modifier(Modifier::BOLD),
                Status::Canceled => s.fg(Color::Magenta),
                Status::Paused => s.fg(TEAL),
                Status::Unknown => s,
            };
        }
        if self.high() {
            let b = s.add_modifier(Modifier::BOLD);
            return match status {
                Status::Pending => b.fg(Color::LightYellow),
                Status::Running => b.fg(Color::LightGreen),
                Status::Complete => b.fg(Color::LightCyan),
                Status::Error => b.fg(Color::White).bg(Color::Red),
                Status::Canceled => b.fg(Color::LightMagenta),
                Status::Paused => b.fg(Color::White).add_modifier(Modifier::UNDERLINED),
                Status::Unknown => b.fg(Color::White),
            };
        }
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
        if self.light() {
            return if focused {
                Style::new().bg(PALE_BLUE).add_modifier(Modifier::BOLD)
            } else {
                Style::new().bg(PALE_GREY)
            };
        }
        if self.high() {
            return if focused {
                Style::new()
                    .fg(Color::Black)
                    .bg(Color::White)
                    .add_modifier(Modifier::BOLD)
            } else {
                Style::new().add_modifier(Modifier::REVERSED)
            };
        }
        match (focused, self.color) {
            (true, true) => Style::new().bg(Color::Blue).add_modifier(Modifier::BOLD),
            (true, false) => Style::new().add_modifier(Modifier::REVERSED),
            (false, true) => Style::new().bg(Color::DarkGray),
            (false, false) => Style::new().add_modifier(Modifier::UNDERLINED),
        }
    }

    pub fn header(&self) -> Style {
        let s = Style::new().add_modifier(Modifier::BOLD);
        if self.light() {
            return s.fg(NAVY);
        }
        if self.high() {
            return s.fg(Color::White).add_modifier(Modifier::UNDERLINED);
        }
        if self.color {
            s.fg(Color::Cyan)
        } else {
            s.add_modifier(Modifier::UNDERLINED)
        }
    }

    pub fn border(&self, focused: bool) -> Style {
        if self.light() {
            return Style::new().fg(if focused { NAVY } else { GREY });
        }
        if self.high() {
            return if focused {
                Style::new()
                    .fg(Color::LightYellow)
                    .add_modifier(Modifier::BOLD)
            } else {
                Style::new().fg(Color::White)
            };
        }
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
        if self.light() {
            return Style::new().fg(ORANGE).add_modifier(Modifier::BOLD);
        }
        if self.high() {
            return Style::new()
                .fg(Color::LightYellow)
                .add_modifier(Modifier::BOLD);
        }
        if self.color {
            Style::new().fg(Color::Yellow)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        }
    }

    /// Secondary text: task counts, hints, "3h ago".
    pub fn dim(&self) -> Style {
        if self.light() {
            return Style::new().fg(GREY);
        }
        if self.high() {
            // No grey: secondary text stays as readable as the rest.
            return Style::new().fg(Color::White);
        }
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        }
    }

    /// Field names in the detail pane.
    pub fn label(&self) -> Style {
        if self.light() {
            return Style::new().fg(NAVY);
        }
        if self.high() {
            return Style::new()
                .fg(Color::LightCyan)
                .add_modifier(Modifier::BOLD);
        }
        if self.color {
            Style::new().fg(Color::Cyan)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        }
    }

    pub fn error(&self) -> Style {
        let s = Style::new().add_modifier(Modifier::BOLD);
        if self.high() {
            return s.fg(Color::White).bg(Color::Red);
        }
        if self.color {
            s.fg(Color::Red)
        } else {
            s
        }
    }

    /// Something the user should act on: a job that will never start.
    pub fn warn(&self) -> Style {
        if self.light() {
            return Style::new().fg(ORANGE).add_modifier(Modifier::BOLD);
        }
        if self.high() {
            return Style::new()
                .fg(Color::Black)
                .bg(Color::LightYellow)
                .add_modifier(Modifier::BOLD);
        }
        if self.color {
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn no_color_env() {
        assert!(Theme::from_no_color(None).color);
        assert!(Theme::from_no_color(Some(OsStr::new(""))).color);
        assert!(!Theme::from_no_color(Some(OsStr::new("1"))).color);
    }

    fn every_style(t: &Theme) -> Vec<Style> {
        let mut styles: Vec<Style> = STATUSES.iter().map(|s| t.status_style(*s)).collect();
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
        styles
    }

    const STATUSES: [Status; 7] = [
        Status::Pending,
        Status::Running,
        Status::Complete,
        Status::Error,
        Status::Canceled,
        Status::Paused,
        Status::Unknown,
    ];

    #[test]
    fn no_colour_wins_over_every_palette() {
        for p in [Palette::Dark, Palette::Light, Palette::HighContrast] {
            let t = Theme::new(false).with_palette(p);
            assert_eq!(every_style(&t), every_style(&Theme::new(false)), "{p:?}");
        }
    }

    #[test]
    fn light_palette_has_no_text_a_white_background_swallows() {
        let t = Theme::new(true).with_palette(Palette::Light);
        for s in every_style(&t) {
            assert!(
                !matches!(
                    s.fg,
                    Some(
                        Color::Yellow
                            | Color::LightYellow
                            | Color::White
                            | Color::Gray
                            | Color::DarkGray
                    )
                ),
                "{s:?}"
            );
        }
        // Every state has a hue of its own, except an unknown one.
        let mut fgs: Vec<_> = STATUSES[..6]
            .iter()
            .map(|s| t.status_style(*s).fg)
            .collect();
        fgs.dedup();
        assert_eq!(fgs.len(), 6);
    }

    #[test]
    fn high_contrast_is_bold_and_never_dim() {
        let t = Theme::new(true).with_palette(Palette::HighContrast);
        for st in STATUSES {
            assert!(
                t.status_style(st).add_modifier.contains(Modifier::BOLD),
                "{st:?}"
            );
        }
        assert_ne!(t.dim().fg, Some(Color::DarkGray));
        let sel = t.selected(true);
        assert_eq!((sel.fg, sel.bg), (Some(Color::Black), Some(Color::White)));
        assert!(t.error().bg.is_some() && t.warn().bg.is_some());
    }

    #[test]
    fn palette_names_in_the_config() {
        #[derive(Deserialize)]
        struct Ui {
            theme: Palette,
        }
        for (text, p) in [
            ("dark", Palette::Dark),
            ("light", Palette::Light),
            ("high-contrast", Palette::HighContrast),
        ] {
            let ui: Ui = toml::from_str(&format!("theme = \"{text}\"")).unwrap();
            assert_eq!(ui.theme, p);
        }
        assert!(toml::from_str::<Ui>("theme = \"neon\"").is_err());
    }

    #[test]
    fn without_colour_only_modifiers() {
        let t = Theme::new(false);
        let styles = every_style(&t);
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
