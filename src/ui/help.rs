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
    if app.overlays.files.view.is_some() {
        return super::files::help_lines(app);
    }
    let t = &app.theme;
    let mut lines = vec![Line::from(Span::styled(
        format!("keys in the {} pane", app.focus.title()),
        t.title(),
    ))];
    if app.shown().read_only {
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
        let disabled = app.shown().read_only && action.changes_jobs();
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
        Span::raw("o from a script · w save as template · ←→ pick one"),
    ]));
    lines.push(Line::from(vec![
        Span::styled(format!("  {:<18}", "a session's end"), t.key()),
        Span::raw(format!(
            "asks: {} 30 more minutes · {} end it (y confirms)",
            crate::app::session::EXTEND_KEY,
            crate::app::session::END_KEY
        )),
    ]));
    if !app.overlays.custom.commands.is_empty() {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            "your commands ([[commands]], :commands)",
            t.title(),
        )));
        for c in &app.overlays.custom.commands {
            lines.push(Line::from(vec![
                Span::styled(format!("  {:<18}", c.key.to_string()), t.key()),
                Span::raw(format!(
                    "{} ({}, {} jobs)",
                    c.def.name,
                    c.def.place.word(),
                    c.states_word()
                )),
            ]));
        }
    }
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
        lines.push(Line::from(Span::styled(
            "PROGRESS: read from the logs opened (tqdm, step/epoch N/M, N%) · ! limit first",
            t.dim(),
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        "mouse: click selects, wheel scrolls · esc closes views · keys but ↑↓ close this help",
        t.dim(),
    )));
    lines
}

impl Widget for HelpWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let lines = help_lines(self.app);
        let fits = lines.len() + 2 <= usize::from(area.height);
        // Too tall for the terminal: keys on the left, commands on the right, where the
        // terminal is wide and tall enough for both; else one column that scrolls.
        let split = if fits {
            None
        } else {
            lines.iter().position(|l| {
                l.spans
                    .first()
                    .is_some_and(|s| s.content == "commands after :")
            })
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
                let top = self.app.help_scroll.min(max);
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

/// `app.overlays.help`: the key list, when set.
impl super::overlay::DrawOverlay for bool {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let _ = areas;
        f.render_widget(HelpWidget { app }, f.area());
    }
}

#[cfg(test)]
mod tests {
    use crate::app::App;
    use crate::keymap::Pane;

    /// The App scrolls the help by its line count: the two must agree in every pane,
    /// read-only or not.
    #[test]
    fn the_apps_help_length_is_the_overlays() {
        let mut a = App::fixture(crate::ui::queue::tests::now());
        for read_only in [false, true] {
            a.clusters[0].read_only = read_only;
            for pane in Pane::ALL {
                a.focus = pane;
                assert_eq!(
                    super::help_lines(&a).len(),
                    a.help_len(),
                    "{pane:?}, read-only {read_only}"
                );
            }
        }
    }
}
