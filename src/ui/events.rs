//! The `:events` view: the log of job changes, newest at the bottom, over the whole screen
//! but the status bar. esc or q closes it; j/k, PgUp/PgDn, g/G scroll.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::theme::Theme;
use crate::app::{Event, EventKind, Events};
use crate::slurm::model::Status;

pub struct EventsWidget<'a> {
    /// Each cluster's log, with its name when several clusters are shown.
    pub logs: Vec<(Option<&'a str>, &'a Events)>,
    /// Lines scrolled up from the newest.
    pub scroll: usize,
    pub theme: &'a Theme,
}

fn kind_style(k: EventKind, t: &Theme) -> Style {
    match k {
        EventKind::Started => t.status_style(Status::Running),
        EventKind::Completed => t.status_style(Status::Complete),
        EventKind::Failed => t.error(),
        EventKind::Cancelled | EventKind::CancelledByYou => t.status_style(Status::Canceled),
        EventKind::Requeued | EventKind::Retried => t.warn(),
        EventKind::LeftQueue | EventKind::Note => t.dim(),
    }
}

fn line(cluster: Option<&str>, width: usize, e: &Event, t: &Theme) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!("{}  ", e.at.format("%m-%d %H:%M:%S")),
        t.dim(),
    )];
    if let Some(c) = cluster {
        spans.push(Span::styled(format!("{c:<width$}  "), t.title()));
    }
    spans.push(Span::styled(e.text.clone(), kind_style(e.kind, t)));
    Line::from(spans)
}

impl Widget for EventsWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        Clear.render(area, buf);
        let all = crate::app::merged_events(&self.logs);
        let width = self
            .logs
            .iter()
            .filter_map(|(c, _)| c.map(str::len))
            .max()
            .unwrap_or(0);
        let n = all.len();
        let whose = if self.logs.len() > 1 {
            " · all clusters"
        } else {
            ""
        };
        let title = format!(" events · {n}{whose} · esc closes · j/k scroll ");
        let block = Block::bordered()
            .border_style(t.border(true))
            .title(Span::styled(title, t.title()));
        let inner = block.inner(area);
        let height = usize::from(inner.height);
        let lines: Vec<Line> = if n == 0 {
            vec![Line::styled(
                "no job changes yet: starts, ends, failures and cancellations of your jobs appear here",
                t.dim(),
            )]
        } else {
            // Newest at the bottom; `scroll` lines up from the newest.
            let end = n - self.scroll.min(n - 1);
            let start = end.saturating_sub(height);
            all[start..end]
                .iter()
                .map(|(c, e)| line(*c, width, e, t))
                .collect()
        };
        Paragraph::new(lines).block(block).render(area, buf);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use chrono::NaiveDate;
    use insta::assert_snapshot;

    use super::*;
    use crate::slurm::model::JobId;
    use crate::ui::queue::tests::text;

    fn ev(min: u32, kind: EventKind, text: &str) -> Event {
        Event {
            at: NaiveDate::from_ymd_opt(2026, 11, 23)
                .and_then(|d| d.and_hms_opt(12, min, 5))
                .unwrap(),
            job: Some(JobId::new(100 + u64::from(min))),
            name: "train".into(),
            kind,
            text: text.into(),
        }
    }

    fn render(e: &Events, w: u16, h: u16) -> String {
        let theme = Theme::new(false);
        let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
        EventsWidget {
            logs: vec![(None, e)],
            scroll: e.scroll,
            theme: &theme,
        }
        .render(buf.area, &mut buf);
        text(&buf)
    }

    #[test]
    fn events_view() {
        let mut e = Events::default();
        let empty = render(&e, 90, 5);
        for (i, (k, t)) in [
            (EventKind::Started, "job 101 train started on vm"),
            (
                EventKind::LeftQueue,
                "job 101 train left the queue (sacct does not know its final state)",
            ),
            (EventKind::Failed, "job 101 train failed (FAILED)"),
            (EventKind::Completed, "job 104 eval completed"),
            (EventKind::Retried, "retry 2/10 of job 101 submitted as 105"),
            (EventKind::CancelledByYou, "job 106 sweep cancelled by you"),
        ]
        .into_iter()
        .enumerate()
        {
            e.push(ev(i as u32, k, t));
        }
        let all = render(&e, 90, 10);
        e.scroll = 3;
        let scrolled = render(&e, 90, 5);
        assert_snapshot!(format!("{empty}{all}{scrolled}"));
    }

    #[test]
    fn events_of_several_clusters_in_time_order_with_their_names() {
        let theme = Theme::new(false);
        let mut a = Events::default();
        let mut b = Events::default();
        a.push(ev(1, EventKind::Started, "job 101 train started on gpu01"));
        b.push(ev(2, EventKind::Failed, "job 7 eval failed (FAILED)"));
        a.push(ev(3, EventKind::Completed, "job 101 train completed"));
        let mut buf = Buffer::empty(Rect::new(0, 0, 70, 6));
        EventsWidget {
            logs: vec![(Some("polar"), &a), (Some("gpu3"), &b)],
            scroll: 0,
            theme: &theme,
        }
        .render(buf.area, &mut buf);
        assert_snapshot!(text(&buf));
    }
}
