//! `?`: every binding of the focused pane, and the `:` commands.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::app::{App, COMMANDS};

pub struct HelpWidget<'a> {
    pub app: &'a App,
}

pub fn help_lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines = vec![Line::from(Span::styled(
        format!("keys in the {} pane", app.focus.title()),
        t.title(),
    ))];
    for (action, keys) in app.keymap.bindings(app.focus) {
        lines.push(Line::from(vec![
            Span::styled(format!("  {:<18}", keys.join(", ")), t.key()),
            Span::raw(action.describe()),
        ]));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("commands after :", t.title())));
    for (cmd, what) in COMMANDS {
        lines.push(Line::from(vec![
            Span::styled(format!("  :{cmd:<17}"), t.key()),
            Span::raw(*what),
        ]));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        "mouse: click selects, wheel scrolls · any key closes this help",
        t.dim(),
    )));
    lines
}

impl Widget for HelpWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let lines = help_lines(self.app);
        let h = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
        let [v] = Layout::vertical([Constraint::Length(h)])
            .flex(Flex::Center)
            .areas(area);
        let [r] = Layout::horizontal([Constraint::Length(72)])
            .flex(Flex::Center)
            .areas(v);
        Clear.render(r, buf);
        Paragraph::new(lines)
            .block(Block::default().borders(Borders::ALL).title(" help "))
            .render(r, buf);
    }
}
