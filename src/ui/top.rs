//! Job top (`t`, `:jobtop`): over the screen but the status bar, each node of the job with
//! its processes as a tree: pid, step, state, %CPU, RSS, elapsed, the GPU memory each holds
//! (and that GPU's use), the command line indented under its parent.

use super::text::cut;
use chrono::NaiveDateTime;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::theme::Theme;
use crate::app::top::{TopState, EVERY_SECS};
use crate::slurm::top::{NodeTop, Proc, StepSource};

pub struct TopWidget<'a> {
    pub top: &'a TopState,
    pub theme: &'a Theme,
    pub now: NaiveDateTime,
    /// The RPC budget holds the next automatic read.
    pub held: bool,
}

/// `512K`, `3.4M`, `12G` from KiB.
fn rss(kib: u64) -> String {
    match kib {
        k if k >= 10 << 20 => format!("{}G", k >> 20),
        k if k >= 1 << 20 => format!("{:.1}G", k as f64 / f64::from(1u32 << 20)),
        k if k >= 10 << 10 => format!("{}M", k >> 10),
        k if k >= 1 << 10 => format!("{:.1}M", k as f64 / 1024.0),
        k => format!("{k}K"),
    }
}

/// `0:07`, `12:05`, `3:04:05`, `2-03:04`.
fn elapsed(secs: u64) -> String {
    let (d, h, m, s) = (
        secs / 86400,
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60,
    );
    match (d, h) {
        (0, 0) => format!("{m}:{s:02}"),
        (0, h) => format!("{h}:{m:02}:{s:02}"),
        (d, h) => format!("{d}-{h:02}:{m:02}"),
    }
}

/// `gpu1 2.0G 87%`: each GPU the process holds memory on.
fn gpu_cell(p: &Proc) -> String {
    p.gpus
        .iter()
        .map(|g| {
            let idx = g.index.map_or("gpu?".into(), |i| format!("gpu{i}"));
            let mem = g
                .mem_mib
                .map_or("?".into(), |m| rss(m.saturating_mul(1024)));
            let util = g.util.map_or(String::new(), |u| format!(" {u}%"));
            format!("{idx} {mem}{util}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn header() -> String {
    format!(
        "{:>7}  {:<6}  {:<5} {:>6} {:>6} {:>8}  {:<18} COMMAND",
        "PID", "STEP", "STAT", "%CPU", "RSS", "ELAPSED", "GPU MEM, USE"
    )
}

fn proc_line(p: &Proc, width: usize) -> String {
    let tree = match p.depth {
        0 => String::new(),
        d => format!("{}└ ", "  ".repeat(d.saturating_sub(1).min(12))),
    };
    let head = format!(
        "{:>7}  {:<6}  {:<5} {:>6} {:>6} {:>8}  {:<18} ",
        p.pid,
        cut(p.step.as_deref().unwrap_or("?"), 6),
        cut(&p.state, 5),
        p.cpu.map_or("?".into(), |c| format!("{c:.1}")),
        rss(p.rss_kib),
        elapsed(p.elapsed_secs),
        cut(&gpu_cell(p), 18),
    );
    let used = head.chars().count();
    format!(
        "{head}{}",
        cut(&format!("{tree}{}", p.command), width.saturating_sub(used))
    )
}

fn node_lines(n: &NodeTop, width: usize, t: &Theme, out: &mut Vec<Line<'static>>) {
    let steps = match &n.steps {
        StepSource::Listpids => "steps: scontrol listpids".to_string(),
        StepSource::Titles(why) => {
            format!("steps: from slurmstepd's process titles (scontrol listpids: {why})")
        }
        StepSource::Unknown(why) => {
            format!("steps: not shown by this Slurm (scontrol listpids: {why})")
        }
    };
    let busy: f32 = n.procs.iter().filter_map(|p| p.cpu).sum();
    let mut head = vec![
        Span::styled(n.node.clone(), t.title()),
        Span::raw(format!(
            "  {} process{} · {busy:.0} %CPU · {}",
            n.procs.len(),
            if n.procs.len() == 1 { "" } else { "es" },
            rss(n.procs.iter().map(|p| p.rss_kib).sum())
        )),
        Span::styled(format!(" · {steps}"), t.dim()),
    ];
    if let Some(g) = &n.gpu_note {
        head.push(Span::styled(format!(" · GPU: {}", cut(g, 60)), t.dim()));
    }
    out.push(Line::from(head));
    for p in &n.problems {
        out.push(Line::styled(format!("  {p}"), t.warn()));
    }
    if n.procs.is_empty() {
        out.push(Line::styled(
            "  no process of the job found on this node",
            t.dim(),
        ));
    }
    for p in &n.procs {
        let style = match p.state.chars().next() {
            Some('R') => t.key(),
            Some('D') | Some('Z') => t.warn(),
            _ => ratatui::style::Style::default(),
        };
        out.push(Line::styled(proc_line(p, width), style));
    }
}

impl Widget for TopWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let top = self.top;
        Clear.render(area, buf);
        let job = top
            .target
            .as_ref()
            .map_or(String::new(), |j| format!(" {}", j.id));
        let name = match top.name.as_str() {
            "" => String::new(),
            n => format!(" {}", cut(&crate::slurm::top::safe_text(n, 40), 40)),
        };
        let title = format!(" job top ·{job}{name} · r reads now · esc closes ");
        let block = Block::bordered()
            .border_style(t.border(true))
            .title(Span::styled(title, t.title()));
        let inner = block.inner(area);
        let width = usize::from(inner.width);

        let mut status: Vec<Span> = Vec::new();
        let reading = top.reading(self.now);
        match top.at {
            Some(at) => {
                let secs = (self.now - at).num_seconds().max(0);
                status.push(Span::raw(format!("refreshed {secs}s ago")));
            }
            None => status.push(Span::raw("not read yet")),
        }
        if top.ended {
            status.push(Span::styled(
                " · the job no longer runs: not read again",
                t.warn(),
            ));
        } else if reading && !self.held {
            status.push(Span::styled(" · refreshing…", t.key()));
        } else if self.held {
            status.push(Span::styled(
                " · the next read waits for the RPC budget (r reads now)",
                t.warn(),
            ));
        } else {
            status.push(Span::styled(
                format!(" · read again every {EVERY_SECS}s while open"),
                t.dim(),
            ));
        }
        if let Some(target) = &top.target {
            if target.nodes_skipped > 0 {
                status.push(Span::styled(
                    format!(
                        " · the first {} nodes ({} more not read)",
                        target.nodes.len(),
                        target.nodes_skipped
                    ),
                    t.dim(),
                ));
            }
        }
        let mut lines = vec![Line::from(status)];
        if let Some(e) = &top.error {
            lines.push(Line::styled(cut(e, width), t.error()));
        }
        let mut body: Vec<Line> = Vec::new();
        match &top.sample {
            None if top.error.is_none() => body.push(Line::styled(
                "reading the job's processes (srun --overlap … ps, scontrol listpids, nvidia-smi)…",
                t.dim(),
            )),
            None => {}
            Some(s) => {
                body.push(Line::styled(cut(&header(), width), t.header()));
                for n in &s.nodes {
                    node_lines(n, width, t, &mut body);
                }
                if let Some(target) = &top.target {
                    for missing in target
                        .nodes
                        .iter()
                        .filter(|m| !s.nodes.iter().any(|n| &n.node == *m))
                    {
                        body.push(Line::styled(
                            format!("{missing}  no answer from this node"),
                            t.warn(),
                        ));
                    }
                }
                if s.nodes.is_empty() {
                    body.push(Line::styled(
                        format!(
                            "no node answered (srun exited {})",
                            s.srun_exit.map_or("?".into(), |r| r.to_string())
                        ),
                        t.warn(),
                    ));
                }
            }
        }
        let height = usize::from(inner.height).saturating_sub(lines.len());
        let first = top.scroll.min(body.len().saturating_sub(height));
        lines.extend(body.into_iter().skip(first).take(height));
        Paragraph::new(lines).block(block).render(area, buf);
    }
}

impl super::overlay::DrawOverlay for TopState {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let held = self
            .target
            .as_ref()
            .and_then(|t| app.cluster_by_ix(t.id.cluster()))
            .is_some_and(|c| c.budget.holds(crate::app::budget::Kind::Top));
        let over = super::overlay::above_status(f, areas);
        f.render_widget(
            TopWidget {
                top: self,
                theme: &app.theme,
                now: app.now,
                held,
            },
            over,
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "top_tests.rs"]
mod tests;
