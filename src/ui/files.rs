//! The files view: the job's directories or one directory's entries, a preview in the log
//! viewer, and a copy's progress bar. Drawing only reads `app.overlays.files`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};
use unicode_width::UnicodeWidthStr;

use crate::app::files::{preview_area, view_area, Copy, FilesView};
use crate::app::App;
use crate::jobfiles::list::{Entry, Kind};
use crate::logview::human_bytes;

pub struct FilesWidget<'a> {
    pub app: &'a App,
    /// Rows of the status bar below the view.
    pub status_rows: u16,
}

pub use crate::app::files::KEYS;

pub fn help_lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let note = |text: String| Line::from(Span::styled(text, t.dim()));
    let mut lines = vec![Line::from(Span::styled(
        "keys in the files view",
        t.title(),
    ))];
    for (k, what) in KEYS {
        lines.push(Line::from(vec![
            Span::styled(format!("  {k:<28}"), t.key()),
            Span::raw(*what),
        ]));
    }
    lines.push(Line::from(""));
    lines.push(note(format!(
        "fetched files go to {}/JOB/ (config: [files] download_dir); a partial file resumes, every file is checked by sha256",
        app.overlays.files.download_dir.display()
    )));
    if app.shown().read_only {
        lines.push(note(
            "read-only session: fetching only reads the cluster, so it is allowed".into(),
        ));
    }
    lines.push(note("keys but ↑↓ close this help".into()));
    lines
}

/// `5s`, `12m`, `3h`, `4d` since the file changed.
fn age(now: chrono::NaiveDateTime, mtime: i64) -> String {
    let Some(t) = chrono::DateTime::from_timestamp(mtime, 0) else {
        return "?".into();
    };
    let local = t.with_timezone(&chrono::Local).naive_local();
    let s = (now - local).num_seconds().max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

fn entry_line(
    e: &Entry,
    now: chrono::NaiveDateTime,
    width: usize,
    selected: bool,
    style: Style,
) -> Line<'static> {
    let (mark, suffix) = match e.kind {
        Kind::Dir => ("d", "/"),
        Kind::File => ("f", ""),
        Kind::Link { to_dir: true } => ("l", "/@"),
        Kind::Link { to_dir: false } => ("l", "@"),
        Kind::Other => ("?", ""),
    };
    let size = if e.is_dir() {
        String::new()
    } else {
        human_bytes(e.size)
    };
    let right = format!(" {size:>10} {:>5}", age(now, e.mtime));
    let name = format!("{}{suffix}", e.display());
    let room = width.saturating_sub(4 + right.width());
    let name = crate::ui::log::shorten_left(&name, room);
    let pad = room.saturating_sub(name.width());
    let sel = if selected { "▶" } else { " " };
    Line::styled(
        format!("{sel} {mark} {name}{}{right}", " ".repeat(pad)),
        style,
    )
}

/// `[█████░░░░░]  52% 52.0 MiB of 100.0 MiB · esc stops · what → dest (file)`; the end
/// is cut on a narrow screen.
fn progress_line(c: &Copy, now: chrono::NaiveDateTime) -> String {
    let pct = (c.done.min(c.total) * 100)
        .checked_div(c.total)
        .unwrap_or(0) as usize;
    let bar_w = 20usize;
    let full = pct * bar_w / 100;
    let of = if c.total > 0 {
        format!("{} of {}", human_bytes(c.done), human_bytes(c.total))
    } else {
        human_bytes(c.done)
    };
    let file = if c.file.is_empty() || c.file == c.what {
        String::new()
    } else {
        format!(" · {}", c.file)
    };
    let secs = (now - c.started).num_milliseconds() as f64 / 1000.0;
    let rate = if secs >= 1.0 {
        format!(
            " · {:.1} MiB/s",
            c.done as f64 / f64::from(1u32 << 20) / secs
        )
    } else {
        String::new()
    };
    format!(
        "[{}{}] {pct:>3}% {of}{rate} · esc stops · {}{file} → {}",
        "█".repeat(full),
        "░".repeat(bar_w - full),
        c.what,
        c.dest.display()
    )
}

fn bottom(v: &FilesView, now: chrono::NaiveDateTime) -> (String, bool) {
    if let Some(a) = &v.ask {
        return (
            format!(
                "{}: fetch {}? y: yes · any other key: no · → {}",
                human_bytes(a.bytes),
                crate::jobfiles::display_name(crate::jobfiles::base_name(&a.src).unwrap_or(&a.src)),
                a.dest.display()
            ),
            true,
        );
    }
    if let Some(c) = &v.copy {
        return (progress_line(c, now), false);
    }
    match &v.status {
        Some(s) => (
            s.clone(),
            s.starts_with("fetch failed") || s.contains("not "),
        ),
        None => (String::new(), false),
    }
}

impl Widget for FilesWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let Some(v) = app.overlays.files.view.as_ref() else {
            return;
        };
        let t = &app.theme;
        let over = view_area((area.width, area.height), self.status_rows);
        Clear.render(over, buf);
        let width = usize::from(over.width);
        let (line, alert) = bottom(v, app.now);
        let line_style = if alert { t.warn() } else { t.dim() };
        if let Some(p) = &v.preview {
            let r = preview_area(over);
            crate::ui::log::LogWidget {
                pane: &p.pane,
                focused: true,
                color: t.color,
                merged: false,
            }
            .render(r, buf);
            let title = match p.cut {
                Some(size) => format!(
                    " preview {} (first {} of {}) ",
                    p.pane.path().unwrap_or(""),
                    human_bytes(crate::jobfiles::PREVIEW_BYTES),
                    human_bytes(size)
                ),
                None => format!(" preview {} ", p.pane.path().unwrap_or("")),
            };
            let room = usize::from(r.width).saturating_sub(4).max(10);
            // Over the log pane's own title (which names a stream).
            let old = usize::from(r.width).saturating_sub(2);
            buf.set_stringn(r.x + 1, r.y, "─".repeat(old), old, t.border(true));
            buf.set_stringn(
                r.x + 1,
                r.y,
                crate::ui::log::shorten_left(&title, room),
                room,
                t.title(),
            );
            let hint = if line.is_empty() {
                "j/k scroll · w wrap · f fetch · esc back".to_string()
            } else {
                line
            };
            let y = over.y + over.height.saturating_sub(1);
            buf.set_stringn(over.x, y, hint, width, line_style);
            return;
        }
        let count = match (&v.root, &v.listing) {
            (None, _) => format!(" {} directories ", v.roots.len()),
            (Some(_), None) => " listing… ".into(),
            (Some(_), Some(Err(_))) => " cannot list ".into(),
            (Some(_), Some(Ok(l))) if l.more() > 0 => format!(
                " {} entries, {} more not listed ",
                l.entries.len(),
                l.more()
            ),
            (Some(_), Some(Ok(l))) => format!(" {} entries ", l.entries.len()),
        };
        let title = format!(" files · job {} · {} ", v.job, v.dir_shown());
        let title = crate::ui::log::shorten_left(&title, width.saturating_sub(count.width() + 4));
        let block = Block::bordered()
            .border_style(t.border(true))
            .title(Line::styled(title, t.title()))
            .title(Line::from(count).right_aligned());
        let inner = block.inner(over);
        block.render(over, buf);
        if inner.height < 3 {
            return;
        }
        let list_h = usize::from(inner.height - 2);
        let w = usize::from(inner.width);
        let mut lines: Vec<Line> = Vec::new();
        match (&v.root, &v.listing) {
            (None, _) => {
                for (i, r) in v.roots.iter().enumerate() {
                    let style = if i == v.selected {
                        t.selected(true)
                    } else {
                        Style::new()
                    };
                    let sel = if i == v.selected { "▶" } else { " " };
                    let text = format!(
                        "{sel} d {:<9} {}",
                        r.label,
                        crate::jobfiles::display_name(&r.path)
                    );
                    let pad = w.saturating_sub(text.width());
                    lines.push(Line::styled(format!("{text}{}", " ".repeat(pad)), style));
                }
            }
            (Some(_), None) => lines.push(Line::styled(
                format!("listing {} …", v.dir_shown()),
                t.dim(),
            )),
            (Some(_), Some(Err(e))) => {
                lines.push(Line::styled(
                    format!("cannot list {}", v.dir_shown()),
                    t.error(),
                ));
                lines.push(Line::styled(e.clone(), t.dim()));
            }
            (Some(_), Some(Ok(l))) if l.entries.is_empty() => {
                lines.push(Line::styled("empty directory", t.dim()));
            }
            (Some(_), Some(Ok(l))) => {
                let first = v.selected.saturating_sub(list_h.saturating_sub(1));
                for (i, e) in l.entries.iter().enumerate().skip(first).take(list_h) {
                    let style = if i == v.selected {
                        t.selected(true)
                    } else {
                        Style::new()
                    };
                    lines.push(entry_line(e, app.now, w, i == v.selected, style));
                }
            }
        }
        Paragraph::new(lines).render(
            Rect::new(inner.x, inner.y, inner.width, inner.height - 2),
            buf,
        );
        let y = inner.y + inner.height - 2;
        buf.set_stringn(inner.x, y, &line, w, line_style);
        let keys = "enter open · backspace up · f fetch · r relist · esc close · ? keys";
        buf.set_stringn(inner.x, y + 1, keys, w, t.dim());
    }
}

impl super::overlay::DrawOverlay for crate::app::FilesState {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let widget = FilesWidget {
            app,
            status_rows: areas.status.height,
        };
        f.render_widget(widget, f.area());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "files_tests.rs"]
mod tests;
