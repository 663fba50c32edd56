//! `c`: the column chooser, a box over the queue listing every column with a mark for those
//! shown, in the order they are shown.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use crate::app::columns::ColumnChooser;
use crate::theme::Theme;

pub struct ColumnsWidget<'a> {
    pub chooser: &'a ColumnChooser,
    pub theme: &'a Theme,
}

impl Widget for ColumnsWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let rows = self.chooser.items.len() as u16 + 4;
        let [v] = Layout::vertical([Constraint::Length(rows.min(area.height))])
            .flex(Flex::Center)
            .areas(area);
        let [r] = Layout::horizontal([Constraint::Length(52.min(area.width))])
            .flex(Flex::Center)
            .areas(v);
        let mut lines = Vec::new();
        for (i, (c, on)) in self.chooser.items.iter().enumerate() {
            let mark = if *on { "[x]" } else { "[ ]" };
            let style = if i == self.chooser.cursor {
                t.selected(true)
            } else if *on {
                ratatui::style::Style::new()
            } else {
                t.dim()
            };
            lines.push(Line::styled(
                format!(" {mark} {:<13} {}", c.label(), column_name(*c)),
                style,
            ));
        }
        lines.push(Line::raw(""));
        match &self.chooser.note {
            Some(n) => lines.push(Line::styled(format!(" {n}"), t.warn())),
            None => lines.push(Line::from(vec![
                Span::styled(" space", t.key()),
                Span::raw(" on/off  "),
                Span::styled("J/K", t.key()),
                Span::raw(" move  "),
                Span::styled("enter", t.key()),
                Span::raw(" save  "),
                Span::styled("esc", t.key()),
                Span::raw(" cancel"),
            ])),
        }
        Clear.render(r, buf);
        // Keep the cursor's row in view when the box is shorter than the list.
        let inner = r.height.saturating_sub(2);
        let scroll = (self.chooser.cursor as u16 + 1).saturating_sub(inner);
        Paragraph::new(lines)
            .scroll((scroll, 0))
            .block(
                Block::bordered()
                    .border_style(t.border(true))
                    .title(Span::styled(" columns of the queue ", t.title())),
            )
            .render(r, buf);
    }
}

/// The name the config uses (`[ui] columns`).
fn column_name(c: crate::queue::Column) -> String {
    toml::Value::try_from(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl super::overlay::DrawOverlay for Option<ColumnChooser> {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let _ = areas;
        if let Some(chooser) = self {
            let widget = ColumnsWidget {
                chooser,
                theme: &app.theme,
            };
            f.render_widget(widget, f.area());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::queue::Column;

    #[test]
    fn the_chooser_lists_every_column_with_its_mark() {
        let mut ch = ColumnChooser::new(&[Column::Id, Column::State, Column::Name]);
        ch.cursor = 1;
        let theme = Theme::new(false);
        let mut buf = Buffer::empty(Rect::new(0, 0, 70, 32));
        ColumnsWidget {
            chooser: &ch,
            theme: &theme,
        }
        .render(buf.area, &mut buf);
        insta::assert_snapshot!(crate::ui::queue::tests::text(&buf));
    }
}
