//! The live part of the detail pane for a running job: cores busy of cores allocated,
//! resident memory now and at its peak against the request, I/O, and each GPU's utilisation
//! and memory, each with a sparkline over the session; plain words when a source is missing.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use super::{DetailWidget, Lines, LABEL_W};
use crate::app::live::{JobLive, LowUseRules, Point};
use crate::logview::human_bytes;
use crate::slurm::live::{requested_memory, GpuProbe};
use crate::slurm::model::JobDetail;

/// What the App knows about the selected running job's use.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveView<'a> {
    /// Whether the section is drawn at all (off in views that do not sample).
    pub shown: bool,
    pub job: Option<&'a JobLive>,
    /// A sample of it is out.
    pub sampling: bool,
    /// `[ui] idle_gpu_minutes` (0: no idle warning).
    pub idle_minutes: u64,
    /// When the job counts as using much less CPU or memory than it asked (default: never).
    pub low: LowUseRules,
}

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The newest `width` values as bars from 0 to `max`; a gap where a sample had no value.
pub fn sparkline(values: &[Option<f64>], max: f64, width: usize) -> String {
    let start = values.len().saturating_sub(width);
    values[start..]
        .iter()
        .map(|v| match v {
            Some(v) if max > 0.0 => {
                let i = ((v / max).clamp(0.0, 1.0) * 7.0).round() as usize;
                BARS[i.min(7)]
            }
            Some(_) => BARS[0],
            None => ' ',
        })
        .collect()
}

fn mib(n: u64) -> String {
    human_bytes(n)
}

fn ago(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{}s ago", s.max(0)),
        s if s < 3600 => format!("{}m ago", s / 60),
        s => format!("{}h{:02}m ago", s / 3600, (s % 3600) / 60),
    }
}

impl DetailWidget<'_> {
    /// A label, a value and, if the line has room for 6 or more bars, a sparkline.
    fn spark_field(&self, l: &mut Lines, label: &str, value: &str, style: Style, spark: Spark) {
        let room = l.width.saturating_sub(LABEL_W + 1 + value.width() + 2);
        let n = spark.values.len().min(room).min(48);
        if room < 8 || spark.values.len() < 2 {
            l.field(label, value, style);
            return;
        }
        let bars = sparkline(&spark.values, spark.max, n);
        l.out.push(Line::from(vec![
            Span::styled(format!("{label:<LABEL_W$} "), self.theme.label()),
            Span::styled(value.to_string(), style),
            Span::raw("  "),
            Span::styled(bars, self.theme.title()),
        ]));
    }

    pub(super) fn live_lines(&self, l: &mut Lines, dd: &JobDetail) {
        let t = self.theme;
        let v = &self.live;
        if !v.shown {
            return;
        }
        let Some(job) = v.job else {
            let text = if v.sampling {
                "sampling (sstat, nvidia-smi on its nodes)…"
            } else {
                "sampled at the next refresh"
            };
            l.field("Live use", text, t.dim());
            l.gap();
            return;
        };
        let when = match job.at {
            Some(at) => ago((self.now - at).num_seconds()),
            None => "not yet".into(),
        };
        let n = job.points.len();
        l.field(
            "Live use",
            &format!(
                "sampled {when}, {n} sample{} this session",
                if n == 1 { "" } else { "s" }
            ),
            t.dim(),
        );
        if let Some(e) = &job.error {
            l.field("Sample", &format!("failed: {e}"), t.error());
        }
        let Some(latest) = &job.latest else {
            l.gap();
            return;
        };
        let last = job.points.back();
        match &latest.steps {
            Ok(steps) => {
                let cores = dd.cpus.or(self.job.map(|j| j.cpus)).unwrap_or(0);
                let busy = last.and_then(|p| p.cores_busy);
                let started = dd.start_time.or(self.job.and_then(|j| j.start_time));
                let text = match (busy, job.avg_busy(started)) {
                    (Some(b), _) => format!("{b:.1} of {cores} core{} busy", plural(cores)),
                    (None, Some(a)) => format!(
                        "{a:.1} of {cores} core{} busy on average since it started",
                        plural(cores)
                    ),
                    (None, None) => format!(
                        "{cores} core{} allocated, busy: measured over 5 s or more",
                        plural(cores)
                    ),
                };
                self.spark_field(
                    l,
                    "CPU",
                    &text,
                    Style::new(),
                    Spark {
                        values: job.series(|p| p.cores_busy),
                        max: f64::from(cores.max(1)),
                    },
                );
                let now: u64 = steps.iter().map(|s| s.rss_now).sum();
                let req = requested_memory(dd);
                let mut text = format!("{} resident, peak {}", mib(now), mib(job.peak_rss));
                if let Some(r) = req {
                    text.push_str(&format!(" of {} asked", mib(r)));
                }
                self.spark_field(
                    l,
                    "Memory",
                    &text,
                    Style::new(),
                    Spark {
                        values: job.series(|p: &Point| p.rss.map(|r| r as f64)),
                        max: req.unwrap_or(job.peak_rss.max(1)) as f64,
                    },
                );
                let read: Option<u64> = steps.iter().map(|s| s.read_bytes).sum();
                let wrote: Option<u64> = steps.iter().map(|s| s.write_bytes).sum();
                if let (Some(r), Some(w)) = (read, wrote) {
                    l.field(
                        "I/O",
                        &format!("read {}, written {} by the running steps", mib(r), mib(w)),
                        Style::new(),
                    );
                }
            }
            Err(e) => l.field(
                "CPU, memory",
                &format!("no figures: no step is running yet or sstat cannot see it ({e})"),
                t.dim(),
            ),
        }
        self.gpu_lines(l, job);
        for why in job.low_use(&v.low) {
            l.field(
                "Low use",
                &format!("{} (u in the queue)", why.describe()),
                t.warn(),
            );
        }
        l.gap();
    }

    fn gpu_lines(&self, l: &mut Lines, job: &JobLive) {
        let t = self.theme;
        let Some(latest) = &job.latest else { return };
        if latest.gpus.is_empty() {
            return;
        }
        let none: Vec<_> = latest
            .gpus
            .iter()
            .filter_map(|n| match &n.probe {
                GpuProbe::NoTelemetry(w) => Some((n.node.as_str(), w.as_str())),
                _ => None,
            })
            .collect();
        if none.len() == latest.gpus.len() {
            let (node, words) = none[0];
            l.field(
                "GPUs",
                &format!("no GPU telemetry on this cluster (nvidia-smi on {node}: {words})"),
                t.dim(),
            );
            return;
        }
        for (node, words) in none {
            l.field(
                "GPUs",
                &format!("no GPU telemetry on {node} (nvidia-smi: {words})"),
                t.dim(),
            );
        }
        for n in &latest.gpus {
            if let GpuProbe::Failed(e) = &n.probe {
                l.field("GPUs", &format!("{}: {e}", n.node), t.error());
            }
        }
        for (node, index) in job.gpu_keys() {
            let of = |p: &Point| {
                p.gpus
                    .iter()
                    .find(|g| g.node == node && g.index == index)
                    .cloned()
            };
            let Some(g) = job.points.back().and_then(of) else {
                continue;
            };
            let util = g
                .util
                .map_or_else(|| "utilisation n/a".to_string(), |u| format!("{u:>3}%"));
            let mem = match (g.mem_used_mib, g.mem_total_mib) {
                (Some(u), Some(tot)) => format!("{} of {}", mib(u << 20), mib(tot << 20)),
                (Some(u), None) => mib(u << 20),
                _ => "memory n/a".to_string(),
            };
            self.spark_field(
                l,
                &format!("GPU {node}:{index}"),
                &format!("{util} · {mem}"),
                Style::new(),
                Spark {
                    values: job.series(|p| of(p).and_then(|g| g.util).map(f64::from)),
                    max: 100.0,
                },
            );
        }
        if job.gpus_idle_for(self.live.idle_minutes) {
            let since = job
                .idle_since
                .zip(job.at)
                .map(|(s, a)| (a - s).num_minutes())
                .unwrap_or(0);
            l.field(
                "GPUs idle",
                &format!("every GPU at 0 % in every sample for {since}m (z in the queue)"),
                t.warn(),
            );
        }
        if let Some(skipped) = self
            .job
            .and_then(|j| j.node_list.as_deref())
            .map(|n| crate::slurm::hostlist::expand(n).len())
            .filter(|n| *n > latest.gpus.len())
        {
            l.field(
                "GPUs",
                &format!(
                    "shown for the first {} of {skipped} nodes",
                    latest.gpus.len()
                ),
                t.dim(),
            );
        }
    }
}

struct Spark {
    values: Vec<Option<f64>>,
    max: f64,
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "detail_live_tests.rs"]
mod tests;
