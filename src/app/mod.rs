//! The one owner of UI state. `update` takes a message and returns work for the workers;
//! it does no I/O and never awaits, so every behaviour here is unit-testable.

// First, so that `view!` is in scope in every module after it.
#[macro_use]
pub(crate) mod component;
mod adaptive;
pub mod budget;
pub mod checks;
mod cluster;
mod clusters;
pub mod columns;
mod conn;
pub mod departures;
pub mod deps;
mod edit;
mod events;
pub mod files;
mod form;
mod form_state;
pub mod history;
mod input;
pub mod insight;
pub mod live;
mod logs;
mod nav;
mod ops;
mod overlay;
pub mod partitions;
pub(crate) mod relaunch;
mod retry;
pub mod session;
mod shell;
mod triage;
mod tunnels;
pub mod usage;

use std::time::Duration;

use chrono::NaiveDateTime;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub use cluster::{ClusterState, Listed, Status};
pub use edit::{EditForm, EDIT_FIELDS};
pub use events::{merged_events, notifications, Event, EventKind, Events, Own};
pub use files::{FilesState, FilesView};
pub use form::{Busy, FormState, LaunchContext, FIELDS};
pub use input::{Input, InputKind, COMMANDS};
pub use logs::LogState;
pub use ops::{Answer, Choice, Confirm};
pub use overlay::Overlay;
pub use retry::{RetryState, RETRY_CHECK_SECS};
pub use triage::{TriageStatus, TriageView};

use crate::action::{Cmd, Msg};
use crate::keymap::{Action, Keymap, Pane};
use crate::logview::layout::Viewport;
use crate::payload::DetailSource;
use crate::queue::QueueView;
use crate::slurm::model::{Job, JobDetail, JobId};
use crate::theme::Theme;

/// The selected job's detail as last fetched.
#[derive(Debug, Clone, Default)]
pub struct DetailState {
    pub id: Option<JobId>,
    pub detail: Option<JobDetail>,
    pub source: Option<DetailSource>,
    pub loading: bool,
    pub error: Option<String>,
    pub scroll: u16,
    /// Why a finished job ended as it did (asked for after its detail arrived).
    pub triage: Option<TriageView>,
}

/// The dashboard's state: the cluster, the views over its jobs (queue, detail, logs), and
/// what the user is doing (focus, overlays, forms, the line being typed).
pub struct App {
    /// The cluster being worked on: the one a message is about while it is handled, else
    /// the one on screen (the selected job's). The others wait in `parked`.
    pub cluster: ClusterState,
    pub parked: Vec<ClusterState>,
    /// The cluster chosen with `:cluster NAME` (the launch form's, when no job is selected).
    pub focus_cluster: u16,
    pub keymap: Keymap,
    pub theme: Theme,
    pub queue: QueueView,
    pub detail: DetailState,
    pub logs: LogState,
    pub focus: Pane,
    pub zoom: bool,
    pub help: bool,
    /// The help overlay's first line shown, when it is taller than the terminal.
    pub help_scroll: u16,
    pub input: Option<Input>,
    /// A short note for the user on the status bar (e.g. an unknown command).
    pub note: Option<String>,
    pub now: NaiveDateTime,
    /// Terminal size, for paging and mouse hits (set from resize events, never by drawing).
    pub size: (u16, u16),
    pub quit: bool,
    /// The key that edits a pending job, for hints (from the keymap).
    pub edit_key: Option<String>,
    /// `D` cancels without asking (`[ui] quick_cancel`).
    pub quick_cancel: bool,
    /// A question on the bottom line (confirm a cancel, ...).
    pub confirm: Option<Confirm>,
    /// The edit form of a pending job, when open.
    pub edit: Option<EditForm>,
    /// The launch form, when open.
    pub form: Option<FormState>,
    /// Local ports forwarded to what running jobs serve.
    pub tunnels: tunnels::Tunnels,
    /// `:history` and finished jobs' efficiency reports.
    pub history: history::HistoryState,
    /// The column chooser (`c`), while open.
    pub columns: Option<columns::ColumnChooser>,
    /// Live use of running jobs (sstat, nvidia-smi), sampled while selected.
    pub live: live::LiveState,
    /// The files view (`y`, `:files`) and where fetches go.
    pub files: FilesState,
    /// The user's dependency chains (the detail pane, `:deps`).
    pub deps: deps::DepsState,
}

impl App {
    /// The App the tests and benchmarks start from: cluster `dev` showing your jobs, the
    /// default keys, no colour, the queue's default columns, a 5 s refresh, at `now`.
    #[doc(hidden)]
    pub fn fixture(now: NaiveDateTime) -> App {
        App::new(
            "dev",
            "your jobs",
            Keymap::default(),
            Theme::new(false),
            QueueView::default(),
            Duration::from_secs(5),
            now,
        )
    }

    pub fn new(
        cluster: &str,
        scope: &str,
        keymap: Keymap,
        theme: Theme,
        queue: QueueView,
        poll_interval: Duration,
        now: NaiveDateTime,
    ) -> App {
        let edit_key = keymap.key_for(Action::Edit, Pane::Queue);
        App {
            cluster: ClusterState::new(cluster, scope, poll_interval, now),
            parked: Vec::new(),
            focus_cluster: 0,
            keymap,
            theme,
            queue,
            detail: DetailState::default(),
            logs: LogState::new(),
            focus: Pane::Queue,
            zoom: false,
            help: false,
            help_scroll: 0,
            input: None,
            note: None,
            now,
            size: (120, 40),
            quit: false,
            edit_key,
            quick_cancel: true,
            confirm: None,
            edit: None,
            form: None,
            tunnels: tunnels::Tunnels::default(),
            history: history::HistoryState::default(),
            columns: None,
            live: live::LiveState::default(),
            files: FilesState::default(),
            deps: deps::DepsState::default(),
        }
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Cmd> {
        let Some(msg) = self.history.defer(msg) else {
            return Vec::new();
        };
        match msg {
            Msg::Cluster(ix, mut m) => {
                m.for_each_id(&mut |id| id.set_cluster(ix));
                self.activate(ix);
                if self.multi() {
                    let name = crate::slurm::shared::SharedStr::from(&self.cluster.name);
                    m.for_each_job(&mut |j| j.cluster = name.clone());
                }
                self.update(*m)
            }
            Msg::Key(k) => self.on_key(k),
            Msg::Mouse(m) => {
                self.cluster.insight.last_key = Some(self.now);
                self.on_mouse(m)
            }
            Msg::Resize(w, h) => {
                self.size = (w, h);
                let queue = self.areas().queue;
                self.queue
                    .set_viewport(crate::layout::queue_body_height(queue.height));
                Vec::new()
            }
            Msg::Tick(now) => {
                self.now = now;
                let mut cmds = self.adapt_interval();
                cmds.extend(self.cluster.retry.tick(now));
                cmds.extend(self.cluster.insight.partitions_due(false, now));
                cmds
            }
            Msg::PollDue => {
                let every = chrono::Duration::from_std(self.cluster.status.poll_interval);
                self.cluster.status.next_refresh = every.ok().map(|d| self.now + d);
                if self.cluster.checks.in_flight {
                    // A check the budget still holds is asked again: a full read may be
                    // due by now.
                    if self.cluster.budget.take(budget::Kind::Check).is_none() {
                        return Vec::new();
                    }
                    self.cluster.checks.replaced();
                }
                // Between full reads, a state check where the cluster answers one.
                let every = self.cluster.status.poll_interval;
                if !self.cluster.status.polling {
                    if let Some(check) = self.cluster.checks.due(self.now, every) {
                        return vec![check];
                    }
                }
                self.poll()
            }
            Msg::SlurmVersion(v) => {
                self.cluster.checks.version = Some(v);
                self.adapt_interval()
            }
            Msg::StateCheck { result, at } => match self.cluster.checks.on_answer(result, at) {
                checks::Outcome::Same => {
                    let c = &mut self.cluster.insight;
                    c.pace.steady(&c.bounds);
                    self.adapt_interval()
                }
                checks::Outcome::FullRead => self.poll(),
            },
            Msg::Queue(refresh) => self.on_refresh(*refresh),
            Msg::SiteLimit(result) => {
                self.cluster.budget.set_site(result);
                self.adapt_interval()
            }
            Msg::Detail { id, result } => self.on_detail(id, *result),
            Msg::Tail(ev) => {
                if matches!(&ev.kind, crate::logview::TailKind::Data { bytes, .. } if !bytes.is_empty())
                {
                    self.cluster
                        .insight
                        .pace
                        .log_wrote(self.now, &self.cluster.insight.bounds);
                }
                self.logs.apply(ev);
                Vec::new()
            }
            Msg::Conn { state, host } => self.on_conn(state, host),
            Msg::OpDone { op, result } => self.on_op_done(op, result),
            Msg::Edited { id, edit, result } => self.on_edited(id, edit, result),
            Msg::Limits(result) => {
                self.cluster.partitions = Some(result);
                self.check_edit();
                self.history_partitions();
                Vec::new()
            }
            Msg::JobUse { id, result } => self.on_job_use(id, *result),
            Msg::History { generation, result } => self.on_history(generation, *result),
            Msg::Relaunch { id, result } => self.on_relaunch(id, *result),
            Msg::Recovered { id, result } => self.on_recovered(id, *result),
            Msg::Rerun { id, result } => self.on_rerun(id, *result),
            Msg::Triaged { id, result } => self.on_triaged(id, *result),
            Msg::Forwarded {
                id,
                node,
                port,
                path,
                result,
            } => {
                let out = self.tunnels.on_forwarded(id, node, port, path, result);
                self.apply(out)
            }
            Msg::Retries(result) => self.on_retries(result),
            Msg::LaunchFacts(r) => self.on_launch_facts(r),
            Msg::TestOnly(r) => self.on_test_only(r),
            Msg::Submitted(r) => {
                // The new launch's chain (job dir, attempts): at the next tick.
                self.cluster.retry.last = None;
                self.on_submitted(*r)
            }
            Msg::RegistryJobs(r) => self.on_registry_jobs(r),
            Msg::Pending { id, result } => {
                self.cluster.insight.on_pending(id, *result, self.now);
                Vec::new()
            }
            Msg::Partitions { result, at } => {
                self.cluster.insight.partitions.set(result, at);
                Vec::new()
            }
            Msg::Usage { days, result, at } => {
                self.cluster.usage.on_read(days, *result, at);
                Vec::new()
            }
            Msg::Waits { result, at } => {
                self.cluster.waits.on_read(result, at);
                Vec::new()
            }
            Msg::Live { id, result, at } => self.on_live(id, *result, at),
            Msg::RemoteStats { stats, at } => {
                self.cluster.budget.observe(at, stats.rpcs.ctld);
                self.cluster.insight.on_stats(stats, at);
                Vec::new()
            }
            Msg::Files(m) => self.on_files_msg(m),
            Msg::Note(text) => {
                self.note = Some(text);
                Vec::new()
            }
            Msg::TemplateSaved { name, spec, result } => {
                self.on_template_saved(name, *spec, result)
            }
            Msg::ClusterAdded(name) => {
                self.focus_cluster_named(&name);
                self.note = Some(format!("added cluster `{name}`"));
                Vec::new()
            }
        }
    }

    /// A refresh, unless one is already out (the timer, `r`, reconnecting).
    fn poll(&mut self) -> Vec<Cmd> {
        if self.cluster.status.polling {
            return Vec::new();
        }
        self.poll_now()
    }

    /// A refresh that must see a change made just now (an action, a submission): asked for
    /// even while one is out, which may predate the change; the worker hub runs it after
    /// that one.
    fn poll_now(&mut self) -> Vec<Cmd> {
        vec![self.cluster.poll_cmd()]
    }

    /// One refresh's answer, in the order its parts happened: the connection, the sacct
    /// records and estimates that came with the queue, then the queue.
    fn on_refresh(&mut self, r: crate::payload::Refresh) -> Vec<Cmd> {
        let mut cmds = Vec::new();
        if let Some((state, host)) = r.conn {
            cmds.extend(self.on_conn(state, host));
        }
        if let Some(extra) = r.extra {
            cmds.extend(self.on_poll_extra(extra));
        }
        cmds.extend(self.on_queue(r.result, r.at, r.took));
        cmds
    }

    /// The sacct part of a refresh: final states are logged (failures triaged), then the
    /// cluster settles the jobs that left its queue.
    fn on_poll_extra(&mut self, extra: crate::payload::PollExtra) -> Vec<Cmd> {
        let mut cmds = self.final_states_known(&extra.finished);
        let left = self.cluster.on_poll_extra(&extra, self.now);
        cmds.extend(self.record(left));
        cmds
    }

    fn on_queue(
        &mut self,
        result: Result<Vec<Job>, String>,
        at: NaiveDateTime,
        took: Duration,
    ) -> Vec<Cmd> {
        let jobs = match result {
            Ok(jobs) => jobs,
            Err(e) => {
                self.cluster.on_failed(e);
                return Vec::new();
            }
        };
        let ix = self.multi().then_some(self.cluster.ix);
        let previous = self.queue.jobs_on(ix);
        let listed = self.cluster.on_jobs(jobs, &previous, at, took, self.now);
        drop(previous);
        self.set_own_jobs(listed.rows);
        self.rebuild_deps();
        let interval = self.adapt_interval();
        let mut cmds = self.selection_changed();
        if cmds.is_empty() {
            cmds = self.refetch_if_state_changed();
            cmds.extend(
                self.cluster
                    .insight
                    .limit_reason_appeared(self.queue.selected_job()),
            );
        }
        cmds.extend(interval);
        cmds.extend(listed.cmds);
        let out = self.tunnels.close_ended(self.cluster.ix, &listed.running);
        cmds.extend(self.apply(out));
        cmds.extend(self.live_on_refresh(&listed.running));
        cmds.extend(self.record(listed.events));
        cmds.extend(self.session_warnings());
        cmds
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
            match self.history_detail(&id) {
                Some(known) => cmds.extend(self.on_detail(id, Ok(known))),
                None => cmds.push(Cmd::FetchDetail(id)),
            }
        }
        cmds.extend(self.cluster.insight.pending_for(self.queue.selected_job()));
        cmds.extend(self.cluster.waits.due(self.queue.selected_job(), self.now));
        cmds.extend(self.live_due());
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
            Ok((mut detail, source)) => {
                // sacct does not record where a launched job's logs went; the job dir does.
                if detail.stdout.is_none() {
                    if let Some(c) = self.launch_of(&id) {
                        let (out, err) = c.log_paths(id.base());
                        detail.stdout = Some(out);
                        detail.stderr = Some(err);
                        if detail.work_dir.as_deref().is_none_or(str::is_empty) {
                            detail.work_dir = Some(c.job_dir.clone());
                        }
                    }
                }
                let tails = self.logs.targets(&id, &detail, source);
                let triage = self.triage_after_detail(&id, &detail, source);
                let refined = self.final_states_known(std::slice::from_ref(&detail));
                self.detail.detail = Some(detail);
                self.detail.source = Some(source);
                self.detail.error = None;
                let mut cmds = tails.map(|t| vec![Cmd::Tail(t)]).unwrap_or_default();
                cmds.extend(triage);
                cmds.extend(refined);
                cmds
            }
            Err(e) => {
                self.detail.error = Some(e);
                Vec::new()
            }
        }
    }

    /// Lands a component's answer: the one place the status bar's note, the typed line
    /// and the bottom-line question are set from a component.
    pub(super) fn apply(&mut self, out: component::Out) -> Vec<Cmd> {
        if let Some(note) = out.note {
            self.note = Some(note);
        }
        if let Some(prompt) = out.prompt {
            self.input = Some(prompt);
        }
        if let Some(confirm) = out.confirm {
            self.confirm = Some(confirm);
        }
        out.cmds
    }

    fn on_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        if k.kind != crossterm::event::KeyEventKind::Press {
            return Vec::new();
        }
        if k.code == KeyCode::Char('z') && k.modifiers.contains(KeyModifiers::CONTROL) {
            return vec![Cmd::Suspend];
        }
        self.note = None;
        self.cluster.insight.last_key = Some(self.now);
        self.on_overlay_key(k)
    }

    /// Where each pane is on the screen, as the screen draws it.
    pub fn areas(&self) -> crate::layout::Areas {
        crate::layout::areas(self.size, self.zoom, self.focus, self.logs.one_file())
    }

    /// The text area of the shown log pane, from the same layout the screen uses.
    pub fn log_viewport(&self) -> Viewport {
        self.areas().log.map(Viewport::of_pane).unwrap_or(Viewport {
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
            Action::Help => {
                self.help = true;
                self.help_scroll = 0;
            }
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
            Action::Refresh => return self.refresh_now(),
            Action::Filter => {
                self.input = Some(Input::new(InputKind::Filter, self.queue.filter()));
            }
            Action::Command => self.input = Some(Input::new(InputKind::Command, "")),
            Action::Search => self.input = Some(Input::new(InputKind::Search, "")),
            Action::Escape => {
                if self.zoom {
                    self.zoom = false;
                } else if self.queue.clear_marks() {
                    self.note = Some("marks cleared".into());
                } else if !self.queue.filter().is_empty() {
                    self.queue.set_filter("");
                    return self.selection_changed();
                } else if self.history.open {
                    return self.close_history();
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
            Action::Cancel
            | Action::CancelNow
            | Action::Hold
            | Action::Release
            | Action::Requeue
            | Action::Prioritize => return self.on_job_action(a),
            Action::Edit => return self.open_edit(),
            Action::Mark => {
                if self.queue.toggle_mark() {
                    self.queue.select_next();
                    return self.selection_changed();
                }
            }
            Action::MarkRange => {
                let n = self.queue.mark_range();
                self.note = Some(format!(
                    "marked {n} rows ({} in all)",
                    self.queue.mark_count()
                ));
            }
            Action::MarkAll => {
                let n = self.queue.mark_all_shown();
                self.note = Some(format!("marked {n} rows (esc clears)"));
            }
            Action::NewJob => return self.open_form(),
            Action::Shell => return self.open_shell(None),
            Action::Forward => {
                let out = self.tunnels.open_forward(&view!(self));
                return self.apply(out);
            }
            Action::HistoryOlder => return self.history_days(true),
            Action::HistoryNewer => return self.history_days(false),
            Action::Relaunch => return self.relaunch(),
            Action::Files => return self.open_files(),
            Action::Copy => return self.copy(),
            Action::Columns => return self.open_columns(),
        }
        Vec::new()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod clusters_tests;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod ops_tests;
#[cfg(test)]
mod tests;
