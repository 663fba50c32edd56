//! The search across logs (`:grep`, `:errors`): over the whole screen but the status bar. A
//! line says what was searched and how it went (logs searched, not written yet, not read,
//! output cut, the order); then each job with matches (its id, its sweep values, when it
//! ended) and its matching lines (stream, line number, text).

use super::text::cut;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::theme::Theme;
use crate::app::grep::{GrepState, Row};
use crate::logview::found::GrepReport;
use crate::logview::grep::Skipped;

pub struct GrepWidget<'a> {
    pub state: &'a GrepState,
    pub theme: &'a Theme,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `12 logs of sweep 123 · 2 not written yet · 1 not yours (not read)`.
pub fn summary(r: &GrepReport) -> Vec<String> {
    let mut parts = vec![format!(
        "{} ({}) of {}",
        plural(r.jobs(), "job's logs", "jobs' logs"),
        plural(r.files.len(), "file", "files"),
        r.req.what
    )];
    let missing = r.missing();
    if missing > 0 {
        parts.push(format!("{missing} not written yet"));
    }
    if r.not_started > 0 {
        parts.push(format!(
            "{} not started",
            plural(r.not_started, "task", "tasks")
        ));
    }
    for why in [Skipped::NotYours, Skipped::Denied, Skipped::NotRegular] {
        let n = r.files.iter().filter(|f| f.skipped == Some(why)).count();
        if n > 0 {
            parts.push(format!("{n} {}", why.word()));
        }
    }
    if r.guessed {
        parts.push("some paths are Slurm's default names (sacct here keeps none)".into());
    }
    parts
}

impl Widget for GrepWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let s = self.state;
        Clear.render(area, buf);
        let title = format!(
            " search in logs · {} · enter opens the log at the line · esc closes ",
            cut(&s.looking_for, 40)
        );
        let block = Block::bordered()
            .border_style(t.border(true))
            .title(Span::styled(title, t.title()));
        let inner = block.inner(area);
        let width = usize::from(inner.width);
        let mut lines: Vec<Line> = Vec::new();
        let Some(r) = &s.report else {
            let what = s.waiting.as_deref().unwrap_or("nothing");
            lines.push(Line::styled(
                format!("searching the logs of {what}…"),
                t.dim(),
            ));
            Paragraph::new(lines).block(block).render(area, buf);
            return;
        };
        lines.push(Line::raw(cut(&summary(r).join(" · "), width)));
        let mut state = Vec::new();
        if r.found.cut {
            state.push(Span::styled(
                format!(
                    "output cut at {} KiB: later matches not shown · ",
                    r.req.limits.bytes / 1024
                ),
                t.warn(),
            ));
        }
        if r.found.timed_out() {
            state.push(Span::styled(
                format!(
                    "grep stopped after {} s: not every log was read · ",
                    r.req.limits.secs
                ),
                t.warn(),
            ));
        }
        if r.req.first_error {
            state.push(Span::styled(
                "by end time: the first to break on top",
                t.dim(),
            ));
        } else {
            state.push(Span::styled(
                format!("at most {} lines per log", r.req.limits.per_file),
                t.dim(),
            ));
        }
        lines.push(Line::from(state));
        if let Some(e) = &r.error {
            lines.push(Line::styled(
                cut(&format!("search failed: {e}"), width),
                t.error(),
            ));
        } else if let Some(c) = &r.complaint {
            lines.push(Line::styled(cut(&format!("grep: {c}"), width), t.error()));
        } else if s.rows.is_empty() {
            lines.push(Line::styled("no matching line", t.dim()));
        }
        let height = usize::from(inner.height).saturating_sub(lines.len());
        let first = s.selected.saturating_sub(height.saturating_sub(1));
        for (i, row) in s.rows.iter().enumerate().skip(first).take(height) {
            let line = match row {
                Row::Job {
                    job,
                    sweep,
                    end,
                    hits,
                } => {
                    let mut text = format!("{job}");
                    if let Some(sw) = sweep {
                        text.push_str(&format!("  {sw}"));
                    }
                    let when = end.map_or_else(
                        || "not ended".to_string(),
                        |e| format!("ended {}", e.format("%m-%d %H:%M:%S")),
                    );
                    text.push_str(&format!("  · {when} · {}", plural(*hits, "line", "lines")));
                    Line::styled(cut(&text, width), t.header())
                }
                Row::Hit {
                    stream, line, text, ..
                } => {
                    let head = format!("  {stream}:{line:<6} ");
                    let used = head.chars().count();
                    let l = Line::from(vec![
                        Span::styled(head, t.label()),
                        Span::raw(cut(text, width.saturating_sub(used))),
                    ]);
                    if i == s.selected {
                        l.style(t.selected(true))
                    } else {
                        l
                    }
                }
            };
            lines.push(line);
        }
        Paragraph::new(lines).block(block).render(area, buf);
    }
}

impl super::overlay::DrawOverlay for GrepState {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let over = super::overlay::above_status(f, areas);
        f.render_widget(
            GrepWidget {
                state: self,
                theme: &app.theme,
            },
            over,
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "grep_tests.rs"]
mod tests;
