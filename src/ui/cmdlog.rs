//! The command log (`@`, `:log`): every remote command run, newest first, over the whole
//! screen but the status bar. One row each: when, why, exit, how long, bytes in, the
//! slurmctld and slurmdbd RPCs it cost, and its argv cut to the width; enter shows the
//! selected one whole (full argv, stderr head when it failed).

use super::text::cut;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

use super::theme::Theme;
use crate::app::cmdlog::{filter_word, CmdLog, Entry};
use crate::payload::{CommandRecord, Ran};

pub struct CmdLogWidget<'a> {
    pub log: &'a CmdLog,
    pub theme: &'a Theme,
    /// Each cluster's name by number, when the dashboard shows several.
    pub clusters: Option<Vec<&'a str>>,
}

/// `12 B`, `3.4 KiB`, `12 MiB`.
fn bytes(n: u64) -> String {
    match n {
        n if n >= 10 << 20 => format!("{}M", n >> 20),
        n if n >= 1 << 20 => format!("{:.1}M", n as f64 / f64::from(1u32 << 20)),
        n if n >= 10 << 10 => format!("{}K", n >> 10),
        n if n >= 1 << 10 => format!("{:.1}K", n as f64 / 1024.0),
        n => format!("{n}B"),
    }
}

/// `85ms`, `1.2s`, `14s`, `3m05s`.
fn took(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    match ms {
        ms if ms < 1000 => format!("{ms}ms"),
        ms if ms < 10_000 => format!("{:.1}s", ms as f64 / 1000.0),
        ms if ms < 60_000 => format!("{}s", ms / 1000),
        ms => format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60),
    }
}

fn exit_style(ran: &Ran, t: &Theme) -> Style {
    match ran {
        r if r.ok() => Style::default(),
        Ran::Timeout => t.warn(),
        _ => t.error(),
    }
}

fn header() -> String {
    format!(
        "{:<8}  {:<10}  {:<7}  {:>5}  {:>5}  {:>4} {:>3}  ARGV",
        "WHEN", "WHY", "EXIT", "TOOK", "IN", "CTLD", "DBD"
    )
}

fn row(e: &Entry, cluster: Option<&str>, width: usize, t: &Theme) -> Vec<Span<'static>> {
    let r = &e.rec;
    let head = format!(
        "{}  {:<10}  ",
        r.at.format("%H:%M:%S"),
        cut(r.why.word(), 10)
    );
    let exit = format!("{:<7}  ", r.ran.short());
    let figures = format!(
        "{:>5}  {:>5}  {:>4} {:>3}  ",
        took(r.took),
        bytes(r.bytes_in),
        r.rpcs.ctld,
        r.rpcs.dbd
    );
    let mut argv = String::new();
    if let Some(c) = cluster {
        argv.push_str(&format!("[{c}] "));
    }
    if r.count > 1 {
        argv.push_str(&format!("×{} ", r.count));
    }
    argv.push_str(&e.line);
    let used = head.chars().count() + exit.chars().count() + figures.chars().count();
    vec![
        Span::raw(head),
        Span::styled(exit, exit_style(&r.ran, t)),
        Span::raw(figures),
        Span::raw(cut(&argv, width.saturating_sub(used))),
    ]
}

/// The selected entry whole.
fn entry_lines(r: &CommandRecord, cluster: Option<&str>, t: &Theme) -> Vec<Line<'static>> {
    let field = |name: &str, value: String| {
        Line::from(vec![
            Span::styled(format!("{name:<12}"), t.label()),
            Span::raw(value),
        ])
    };
    let mut lines = Vec::new();
    let mut when = r.at.format("%Y-%m-%d %H:%M:%S").to_string();
    if let Some(c) = cluster {
        when.push_str(&format!(" · cluster {c}"));
    }
    lines.push(field("when", when));
    lines.push(field("why", r.why.word().to_string()));
    let exit = match &r.ran {
        Ran::Exit(Some(c)) => format!("exit {c}"),
        Ran::Exit(None) => "killed by a signal".into(),
        Ran::Timeout => "timed out: abandoned".into(),
        Ran::Failed(e) => format!("transport error: {e}"),
        Ran::Streaming => "a stream: runs while the log (or copy) is followed".into(),
    };
    lines.push(Line::from(vec![
        Span::styled(format!("{:<12}", "exit"), t.label()),
        Span::styled(exit, exit_style(&r.ran, t)),
    ]));
    let mut io = format!(
        "{} · {} in · {} out",
        took(r.took),
        bytes(r.bytes_in),
        bytes(r.bytes_out)
    );
    if r.stdin_bytes > 0 {
        io.push_str(&format!(
            " (of which {} on stdin, not recorded)",
            bytes(r.stdin_bytes)
        ));
    }
    lines.push(field("took", io));
    lines.push(field(
        "RPCs",
        format!("slurmctld {} · slurmdbd {}", r.rpcs.ctld, r.rpcs.dbd),
    ));
    if r.count > 1 {
        lines.push(field(
            "folded",
            format!(
                "{} reads of this log (figures summed; time and argv of the last)",
                r.count
            ),
        ));
    }
    let (lo, le) = r.login_lines;
    if lo + le > 0 {
        lines.push(field(
            "login shell",
            format!("printed {lo} + {le} lines around it (taken off; not part of the argv)"),
        ));
    }
    lines.push(Line::default());
    let said = if r.argv_cut {
        "argv (cut: too long to keep whole):"
    } else {
        "argv (as slurmdash ran it; y copies it):"
    };
    lines.push(Line::styled(said, t.label()));
    let clean = |l: &str| -> String {
        l.chars()
            .map(|c| if c.is_control() && c != '\t' { '?' } else { c })
            .collect()
    };
    // Short arguments on one line, quoted as y copies them; a script (an argument of
    // several lines) as it is, each line indented, between the words around it.
    let mut words: Vec<&str> = Vec::new();
    let flush = |words: &mut Vec<&str>, lines: &mut Vec<Line<'static>>| {
        if !words.is_empty() {
            let joined = shlex::try_join(words.iter().copied()).unwrap_or_else(|_| words.join(" "));
            lines.push(Line::raw(format!("  {}", clean(&joined))));
            words.clear();
        }
    };
    for a in &r.argv {
        if a.contains('\n') {
            flush(&mut words, &mut lines);
            lines.push(Line::styled(
                format!("  ‹script, {} lines›", a.lines().count()),
                t.dim(),
            ));
            for l in a.lines() {
                lines.push(Line::raw(format!("  │ {}", clean(l))));
            }
        } else {
            words.push(a);
        }
    }
    flush(&mut words, &mut lines);
    if !r.stderr_head.is_empty() {
        lines.push(Line::default());
        lines.push(Line::styled("stderr (head):", t.label()));
        for l in r.stderr_head.lines() {
            lines.push(Line::styled(format!("  {l}"), t.error()));
        }
    }
    lines
}

impl Widget for CmdLogWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let log = self.log;
        Clear.render(area, buf);
        let shown = log.shown().count();
        let of = if shown == log.len() {
            String::new()
        } else {
            format!(" of {}", log.len())
        };
        let title = format!(
            " command log · {shown}{of} · {} · f filter · enter entry · y copy · esc closes ",
            filter_word(log.filter)
        );
        let block = Block::bordered()
            .border_style(t.border(true))
            .title(Span::styled(title, t.title()));
        let inner = block.inner(area);
        let cluster = |r: &CommandRecord| {
            self.clusters
                .as_ref()
                .and_then(|c| c.get(usize::from(r.cluster)).copied())
        };
        if log.expanded {
            if let Some(e) = log.selected() {
                Paragraph::new(entry_lines(&e.rec, cluster(&e.rec), t))
                    .wrap(Wrap { trim: false })
                    .block(block)
                    .render(area, buf);
                return;
            }
        }
        let width = usize::from(inner.width);
        let height = usize::from(inner.height).saturating_sub(1);
        let mut lines = vec![Line::styled(cut(&header(), width), t.header())];
        if shown == 0 {
            lines.push(Line::styled(
                "no remote command yet: each one slurmdash runs shows here, newest first",
                t.dim(),
            ));
        } else {
            let sel = log.selected_row();
            // The selected row kept in view.
            let first = sel.saturating_sub(height.saturating_sub(1));
            for (i, e) in log.shown().enumerate().skip(first).take(height) {
                let mut line = Line::from(row(e, cluster(&e.rec), width, t));
                if i == sel {
                    line = line.style(t.selected(true));
                }
                lines.push(line);
            }
        }
        Paragraph::new(lines).block(block).render(area, buf);
    }
}

impl super::overlay::DrawOverlay for CmdLog {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let clusters = app
            .multi()
            .then(|| app.clusters().map(|c| c.name.as_str()).collect());
        let over = super::overlay::above_status(f, areas);
        f.render_widget(
            CmdLogWidget {
                log: self,
                theme: &app.theme,
                clusters,
            },
            over,
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use chrono::NaiveDate;
    use insta::assert_snapshot;

    use super::*;
    use crate::payload::Why;
    use crate::ui::queue::tests::text;

    fn rec(s: u32, why: Why, words: &[&str], ran: Ran, ms: u64, bytes_in: u64) -> CommandRecord {
        let at = NaiveDate::from_ymd_opt(2026, 11, 23)
            .and_then(|d| d.and_hms_opt(12, 0, s))
            .unwrap();
        let argv: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        let mut r = CommandRecord::new(at, why, &argv, 0);
        r.ran = ran;
        r.took = Duration::from_millis(ms);
        r.bytes_in = bytes_in;
        r
    }

    fn sample() -> CmdLog {
        let mut log = CmdLog::default();
        let squeue = [
            "squeue",
            "--me",
            "--local",
            "--noheader",
            "--array",
            "--format=%i|%j|%T|%M|%l|%D|%R|%P|%Q",
        ];
        log.push(
            0,
            rec(1, Why::Refresh, &squeue, Ran::Exit(Some(0)), 85, 2140),
        );
        let batch = crate::slurm::batch::script(&[
            squeue.iter().map(|w| w.to_string()).collect(),
            vec!["sacct".into(), "-j".into(), "4240".into()],
        ])
        .unwrap();
        log.push(
            0,
            rec(
                2,
                Why::Refresh,
                &["sh", "-c", &batch.script],
                Ran::Exit(Some(0)),
                140,
                2300,
            ),
        );
        let mut read = rec(
            3,
            Why::Tail,
            &[
                "sh",
                "-c",
                "set -eu\nexec 2>&1\n# the read script, longer than forty bytes\n",
                "sh",
                "/home/me/runs/a.out",
                "off",
                "0",
            ],
            Ran::Exit(Some(0)),
            40,
            900,
        );
        read.key = Some("read /home/me/runs/a.out".into());
        log.push(0, read.clone());
        log.push(0, read);
        log.push(
            0,
            rec(
                4,
                Why::Key,
                &["scancel", "--", "4242"],
                Ran::Exit(Some(0)),
                120,
                0,
            ),
        );
        let mut failed = rec(
            5,
            Why::Selection,
            &["scontrol", "--local", "show", "job", "4243"],
            Ran::Exit(Some(1)),
            60,
            41,
        );
        failed.set_stderr(b"slurm_load_jobs error: Invalid job id specified\n");
        log.push(0, failed);
        log.push(
            0,
            rec(
                6,
                Why::Refresh,
                &["sacct", "-j", "4242"],
                Ran::Timeout,
                10_000,
                0,
            ),
        );
        log
    }

    fn render(log: &CmdLog, w: u16, h: u16) -> String {
        let theme = Theme::new(false);
        let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
        CmdLogWidget {
            log,
            theme: &theme,
            clusters: None,
        }
        .render(buf.area, &mut buf);
        text(&buf)
    }

    #[test]
    fn the_log_newest_first_with_exit_time_bytes_and_rpcs() {
        let mut log = sample();
        log.open();
        assert_snapshot!(render(&log, 110, 12));
    }

    #[test]
    fn the_full_entry_of_a_failed_command() {
        let mut log = sample();
        log.open();
        let j = crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('j'),
            crossterm::event::KeyModifiers::NONE,
        );
        let _ = log.on_key(&j, 10);
        let enter = crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Enter,
            crossterm::event::KeyModifiers::NONE,
        );
        let _ = log.on_key(&enter, 10);
        assert_snapshot!(render(&log, 90, 18));
    }

    #[test]
    fn the_full_entry_of_a_folded_log_read_shows_its_script_line_by_line() {
        let mut log = sample();
        log.open();
        let key = |c| crossterm::event::KeyEvent::new(c, crossterm::event::KeyModifiers::NONE);
        for _ in 0..3 {
            let _ = log.on_key(&key(crossterm::event::KeyCode::Char('j')), 10);
        }
        let _ = log.on_key(&key(crossterm::event::KeyCode::Enter), 10);
        assert_snapshot!(render(&log, 90, 18));
    }

    #[test]
    fn an_empty_log_says_what_will_appear() {
        let log = CmdLog::default();
        assert_snapshot!(render(&log, 90, 5));
    }
}
