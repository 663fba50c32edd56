//! The log pane's state: what the tailer delivered, where the view is, what is searched.
//! Pure: the App owns one [`LogPane`] per stream, feeds it [`TailEvent`]s and key actions,
//! and `ui::log::LogWidget` draws it.

pub mod ansi;
pub mod buffer;
pub mod found;
pub mod grep;
pub mod layout;
pub mod progress;
pub mod search;
pub mod terminal;
pub mod urls;

use std::fmt;

pub use buffer::{Caps, LogBuffer, LogLine};
pub use layout::Viewport;
pub use search::Search;

use crate::slurm::model::JobId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        })
    }
}

/// What the tailer saw on one tick, for one job's stream.
#[derive(Debug, Clone, PartialEq)]
pub struct TailEvent {
    pub job: JobId,
    pub stream: Stream,
    pub path: String,
    pub kind: TailKind,
    /// The share of the tailer's budget this event's bytes take while it waits to be taken
    /// in; given back when the event is dropped (see `worker::tailer`).
    pub credit: Credit,
}

/// Bytes of a followed log that were sent and not yet taken in by the pane: held by the
/// event that carries them, released when it is dropped. A clone or a default holds none.
#[derive(Default)]
pub struct Credit(Option<tokio::sync::OwnedSemaphorePermit>);

impl Credit {
    pub fn new(permit: tokio::sync::OwnedSemaphorePermit) -> Credit {
        Credit(Some(permit))
    }
}

impl Clone for Credit {
    fn clone(&self) -> Credit {
        Credit(None)
    }
}

/// Credits never make two events differ.
impl PartialEq for Credit {
    fn eq(&self, _: &Credit) -> bool {
        true
    }
}

impl fmt::Debug for Credit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.as_ref().map_or(0, |p| p.num_permits());
        write!(f, "Credit({n})")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailKind {
    /// Forget all lines: data follows from `offset` (a fresh tail read, or the file was
    /// truncated or replaced). `size` is the file size.
    Reset {
        offset: u64,
        size: u64,
    },
    /// Bytes following the previous ones. May be empty (the file is readable again).
    Data {
        bytes: Vec<u8>,
        size: u64,
    },
    /// The log grew faster than it could be shown: `bytes` were left out, and data follows
    /// from the first whole line after them. `size` is the file size.
    Skipped {
        bytes: u64,
        size: u64,
    },
    Missing,
    /// The message says why and what to check.
    Denied(String),
    NotRegular(String),
    /// Transport failure; the tailer retries.
    Error(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaneStatus {
    NoJob,
    /// Slurm gave no output path for this job.
    NoPath,
    Loading,
    Live {
        size: u64,
    },
    Missing,
    Denied(String),
    NotRegular(String),
    Error(String),
}

#[derive(Debug, Clone)]
pub struct LogPane {
    stream: Stream,
    path: Option<String>,
    pending: bool,
    status: PaneStatus,
    buffer: LogBuffer,
    follow: bool,
    /// First line shown when not following.
    top: u64,
    wrap: bool,
    search: Option<Search>,
    /// Bytes of this file left out so far because it grew faster than it could be shown.
    skipped: u64,
    /// A line to show once it has arrived (`:grep`'s enter): its number and its text.
    goto: Option<(u64, String)>,
}

impl LogPane {
    pub fn new(stream: Stream) -> Self {
        Self::with_caps(stream, Caps::default())
    }

    pub fn with_caps(stream: Stream, caps: Caps) -> Self {
        LogPane {
            stream,
            path: None,
            pending: false,
            status: PaneStatus::NoJob,
            buffer: LogBuffer::new(caps),
            follow: true,
            top: 0,
            wrap: false,
            search: None,
            skipped: 0,
            goto: None,
        }
    }

    /// Targets another file (a new job, or the job's path became known): clears the lines
    /// and follows. The same path again changes nothing. Start a tailer for it alongside.
    pub fn set_path(&mut self, path: &str) {
        if self.path.as_deref() == Some(path) {
            return;
        }
        self.buffer.clear();
        self.path = Some(path.to_string());
        self.status = PaneStatus::Loading;
        self.follow = true;
        self.skipped = 0;
        if let Some(s) = &mut self.search {
            s.update(&self.buffer);
        }
        self.try_goto();
    }

    /// Shows line `line` (1-based) of the file, whose text is `text` as `:grep` printed it,
    /// as soon as the pane holds it: scrolled there, the text searched (`n` goes on to the
    /// next). A pane that holds only the file's end finds the line by its text.
    pub fn go_to_line(&mut self, line: u64, text: &str) {
        self.goto = Some((line, text.to_string()));
        self.try_goto();
    }

    fn try_goto(&mut self) {
        if self.buffer.is_empty() || self.buffer.end_seq() == self.buffer.first_seq() {
            return;
        }
        let Some((line, text)) = self.goto.take() else {
            return;
        };
        // The longest part of the text that has no escape `:grep` wrote in it.
        let query = text
            .split('\\')
            .max_by_key(|p| p.len())
            .unwrap_or("")
            .trim()
            .to_string();
        let want = line.saturating_sub(1).max(self.buffer.first_seq());
        let seq = if query.chars().count() >= 3 {
            let mut s = Search::new(&query, &self.buffer);
            let at = s.select_from(want);
            self.search = Some(s);
            at.unwrap_or(want)
        } else {
            want
        };
        let seq = seq.min(self.buffer.end_seq().saturating_sub(1));
        self.follow = false;
        self.top = seq.saturating_sub(3).max(self.buffer.first_seq());
    }

    /// Slurm reports no output file for this stream.
    pub fn set_no_path(&mut self) {
        self.buffer.clear();
        self.path = None;
        self.skipped = 0;
        self.status = PaneStatus::NoPath;
        self.follow = true;
    }

    /// No job selected.
    pub fn close(&mut self) {
        self.buffer.clear();
        self.path = None;
        self.skipped = 0;
        self.pending = false;
        self.status = PaneStatus::NoJob;
        self.search = None;
        self.follow = true;
    }

    /// The job is pending: a missing file is expected, not an error.
    pub fn set_job_pending(&mut self, pending: bool) {
        self.pending = pending;
    }

    /// Takes in what the tailer saw. Events for another stream or path are ignored (events
    /// of a job no longer selected must be dropped by the caller, which knows the job).
    pub fn apply(&mut self, ev: TailEvent) {
        if ev.stream != self.stream || self.path.as_deref() != Some(ev.path.as_str()) {
            return;
        }
        self.status = match ev.kind {
            TailKind::Reset { size, .. } => {
                self.buffer.clear();
                PaneStatus::Live { size }
            }
            TailKind::Data { bytes, size } => {
                self.buffer.push(&bytes);
                PaneStatus::Live { size }
            }
            TailKind::Skipped { bytes, size } => {
                self.skipped = self.skipped.saturating_add(bytes);
                self.buffer.push_note(&skip_note(bytes), note_style());
                PaneStatus::Live { size }
            }
            TailKind::Missing => PaneStatus::Missing,
            TailKind::Denied(m) => PaneStatus::Denied(m),
            TailKind::NotRegular(m) => PaneStatus::NotRegular(m),
            TailKind::Error(m) => PaneStatus::Error(m),
        };
        if let Some(s) = &mut self.search {
            s.update(&self.buffer);
        }
        self.try_goto();
    }

    pub fn stream(&self) -> Stream {
        self.stream
    }
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }
    pub fn is_pending(&self) -> bool {
        self.pending
    }
    pub fn status(&self) -> &PaneStatus {
        &self.status
    }
    pub fn buffer(&self) -> &LogBuffer {
        &self.buffer
    }
    pub fn is_following(&self) -> bool {
        self.follow
    }
    pub fn wrap(&self) -> bool {
        self.wrap
    }
    /// Bytes left out so far (the file grew faster than it could be shown).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }
    pub fn search(&self) -> Option<&Search> {
        self.search.as_ref()
    }

    /// The first line to draw when paused (`None` when following).
    pub fn paused_top(&self) -> Option<u64> {
        (!self.follow).then(|| self.top.max(self.buffer.first_seq()))
    }

    /// Shown instead of the lines when there are none: (headline, detail).
    pub fn message(&self) -> Option<(String, String)> {
        if self.buffer.is_empty() {
            self.status_text()
        } else {
            None
        }
    }

    fn status_text(&self) -> Option<(String, String)> {
        let path = self.path.as_deref().unwrap_or("");
        let (head, detail) = match &self.status {
            PaneStatus::NoJob => ("no job selected".to_string(), String::new()),
            PaneStatus::NoPath => (
                "no output file".to_string(),
                "Slurm reports no path for this stream".to_string(),
            ),
            PaneStatus::Loading | PaneStatus::Missing if self.pending => (
                format!("waiting for {path} (job is pending)"),
                "the log appears here once the job starts writing it".to_string(),
            ),
            PaneStatus::Loading => (format!("reading {path} …"), String::new()),
            PaneStatus::Live { .. } if self.buffer.is_empty() => {
                (format!("{path} is empty so far"), String::new())
            }
            PaneStatus::Live { .. } => return None,
            PaneStatus::Missing => (
                format!("no such file: {path}"),
                "not written yet, removed, or on a filesystem the login node cannot see; \
                 checking again"
                    .to_string(),
            ),
            PaneStatus::Denied(m) => (format!("permission denied: {path}"), m.clone()),
            PaneStatus::NotRegular(m) => (format!("not a regular file: {path}"), m.clone()),
            PaneStatus::Error(m) => (format!("cannot read {path}"), m.clone()),
        };
        Some((head, detail))
    }

    /// A problem to show below the lines when there are lines (the file vanished, a
    /// transport error): one line.
    pub fn notice(&self) -> Option<String> {
        if self.buffer.is_empty() {
            return None;
        }
        match &self.status {
            PaneStatus::Live { .. } | PaneStatus::Loading | PaneStatus::NoJob => None,
            _ => self
                .status_text()
                .map(|(h, d)| if d.is_empty() { h } else { format!("{h}: {d}") }),
        }
    }

    /// The part of `vp` the lines get (the notice takes the last row).
    pub fn text_viewport(&self, vp: Viewport) -> Viewport {
        let notice = u16::from(self.notice().is_some() && vp.height > 1);
        Viewport {
            width: vp.width,
            height: vp.height - notice,
        }
    }

    /// The rows to draw in `vp` (the text viewport). A paused view never shows blank rows
    /// below the last line.
    pub fn visible_rows(&self, vp: Viewport) -> Vec<layout::Row> {
        let follow = layout::visible_rows(&self.buffer, None, vp, self.wrap);
        match (self.paused_top(), follow.first()) {
            (Some(t), Some(f)) if t < f.seq => {
                layout::visible_rows(&self.buffer, Some(t), vp, self.wrap)
            }
            _ => follow,
        }
    }

    fn current_top(&self, vp: Viewport) -> u64 {
        match self.paused_top() {
            Some(t) => t,
            None => layout::follow_top(&self.buffer, self.text_viewport(vp), self.wrap),
        }
    }

    pub fn scroll_up(&mut self, n: u64, vp: Viewport) {
        let top = self.current_top(vp);
        self.follow = false;
        self.top = top.saturating_sub(n).max(self.buffer.first_seq());
    }

    /// Scrolling past the last screenful resumes following.
    pub fn scroll_down(&mut self, n: u64, vp: Viewport) {
        if self.follow {
            return;
        }
        let bottom = layout::follow_top(&self.buffer, self.text_viewport(vp), self.wrap);
        self.top = self.current_top(vp).saturating_add(n);
        if self.top >= bottom {
            self.follow = true;
        }
    }

    pub fn page_up(&mut self, vp: Viewport) {
        let h = self.text_viewport(vp).height.saturating_sub(1).max(1);
        self.scroll_up(u64::from(h), vp);
    }

    pub fn page_down(&mut self, vp: Viewport) {
        let h = self.text_viewport(vp).height.saturating_sub(1).max(1);
        self.scroll_down(u64::from(h), vp);
    }

    /// `g`: first line kept.
    pub fn top(&mut self) {
        self.follow = false;
        self.top = self.buffer.first_seq();
    }

    /// `G` / `f`.
    pub fn bottom_and_follow(&mut self) {
        self.follow = true;
    }

    pub fn toggle_wrap(&mut self) {
        self.wrap = !self.wrap;
    }

    /// Searches for `query` (case-insensitive) and shows the first match at or below the top
    /// of the view, or the last match above it. An empty query ends the search.
    pub fn set_search(&mut self, query: &str, vp: Viewport) {
        if query.is_empty() {
            self.search = None;
            return;
        }
        let top = self.current_top(vp);
        let mut s = Search::new(query, &self.buffer);
        let target = s.select_from(top);
        self.search = Some(s);
        if let Some(seq) = target {
            self.reveal(seq, vp);
        }
    }

    pub fn clear_search(&mut self) {
        self.search = None;
    }

    /// `n`: the next matching line (wraps around).
    pub fn next_match(&mut self, vp: Viewport) {
        if let Some(seq) = self.search.as_mut().and_then(Search::next_match) {
            self.reveal(seq, vp);
        }
    }

    /// `N`: the previous matching line (wraps around).
    pub fn prev_match(&mut self, vp: Viewport) {
        if let Some(seq) = self.search.as_mut().and_then(Search::prev_match) {
            self.reveal(seq, vp);
        }
    }

    /// Scrolls so that line `seq` is on screen, leaving the view alone if it already is.
    fn reveal(&mut self, seq: u64, vp: Viewport) {
        let tvp = self.text_viewport(vp);
        let rows = self.visible_rows(tvp);
        let shown = match (rows.first(), rows.last()) {
            (Some(a), Some(b)) => (a.seq..=b.seq).contains(&seq),
            _ => false,
        };
        if shown {
            return;
        }
        self.follow = false;
        self.top = seq
            .saturating_sub(u64::from(tvp.height / 3))
            .max(self.buffer.first_seq());
    }
}

/// The line put where a followed log skipped ahead.
pub fn skip_note(bytes: u64) -> String {
    format!("… skipped {} …", human_bytes(bytes))
}

fn note_style() -> ratatui::style::Style {
    use ratatui::style::{Modifier, Style};
    Style::new().add_modifier(Modifier::DIM | Modifier::ITALIC)
}

/// `1.5 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests;
