//! The queue table. Only the rows on screen are laid out, so a 20,000-job
//! queue draws as fast as a 20-job one.

use chrono::NaiveDateTime;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Widget};
use unicode_width::UnicodeWidthStr;

use super::theme::Theme;
use crate::queue::format::{fit, never_starts};
use crate::queue::{name_suffix, Column, QueueRow, QueueView, Width};
use crate::slurm::command::Scope;
use crate::slurm::model::Status;

pub struct QueueWidget<'a> {
    pub view: &'a QueueView,
    pub theme: &'a Theme,
    pub now: NaiveDateTime,
    pub focused: bool,
}

/// Body rows of a queue pane `area_height` tall (borders and header off).
/// What `QueueView::set_viewport`, `page_down` and `click` expect.
pub fn body_height(area_height: u16) -> usize {
    crate::layout::queue_body_height(area_height)
}

/// Narrowest the name (and a shared-width column such as the work dir) gets before
/// columns on the right are dropped.
const MIN_FLEX: u16 = 12;

/// (least, most) cells of `col`: fixed and data-sized columns at their measured width, the
/// name from 12 up to its widest value, a growing column (reason, node list) from its
/// minimum up to its widest value, a shared-width column from 12 up to anything.
fn span(view: &QueueView, col: Column) -> (u16, u16) {
    match (col.width(), view.column_width(col)) {
        (Width::Flex, _) | (_, None) => (MIN_FLEX, u16::MAX),
        (Width::Grow { min }, Some(w)) => (min.min(w), w),
        (_, Some(w)) if col == Column::Name => (MIN_FLEX.min(w), w),
        (_, Some(w)) => (w, w),
    }
}

/// (column, x offset, width) for a row `width` cells wide. Every column starts at its
/// least; columns that do not fit even so are dropped from the right (never the id or
/// the name). What is left goes first to the growing columns (reason, node list) up to
/// their widest value, then to the name up to its widest, then to shared-width columns;
/// the name never takes more than its names need.
fn column_layout(view: &QueueView, width: u16) -> Vec<(Column, u16, u16)> {
    let mut shown: Vec<Column> = view.shown_columns().to_vec();
    let total = |shown: &[Column]| -> u16 {
        let gaps = shown.len().saturating_sub(1) as u16;
        shown
            .iter()
            .map(|c| span(view, *c).0)
            .fold(gaps, u16::saturating_add)
    };
    while total(&shown) > width && shown.len() > 1 {
        match shown
            .iter()
            .rposition(|c| !matches!(c, Column::Name | Column::Id))
        {
            Some(i) => {
                shown.remove(i);
            }
            None => break,
        }
    }
    let mut widths: Vec<u16> = shown.iter().map(|c| span(view, *c).0).collect();
    let mut spare = width.saturating_sub(total(&shown));
    let grows = |c: &Column| matches!(c.width(), Width::Grow { .. });
    let named = |c: &Column| *c == Column::Name;
    for wanted in [&grows as &dyn Fn(&Column) -> bool, &named] {
        for (c, w) in shown.iter().zip(widths.iter_mut()) {
            if wanted(c) {
                let more = span(view, *c).1.saturating_sub(*w).min(spare);
                *w += more;
                spare -= more;
            }
        }
    }
    let mut flex_left = shown.iter().filter(|c| c.width() == Width::Flex).count() as u16;
    for (c, w) in shown.iter().zip(widths.iter_mut()) {
        if c.width() == Width::Flex {
            let more = spare / flex_left.max(1);
            flex_left = flex_left.saturating_sub(1);
            spare -= more;
            *w += more;
        }
    }
    let mut x = 0u16;
    let mut out = Vec::with_capacity(shown.len());
    for (c, w) in shown.into_iter().zip(widths) {
        let w = w.min(width.saturating_sub(x));
        out.push((c, x, w));
        x = x.saturating_add(w + 1);
    }
    out
}

impl QueueWidget<'_> {
    fn title(&self) -> Line<'static> {
        let v = self.view;
        let what = v.caption().map_or("jobs", |c| c.0.as_str());
        let mut spans = vec![Span::styled(
            if v.filter().is_empty() {
                format!(" {what} {} ", v.len())
            } else {
                format!(" {what} {}/{} ", v.len(), v.total())
            },
            self.theme.title(),
        )];
        if !v.filter().is_empty() {
            spans.push(Span::raw(format!(" filter: {} ", v.filter())));
        }
        if v.mark_count() > 0 {
            spans.push(Span::styled(
                format!(" {} marked ", v.mark_count()),
                self.theme.warn(),
            ));
        }
        let sort = v.sort();
        if sort.column.is_none() && sort.descending {
            spans.push(Span::styled(" squeue order reversed ", self.theme.dim()));
        }
        Line::from(spans)
    }

    fn empty_text(&self) -> String {
        let v = self.view;
        if let (Some(c), 0) = (v.caption(), v.total()) {
            return c.1.clone();
        }
        if !v.is_loaded() {
            return "loading the queue…".to_string();
        }
        if v.total() > 0 {
            return format!("no jobs match “{}” (Esc clears the filter)", v.filter());
        }
        match v.scope() {
            Scope::Me => "no jobs of yours in the queue".to_string(),
            Scope::User(u) => format!("no jobs of {u} in the queue"),
            Scope::All => "no jobs in the queue".to_string(),
        }
    }

    fn draw_row(
        &self,
        buf: &mut Buffer,
        y: u16,
        x0: u16,
        layout: &[(Column, u16, u16)],
        row: &QueueRow,
        selected: bool,
    ) {
        let t = self.theme;
        // Grey text would vanish on the selection bar.
        let dim = if selected { Style::new() } else { t.dim() };
        // A cluster that could not be refreshed: its rows are greyed, its name marked.
        let stale = self.view.is_stale(row.job);
        for &(col, x, w) in layout {
            if w == 0 {
                continue;
            }
            let x = x0 + x;
            let busy = self.view.busy(&row.job.id);
            let text = match (col, busy) {
                (Column::State, Some(label)) => std::borrow::Cow::Borrowed(label),
                (Column::Cluster, _) if stale => std::borrow::Cow::Owned(format!(
                    "{}{}",
                    row.job.cluster,
                    crate::queue::STALE_MARK
                )),
                (Column::Time, _) => {
                    std::borrow::Cow::Owned(self.view.time_text(row.job, self.now))
                }
                (Column::Progress, _) => std::borrow::Cow::Owned(
                    self.view
                        .progress(&row.job.id)
                        .map(|p| p.cell(self.now))
                        .unwrap_or_default(),
                ),
                _ if col.is_fact() => std::borrow::Cow::Owned(
                    self.view.fact_text(&row.job.id, col).unwrap_or_default(),
                ),
                _ => col.text(row, self.now),
            };
            let style = match col {
                Column::Cluster if stale => t.warn(),
                _ if stale => dim,
                Column::State if busy.is_some() => t.warn(),
                Column::State => t.status_style(row.job.status()),
                Column::Where | Column::Reason
                    if row.job.status() == Status::Pending
                        && row.job.reason.as_deref().is_some_and(never_starts) =>
                {
                    t.warn()
                }
                Column::Submitted | Column::Waited => dim,
                // The time limit comes before the estimated end.
                Column::Progress if self.view.progress(&row.job.id).is_some_and(|p| p.late()) => {
                    t.warn()
                }
                _ => Style::new(),
            };
            if col == Column::Name {
                let suffix = match (name_suffix(row), self.view.shown_badge(row.job)) {
                    (Some(s), Some(b)) => Some(format!("{s} {b}")),
                    (None, Some(b)) => Some(format!(" {b}")),
                    (s, None) => s,
                };
                if let Some(suffix) = suffix {
                    let sw = suffix.width().min(usize::from(w));
                    let main = fit(&text, usize::from(w) - sw);
                    let (nx, _) = buf.set_stringn(x, y, &main, usize::from(w), style);
                    let left = usize::from(w.saturating_sub(nx - x));
                    buf.set_stringn(nx, y, &suffix, left, dim);
                    continue;
                }
            }
            let text = fit(&text, usize::from(w));
            let x = if col.right_aligned() {
                x + w.saturating_sub(text.width() as u16)
            } else {
                x
            };
            buf.set_stringn(x, y, &text, usize::from(w), style);
        }
    }
}

impl Widget for QueueWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let v = self.view;
        let height = body_height(area.height);
        let offset = v.offset_for(height);
        let mut block = Block::bordered()
            .border_style(t.border(self.focused))
            .title(self.title());
        if v.len() > height && height > 0 {
            let pos = v.selected_index().map_or(0, |i| i + 1);
            block = block.title_bottom(Line::from(format!(" {pos}/{} ", v.len())).right_aligned());
        }
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width == 0 {
            return;
        }
        if v.is_empty() {
            let msg = self.empty_text();
            let y = inner.y + inner.height / 2;
            let x = inner.x + inner.width.saturating_sub(msg.width() as u16) / 2;
            buf.set_stringn(x, y, &msg, usize::from(inner.width), t.dim());
            return;
        }
        let layout = column_layout(v, inner.width);
        let header = Rect { height: 1, ..inner };
        buf.set_style(header, t.header());
        let sort = v.sort();
        for &(col, x, w) in &layout {
            let label = match sort.column {
                Some(c) if c == col => {
                    format!(
                        "{}{}",
                        col.label(),
                        crate::queue::column_arrow(sort.descending)
                    )
                }
                _ => col.label().to_string(),
            };
            let label = fit(&label, usize::from(w));
            let x = if col.right_aligned() {
                x + w.saturating_sub(label.width() as u16)
            } else {
                x
            };
            buf.set_stringn(inner.x + x, inner.y, &label, usize::from(w), t.header());
        }
        let selected = v.selected_index();
        for (n, i) in (offset..v.len()).take(height).enumerate() {
            let Some(row) = v.row(i) else { break };
            let y = inner.y + 1 + n as u16;
            if selected == Some(i) {
                buf.set_style(
                    Rect {
                        y,
                        height: 1,
                        ..inner
                    },
                    t.selected(self.focused),
                );
            }
            self.draw_row(buf, y, inner.x, &layout, &row, selected == Some(i));
            if v.is_marked(&row.job.id) {
                // The mark sits on the left border, so no column loses width.
                buf.set_string(area.x, y, "*", t.warn());
            } else if v.is_idle(&row.job.id) {
                // GPUs idle for `[ui] idle_gpu_minutes` (asleep: `z`).
                buf.set_string(area.x, y, "z", t.warn());
            } else if v.is_low_use(&row.job.id) {
                // Much less CPU or memory used than asked (`u`: under-used).
                buf.set_string(area.x, y, "u", t.warn());
            }
            if row.job.problem.is_some() {
                // squeue's record of this job did not read cleanly (the detail pane says
                // what): a mark on the right border.
                buf.set_string(area.right().saturating_sub(1), y, "!", t.error());
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "queue_tests.rs"]
pub(crate) mod tests;
