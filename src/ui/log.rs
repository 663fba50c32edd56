//! The log pane. Only the rows on screen are laid out and drawn, so the cost of a frame does
//! not depend on the size of the log or of its longest line.

use std::ops::Range;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};
use unicode_width::UnicodeWidthStr;

use crate::logview::layout::{marker_text, Row};
use crate::logview::search::find_ci;
use crate::logview::{human_bytes, LogLine, LogPane, PaneStatus, Viewport};

pub struct LogWidget<'a> {
    pub pane: &'a LogPane,
    pub focused: bool,
    /// False under NO_COLOR: the log's own colours are dropped, highlights use reverse video.
    pub color: bool,
    /// stdout and stderr are one file, shown once: the title says `stdout+stderr`.
    pub merged: bool,
}

impl LogWidget<'_> {
    fn styles(&self) -> Styles {
        if self.color {
            Styles {
                border: if self.focused {
                    Style::new().fg(Color::Cyan)
                } else {
                    Style::new().fg(Color::DarkGray)
                },
                matched: Style::new().bg(Color::Yellow).fg(Color::Black),
                current: Style::new()
                    .bg(Color::LightMagenta)
                    .fg(Color::Black)
                    .add_modifier(Modifier::BOLD),
                problem: Style::new().fg(Color::LightRed),
                waiting: Style::new().fg(Color::Yellow),
                dim: Style::new().fg(Color::DarkGray),
            }
        } else {
            let plain = Style::new();
            Styles {
                border: if self.focused {
                    plain.add_modifier(Modifier::BOLD)
                } else {
                    plain
                },
                matched: plain.add_modifier(Modifier::REVERSED),
                current: plain.add_modifier(Modifier::REVERSED | Modifier::BOLD),
                problem: plain.add_modifier(Modifier::BOLD),
                waiting: plain,
                dim: plain.add_modifier(Modifier::DIM),
            }
        }
    }

    /// `stdout /path…` on the left, `follow · nowrap · /loss 2/9 · 1.2 MiB` on the right,
    /// then `skipped 3.0 GiB` once the log grew faster than it could be shown.
    fn titles(&self, width: u16, rows: &[Row]) -> (String, String) {
        let p = self.pane;
        let mut right = Vec::new();
        if p.is_following() {
            right.push("follow".to_string());
        } else {
            let below = rows
                .last()
                .map_or(0, |r| p.buffer().end_seq().saturating_sub(r.seq + 1));
            right.push(if below > 0 {
                format!("paused +{below}")
            } else {
                "paused".to_string()
            });
        }
        right.push(if p.wrap() { "wrap" } else { "nowrap" }.to_string());
        if let Some(s) = p.search() {
            right.push(match s.position() {
                Some(i) => format!("/{} {i}/{}", s.query(), s.count()),
                None if s.count() > 0 => format!("/{} {}", s.query(), s.count()),
                None => format!("/{} no match", s.query()),
            });
        }
        if let PaneStatus::Live { size } = p.status() {
            right.push(human_bytes(*size));
        }
        if p.skipped() > 0 {
            right.push(format!("skipped {}", human_bytes(p.skipped())));
        }
        let right = format!(" {} ", right.join(" · "));
        let stream = match self.merged {
            true => "stdout+stderr".to_string(),
            false => p.stream().to_string(),
        };
        let budget = usize::from(width)
            .saturating_sub(2 + right.width() + stream.len() + 3)
            .max(8);
        let left = match p.path() {
            Some(path) => format!(" {stream} {} ", shorten_left(path, budget)),
            None => format!(" {stream} "),
        };
        (left, right)
    }
}

struct Styles {
    border: Style,
    matched: Style,
    current: Style,
    problem: Style,
    waiting: Style,
    dim: Style,
}

/// Keeps the end of `path` (the file name matters most), with `…` in front.
pub fn shorten_left(path: &str, max: usize) -> String {
    if path.width() <= max {
        return path.to_string();
    }
    let mut kept = Vec::new();
    let mut w = 1;
    for c in path.chars().rev() {
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w + cw > max {
            break;
        }
        w += cw;
        kept.push(c);
    }
    std::iter::once('…').chain(kept.into_iter().rev()).collect()
}

impl Widget for LogWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let pane = self.pane;
        let st = self.styles();
        let vp = Viewport::of_pane(area);
        let tvp = pane.text_viewport(vp);
        let rows = pane.visible_rows(tvp);
        let (left, right) = self.titles(area.width, &rows);
        let block = Block::bordered()
            .border_style(st.border)
            .title(Line::from(left))
            .title(Line::from(right).right_aligned());
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.is_empty() {
            return;
        }
        if let Some((head, detail)) = pane.message() {
            let head_style = match pane.status() {
                PaneStatus::Denied(_) | PaneStatus::NotRegular(_) | PaneStatus::Error(_) => {
                    st.problem
                }
                PaneStatus::Missing if !pane.is_pending() => st.problem,
                PaneStatus::Missing | PaneStatus::Loading => st.waiting,
                _ => st.dim,
            };
            let mut lines = vec![Line::styled(head, head_style)];
            if !detail.is_empty() {
                lines.push(Line::styled(detail, st.dim));
            }
            Paragraph::new(lines)
                .wrap(Wrap { trim: true })
                .render(inner, buf);
            return;
        }
        let search = pane.search();
        for (i, row) in rows.iter().enumerate() {
            let Some(line) = pane.buffer().get(row.seq) else {
                continue;
            };
            let hl = match search {
                Some(s) if s.is_match(row.seq) => find_ci(line.text(), s.query()),
                _ => Vec::new(),
            };
            let hl_style = if search.and_then(|s| s.current_seq()) == Some(row.seq) {
                st.current
            } else {
                st.matched
            };
            let y = inner.y + i as u16;
            let area = Rect::new(inner.x, y, inner.width, 1);
            draw_row(buf, area, line, row, self.color, &hl, hl_style, st.dim);
        }
        if let Some(notice) = pane.notice() {
            if tvp.height < vp.height {
                let y = inner.y + inner.height - 1;
                buf.set_stringn(
                    inner.x,
                    y,
                    format!("⚠ {notice}"),
                    usize::from(inner.width),
                    st.problem,
                );
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn draw_row(
    buf: &mut Buffer,
    area: Rect,
    line: &LogLine,
    row: &Row,
    color: bool,
    hl: &[Range<usize>],
    hl_style: Style,
    dim: Style,
) {
    let marker = row
        .marker
        .then(|| format!(" {}", marker_text(line.dropped())));
    let end = area.x + area.width;
    // Without wrap the marker of a capped line takes the right end of its row.
    let text_end = match &marker {
        Some(m) if !row.range.is_empty() => end.saturating_sub(m.width() as u16).max(area.x),
        _ => end,
    };
    let mut x = area.x;
    for (range, style) in line.styled(row.range.clone()) {
        let base = if color { style } else { Style::default() };
        for (piece, lit) in split_by(range, hl) {
            if x >= text_end {
                break;
            }
            let style = if lit { base.patch(hl_style) } else { base };
            let text = &line.text()[piece];
            x = buf
                .set_stringn(x, area.y, text, usize::from(text_end - x), style)
                .0;
        }
    }
    if let Some(m) = marker {
        if x < end {
            buf.set_stringn(x, area.y, m, usize::from(end - x), dim);
        }
    }
}

/// `range` cut at the edges of the highlighted ranges: (piece, highlighted).
fn split_by(range: Range<usize>, hl: &[Range<usize>]) -> Vec<(Range<usize>, bool)> {
    let mut out = Vec::new();
    let mut pos = range.start;
    for h in hl {
        if h.end <= pos || h.start >= range.end {
            continue;
        }
        if h.start > pos {
            out.push((pos..h.start, false));
        }
        let e = h.end.min(range.end);
        out.push((pos.max(h.start)..e, true));
        pos = e;
    }
    if pos < range.end {
        out.push((pos..range.end, false));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logview::{Stream, TailEvent, TailKind};
    use crate::slurm::model::JobId;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    const PATH: &str = "/scratch/alice/runs/slurm-1234.out";

    /// `kind` as the tail of job 1234's stdout at [`PATH`].
    fn ev(kind: TailKind) -> TailEvent {
        TailEvent {
            job: JobId::new(1234),
            stream: Stream::Stdout,
            path: PATH.into(),
            kind,
            credit: Default::default(),
        }
    }

    fn pane(bytes: &[u8]) -> LogPane {
        let mut p = LogPane::new(Stream::Stdout);
        p.set_path(PATH);
        p.apply(ev(TailKind::Reset {
            offset: 0,
            size: bytes.len() as u64,
        }));
        p.apply(ev(TailKind::Data {
            bytes: bytes.to_vec(),
            size: bytes.len() as u64,
        }));
        p
    }

    fn numbered(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| {
                format!(
                    "epoch {} step {i:04} loss {:.3}\n",
                    i / 25,
                    2.0 / (i + 1) as f64
                )
            })
            .collect::<String>()
            .into_bytes()
    }

    fn draw(p: &LogPane, color: bool) -> Terminal<TestBackend> {
        let mut t = Terminal::new(TestBackend::new(80, 12)).expect("terminal");
        t.draw(|f| {
            let w = LogWidget {
                pane: p,
                focused: true,
                color,
                merged: false,
            };
            f.render_widget(w, f.area());
        })
        .expect("draw");
        t
    }

    const VP: Viewport = Viewport {
        width: 78,
        height: 10,
    };

    #[test]
    fn following_shows_the_last_lines() {
        insta::assert_snapshot!(draw(&pane(&numbered(500)), true).backend());
    }

    #[test]
    fn paused_mid_file() {
        let mut p = pane(&numbered(500));
        p.scroll_up(200, VP);
        insta::assert_snapshot!(draw(&p, true).backend());
    }

    #[test]
    fn wrap_on_and_off() {
        let mut text = numbered(3);
        text.extend_from_slice(format!("{}\n", "abcdefghij".repeat(20)).as_bytes());
        text.extend_from_slice(b"after the long line\n");
        let mut p = pane(&text);
        insta::assert_snapshot!("wrap_off", draw(&p, true).backend());
        p.toggle_wrap();
        insta::assert_snapshot!("wrap_on", draw(&p, true).backend());
    }

    #[test]
    fn search_highlights_matches() {
        let mut p = pane(&numbered(500));
        p.set_search("LOSS 0.00", VP);
        let t = draw(&p, true);
        insta::assert_snapshot!(t.backend());
        let buf = t.backend().buffer();
        let row = (1..11)
            .find(|&y| (1..79).any(|x| buf[(x, y)].bg == Color::LightMagenta))
            .expect("current match highlighted");
        let lit: String = (1..79)
            .filter(|&x| buf[(x, row)].bg == Color::LightMagenta)
            .map(|x| buf[(x, row)].symbol().to_string())
            .collect();
        assert_eq!(lit.to_lowercase(), "loss 0.00");
    }

    #[test]
    fn states_instead_of_an_empty_pane() {
        let mut p = LogPane::new(Stream::Stderr);
        p.set_path("/scratch/alice/runs/slurm-77.err");
        p.set_job_pending(true);
        insta::assert_snapshot!("waiting", draw(&p, true).backend());
        p.set_job_pending(false);
        let ev = |kind| TailEvent {
            job: JobId::new(77),
            stream: Stream::Stderr,
            path: "/scratch/alice/runs/slurm-77.err".into(),
            kind,
            credit: Default::default(),
        };
        p.apply(ev(TailKind::Missing));
        insta::assert_snapshot!("missing", draw(&p, true).backend());
        p.apply(ev(TailKind::Denied(
            "permission denied reading /scratch/alice/runs/slurm-77.err on login1 (is the file, \
             or a directory above it, readable by your cluster user?)"
                .into(),
        )));
        insta::assert_snapshot!("denied", draw(&p, true).backend());
        p.apply(ev(TailKind::Data {
            bytes: b"line one\n".to_vec(),
            size: 9,
        }));
        p.apply(ev(TailKind::Error(
            "the connection to login1 dropped while running `read`".into(),
        )));
        insta::assert_snapshot!("error_with_lines", draw(&p, true).backend());
    }

    #[test]
    fn ansi_colours_rendered_or_stripped() {
        let p = pane(
            b"\x1b[1;31mERROR\x1b[0m disk \x1b[38;2;0;200;0mOK\x1b[m \x1b[2K\x1b]0;t\x07done\n",
        );
        let t = draw(&p, true);
        insta::assert_snapshot!(t.backend());
        let buf = t.backend().buffer();
        assert_eq!(buf[(1, 1)].fg, Color::Red);
        assert!(buf[(1, 1)].modifier.contains(Modifier::BOLD));
        assert_eq!(buf[(12, 1)].fg, Color::Rgb(0, 200, 0));
        assert_eq!(buf[(7, 1)].fg, Color::Reset);
        let t = draw(&p, false);
        let buf = t.backend().buffer();
        assert_eq!(buf[(1, 1)].fg, Color::Reset);
        assert!(!buf[(1, 1)].modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn progress_bar_shows_latest_state() {
        let mut p = pane(b"start\n 10%|#         |\r 20%|##        |\r 30%|###       |\nnext\n 40%|####      |\r 50%|#####     |");
        insta::assert_snapshot!("progress_partial", draw(&p, true).backend());
        p.apply(ev(TailKind::Data {
            bytes: b"\r100%|##########|\n".to_vec(),
            size: 0,
        }));
        insta::assert_snapshot!("progress_done", draw(&p, true).backend());
    }

    #[test]
    fn a_skip_shows_as_a_line_and_in_the_title() {
        let mut p = pane(&numbered(3));
        p.apply(ev(TailKind::Skipped {
            bytes: 412 << 20,
            size: 413 << 20,
        }));
        p.apply(ev(TailKind::Data {
            bytes: b"epoch 90 step 2250 loss 0.001\n".to_vec(),
            size: (413 << 20) + 31,
        }));
        let t = draw(&p, true);
        insta::assert_snapshot!(t.backend());
        let buf = t.backend().buffer();
        let row = (1..11)
            .find(|&y| buf[(1, y)].symbol() == "…")
            .expect("the note's row");
        assert!(buf[(1, row)].modifier.contains(Modifier::DIM));
    }

    #[test]
    fn very_long_line_and_binary() {
        let mut bytes = b"before\n\x00\x01bin\xff\xfeary\x7f\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', 5 << 20));
        let started = std::time::Instant::now();
        let mut p = pane(&bytes);
        let t = draw(&p, true);
        eprintln!("5 MiB line: push + draw {:?}", started.elapsed());
        insta::assert_snapshot!("long_line_nowrap", t.backend());
        p.toggle_wrap();
        insta::assert_snapshot!("long_line_wrap", draw(&p, true).backend());
    }

    #[test]
    fn long_path_is_shortened_from_the_left() {
        assert_eq!(shorten_left("/a/b/c.out", 20), "/a/b/c.out");
        assert_eq!(
            shorten_left("/very/long/dir/slurm-1.out", 12),
            "…slurm-1.out"
        );
        let mut p = LogPane::new(Stream::Stdout);
        let long = format!("/scratch/{}/slurm-1234.out", "deep/".repeat(30));
        p.set_path(&long);
        insta::assert_snapshot!(draw(&p, true).backend());
    }
}
