//! `?`: the key list App made when it opened (`app::help`), as it fits the terminal.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::app::help::{HelpState, COMMANDS_TITLE};

pub struct HelpWidget<'a> {
    pub help: &'a HelpState,
}

impl Widget for HelpWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let lines = self.help.lines.clone();
        let fits = lines.len() + 2 <= usize::from(area.height);
        // Too tall for the terminal: keys on the left, commands on the right, where the
        // terminal is wide and tall enough for both; else one column that scrolls.
        let split = if fits {
            None
        } else {
            lines
                .iter()
                .position(|l| l.spans.first().is_some_and(|s| s.content == COMMANDS_TITLE))
        };
        let two = split.filter(|i| {
            let rows = (*i).max(lines.len() - i);
            // The commands' column wraps; below 38 columns it would be mostly wrapping.
            rows + 2 <= usize::from(area.height) && area.width >= 72 + 2 + 38
        });
        match two {
            Some(i) => two_columns(lines, i, area, buf),
            None if fits => one_column(lines, area, buf, 0, " help "),
            None => {
                let shown = usize::from(area.height.saturating_sub(2));
                let total = lines.len();
                let max = u16::try_from(total.saturating_sub(shown)).unwrap_or(u16::MAX);
                let top = self.help.scroll.min(max);
                let first = usize::from(top) + 1;
                let last = (usize::from(top) + shown).min(total);
                let title = format!(
                    " help {first}–{last} of {total} · ↑↓ pgup pgdn scroll · other keys close "
                );
                one_column(lines, area, buf, top, &title);
            }
        }
    }
}

/// The lines in one bordered column, from line `top`.
fn one_column(lines: Vec<Line<'static>>, area: Rect, buf: &mut Buffer, top: u16, title: &str) {
    let h = u16::try_from(lines.len() + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    // As wide as the longest line (the notes run past 72), within the terminal.
    let widest = lines.iter().map(Line::width).max().unwrap_or(0);
    let w = u16::try_from(widest.max(title.chars().count()).max(70) + 2).unwrap_or(u16::MAX);
    let [v] = Layout::vertical([Constraint::Length(h)])
        .flex(Flex::Center)
        .areas(area);
    let [r] = Layout::horizontal([Constraint::Length(w.min(area.width))])
        .flex(Flex::Center)
        .areas(v);
    Clear.render(r, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(title.to_string());
    let inner = block.inner(r);
    block.render(r, buf);
    Paragraph::new(lines).scroll((top, 0)).render(inner, buf);
}

/// Keys on the left, the lines from `split` on (the commands) on the right.
fn two_columns(lines: Vec<Line<'static>>, split: usize, area: Rect, buf: &mut Buffer) {
    let mut left = lines;
    let right = left.split_off(split);
    let rows = left.len().max(right.len());
    let h = u16::try_from(rows + 2).unwrap_or(u16::MAX);
    let [v] = Layout::vertical([Constraint::Length(h)])
        .flex(Flex::Center)
        .areas(area);
    let [r] = Layout::horizontal([Constraint::Length(144)])
        .flex(Flex::Center)
        .areas(v);
    Clear.render(r, buf);
    let block = Block::default().borders(Borders::ALL).title(" help ");
    let inner = block.inner(r);
    block.render(r, buf);
    let [a, b] = Layout::horizontal([Constraint::Length(72), Constraint::Fill(1)]).areas(inner);
    Paragraph::new(left).render(a, buf);
    Paragraph::new(right)
        .wrap(Wrap { trim: false })
        .render(b, buf);
}

/// `app.overlays.help`: the key list, when open.
impl super::overlay::DrawOverlay for HelpState {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let _ = (app, areas);
        f.render_widget(HelpWidget { help: self }, f.area());
    }
}
