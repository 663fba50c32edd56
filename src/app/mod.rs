//! The one owner of UI state. `update` takes a message and returns work for the workers;
//! it does no I/O and never awaits, so every behaviour here is unit-testable.

mod adaptive;
mod input;
pub mod insight;
mod logs;
pub mod partitions;

use std::time::Duration;

use chrono::NaiveDateTime;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};

pub use input::{Input, InputKind, COMMANDS};
pub use logs::LogState;

use crate::action::{Cmd, Msg};
use crate::keymap::{Action, Keymap, Pane};
use crate::logview::layout::Viewport;
use crate::queue::QueueView;
use crate::remote::ConnState;
use crate::slurm::model::{Job, JobDetail, JobId};
use crate::ui::theme::Theme;
use crate::worker::fetch::DetailSource;

/// The selected job's detail as last fetched.
#[derive(Debug, Clone, Default)]
pub struct DetailState {
    pub id: Option<JobId>,
    pub detail: Option<JobDetail>,
    pub source: Option<DetailSource>,
    pub loading: bool,
    pub error: Option<String>,
    pub scroll: u16,
}

/// What the status bar shows.
#[derive(Debug, Clone)]
pub struct Status {
    pub conn: ConnState,
    pub host: Option<String>,
    pub last_ok: Option<NaiveDateTime>,
    pub last_took: Option<Duration>,
    /// The last error, naming the command that failed.
    pub last_error: Option<String>,
    pub polling: bool,
    pub poll_interval: Duration,
    /// A short note for the user (e.g. an unknown command).
    pub note: Option<String>,
}

pub struct App {
    pub cluster: String,
    /// "your jobs", "all users", ...
    pub scope: String,
    pub keymap: Keymap,
    pub theme: Theme,
    pub queue: QueueView,
    pub detail: DetailState,
    pub logs: LogState,
    pub focus: Pane,
    pub zoom: bool,
    pub help: bool,
    pub input: Option<Input>,
    pub status: Status,
    pub now: NaiveDateTime,
    /// Terminal size, for paging and mouse hits (set from resize events, never by drawing).
    pub size: (u16, u16),
    pub quit: bool,
    /// Pending-job insight, partitions, :stats and the adaptive interval.
    pub insight: insight::Insight,
}

impl App {
    pub fn new(
        cluster: &str,
        scope: &str,
        keymap: Keymap,
        theme: Theme,
        queue: QueueView,
        poll_interval: Duration,
        now: NaiveDateTime,
    ) -> App {
        App {
            cluster: cluster.to_string(),
            scope: scope.to_string(),
            keymap,
            theme,
            queue,
            detail: DetailState::default(),
            logs: LogState::new(),
            focus: Pane::Queue,
            zoom: false,
            help: false,
            input: None,
            status: Status {
                conn: ConnState::NotConnected,
                host: None,
                last_ok: None,
                last_took: None,
                last_error: None,
                polling: false,
                poll_interval,
                note: None,
            },
            now,
            size: (120, 40),
            quit: false,
            insight: insight::Insight::new(poll_interval, now),
        }
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Cmd> {
        match msg {
            Msg::Key(k) => self.on_key(k),
            Msg::Mouse(m) => {
                self.insight.last_key = Some(self.now);
                self.on_mouse(m)
            }
            Msg::Resize(w, h) => {
                self.size = (w, h);
                let queue = crate::ui::layout(self.size, self).queue;
                self.queue
                    .set_viewport(crate::ui::queue::body_height(queue.height));
                Vec::new()
            }
            Msg::Tick(now) => {
                self.now = now;
                self.adapt_interval();
                self.partitions_due(false)
            }
            Msg::PollDue => self.poll(),
            Msg::Queue { result, at, took } => self.on_queue(result, at, took),
            Msg::Detail { id, result } => self.on_detail(id, *result),
            Msg::Tail(ev) => {
                self.logs.apply(ev);
                Vec::new()
            }
            Msg::Conn { state, host } => {
                self.status.conn = state;
                if host.is_some() {
                    self.status.host = host;
                }
                Vec::new()
            }
            Msg::PollExtra(extra) => {
                self.insight.on_extra(*extra);
                Vec::new()
            }
            Msg::Pending { id, result } => {
                self.on_pending(id, *result);
                Vec::new()
            }
            Msg::Partitions { result, at } => {
                self.insight.partitions.set(result, at);
                Vec::new()
            }
            Msg::RemoteStats { stats, at } => {
                self.on_stats(stats, at);
                Vec::new()
            }
        }
    }

    fn poll(&mut self) -> Vec<Cmd> {
        if self.status.polling {
            return Vec::new();
        }
        self.status.polling = true;
        vec![self.insight.poll_cmd()]
    }

    fn on_queue(
        &mut self,
        result: Result<Vec<Job>, String>,
        at: NaiveDateTime,
        took: Duration,
    ) -> Vec<Cmd> {
        self.status.polling = false;
        match result {
            Ok(jobs) => {
                self.status.last_ok = Some(at);
                self.status.last_took = Some(took);
                self.status.last_error = None;
                let jobs = self.insight.merge(jobs, self.queue.jobs());
                self.queue.set_jobs(jobs);
                self.adapt_interval();
                let mut cmds = self.selection_changed();
                if cmds.is_empty() {
                    cmds = self.refetch_if_state_changed();
                }
                cmds
            }
            Err(e) => {
                self.status.last_error = Some(e);
                Vec::new()
            }
        }
    }

    /// The selected job moved on (e.g. PENDING to RUNNING): its detail and log paths may have
    /// changed, so fetch them again.
    fn refetch_if_state_changed(&mut self) -> Vec<Cmd> {
        let (Some(job), Some(detail)) = (self.queue.selected_job(), &self.detail.detail) else {
            return Vec::new();
        };
        if self.detail.loading || detail.state.as_ref() == Some(&job.state) {
            return Vec::new();
        }
        self.logs.set_job_state(Some(job.state.clone()));
        self.detail.loading = true;
        vec![Cmd::FetchDetail(job.id.clone())]
    }

    /// Called after anything that may move the selection: fetch the new job's detail and
    /// stop tailing the old one's logs.
    fn selection_changed(&mut self) -> Vec<Cmd> {
        let selected = self.queue.selected_id().cloned();
        if selected == self.detail.id {
            return Vec::new();
        }
        let state = self.queue.selected_job().map(|j| j.state.clone());
        self.detail = DetailState {
            id: selected.clone(),
            loading: selected.is_some(),
            ..DetailState::default()
        };
        self.logs.reset(selected.clone(), state);
        let mut cmds = vec![Cmd::Tail(Vec::new())];
        if let Some(id) = selected {
            cmds.push(Cmd::FetchDetail(id));
        }
        cmds.extend(self.pending_for_selection());
        cmds
    }

    fn on_detail(
        &mut self,
        id: JobId,
        result: Result<(JobDetail, DetailSource), String>,
    ) -> Vec<Cmd> {
        if self.detail.id.as_ref() != Some(&id) {
            return Vec::new(); // no longer selected
        }
        self.detail.loading = false;
        match result {
            Ok((detail, source)) => {
                let tails = self.logs.targets(&id, &detail, source);
                self.detail.detail = Some(detail);
                self.detail.source = Some(source);
                self.detail.error = None;
                tails.map(|t| vec![Cmd::Tail(t)]).unwrap_or_default()
            }
            Err(e) => {
                self.detail.error = Some(e);
                Vec::new()
            }
        }
    }

    fn on_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        if k.kind != crossterm::event::KeyEventKind::Press {
            return Vec::new();
        }
        if k.code == KeyCode::Char('z') && k.modifiers.contains(KeyModifiers::CONTROL) {
            return vec![Cmd::Suspend];
        }
        self.status.note = None;
        self.insight.last_key = Some(self.now);
        if self.insight.view.is_some() && k.code == KeyCode::Esc {
            self.insight.view = None;
            return Vec::new();
        }
        if self.help {
            self.help = false;
            return Vec::new();
        }
        if self.input.is_some() {
            return self.on_input_key(k);
        }
        match self.keymap.action(self.focus, &k) {
            Some(a) => self.on_action(a),
            None => Vec::new(),
        }
    }

    /// The text area of the shown log pane, from the same layout the screen uses.
    pub fn log_viewport(&self) -> Viewport {
        crate::ui::layout(self.size, self)
            .log
            .map(Viewport::of_pane)
            .unwrap_or(Viewport {
                width: 80,
                height: 20,
            })
    }

    /// Rows (or lines) one page moves in the focused pane.
    fn page(&self) -> usize {
        usize::from(self.size.1.saturating_sub(8) / 2).max(1)
    }

    pub fn on_action(&mut self, a: Action) -> Vec<Cmd> {
        let page = self.page();
        match a {
            Action::Quit => {
                self.quit = true;
                return vec![Cmd::Quit];
            }
            Action::Help => self.help = true,
            Action::NextPane | Action::PrevPane => {
                let i = Pane::ALL.iter().position(|p| *p == self.focus).unwrap_or(0);
                let n = Pane::ALL.len();
                let j = if a == Action::NextPane {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                };
                self.focus = Pane::ALL[j];
            }
            Action::Zoom => self.zoom = !self.zoom,
            Action::Select => {
                if self.focus == Pane::Queue
                    && (self.queue.selected_is_collapsed() || self.queue.selected_is_expanded())
                {
                    self.queue.toggle_expand();
                    return self.selection_changed();
                }
                self.zoom = !self.zoom;
            }
            Action::Refresh => {
                let mut cmds = self.poll();
                cmds.extend(self.refresh_pending());
                return cmds;
            }
            Action::Filter => {
                self.input = Some(Input::new(InputKind::Filter, self.queue.filter()));
            }
            Action::Command => self.input = Some(Input::new(InputKind::Command, "")),
            Action::Search => self.input = Some(Input::new(InputKind::Search, "")),
            Action::Escape => {
                if self.zoom {
                    self.zoom = false;
                } else if !self.queue.filter().is_empty() {
                    self.queue.set_filter("");
                    return self.selection_changed();
                } else {
                    self.logs.current_mut().clear_search();
                }
            }
            Action::SortNext => self.queue.cycle_sort(),
            Action::SortReverse => self.queue.reverse_sort(),
            Action::ShowStdout => self.logs.show(crate::logview::Stream::Stdout),
            Action::ShowStderr => self.logs.show(crate::logview::Stream::Stderr),
            Action::Follow => self.logs.current_mut().bottom_and_follow(),
            Action::ToggleWrap => self.logs.current_mut().toggle_wrap(),
            Action::SearchNext => {
                let vp = self.log_viewport();
                self.logs.current_mut().next_match(vp);
            }
            Action::SearchPrev => {
                let vp = self.log_viewport();
                self.logs.current_mut().prev_match(vp);
            }
            Action::Up | Action::Down | Action::Top | Action::Bottom => {
                return self.move_in_focus(a, page)
            }
            Action::PageUp | Action::PageDown => return self.move_in_focus(a, page),
        }
        Vec::new()
    }

    fn move_in_focus(&mut self, a: Action, page: usize) -> Vec<Cmd> {
        match self.focus {
            Pane::Queue => {
                match a {
                    Action::Up => self.queue.select_prev(),
                    Action::Down => self.queue.select_next(),
                    Action::Top => self.queue.select_first(),
                    Action::Bottom => self.queue.select_last(),
                    Action::PageUp => self.queue.page_up(page),
                    _ => self.queue.page_down(page),
                }
                self.selection_changed()
            }
            Pane::Detail => {
                let s = &mut self.detail.scroll;
                let p = u16::try_from(page).unwrap_or(u16::MAX);
                *s = match a {
                    Action::Up => s.saturating_sub(1),
                    Action::Down => s.saturating_add(1),
                    Action::Top => 0,
                    Action::Bottom => u16::MAX / 2,
                    Action::PageUp => s.saturating_sub(p),
                    _ => s.saturating_add(p),
                };
                Vec::new()
            }
            Pane::Log => {
                let vp = self.log_viewport();
                let log = self.logs.current_mut();
                match a {
                    Action::Up => log.scroll_up(1, vp),
                    Action::Down => log.scroll_down(1, vp),
                    Action::Top => log.top(),
                    Action::Bottom => log.bottom_and_follow(),
                    Action::PageUp => log.page_up(vp),
                    _ => log.page_down(vp),
                }
                Vec::new()
            }
        }
    }

    fn on_mouse(&mut self, m: MouseEvent) -> Vec<Cmd> {
        let areas = crate::ui::layout(self.size, self);
        let hit = |r: ratatui::layout::Rect| {
            m.column >= r.x && m.column < r.x + r.width && m.row >= r.y && m.row < r.y + r.height
        };
        let pane = if hit(areas.queue) {
            Pane::Queue
        } else if areas.detail.is_some_and(hit) {
            Pane::Detail
        } else if areas.log.is_some_and(hit) {
            Pane::Log
        } else {
            return Vec::new();
        };
        match m.kind {
            MouseEventKind::Down(_) => {
                self.focus = pane;
                if pane == Pane::Queue {
                    let body = areas.queue.height.saturating_sub(3);
                    let row = m.row.saturating_sub(areas.queue.y + 2);
                    if row < body {
                        self.queue.click(usize::from(row), usize::from(body));
                        return self.selection_changed();
                    }
                }
                Vec::new()
            }
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let prev = self.focus;
                self.focus = pane;
                let a = if m.kind == MouseEventKind::ScrollDown {
                    Action::Down
                } else {
                    Action::Up
                };
                let cmds = self.move_in_focus(a, 3);
                self.focus = prev;
                cmds
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
