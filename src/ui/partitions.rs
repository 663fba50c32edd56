//! `:partitions`: nodes, GPUs, jobs and MaxTime per partition; for the selected pending job,
//! which partitions could run it, soonest first; the session's own pending/running history.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use crate::app::App;
use crate::queue::format::one_line;
use crate::slurm::fit::JobRequest;
use crate::slurm::model::Status;
use crate::slurm::partview::rank_for;

pub struct PartitionsWidget<'a> {
    pub app: &'a App,
}

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The last `width` values as block characters, scaled to the largest.
pub fn sparkline(values: &[u32], width: usize) -> String {
    let v = &values[values.len().saturating_sub(width)..];
    let max = v.iter().copied().max().unwrap_or(0).max(1);
    v.iter()
        .map(|&x| {
            if x == 0 {
                ' '
            } else {
                BARS[((x as usize * 7) / max as usize).min(7)]
            }
        })
        .collect()
}

/// Own pending and running counts over the session, one line each.
pub fn history_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let h = &app.shown().insight.history;
    let pend: Vec<u32> = h.iter().map(|(p, _)| *p).collect();
    let run: Vec<u32> = h.iter().map(|(_, r)| *r).collect();
    let w = width.saturating_sub(20).max(8);
    let last = |v: &[u32]| v.last().copied().unwrap_or(0);
    vec![
        Line::from(vec![
            Span::styled(format!("{:<10}", "pending"), t.label()),
            Span::styled(
                format!("{:>4} ", last(&pend)),
                t.status_style(Status::Pending),
            ),
            Span::styled(sparkline(&pend, w), t.status_style(Status::Pending)),
        ]),
        Line::from(vec![
            Span::styled(format!("{:<10}", "running"), t.label()),
            Span::styled(
                format!("{:>4} ", last(&run)),
                t.status_style(Status::Running),
            ),
            Span::styled(sparkline(&run, w), t.status_style(Status::Running)),
        ]),
    ]
}

/// The cluster's maintenance windows not yet over, soonest first, with a blank line after;
/// what the read says when there is none to show.
fn maintenance_lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let m = &app.shown().maintenance;
    let up = m.upcoming(app.now);
    let mut lines = Vec::new();
    match (&m.read, up.is_empty()) {
        (None, _) => lines.push(Line::styled(
            if m.loading {
                "maintenance windows: reading…"
            } else {
                "maintenance windows: not read yet"
            },
            t.dim(),
        )),
        (Some((Err(e), _)), true) => lines.push(Line::styled(
            format!("maintenance windows: could not read: {}", one_line(e)),
            t.error(),
        )),
        (Some(_), true) => lines.push(Line::styled("no maintenance window ahead", t.dim())),
        (Some(_), false) => {
            lines.push(Line::styled("maintenance windows", t.title()));
            for (r, cnow) in up {
                let text = crate::slurm::reservation::window_text(r);
                let when = crate::app::maintenance::when_text(r, cnow);
                lines.push(Line::styled(
                    format!("  {} ({when})", one_line(&text)),
                    t.warn(),
                ));
            }
        }
    }
    lines.push(Line::default());
    lines
}

impl Widget for PartitionsWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = &app.theme;
        let ps = &app.shown().insight.partitions;
        let mut lines = Vec::new();
        let head = format!(
            "{:<12} {:<5} {:>4} {:>4} {:>5} {:>4} {:>5} {:>9} {:>4} {:>4} {:>8} {:>11}",
            "PARTITION",
            "AVAIL",
            "IDLE",
            "MIX",
            "ALLOC",
            "DOWN",
            "DRAIN",
            "GPUS FREE",
            "RUN",
            "PEND",
            "PEND GPU",
            "MAXTIME"
        );
        lines.push(Line::styled(head, t.header()));
        for r in &ps.rows {
            let name = if r.is_default {
                format!("{}*", r.name)
            } else {
                r.name.clone()
            };
            let text = format!(
                "{:<12} {:<5} {:>4} {:>4} {:>5} {:>4} {:>5} {:>9} {:>4} {:>4} {:>8} {:>11}",
                name,
                r.avail,
                r.idle,
                r.mixed,
                r.allocated,
                r.down,
                r.drained,
                format!("{}/{}", r.gpus_free(), r.gpus_total),
                r.running,
                r.pending,
                r.pending_gpus,
                r.max_time.to_slurm(),
            );
            let style = if r.down + r.drained > 0 || r.avail != "up" {
                t.warn()
            } else {
                Style::new()
            };
            lines.push(Line::styled(text, style));
        }
        if ps.rows.is_empty() && ps.loading {
            lines.push(Line::styled("loading…", t.dim()));
        }
        if let Some(e) = &ps.error {
            lines.push(Line::styled(format!("could not load: {e}"), t.error()));
        }
        lines.push(Line::default());
        lines.extend(maintenance_lines(app));
        if let Some(j) = app
            .queue
            .shown()
            .selected_job()
            .filter(|j| j.status() == Status::Pending)
        {
            let req = JobRequest {
                time_limit: j.time_limit,
                nodes: j.nodes,
                cpus: j.cpus,
                gpus: j.gpus(),
                account: j.account.to_string(),
                qos: j.qos.to_string(),
            };
            let n = |k: u32, one: &str| match k {
                0 => format!("no {one}"),
                1 => format!("1 {one}"),
                k => format!("{k} {one}s"),
            };
            lines.push(Line::styled(
                format!(
                    "job {} asks {}, {}, {} for {}:",
                    j.id,
                    n(req.cpus, "CPU"),
                    n(req.gpus, "GPU"),
                    n(req.nodes, "node"),
                    req.time_limit.to_slurm()
                ),
                t.title(),
            ));
            for (name, verdict) in rank_for(&ps.rows, &req) {
                let (text, style) = match verdict {
                    Ok(true) => ("could start now (room free)".to_string(), Style::new()),
                    Ok(false) => ("fits, waits for room".to_string(), Style::new()),
                    Err(why) => (format!("cannot run it: {why}"), t.dim()),
                };
                lines.push(Line::from(vec![
                    Span::styled(format!("  {name:<12} "), t.label()),
                    Span::styled(text, style),
                ]));
            }
            lines.push(Line::default());
        }
        lines.push(Line::styled("your jobs this session", t.title()));
        lines.extend(history_lines(app, usize::from(area.width)));
        let age = ps
            .at
            .map(|a| format!(" · data {}s old", (app.now - a).num_seconds().max(0)))
            .unwrap_or_default();
        Clear.render(area, buf);
        Paragraph::new(lines)
            .block(
                Block::bordered()
                    .border_style(t.border(true))
                    .title(Span::styled(
                        format!(" partitions{age} · esc closes "),
                        t.title(),
                    )),
            )
            .render(area, buf);
    }
}
