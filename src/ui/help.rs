//! `?`: every binding of the focused pane, and the `:` commands.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::app::{App, COMMANDS};

pub struct HelpWidget<'a> {
    pub app: &'a App,
}

pub fn help_lines(app: &App) -> Vec<Line<'static>> {
    if app.files.view.is_some() {
        return super::files::help_lines(app);
    }
    let t = &app.theme;
    let mut lines = vec![Line::from(Span::styled(
        format!("keys in the {} pane", app.focus.title()),
        t.title(),
    ))];
    if app.cluster.read_only {
        lines.push(Line::from(Span::styled(
            "read-only: cancel, hold, release, requeue, top, edit are disabled",
            t.warn(),
        )));
        lines.push(Line::from(Span::styled(
            "  (a shell, tunnels and fetching files change no job: allowed)",
            t.dim(),
        )));
    }
    for (action, keys) in app.keymap.bindings(app.focus) {
        let disabled = app.cluster.read_only && action.changes_jobs();
        lines.push(Line::from(vec![
            Span::styled(format!("  {:<18}", keys.join(", ")), t.key()),
            if disabled {
                Span::styled(format!("✗ {}", action.describe()), t.dim())
            } else {
                Span::raw(action.describe())
            },
        ]));
    }
    lines.push(Line::from(vec![
        Span::styled(format!("  {:<18}", "in the form (n)"), t.key()),
        Span::raw("w save as template · ←→ pick one"),
    ]));
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("commands after :", t.title())));
    for (cmd, what) in COMMANDS {
        lines.push(Line::from(vec![
            Span::styled(format!("  :{cmd:<17}"), t.key()),
            Span::raw(*what),
        ]));
    }
    if app.focus == crate::keymap::Pane::Queue {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            crate::ui::detail::idle_mark_help(app.live.idle_minutes),
            t.dim(),
        )));
        lines.push(Line::from(Span::styled(
            crate::ui::detail::low_use_help(&app.live.rules()),
            t.dim(),
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        "mouse: click selects, wheel scrolls · esc closes views · any key closes this help",
        t.dim(),
    )));
    lines
}

impl Widget for HelpWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let lines = help_lines(self.app);
        let fits = lines.len() + 2 <= usize::from(area.height);
        // Too tall for the terminal: keys on the left, commands on the right.
        let split = if fits {
            None
        } else {
            lines.iter().position(|l| {
                l.spans
                    .first()
                    .is_some_and(|s| s.content == "commands after :")
            })
        };
        let (left, right) = match split {
            Some(i) => {
                let mut l = lines;
                let r = l.split_off(i);
                (l, Some(r))
            }
            None => (lines, None),
        };
        let rows = left.len().max(right.as_ref().map_or(0, Vec::len));
        let h = u16::try_from(rows + 2).unwrap_or(u16::MAX);
        let w = if right.is_some() { 144 } else { 72 };
        let [v] = Layout::vertical([Constraint::Length(h)])
            .flex(Flex::Center)
            .areas(area);
        let [r] = Layout::horizontal([Constraint::Length(w)])
            .flex(Flex::Center)
            .areas(v);
        Clear.render(r, buf);
        let block = Block::default().borders(Borders::ALL).title(" help ");
        let inner = block.inner(r);
        block.render(r, buf);
        match right {
            None => Paragraph::new(left).render(inner, buf),
            Some(right) => {
                let [a, b] =
                    Layout::horizontal([Constraint::Length(72), Constraint::Fill(1)]).areas(inner);
                Paragraph::new(left).render(a, buf);
                Paragraph::new(right)
                    .wrap(Wrap { trim: false })
                    .render(b, buf);
            }
        }
    }
}
