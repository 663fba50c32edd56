//! `:usage`: the user's CPU- and GPU-hours per account (used in the window, in flight,
//! committed), a bar per account against its `GrpTRESMins` (or, with no limit set, its
//! part of the user's use), fair share, and what the pending jobs will cost. Reads only
//! `ClusterState::usage`.

use chrono::NaiveDateTime;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

use crate::app::usage::UsageState;
use crate::queue::format::human_ago;
use crate::slurm::usage::{hours, AccountUsage, Tally, UsageReport};
use crate::theme::Theme;

pub struct UsageWidget<'a> {
    pub usage: &'a UsageState,
    pub theme: &'a Theme,
    pub now: NaiveDateTime,
}

const BAR: usize = 24;

/// `[██████░░░░░░]` for `frac` (0..1, more is drawn full).
pub fn bar(frac: f64) -> String {
    let f = if frac.is_finite() {
        frac.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let full = (f * BAR as f64).round() as usize;
    format!("[{}{}]", "█".repeat(full), "░".repeat(BAR - full))
}

fn pct(f: f64) -> String {
    match f * 100.0 {
        p if p > 0.0 && p < 1.0 => "<1%".into(),
        p => format!("{p:.0}%"),
    }
}

/// Minutes as hours: whole hours without decimals.
fn minutes(m: u64) -> String {
    match m % 60 {
        0 => (m / 60).to_string(),
        _ => hours(m.saturating_mul(60)),
    }
}

fn figures_row(t: &Theme, label: &str, a: &AccountUsage, gpu: bool) -> Line<'static> {
    let v = |x: &Tally| {
        hours(match gpu {
            true => x.gpu_seconds,
            false => x.cpu_seconds,
        })
    };
    Line::from(vec![
        Span::styled(format!("  {label:<8}"), t.label()),
        Span::raw(format!(
            "{:>12} {:>12} {:>12}",
            v(&a.used),
            v(&a.in_flight),
            v(&a.committed)
        )),
    ])
}

fn account_lines(t: &Theme, a: &AccountUsage, total_cpu: u64, out: &mut Vec<Line<'static>>) {
    let jobs = |n: u32| match n {
        1 => "1 job".to_string(),
        n => format!("{n} jobs"),
    };
    out.push(Line::from(vec![
        Span::styled(format!("{:<10}", a.account), t.title()),
        Span::styled(
            format!(
                "{:>12} {:>12} {:>12}",
                jobs(a.used.jobs),
                jobs(a.in_flight.jobs),
                jobs(a.committed.jobs)
            ),
            t.dim(),
        ),
    ]));
    out.push(figures_row(t, "CPU-h", a, false));
    let gpus = a.used.gpu_seconds + a.in_flight.gpu_seconds + a.committed.gpu_seconds;
    if gpus > 0 {
        out.push(figures_row(t, "GPU-h", a, true));
    }
    match a.tightest() {
        Some((l, frac)) => {
            let style = if frac >= 0.9 {
                t.error()
            } else if frac >= 0.75 {
                t.warn()
            } else {
                Style::new()
            };
            // slurmctld's own (decayed, whole-association) count is what it enforces.
            let used = l
                .used_minutes
                .map(|u| format!("{} of {}", minutes(u), minutes(l.limit_minutes)))
                .unwrap_or_else(|| format!("limit {}", minutes(l.limit_minutes)));
            let unit = if l.tres == "cpu" {
                "CPU-h".to_string()
            } else if l.tres.ends_with("gpu") {
                "GPU-h".to_string()
            } else {
                format!("{}-h", l.tres)
            };
            out.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(bar(frac), style),
                Span::styled(
                    format!(
                        " {} of GrpTRESMins ({}): {used} {unit} counted",
                        pct(frac),
                        l.on
                    ),
                    style,
                ),
            ]));
            for other in a.limits.iter().filter(|o| !std::ptr::eq(*o, l)) {
                out.push(Line::styled(
                    format!(
                        "  also GrpTRESMins {}={} min ({}{})",
                        other.tres,
                        other.limit_minutes,
                        other.on,
                        other
                            .used_minutes
                            .map(|u| format!(", {u} min counted"))
                            .unwrap_or_default()
                    ),
                    t.dim(),
                ));
            }
        }
        None => {
            let frac = match total_cpu {
                0 => 0.0,
                n => a.used.cpu_seconds as f64 / n as f64,
            };
            out.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(bar(frac), t.dim()),
                Span::styled(
                    format!(" {} of your CPU-h here · no limit set", pct(frac)),
                    t.dim(),
                ),
            ]));
        }
    }
    if let Some(fs) = &a.fair_share {
        let mut parts = Vec::new();
        if let Some(f) = fs.fairshare {
            parts.push(format!("fair share {f:.2}"));
        }
        if let Some(e) = fs.effective_usage {
            parts.push(format!("effective usage {e:.2}"));
        }
        if let Some(r) = fs.raw_usage {
            parts.push(format!("raw usage {r}"));
        }
        if let Some(e) = fs.account_effective_usage {
            parts.push(format!("account's {e:.2}"));
        }
        if !parts.is_empty() {
            out.push(Line::styled(
                format!("  sshare: {}", parts.join(" · ")),
                t.dim(),
            ));
        }
    }
    if a.by_partition.len() > 1 || a.by_partition.keys().any(|p| p.is_empty()) {
        let parts: Vec<String> = a
            .by_partition
            .iter()
            .map(|(p, x)| format!("{p} {}", x.text()))
            .collect();
        out.push(Line::styled(
            format!("  used by partition: {}", parts.join(" · ")),
            t.dim(),
        ));
    }
}

/// The overlay's text for a report.
pub fn report_lines(t: &Theme, r: &UsageReport) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    out.push(Line::styled(
        format!(
            "{:<10}{:>12} {:>12} {:>12}",
            "", "used", "in flight", "committed"
        ),
        t.header(),
    ));
    out.push(Line::styled(
        format!(
            "{:<10}{:>12} {:>12} {:>12}",
            "",
            format!("last {}d", r.days),
            "running now",
            "to limit"
        ),
        t.dim(),
    ));
    if r.accounts.is_empty() {
        out.push(Line::styled(
            format!("no jobs of yours in the last {} days", r.days),
            t.dim(),
        ));
    }
    let total: u64 = r.accounts.iter().map(|a| a.used.cpu_seconds).sum();
    for a in &r.accounts {
        account_lines(t, a, total, &mut out);
    }
    out.push(Line::default());
    let p = r.pending_total();
    out.push(match p.jobs {
        0 => Line::styled("no pending jobs", t.dim()),
        n => Line::from(vec![
            Span::styled("pending   ", t.label()),
            Span::raw(format!(
                "your {} will cost up to {} if they run to their limit",
                match n {
                    1 => "pending job".to_string(),
                    n => format!("{n} pending jobs"),
                },
                p.text()
            )),
        ]),
    });
    out.push(Line::styled(
        "used: jobs that ended, inside the window · in flight: running × elapsed · \
         committed: running and pending × time limit",
        t.dim(),
    ));
    for pr in &r.problems {
        out.push(Line::styled(format!("problem: {pr}"), t.warn()));
    }
    out
}

impl Widget for UsageWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let (u, t) = (self.usage, self.theme);
        let mut lines = Vec::new();
        if let Some(e) = &u.error {
            lines.push(Line::styled(format!("could not read: {e}"), t.error()));
        }
        match &u.report {
            Some(r) => lines.extend(report_lines(t, r)),
            None if u.loading => lines.push(Line::styled(
                format!(
                    "reading {} days of your jobs (sacct, sshare, squeue)…",
                    u.days
                ),
                t.dim(),
            )),
            None => {}
        }
        let when = match (u.loading, u.at) {
            (true, _) => "reading…".to_string(),
            (false, Some(at)) => format!("read {}", human_ago(at, self.now)),
            (false, None) => String::new(),
        };
        let title = format!(
            " usage · last {} days · {when} · r reads again · esc closes ",
            u.days
        );
        Clear.render(area, buf);
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(
                Block::bordered()
                    .border_style(t.border(true))
                    .title(Span::styled(title, t.title())),
            )
            .render(area, buf);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "usage_tests.rs"]
mod tests;
