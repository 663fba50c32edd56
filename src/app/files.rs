//! The files view (`y`, `:files`): the selected job's directories (the job directory of a
//! launch, the work directory), walked one level at a time, a file previewed in the log
//! viewer, and a file or directory fetched to this machine with its progress. Its own
//! state and keys; the App only routes to it. A component (see `component.rs`).

use std::path::PathBuf;

use chrono::NaiveDateTime;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;

use super::component::{Out, View};
use crate::action::Cmd;
use crate::jobfiles::list::{Entry, Listing};
use crate::jobfiles::{self, FilesCmd, FilesMsg, Root, CONFIRM_BYTES};
use crate::keymap::Action;
use crate::logview::{LogPane, Stream, TailEvent, TailKind, Viewport};
use crate::slurm::model::JobId;

/// What the App keeps for the files view: where fetches go, and the view when open.
#[derive(Debug, Clone)]
pub struct FilesState {
    pub download_dir: PathBuf,
    pub view: Option<FilesView>,
    seq: u64,
}

impl Default for FilesState {
    fn default() -> Self {
        FilesState {
            download_dir: PathBuf::from("Downloads/slurmdash"),
            view: None,
            seq: 0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct FilesView {
    pub job: JobId,
    pub roots: Vec<Root>,
    /// The root being walked; `None` shows the roots themselves.
    pub root: Option<usize>,
    /// Names below the root, outermost first.
    pub rel: Vec<Vec<u8>>,
    /// `None` while the listing loads.
    pub listing: Option<Result<Listing, String>>,
    pub selected: usize,
    seq: u64,
    pub preview: Option<Preview>,
    pub copy: Option<Copy>,
    /// A large copy waiting for `y`.
    pub ask: Option<Ask>,
    /// The last outcome (a copy's summary or what failed), on the view's bottom line.
    pub status: Option<String>,
    /// The directory just left (`backspace`): selected again once its parent is listed.
    rel_back: Option<Vec<u8>>,
}

#[derive(Debug, Clone)]
pub struct Preview {
    pub path: Vec<u8>,
    pub pane: LogPane,
    pub loading: bool,
    /// The file's size when more of it exists than was read.
    pub cut: Option<u64>,
    seq: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Copy {
    /// The remote path, as shown.
    pub what: String,
    pub dest: PathBuf,
    pub done: u64,
    pub total: u64,
    /// The file being copied (directory copies).
    pub file: String,
    pub started: NaiveDateTime,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub src: Vec<u8>,
    pub dir: bool,
    pub dest: PathBuf,
    pub bytes: u64,
}

impl FilesView {
    /// The directory listed (`None` on the roots).
    pub fn dir(&self) -> Option<Vec<u8>> {
        let root = self.roots.get(self.root?)?;
        let mut p = root.path.clone();
        for n in &self.rel {
            p = jobfiles::join(&p, n);
        }
        Some(p)
    }

    /// The directory as shown in the title.
    pub fn dir_shown(&self) -> String {
        match self.dir() {
            Some(d) => jobfiles::display_name(&d),
            None => "the job's directories".into(),
        }
    }

    pub fn entries(&self) -> &[Entry] {
        match &self.listing {
            Some(Ok(l)) => &l.entries,
            _ => &[],
        }
    }

    /// Rows shown: the roots, or the listing's entries.
    pub fn rows(&self) -> usize {
        match self.root {
            None => self.roots.len(),
            Some(_) => self.entries().len(),
        }
    }

    pub fn selected_entry(&self) -> Option<&Entry> {
        self.root?;
        self.entries().get(self.selected)
    }
}

/// Where the files view is drawn: the screen above the status bar (`status_rows`).
pub fn view_area(size: (u16, u16), status_rows: u16) -> Rect {
    Rect::new(0, 0, size.0, size.1.saturating_sub(status_rows))
}

/// Where a preview is drawn inside the view: all of it but the bottom line (progress, keys).
pub fn preview_area(view: Rect) -> Rect {
    Rect::new(view.x, view.y, view.width, view.height.saturating_sub(1))
}

/// Keys of the files view, for its bottom line and the help overlay.
pub const KEYS: &[(&str, &str)] = &[
    ("j/k, arrows, pgup/pgdn, g/G", "move"),
    ("enter, l, →", "open a directory / preview a file"),
    (
        "backspace, h, ←",
        "up one level (never above the job's directory)",
    ),
    (
        "f",
        "fetch the file or directory to the download directory (asks above 100 MiB)",
    ),
    ("esc", "stop a copy; close the preview; close the view"),
    ("r", "list the directory again"),
    ("w", "preview: wrap long lines on/off"),
    ("q", "close the preview / the view"),
];

/// The preview's text area for a terminal of `size` with `status_rows` of status bar.
fn viewport(size: (u16, u16), status_rows: u16) -> Viewport {
    Viewport::of_pane(preview_area(view_area(size, status_rows)))
}

/// Rows one page moves in the view's list.
fn page(size: (u16, u16), status_rows: u16) -> usize {
    usize::from(view_area(size, status_rows).height.saturating_sub(5)).max(1)
}

impl FilesState {
    /// `y` / `:files` on the selected job.
    pub fn open(&mut self, v: &View) -> Out {
        let Some(job) = v.queue.selected_job() else {
            return Out::note("no job selected: select a job to see its files");
        };
        let id = job.id.clone();
        let job_dir = v.launch_of(&id).map(|c| c.job_dir.clone());
        let detail_dir = v
            .detail
            .detail
            .as_ref()
            .filter(|_| v.detail.id.as_ref() == Some(&id))
            .and_then(|d| d.work_dir.clone());
        let work_dir = detail_dir.or_else(|| {
            let w = job.work_dir.to_string();
            (!w.is_empty()).then_some(w)
        });
        let roots = jobfiles::roots(job_dir.as_deref(), work_dir.as_deref());
        if roots.is_empty() {
            return Out::note(format!(
                "job {id}: no directory known yet (Slurm reports no work dir and slurmdash did not launch it); try again once its detail has loaded"
            ));
        }
        let one = roots.len() == 1;
        self.view = Some(FilesView {
            job: id,
            roots,
            root: None,
            rel: Vec::new(),
            listing: None,
            selected: 0,
            seq: 0,
            preview: None,
            copy: None,
            ask: None,
            status: None,
            rel_back: None,
        });
        if one {
            return Out::cmds(self.enter_root(0));
        }
        Out::none()
    }

    fn list(&mut self) -> Vec<Cmd> {
        self.seq += 1;
        let seq = self.seq;
        let Some(v) = self.view.as_mut() else {
            return Vec::new();
        };
        v.seq = seq;
        v.listing = None;
        v.selected = 0;
        let Some(dir) = v.dir() else {
            return Vec::new();
        };
        vec![Cmd::Files(FilesCmd::List {
            job: v.job.clone(),
            dir,
            seq,
        })]
    }

    fn enter_root(&mut self, i: usize) -> Vec<Cmd> {
        if let Some(v) = self.view.as_mut() {
            v.root = Some(i);
            v.rel.clear();
        }
        self.list()
    }

    /// enter: into a directory, or a preview of a file.
    fn open_selected(&mut self) -> Vec<Cmd> {
        let Some(v) = self.view.as_mut() else {
            return Vec::new();
        };
        if v.root.is_none() {
            let i = v.selected;
            if i < v.roots.len() {
                return self.enter_root(i);
            }
            return Vec::new();
        }
        let Some(e) = v.selected_entry().cloned() else {
            return Vec::new();
        };
        if e.is_dir() {
            v.rel.push(e.name);
            return self.list();
        }
        if !e.is_file_like() {
            v.status = Some(format!(
                "{} is not a regular file: nothing to show",
                e.display()
            ));
            return Vec::new();
        }
        let Some(dir) = v.dir() else {
            return Vec::new();
        };
        let path = jobfiles::join(&dir, &e.name);
        self.seq += 1;
        let seq = self.seq;
        let shown = jobfiles::display_name(&path);
        let mut pane = LogPane::new(Stream::Stdout);
        pane.set_path(&shown);
        let Some(v) = self.view.as_mut() else {
            return Vec::new();
        };
        v.preview = Some(Preview {
            path: path.clone(),
            pane,
            loading: true,
            cut: None,
            seq,
        });
        vec![Cmd::Files(FilesCmd::Preview {
            job: v.job.clone(),
            path,
            seq,
        })]
    }

    /// backspace / h: one level up, never above a root (the roots are shown instead).
    fn up(&mut self) -> Vec<Cmd> {
        let Some(v) = self.view.as_mut() else {
            return Vec::new();
        };
        if v.root.is_none() {
            return Vec::new();
        }
        match v.rel.pop() {
            Some(name) => {
                let cmds = self.list();
                // Come back to the directory just left, once listed.
                if let Some(v) = self.view.as_mut() {
                    v.status = None;
                    v.rel_back = Some(name);
                }
                cmds
            }
            None => {
                let i = v.root.take().unwrap_or(0);
                v.listing = None;
                v.selected = i;
                Vec::new()
            }
        }
    }

    /// `f`: fetch the selected file or directory (asks first above [`CONFIRM_BYTES`]).
    fn fetch(&mut self, now: NaiveDateTime) -> Vec<Cmd> {
        let dl = self.download_dir.clone();
        let Some(v) = self.view.as_mut() else {
            return Vec::new();
        };
        if v.copy.is_some() {
            v.status = Some("a copy is under way: esc stops it".into());
            return Vec::new();
        }
        let job = v.job.to_string();
        let (src, dir, size) = if let Some(p) = &v.preview {
            (
                p.path.clone(),
                false,
                p.cut.or_else(|| Some(p.pane.buffer().bytes() as u64)),
            )
        } else if v.root.is_none() {
            match v.roots.get(v.selected) {
                Some(r) => (r.path.clone(), true, None),
                None => return Vec::new(),
            }
        } else {
            let Some(e) = v.selected_entry().cloned() else {
                return Vec::new();
            };
            let Some(d) = v.dir() else {
                return Vec::new();
            };
            let size = (!e.is_dir()).then_some(e.size);
            if !e.is_dir() && !e.is_file_like() {
                v.status = Some(format!(
                    "{} is not a regular file: not fetched",
                    e.display()
                ));
                return Vec::new();
            }
            (jobfiles::join(&d, &e.name), e.is_dir(), size)
        };
        let Some(dest) = jobfiles::local_dest(&dl, &job, &src) else {
            v.status = Some(format!(
                "{} has no name to save it under",
                jobfiles::display_name(&src)
            ));
            return Vec::new();
        };
        if dir {
            v.status = Some(format!("sizing {} …", jobfiles::display_name(&src)));
            return vec![Cmd::Files(FilesCmd::Plan {
                job: v.job.clone(),
                src,
                dest,
            })];
        }
        // A preview was opened on the selected entry, whose size the listing knows.
        let size = match &v.preview {
            Some(_) => v.selected_entry().map(|e| e.size).or(size),
            None => size,
        }
        .unwrap_or(0);
        let ask = Ask {
            src,
            dir: false,
            dest,
            bytes: size,
        };
        self.start_or_ask(ask, false, now)
    }

    /// Starts the copy, or asks first when it is large and not `confirmed` yet.
    fn start_or_ask(&mut self, ask: Ask, confirmed: bool, now: NaiveDateTime) -> Vec<Cmd> {
        let Some(v) = self.view.as_mut() else {
            return Vec::new();
        };
        if ask.bytes > CONFIRM_BYTES && !confirmed {
            v.ask = Some(ask);
            return Vec::new();
        }
        v.status = None;
        v.copy = Some(Copy {
            what: jobfiles::display_name(jobfiles::base_name(&ask.src).unwrap_or(&ask.src)),
            dest: ask.dest.clone(),
            done: 0,
            total: ask.bytes,
            file: String::new(),
            started: now,
        });
        vec![Cmd::Files(FilesCmd::Fetch {
            job: v.job.clone(),
            src: ask.src,
            dir: ask.dir,
            dest: ask.dest,
        })]
    }

    /// A worker's answer about the view (a listing, a preview, a copy's progress or end).
    pub fn on_msg(&mut self, v: &View, m: FilesMsg) -> Out {
        if self.view.is_none() {
            // A copy that ends after the view closed is said on the status bar.
            if let FilesMsg::Fetched { dest, result } = m {
                return Out::note(match result {
                    Ok(s) => format!("fetched {}: {s}", dest.display()),
                    Err(e) => format!("fetch failed: {e}"),
                });
            }
            return Out::none();
        }
        Out::cmds(self.on_view_msg(v.now, m))
    }

    fn on_view_msg(&mut self, now: NaiveDateTime, m: FilesMsg) -> Vec<Cmd> {
        let Some(v) = self.view.as_mut() else {
            return Vec::new();
        };
        match m {
            FilesMsg::Listed { seq, result } => {
                if seq != v.seq {
                    return Vec::new();
                }
                v.listing = Some(result);
                if let Some(back) = v.rel_back.take() {
                    if let Some(i) = v.entries().iter().position(|e| e.name == back) {
                        v.selected = i;
                    }
                }
            }
            FilesMsg::Previewed { seq, result } => {
                let Some(p) = v.preview.as_mut().filter(|p| p.seq == seq) else {
                    return Vec::new();
                };
                p.loading = false;
                let path = p.pane.path().unwrap_or_default().to_string();
                let ev = |kind| TailEvent {
                    job: v.job.clone(),
                    stream: Stream::Stdout,
                    path: path.clone(),
                    kind,
                    credit: Default::default(),
                };
                match result {
                    Ok((0, _)) => {
                        p.pane.apply(ev(TailKind::Reset { offset: 0, size: 0 }));
                    }
                    Ok((size, bytes)) if crate::jobfiles::preview::looks_binary(&bytes) => {
                        p.pane.apply(ev(TailKind::NotRegular(format!(
                            "a binary file ({}): f fetches it",
                            crate::logview::human_bytes(size)
                        ))));
                    }
                    Ok((size, bytes)) => {
                        p.cut = (size > bytes.len() as u64).then_some(size);
                        let text = crate::jobfiles::preview::preview_text(&p.path, size, bytes);
                        p.pane.apply(ev(TailKind::Reset { offset: 0, size }));
                        p.pane.apply(ev(TailKind::Data { bytes: text, size }));
                        p.pane.top();
                    }
                    Err(e) => p.pane.apply(ev(TailKind::Error(e))),
                }
            }
            FilesMsg::Planned { src, dest, result } => match result {
                Ok(bytes) => {
                    v.status = None;
                    return self.start_or_ask(
                        Ask {
                            src,
                            dir: true,
                            dest,
                            bytes,
                        },
                        false,
                        now,
                    );
                }
                Err(e) => v.status = Some(e),
            },
            FilesMsg::Progress { done, total, file } => {
                if let Some(c) = v.copy.as_mut() {
                    c.done = done;
                    c.total = total.max(c.total);
                    c.file = file;
                }
            }
            FilesMsg::Fetched { dest, result } => {
                v.copy = None;
                v.status = Some(match result {
                    Ok(s) => format!("fetched {}: {s}", dest.display()),
                    Err(e) => format!("fetch failed: {e}"),
                });
            }
        }
        Vec::new()
    }

    /// A key while the view is open (`status_rows`: the status bar's height, for paging):
    /// `?` opens help over the view, ctrl-c quits the dashboard.
    pub fn on_key(&mut self, v: &View, k: KeyEvent, status_rows: u16) -> Out {
        let Some(view) = self.view.as_mut() else {
            return Out::none();
        };
        if let Some(ask) = view.ask.take() {
            if matches!(k.code, KeyCode::Char('y') | KeyCode::Enter) {
                return Out::cmds(self.start_or_ask(ask, true, v.now));
            }
            view.status = Some("not fetched".into());
            return Out::none();
        }
        if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
            return Out::then(Action::Quit);
        }
        if k.code == KeyCode::Char('?') {
            return Out::then(Action::Help);
        }
        let vp = viewport(v.size, status_rows);
        let page = page(v.size, status_rows);
        Out::cmds(self.on_view_key(k, vp, page, v.now))
    }

    fn on_view_key(
        &mut self,
        k: KeyEvent,
        vp: Viewport,
        page: usize,
        now: NaiveDateTime,
    ) -> Vec<Cmd> {
        let Some(v) = self.view.as_mut() else {
            return Vec::new();
        };
        match k.code {
            KeyCode::Esc if v.copy.is_some() => {
                let c = v.copy.take();
                v.status = Some(format!(
                    "copy stopped: the bytes copied so far stay in a hidden .slurmdash-part file beside the file in {} (which is replaced only when whole), and fetching again resumes them",
                    c.map(|c| c.dest.display().to_string()).unwrap_or_default()
                ));
                return vec![Cmd::Files(FilesCmd::Stop { job: v.job.clone() })];
            }
            KeyCode::Char('f') => return self.fetch(now),
            _ => {}
        }
        let Some(v) = self.view.as_mut() else {
            return Vec::new();
        };
        if let Some(p) = v.preview.as_mut() {
            match k.code {
                KeyCode::Esc | KeyCode::Char('q' | 'h') | KeyCode::Backspace | KeyCode::Left => {
                    v.preview = None;
                }
                KeyCode::Down | KeyCode::Char('j') => p.pane.scroll_down(1, vp),
                KeyCode::Up | KeyCode::Char('k') => p.pane.scroll_up(1, vp),
                KeyCode::PageDown | KeyCode::Char(' ') => p.pane.page_down(vp),
                KeyCode::PageUp => p.pane.page_up(vp),
                KeyCode::Char('g') | KeyCode::Home => p.pane.top(),
                KeyCode::Char('G') | KeyCode::End => p.pane.bottom_and_follow(),
                KeyCode::Char('w') => p.pane.toggle_wrap(),
                _ => {}
            }
            return Vec::new();
        }
        let rows = v.rows();
        let last = rows.saturating_sub(1);
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') => self.view = None,
            KeyCode::Down | KeyCode::Char('j') => v.selected = (v.selected + 1).min(last),
            KeyCode::Up | KeyCode::Char('k') => v.selected = v.selected.saturating_sub(1),
            KeyCode::PageDown => v.selected = (v.selected + page).min(last),
            KeyCode::PageUp => v.selected = v.selected.saturating_sub(page),
            KeyCode::Char('g') | KeyCode::Home => v.selected = 0,
            KeyCode::Char('G') | KeyCode::End => v.selected = last,
            KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => return self.open_selected(),
            KeyCode::Backspace | KeyCode::Left | KeyCode::Char('h') => return self.up(),
            KeyCode::Char('r') if v.root.is_some() => return self.list(),
            _ => {}
        }
        Vec::new()
    }
}

/// Open while a job's files are shown.
impl super::component::Overlaid for FilesState {
    fn is_open(&self) -> bool {
        self.view.is_some()
    }

    fn close(&mut self) {
        self.view = None;
    }
}

impl super::component::OverlayKeys for FilesState {
    fn overlay_key(&mut self, k: &KeyEvent, cx: &super::component::Keys) -> Out {
        self.on_key(&cx.view, *k, cx.status_rows)
    }
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
