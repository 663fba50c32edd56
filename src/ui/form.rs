//! The launch form: template picker, fields with inline problems, the partition picker
//! (MaxTime, idle GPUs, pending jobs), the script preview and the test-only estimate.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::app::{App, Busy, FormState, FIELDS};
use crate::launch::facts::PartitionInfo;
use crate::ui::theme::Theme;

pub struct FormWidget<'a> {
    pub app: &'a App,
    pub form: &'a FormState,
}

fn partition_line(p: &PartitionInfo) -> String {
    format!(
        "{:<12} MaxTime {:<11} GPUs idle {:>3}/{:<3} ({}/node)  pending {:<4} {}",
        p.name,
        p.max_time_text(),
        p.gpus_idle,
        p.gpus_total,
        p.gpus_per_node,
        p.pending_jobs,
        if p.state == "UP" {
            ""
        } else {
            p.state.as_str()
        }
    )
}

/// The form's lines, and the index of the cursor's line (for scrolling).
pub fn form_lines(form: &FormState, t: &Theme, cluster: &str) -> (Vec<Line<'static>>, usize) {
    let mut lines = Vec::new();
    let mut cursor = 0;
    let sel = |row: usize| {
        if form.row == row && form.editing.is_none() {
            t.selected(true)
        } else {
            ratatui::style::Style::default()
        }
    };
    let choice = form.choices.get(form.choice).cloned().unwrap_or_default();
    lines.push(Line::from(vec![
        Span::styled(format!("  {:<22}", "template"), t.label()),
        Span::styled(format!("◀ {choice} ▶"), sel(0)),
        Span::styled(
            format!("   ({} of {})", form.choice + 1, form.choices.len()),
            t.dim(),
        ),
    ]));
    if let Some(origin) = form.origins.get(form.choice).filter(|o| !o.is_empty()) {
        lines.push(Line::from(Span::styled(
            format!("    from {origin}"),
            t.dim(),
        )));
    }
    for p in &form.template_problems {
        for (i, part) in wrap_words(p, PROBLEM_WIDTH).into_iter().enumerate() {
            let lead = if i == 0 { "    ! " } else { "      " };
            lines.push(Line::from(Span::styled(format!("{lead}{part}"), t.warn())));
        }
    }
    if !form.spec.steps.is_empty() {
        let text = format!(
            "steps, in order: {}",
            crate::launch::steps::summary(&form.spec.steps)
        );
        for (i, part) in wrap_words(&text, PROBLEM_WIDTH).into_iter().enumerate() {
            let lead = if i == 0 { "    ▸ " } else { "      " };
            lines.push(Line::from(Span::styled(format!("{lead}{part}"), t.key())));
        }
    }
    let script = form.spec.batch_script_summary();
    for (i, (key, label, _)) in FIELDS.iter().enumerate() {
        let row = i + 1;
        if form.row == row {
            cursor = lines.len();
        }
        let value = match (&form.editing, form.row == row) {
            (Some(buf), true) => format!("{buf}▏"),
            _ => match (*key, &script) {
                ("command", Some(summary)) => summary.clone(),
                _ => form.spec.get(key),
            },
        };
        let marker = if form.row == row { "›" } else { " " };
        lines.push(Line::from(vec![
            Span::styled(format!("{marker} {label:<22}"), t.label()),
            Span::styled(
                if value.is_empty() {
                    "·".to_string()
                } else {
                    value
                },
                if form.editing.is_some() && form.row == row {
                    t.key()
                } else {
                    sel(row)
                },
            ),
        ]));
        for p in form.problems_for(key) {
            // Wrapped here (not by the paragraph) so the cursor's line index stays right.
            for (i, part) in wrap_words(&p.message, PROBLEM_WIDTH)
                .into_iter()
                .enumerate()
            {
                let lead = if i == 0 { "    ✗ " } else { "      " };
                lines.push(Line::from(Span::styled(format!("{lead}{part}"), t.error())));
            }
        }
        if *key == "partition" {
            if let Some(p) = form
                .facts
                .as_ref()
                .and_then(|f| f.partition(&form.spec.partition))
            {
                lines.push(Line::from(Span::styled(
                    format!("    {}", partition_line(p)),
                    t.dim(),
                )));
            }
            // What starts at once there (the nodes' free resources and the reservations).
            if let Some((text, fits)) = &form.outlook.starts_now {
                let style = if *fits { t.key() } else { t.dim() };
                for (i, part) in wrap_words(text, PROBLEM_WIDTH).into_iter().enumerate() {
                    let lead = if i == 0 { "    ▸ " } else { "      " };
                    lines.push(Line::from(Span::styled(format!("{lead}{part}"), style)));
                }
            }
        }
        if *key == "time" {
            if let Some(w) = &form.outlook.maintenance {
                for (i, part) in wrap_words(w, PROBLEM_WIDTH).into_iter().enumerate() {
                    let lead = if i == 0 { "    ⚠ " } else { "      " };
                    lines.push(Line::from(Span::styled(format!("{lead}{part}"), t.warn())));
                }
            }
        }
    }
    let submit = FormState::submit_row();
    if form.row == submit {
        cursor = lines.len();
    }
    lines.push(Line::from(""));
    let label = match form.busy {
        Some(Busy::Submitting) => "[ submitting… ]".to_string(),
        _ => "[ Submit ]".to_string(),
    };
    lines.push(Line::from(vec![
        Span::raw("  "),
        Span::styled(label, sel(submit)),
    ]));
    lines.push(Line::from(""));
    if let Some(p) = &form.prepared {
        let plan = &p.plan;
        lines.push(Line::from(Span::styled(
            format!(
                "  → {} on {}: {} node(s) × {} GPU(s){}, job dir {}",
                plan.name,
                cluster,
                plan.nodes,
                plan.gpus_per_node,
                if plan.exclusive {
                    ", whole nodes (--exclusive)"
                } else {
                    ""
                },
                p.layout.job_dir
            ),
            t.dim(),
        )));
    } else if form.facts.is_none() {
        lines.push(Line::from(Span::styled(
            "  reading the cluster's partitions…",
            t.dim(),
        )));
    }
    if form.facts.as_ref().and_then(|f| f.pyxis) == Some(false) && !form.spec.image.is_empty() {
        lines.push(Line::from(Span::styled(
            "  ! no Pyxis on this cluster: container jobs would fail",
            t.warn(),
        )));
    }
    match (&form.busy, &form.estimate) {
        (Some(Busy::Testing), _) => {
            lines.push(Line::from(Span::styled("  sbatch --test-only…", t.dim())))
        }
        (_, Some(Ok(e))) => lines.push(Line::from(Span::styled(
            format!(
                "  test-only: estimated start {} on {} (partition {})",
                e.start, e.nodes, e.partition
            ),
            t.key(),
        ))),
        (_, Some(Err(e))) => lines.push(Line::from(Span::styled(
            format!("  test-only: {e}"),
            t.error(),
        ))),
        _ => {}
    }
    if let Some(r) = &form.rerun {
        lines.push(Line::from(Span::styled(format!("  ↻ {r}"), t.key())));
    }
    let code_line = match (form.spec.code.as_str(), form.spec.snapshot_ran()) {
        ("snapshot", _) => Some(format!(
            "code: at submit, the git repository this dashboard was started in (its files as on disk, untracked ones too, minus .slurmdashignore; at most {} MB) is sent once per content and copied to the job directory's code/, where the job runs",
            form.spec.code_max_mb
        )),
        ("same", Some(r)) => Some(format!(
            "code: the snapshot the job ran ({}), from the cluster's copy (.code/{}); nothing is sent. `snapshot` sends the code as it is now",
            crate::launch::code::summary(&r.commit, r.dirty),
            r.hash.chars().take(12).collect::<String>()
        )),
        _ => None,
    };
    if let Some(line) = code_line {
        for (i, part) in wrap_words(&line, PROBLEM_WIDTH).into_iter().enumerate() {
            let lead = if i == 0 { "  ↳ " } else { "    " };
            lines.push(Line::from(Span::styled(format!("{lead}{part}"), t.dim())));
        }
    }
    if let Some((file, r)) = &form.from_script {
        let mut said = vec![format!("from {file}: runs as the batch step")];
        if !r.read.is_empty() {
            said.push(format!("read into the fields: {}", r.read.join(" ")));
        }
        if !r.passed.is_empty() {
            said.push(format!("passed to Slurm unchanged: {}", r.passed.join(" ")));
        }
        for i in &r.ignored {
            said.push(format!("left out: {i}"));
        }
        for line in said {
            for (i, part) in wrap_words(&line, PROBLEM_WIDTH).into_iter().enumerate() {
                let lead = if i == 0 { "  ↳ " } else { "    " };
                lines.push(Line::from(Span::styled(format!("{lead}{part}"), t.dim())));
            }
        }
    }
    // Warnings that Submit asks about once more, wrapped so that none is cut off.
    let foreign = form.foreign.as_ref().map(|f| f.warning());
    let rewritten = form.spec_changed.as_ref().map(|c| c.warning().to_string());
    for w in [foreign, rewritten].into_iter().flatten() {
        for (i, part) in wrap_words(&w, PROBLEM_WIDTH).into_iter().enumerate() {
            let lead = if i == 0 { "  ⚠ " } else { "    " };
            lines.push(Line::from(Span::styled(format!("{lead}{part}"), t.error())));
        }
    }
    if let Some(e) = &form.error {
        lines.push(Line::from(Span::styled(format!("  {e}"), t.error())));
    }
    (lines, cursor)
}

/// Problem messages are wrapped to this many characters (the form is at most 110 wide).
const PROBLEM_WIDTH: usize = 96;

/// Splits `s` into lines of at most `width` characters at spaces (a longer word stays whole).
fn wrap_words(s: &str, width: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    out.push(cur);
    out
}

pub const HINT: &str = "↑↓ move · enter edit · ←→ template · o script · w save · p preview · t test · ctrl-s submit · esc close";

impl Widget for FormWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = &self.app.theme;
        let form = self.form;
        let w = area.width.saturating_sub(4).clamp(20, 110);
        let h = area.height.saturating_sub(2).max(5);
        let [v] = Layout::vertical([Constraint::Length(h)])
            .flex(Flex::Center)
            .areas(area);
        let [r] = Layout::horizontal([Constraint::Length(w)])
            .flex(Flex::Center)
            .areas(v);
        Clear.render(r, buf);
        if let (Some(off), Some(p)) = (form.preview, &form.prepared) {
            // The user's own SBATCH_* variables: which lose to the script, which apply.
            let env = form.facts.as_ref().map_or(&[][..], |f| &f.sbatch_env[..]);
            let mut lines: Vec<Line> = Vec::new();
            if !env.is_empty() {
                lines.push(Line::from(Span::styled(
                    "# your login environment sets:",
                    t.dim(),
                )));
                let sets = p.plan.sbatch_sets();
                for d in crate::launch::sbatch_env::describe(env, sets) {
                    lines.push(Line::from(Span::styled(format!("#   {d}"), t.dim())));
                }
                lines.push(Line::from(""));
            }
            lines.extend(p.script.lines().map(|l| Line::from(l.to_string())));
            Paragraph::new(lines)
                .scroll((off, 0))
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(format!(" script {} ", p.layout.script_path()))
                        .title_bottom(" j/k scroll · p or esc back "),
                )
                .render(r, buf);
            return;
        }
        let (lines, cursor) = form_lines(form, t, &self.app.shown().name);
        let inner_h = usize::from(r.height.saturating_sub(2));
        let offset = cursor.saturating_sub(inner_h.saturating_sub(4));
        Paragraph::new(lines)
            .scroll((u16::try_from(offset).unwrap_or(0), 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(format!(" launch a job on {} ", self.app.shown().name))
                    .title_bottom(format!(" {HINT} ")),
            )
            .render(r, buf);
        if let (Some(cur), Some(facts)) = (form.picker, &form.facts) {
            let n = facts.partitions.len();
            let ph = u16::try_from(n + 2).unwrap_or(10).min(r.height);
            let pw = w.saturating_sub(6);
            let pr = Rect::new(r.x + 3, r.y + 4.min(r.height.saturating_sub(ph)), pw, ph);
            Clear.render(pr, buf);
            let lines: Vec<Line> = facts
                .partitions
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let style = if i == cur {
                        t.selected(true)
                    } else {
                        ratatui::style::Style::default()
                    };
                    Line::from(Span::styled(partition_line(p), style))
                })
                .collect();
            Paragraph::new(lines)
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(" partition (enter picks, esc cancels) "),
                )
                .render(pr, buf);
        }
    }
}

impl super::overlay::DrawOverlay for Option<FormState> {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let _ = areas;
        if let Some(form) = self {
            f.render_widget(FormWidget { app, form }, f.area());
        }
    }
}

#[cfg(test)]
mod wrap_tests {
    use super::wrap_words;

    #[test]
    fn long_problems_wrap_at_spaces_without_losing_words() {
        let m = "time 4:00:00 is over partition short's MaxTime 30:00: shorten it or pick a partition with a longer limit";
        let lines = wrap_words(m, 40);
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        assert_eq!(lines.join(" "), m);
        assert_eq!(wrap_words("short", 40), vec!["short"]);
    }
}
