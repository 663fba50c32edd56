//! `:stats`: what slurmdash costs the cluster, to show an admin: slurmctld and slurmdbd RPCs
//! per minute (counted from the commands it ran), remote commands (round trips), bytes moved,
//! the last round-trip time and the current refresh interval.

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

/// Per-minute rates over the samples of the last `window` seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub execs: f64,
    pub bytes_in: f64,
    pub ctld: f64,
    pub dbd: f64,
}

pub fn rates(app: &App, window: i64) -> Option<Rates> {
    let s = &app.shown().insight.stats;
    let (t1, last) = s.back()?;
    let (t0, first) = s
        .iter()
        .find(|(t, _)| (*t1 - *t).num_seconds() <= window)
        .filter(|(t, _)| t < t1)?;
    // At least a minute: in the first seconds two RPCs are "2 a minute", not 12.
    let mins = ((*t1 - *t0).num_milliseconds() as f64 / 60_000.0).max(1.0);
    let per_min = |a: u64, b: u64| a.saturating_sub(b) as f64 / mins;
    Some(Rates {
        execs: per_min(last.execs, first.execs),
        bytes_in: per_min(last.bytes_in, first.bytes_in),
        ctld: per_min(last.rpcs.ctld, first.rpcs.ctld),
        dbd: per_min(last.rpcs.dbd, first.rpcs.dbd),
    })
}

/// The RPC budget: what it is, what it buys, what was spent of it, and the reads that wait
/// for it (and when they go).
fn budget_lines<'a>(app: &App, row: &dyn Fn(&str, String) -> Line<'a>) -> Vec<Line<'a>> {
    use crate::app::budget::{Who, WINDOW_SECS};
    let b = &app.shown().budget;
    let now = app.now;
    let mut lines = Vec::new();
    let secs = |t: chrono::NaiveDateTime| (t - now).num_seconds().max(0);
    match b.refresh_floor() {
        None => lines.push(row("RPC budget", "none (max_rpcs_per_minute = 0)".into())),
        Some(floor) => {
            lines.push(row(
                "RPC budget",
                format!(
                    "{}/min averaged over 5 min: {} of {} spent in the last 5 min",
                    b.per_minute,
                    b.spent(now),
                    u64::from(b.per_minute) * (WINDOW_SECS / 60) as u64
                ),
            ));
            let buys = match (app.shown().checks.usable(), b.check_floor()) {
                (true, Some(every)) => format!(
                    "a state check every {} s and a full read every {} s; the rest for detail, pending, live reads",
                    every.as_secs(),
                    2 * every.as_secs()
                ),
                _ => format!(
                    "a refresh at least every {} s; the rest for detail, pending, live reads",
                    floor.as_secs()
                ),
            };
            lines.push(row("it buys", buys));
        }
    }
    let site = match &b.site {
        None => "not read yet (scontrol show config, once)".to_string(),
        Some(Ok(None)) => "none (no rl_enable in SlurmctldParameters)".to_string(),
        Some(Ok(Some(l))) if b.configured == 0 || l.per_minute() < b.configured => {
            format!("{}, the budget follows it", l.describe())
        }
        Some(Ok(Some(l))) => format!("{}, above the budget", l.describe()),
        Some(Err(e)) => format!("unknown: {e}"),
    };
    lines.push(row("site limit", site));
    if let Some(p) = b.paused_until.filter(|p| now < *p) {
        lines.push(row(
            "slurmctld rate limit",
            format!("it refused a read: planned reads wait {} s more", secs(p)),
        ));
    }
    for h in b.held() {
        let when = match b.fits_at(now, h.cost, h.who) {
            Some(t) => format!("goes in {} s", secs(t)),
            None => "more than the budget allows in 5 min: not sent".into(),
        };
        let by = match h.who {
            Who::User => ", asked by a key",
            _ => "",
        };
        lines.push(row(
            "held",
            format!("{} ({} RPCs{by}): {when}", h.kind.name(), h.cost),
        ));
    }
    lines
}

/// `squeue: 20 runs, 40 RPCs`, one line per Slurm command, the costliest first (slurmctld
/// before slurmdbd).
fn by_command(
    by: &std::collections::BTreeMap<String, crate::payload::CommandCount>,
) -> Vec<String> {
    let mut v: Vec<_> = by.iter().collect();
    v.sort_by(|a, b| {
        (b.1.rpcs.ctld, b.1.rpcs.dbd)
            .cmp(&(a.1.rpcs.ctld, a.1.rpcs.dbd))
            .then_with(|| a.0.cmp(b.0))
    });
    v.iter()
        .map(|(name, c)| {
            let runs = match c.runs {
                1 => "1 run".to_string(),
                n => format!("{n} runs"),
            };
            let rpcs = |n: u64| {
                if n == 1 {
                    "1 RPC".to_string()
                } else {
                    format!("{n} RPCs")
                }
            };
            match (c.rpcs.ctld, c.rpcs.dbd) {
                (0, d) => format!("{name}: {runs}, {} to slurmdbd", rpcs(d)),
                (n, 0) => format!("{name}: {runs}, {}", rpcs(n)),
                (n, d) => format!("{name}: {runs}, {} + {} to slurmdbd", rpcs(n), rpcs(d)),
            }
        })
        .collect()
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
        match app.shown().insight.stats.back() {
            None => lines.push(Line::styled("no sample yet", t.dim())),
            Some((at, s)) => {
                let since = app
                    .shown()
                    .insight
                    .stats
                    .front()
                    .map(|(t0, _)| *t0)
                    .unwrap_or(*at);
                let mins = ((*at - since).num_seconds().max(0)) / 60;
                if let Some(r) = rates(app, 300) {
                    lines.push(row(
                        "slurmctld RPCs per minute",
                        format!("{:.1} (last 5 min; {} in all)", r.ctld, s.rpcs.ctld),
                    ));
                    lines.push(row(
                        "slurmdbd RPCs per minute",
                        format!("{:.1} ({} in all)", r.dbd, s.rpcs.dbd),
                    ));
                    lines.push(row(
                        "round trips per minute",
                        format!("{:.1} (SSH execs; {} in all)", r.execs, s.execs),
                    ));
                    lines.push(row("received per minute", bytes(r.bytes_in as u64)));
                } else {
                    lines.push(row(
                        "slurmctld RPCs",
                        format!("{} · slurmdbd {}", s.rpcs.ctld, s.rpcs.dbd),
                    ));
                    lines.push(row("round trips", format!("{} (SSH execs)", s.execs)));
                }
                for (i, text) in by_command(&s.by_command).into_iter().enumerate() {
                    lines.push(row(if i == 0 { "by command" } else { "" }, text));
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
        let checks = app.shown().checks.usable();
        let floor = match checks {
            true => app.shown().budget.check_floor(),
            false => app.shown().budget.refresh_floor(),
        };
        let why = floor.map_or_else(
            || "slower while nothing changes".to_string(),
            |f| format!("never under {} s on the RPC budget", f.as_secs()),
        );
        let why = match checks {
            true => format!("{why}; every other one a state check"),
            false => why,
        };
        lines.push(row(
            "refresh every",
            format!(
                "{:.1}s now (bounds {}–{}s; {why})",
                app.shown().status.poll_interval.as_secs_f64(),
                app.shown().insight.bounds.min.as_secs(),
                app.shown().insight.bounds.max.as_secs()
            ),
        ));
        lines.push(row("state checks", app.shown().checks.describe()));
        lines.extend(budget_lines(app, &row));
        lines.push(Line::default());
        lines.push(Line::styled(
            "one remote command per refresh: squeue --local (2 slurmctld RPCs; sacct only for",
            t.dim(),
        ));
        lines.push(Line::styled(
            "jobs that left the queue); a followed log streams and costs slurmctld nothing.",
            t.dim(),
        ));
        for p in &app.shown().insight.problems {
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
