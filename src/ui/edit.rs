//! The edit form of a pending job: four fields, what each was, and the problems found
//! as the user types. A popup over the panes; drawing only reads the form.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use super::theme::Theme;
use crate::app::{EditForm, EDIT_FIELDS};
use crate::slurm::model::Partition;

pub struct EditWidget<'a> {
    pub form: &'a EditForm,
    pub theme: &'a Theme,
    /// None: still loading; Some(Err): could not be fetched.
    pub partitions: Option<&'a Result<Vec<Partition>, String>>,
}

impl EditWidget<'_> {
    fn lines(&self) -> Vec<Line<'static>> {
        let t = self.theme;
        let f = self.form;
        let mut lines = Vec::new();
        for (i, label) in EDIT_FIELDS.iter().enumerate() {
            let focused = i == f.focus;
            let mut spans = vec![
                Span::styled(
                    format!("{} {:<11}", if focused { "›" } else { " " }, label),
                    if focused { t.title() } else { t.label() },
                ),
                Span::styled(
                    f.values[i].clone(),
                    if focused {
                        Style::default().add_modifier(Modifier::UNDERLINED)
                    } else {
                        Style::default()
                    },
                ),
            ];
            if focused {
                spans.push(Span::styled(
                    "█",
                    Style::default().add_modifier(Modifier::SLOW_BLINK),
                ));
            }
            if f.values[i] != f.original[i] {
                spans.push(Span::styled(format!("  (was {})", f.original[i]), t.dim()));
            }
            lines.push(Line::from(spans));
        }
        lines.push(Line::from(""));
        match self.partitions {
            None => lines.push(Line::from(Span::styled(
                "loading partition limits…",
                t.dim(),
            ))),
            Some(Err(e)) => lines.push(Line::from(Span::styled(
                format!("partition limits unknown ({e}); Slurm will check the change"),
                t.warn(),
            ))),
            Some(Ok(parts)) => {
                let list: Vec<String> = parts
                    .iter()
                    .map(|p| format!("{} ≤{}", p.name, p.max_time.to_slurm()))
                    .collect();
                lines.push(Line::from(Span::styled(
                    format!("partitions: {}", list.join(" · ")),
                    t.dim(),
                )));
            }
        }
        if f.sending {
            lines.push(Line::from(Span::styled("updating…", t.warn())));
        }
        for w in &f.warnings {
            lines.push(Line::from(Span::styled(format!("! {w}"), t.warn())));
        }
        for e in &f.errors {
            lines.push(Line::from(Span::styled(format!("✗ {e}"), t.error())));
        }
        lines.push(Line::from(Span::styled(
            "tab/↑↓: field · enter: apply · esc: close without changes",
            t.dim(),
        )));
        lines
    }
}

impl Widget for EditWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let lines = self.lines();
        let h = u16::try_from(lines.len() + 4).unwrap_or(u16::MAX);
        let [v] = Layout::vertical([Constraint::Length(h)])
            .flex(Flex::Center)
            .areas(area);
        let [r] = Layout::horizontal([Constraint::Length(78)])
            .flex(Flex::Center)
            .areas(v);
        Clear.render(r, buf);
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(self.theme.border(true))
                    .title(format!(" edit pending job {} ", self.form.id)),
            )
            .render(r, buf);
    }
}

impl super::overlay::DrawOverlay for Option<EditForm> {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let _ = areas;
        if let Some(form) = self {
            let widget = EditWidget {
                form,
                theme: &app.theme,
                partitions: app.shown().partitions.as_ref(),
            };
            f.render_widget(widget, f.area());
        }
    }
}
