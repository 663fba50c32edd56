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
        let two = split.and_then(|i| Columns::fit(&lines, i, area).map(|c| (i, c)));
        match two {
            Some((i, c)) => two_columns(lines, i, c, area, buf),
            None if fits => one_column(lines, area, buf, 0, " help "),
            None => {
                let shown = usize::from(area.height.saturating_sub(2));
                let total = lines.len();
                let top = self.help.scroll.min(self.help.max_scroll(area.height));
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

/// The widths and height of the two-column help: the keys as wide as their widest line, a
/// gap, the commands (and the notes, which wrap) in what is left, up to their widest line.
/// Where the terminal is too narrow for both whole, the commands stay whole and the keys'
/// column gives way (down to MIN_LEFT; a binding's words fit in it, a test of the keymap
/// says so; a long name of your own command may be cut).
#[derive(Clone, Copy)]
struct Columns {
    left: u16,
    right: u16,
    rows: u16,
}

/// Between the two columns.
const GAP: u16 = 2;
/// The keys' column is not made narrower (every binding's line fits in it).
pub const MIN_LEFT: u16 = 70;

impl Columns {
    /// The columns for `lines` split at `split`, when both fit in `area` whole.
    fn fit(lines: &[Line<'static>], split: usize, area: Rect) -> Option<Columns> {
        let width = |ls: &[Line<'static>]| {
            u16::try_from(ls.iter().map(Line::width).max().unwrap_or(0)).unwrap_or(u16::MAX)
        };
        let inner = area.width.checked_sub(2 + GAP)?;
        // The commands: from their title to the blank line after them.
        let commands = lines[split..]
            .iter()
            .position(|l| l.width() == 0)
            .map_or(&lines[split..], |n| &lines[split..split + n]);
        let needed = width(commands);
        let left = width(&lines[..split]).min(inner.checked_sub(needed)?);
        if left < MIN_LEFT.min(width(&lines[..split])) {
            return None;
        }
        let right = (inner - left).min(width(&lines[split..]));
        // (a wrapped line takes as many rows as its width needs; an empty one, one row)
        let right_rows: usize = lines[split..]
            .iter()
            .map(|l| l.width().div_ceil(usize::from(right)).max(1))
            .sum();
        let rows = u16::try_from(split.max(right_rows)).ok()?;
        (rows.checked_add(2)? <= area.height).then_some(Columns { left, right, rows })
    }
}

/// Keys on the left, the lines from `split` on (the commands) on the right.
fn two_columns(lines: Vec<Line<'static>>, split: usize, c: Columns, area: Rect, buf: &mut Buffer) {
    let mut left = lines;
    let right = left.split_off(split);
    let [v] = Layout::vertical([Constraint::Length(c.rows + 2)])
        .flex(Flex::Center)
        .areas(area);
    let [r] = Layout::horizontal([Constraint::Length(c.left + GAP + c.right + 2)])
        .flex(Flex::Center)
        .areas(v);
    Clear.render(r, buf);
    let block = Block::default().borders(Borders::ALL).title(" help ");
    let inner = block.inner(r);
    block.render(r, buf);
    let [a, _, b] = Layout::horizontal([
        Constraint::Length(c.left),
        Constraint::Length(GAP),
        Constraint::Fill(1),
    ])
    .areas(inner);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Msg;
    use crate::app::App;
    use crate::keymap::Pane;
    use crossterm::event::{KeyCode, KeyEvent};

    /// Every line of the keys' column fits in its narrowest width, so a binding's words are
    /// never cut beside the commands (a description over 50 characters would be).
    #[test]
    fn every_key_line_fits_the_keys_column() {
        for pane in Pane::ALL {
            let mut a = App::fixture(crate::ui::queue::tests::now());
            a.clusters[0].read_only = true;
            a.focus = pane;
            a.update(Msg::Key(KeyEvent::from(KeyCode::Char('?'))));
            let lines = &a.overlays.help.lines;
            let split = lines
                .iter()
                .position(|l| l.spans.first().is_some_and(|s| s.content == COMMANDS_TITLE))
                .expect("the commands' title");
            for l in &lines[..split] {
                assert!(
                    l.width() <= usize::from(MIN_LEFT),
                    "{pane:?}: {} columns: {l}",
                    l.width()
                );
            }
        }
    }
}
