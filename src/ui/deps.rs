//! The `:deps` view: the user's dependency chains as a tree over the whole screen but the
//! status bar. Each row: the job's id under the job it waits on, its name, state, how it
//! waits, and a mark when it can never start.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

use super::theme::Theme;
use crate::app::deps::DepsState;
use crate::queue::format::{fit, one_line};
use crate::slurm::deptree::TreeRow;

pub struct DepsWidget<'a> {
    pub deps: &'a DepsState,
    pub theme: &'a Theme,
}

/// Whether no later row sits beside row `i` under the same parent.
fn is_last(rows: &[TreeRow], i: usize) -> bool {
    let d = rows[i].depth;
    rows[i + 1..]
        .iter()
        .find(|r| r.depth <= d)
        .is_none_or(|r| r.depth < d)
}

/// The tree's lines to the left of row `i`'s id: `│  ` where an ancestor has more rows
/// below it, then `├─ ` or `└─ `.
fn prefix(rows: &[TreeRow], i: usize) -> String {
    let d = rows[i].depth;
    let mut s = String::new();
    for level in 1..d {
        let ancestor = (0..i).rev().find(|&p| rows[p].depth == level);
        let more = ancestor.is_some_and(|a| !is_last(rows, a));
        s.push_str(if more { "│  " } else { "   " });
    }
    if d > 0 {
        s.push_str(if is_last(rows, i) {
            "└─ "
        } else {
            "├─ "
        });
    }
    s
}

impl Widget for DepsWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let g = &self.deps.graph;
        let rows = &self.deps.tree;
        Clear.render(area, buf);
        let waiting = g.nodes.iter().filter(|n| n.dependency.is_some()).count();
        let never = g.nodes.iter().filter(|n| n.never).count();
        let mut title = format!(" dependencies · {waiting} waiting");
        if never > 0 {
            title.push_str(&format!(" · {never} can never start"));
        }
        if let Some(f) = &self.deps.filter {
            title.push_str(&format!(" · chains of filter: {}", one_line(f)));
        }
        title.push_str(" · enter: select · d: cancel · esc closes ");
        let block = Block::bordered()
            .border_style(t.border(true))
            .title(Span::styled(title, t.title()));
        let inner = block.inner(area);
        let height = usize::from(inner.height).max(1);
        if rows.is_empty() {
            Paragraph::new(Line::styled(
                "no dependency chains among your jobs: a job submitted with --dependency=afterok:ID appears here under the job it waits on",
                t.dim(),
            ))
            .wrap(Wrap { trim: true })
            .block(block)
            .render(area, buf);
            return;
        }
        let firsts: Vec<String> = (0..rows.len())
            .map(|i| {
                let r = &rows[i];
                let what = match (r.node, &r.group) {
                    (Some(n), _) => g.nodes[n].id.clone(),
                    (None, Some(name)) => format!("singleton · {}", one_line(name)),
                    (None, None) => String::new(),
                };
                format!("{}{what}", prefix(rows, i))
            })
            .collect();
        let w_first = firsts.iter().map(|s| s.chars().count()).max().unwrap_or(0);
        let w_name = g
            .nodes
            .iter()
            .map(|n| one_line(&n.name).chars().count())
            .max()
            .unwrap_or(0)
            .clamp(4, 30);
        let offset = self.deps.cursor.saturating_sub(height - 1);
        let lines: Vec<Line> = rows
            .iter()
            .enumerate()
            .skip(offset)
            .take(height)
            .map(|(i, r)| {
                let here = i == self.deps.cursor;
                let cursor = if here { "› " } else { "  " };
                let first = format!("{cursor}{:<w_first$}", firsts[i]);
                let mut spans = Vec::new();
                match r.node {
                    None => spans.push(Span::styled(first, t.title())),
                    Some(n) => {
                        let node = &g.nodes[n];
                        spans.push(Span::raw(first));
                        let name = fit(&one_line(&node.name), w_name).into_owned();
                        spans.push(Span::raw(format!("  {name:<w_name$}")));
                        let (state, style) = match &node.state {
                            Some(s) if node.job.is_some() => {
                                (s.long_name().to_string(), t.status_style(s.status()))
                            }
                            Some(s) => (format!("{} (gone)", s.long_name()), t.dim()),
                            None => ("left the queue".to_string(), t.dim()),
                        };
                        spans.push(Span::styled(format!("  {state:<16}"), style));
                        let kind = r.kind.as_deref().unwrap_or("");
                        spans.push(Span::styled(format!("  {kind:<10}"), t.dim()));
                        if node.never {
                            spans.push(Span::styled("  ✗ can never start", t.error()));
                        }
                    }
                }
                let line = Line::from(spans);
                if here {
                    line.style(t.selected(true))
                } else {
                    line
                }
            })
            .collect();
        Paragraph::new(lines).block(block).render(area, buf);
    }
}

impl super::overlay::DrawOverlay for DepsState {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let over = super::overlay::above_status(f, areas);
        f.render_widget(
            DepsWidget {
                deps: self,
                theme: &app.theme,
            },
            over,
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "deps_tests.rs"]
mod tests;
