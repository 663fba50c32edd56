//! `:stats`: what slurmdash costs the cluster: remote commands per minute, bytes moved,
//! round-trip time, from samples of the transport's counters.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use crate::app::App;

pub struct StatsWidget<'a> {
    pub app: &'a App,
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 10 << 20 => format!("{} MiB", n >> 20),
        n if n >= 10 << 10 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

/// (execs per minute, bytes in per minute) over the samples of the last `window` seconds.
pub fn rates(app: &App, window: i64) -> Option<(f64, f64)> {
    let s = &app.insight.stats;
    let (t1, last) = s.back()?;
    let (t0, first) = s
        .iter()
        .find(|(t, _)| (*t1 - *t).num_seconds() <= window)
        .filter(|(t, _)| t < t1)?;
    let mins = (*t1 - *t0).num_milliseconds() as f64 / 60_000.0;
    Some((
        last.execs.saturating_sub(first.execs) as f64 / mins,
        last.bytes_in.saturating_sub(first.bytes_in) as f64 / mins,
    ))
}

impl Widget for StatsWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = &app.theme;
        let mut lines = Vec::new();
        let row = |label: &str, value: String| {
            Line::from(vec![
                Span::styled(format!("{label:<26}"), t.label()),
                Span::raw(value),
            ])
        };
        match app.insight.stats.back() {
            None => lines.push(Line::styled("no sample yet", t.dim())),
            Some((at, s)) => {
                let since = app.insight.stats.front().map(|(t0, _)| *t0).unwrap_or(*at);
                let mins = ((*at - since).num_seconds().max(0)) / 60;
                lines.push(row("remote commands", format!("{} (SSH execs)", s.execs)));
                if let Some((per_min, bytes_min)) = rates(app, 300) {
                    lines.push(row("  per minute", format!("{per_min:.1} (last 5 min)")));
                    lines.push(row("  received per minute", bytes(bytes_min as u64)));
                }
                lines.push(row(
                    "bytes",
                    format!(
                        "{} received · {} sent",
                        bytes(s.bytes_in),
                        bytes(s.bytes_out)
                    ),
                ));
                lines.push(row(
                    "last round trip",
                    s.last_rtt
                        .map(|d| format!("{} ms", d.as_millis()))
                        .unwrap_or_else(|| "-".into()),
                ));
                lines.push(row("SSH connections", s.connects.to_string()));
                lines.push(row("watched for", format!("{mins} min")));
            }
        }
        lines.push(row(
            "refresh every",
            format!(
                "{}s now (bounds {}–{}s)",
                app.status.poll_interval.as_secs(),
                app.insight.bounds.min.as_secs(),
                app.insight.bounds.max.as_secs()
            ),
        ));
        lines.push(Line::default());
        lines.push(Line::styled(
            "one remote command per refresh: squeue and squeue --start (and sacct for jobs",
            t.dim(),
        ));
        lines.push(Line::styled(
            "that left the queue) share one SSH exec; `watch -n 2 squeue` runs 30 a minute.",
            t.dim(),
        ));
        for p in &app.insight.problems {
            lines.push(Line::styled(format!("problem: {p}"), t.warn()));
        }
        lines.push(Line::default());
        lines.push(Line::styled("your jobs this session", t.title()));
        lines.extend(super::partitions::history_lines(
            app,
            usize::from(area.width),
        ));
        Clear.render(area, buf);
        Paragraph::new(lines)
            .block(
                Block::bordered()
                    .border_style(t.border(true))
                    .title(Span::styled(" stats · esc closes ", t.title())),
            )
            .render(area, buf);
    }
}
