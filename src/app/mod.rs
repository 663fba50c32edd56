//! The one owner of UI state. `update` takes a message and returns work for the workers;
//! it does no I/O and never awaits, so every behaviour here is unit-testable.
//!
//! App is made of components (see `component.rs`): each feature's state with handlers
//! that read a `View` and hand back an `Out`, landed by `App::apply`. App itself keeps seven
//! `impl` blocks, each a router: this file (building it, routing messages, landing an
//! `Out`), `input.rs` (keys and `:` commands), `overlay.rs` (the overlay stack and its
//! keys), `clusters.rs` (the clusters and where each command goes), `refresh.rs` (rows
//! landing: a refresh's and what follows it, launches'), `selection.rs` (moving, the
//! selected job's detail) and `ops.rs` (acting on jobs).

// First, so that `view!` is in scope in every module after it.
#[macro_use]
pub(crate) mod component;
mod adaptive;
mod adopt;
pub mod budget;
pub mod checks;
mod cluster;
mod clusters;
pub mod cmdlog;
pub mod columns;
mod confirm;
mod conn;
mod copy;
pub mod custom;
pub mod departures;
pub mod deps;
mod detail;
mod detail_view;
mod edit;
mod events;
mod events_view;
pub mod files;
mod form;
mod form_state;
pub mod grep;
pub mod help;
pub mod history;
mod input;
pub mod insight;
pub mod kept;
mod launching;
pub mod lists;
pub mod live;
mod logs;
pub mod maintenance;
mod ops;
mod out;
mod overlay;
pub mod partitions;
pub mod progress;
mod prompt;
mod refresh;
pub(crate) mod relaunch;
mod retry;
mod selection;
pub mod session;
mod shell;
pub mod sooner;
pub mod status_view;
pub mod top;
mod triage;
mod tunnels;
pub mod usage;

use std::time::Duration;

use chrono::NaiveDateTime;

pub use cluster::{ClusterState, Clusters, Listed, Status};
pub use confirm::{Answer, Choice, Confirm};
pub use detail::{DetailState, DetailView, ProgressView};
pub use edit::{EditForm, EDIT_FIELDS};
pub use events::{merged_events, notifications, Event, EventKind, Events, Own};
pub use events_view::EventsView;
pub use files::{FilesState, FilesView};
pub use form_state::{Busy, FormState, LaunchContext, FIELDS};
pub use input::COMMANDS;
pub use logs::LogState;
pub(crate) use overlay::overlay_list;
pub use overlay::Overlay;
pub use prompt::{Input, InputKind};
pub use retry::{RetryState, RETRY_CHECK_SECS};
pub use triage::{TriageStatus, TriageView};

use crate::action::{Cmd, Msg};
use crate::keymap::{Action, Keymap, Pane};
use crate::logview::layout::Viewport;
#[cfg(test)]
use crate::payload::DetailSource;
use crate::queue::QueueView;
#[cfg(test)]
use crate::slurm::model::{Job, JobId};
use crate::theme::Theme;

/// The states App holds for the overlays, from the overlay list (`overlay.rs`): one field
/// per line, named and typed as the line says.
macro_rules! overlay_states {
    ($(
        $(#[$doc:meta])* $kind:ident $(($shows:ty))? = $field:ident: $state:ty,
    )*) => {
        /// Every overlay's state, one field per entry of the overlay list, bottom first. An
        /// overlay is open when its state says so ([`component::Overlaid`]); some are read
        /// while closed too (`deps` by the detail pane, `custom`'s keys by the keymap, `files`
        /// for where fetches go, `cmdlog` records every command).
        #[derive(Default)]
        pub struct Overlays {
            $( $(#[$doc])* pub $field: $state, )*
        }
    };
}

overlay_list!(overlay_states);

/// The dashboard's state: the cluster, the views over its jobs (queue, detail, logs), and
/// what the user is doing (focus, overlays, forms, the line being typed).
pub struct App {
    /// Every cluster, by number (`clusters[ix]`); a message about one comes as
    /// `Msg::Cluster(ix, ..)` and is handled with that number.
    pub clusters: cluster::Clusters,
    /// The cluster chosen with `:cluster NAME` (the launch form's, when no job is selected).
    pub focus_cluster: u16,
    pub keymap: Keymap,
    pub theme: Theme,
    /// The queue pane's rows: the queue's (`jobs`), or `:history`'s (`history`) while it is
    /// open; `shown()` is the one on screen.
    pub queue: lists::Lists,
    pub detail: DetailState,
    /// The selection moved (or its job moved on) while a message was handled: the reads
    /// for what is now on screen are the user's, whatever the message was.
    pub(super) selection_read: bool,
    pub logs: LogState,
    pub focus: Pane,
    pub zoom: bool,
    /// Every overlay's state, open or not (what is open: [`App::open_overlays`]).
    pub overlays: Overlays,
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
    /// Local ports forwarded to what running jobs serve.
    pub tunnels: tunnels::Tunnels,
    /// `:history` and finished jobs' efficiency reports.
    pub history: history::HistoryState,
    /// Live use of running jobs (sstat, nvidia-smi), sampled while selected.
    pub live: live::LiveState,
    /// `:sooner`: changes that may start the selected pending job sooner, checked.
    pub sooner: sooner::SoonerState,
    /// Progress and ETA read from the logs tailed this session (`[progress]`).
    pub progress: progress::ProgressState,
    /// The status bar's worked-out parts, by cluster number (`status_view.rs`).
    pub status_parts: Vec<status_view::StatusParts>,
}

impl App {
    /// The App the tests and benchmarks start from: cluster `dev` showing your jobs, the
    /// default keys, no colour, the queue's default columns, a 5 s refresh, at `now`.
    #[doc(hidden)]
    pub fn fixture(now: NaiveDateTime) -> App {
        App::new(
            ClusterState::new("dev", "your jobs", Duration::from_secs(5), now),
            Keymap::default(),
            Theme::new(false),
            QueueView::default(),
            now,
        )
    }

    pub fn new(
        first: ClusterState,
        keymap: Keymap,
        theme: Theme,
        queue: QueueView,
        now: NaiveDateTime,
    ) -> App {
        let edit_key = keymap.key_for(Action::Edit, Pane::Queue);
        App {
            clusters: cluster::Clusters::one(first),
            focus_cluster: 0,
            keymap,
            theme,
            queue: lists::Lists::new(queue, QueueView::new(history::columns())),
            detail: DetailState::default(),
            selection_read: false,
            logs: LogState::new(),
            focus: Pane::Queue,
            zoom: false,
            overlays: Overlays::default(),
            note: None,
            now,
            size: (120, 40),
            quit: false,
            edit_key,
            quick_cancel: true,
            tunnels: tunnels::Tunnels::default(),
            history: history::HistoryState::default(),
            live: live::LiveState::default(),
            sooner: sooner::SoonerState::default(),
            progress: progress::ProgressState::default(),
            status_parts: Vec::new(),
        }
        .derived()
    }

    /// Handles a message (`dispatch`), then works out again what the detail pane
    /// shows. The event loop comes in by `handle`, which also plans the reads and does the
    /// same last; tests and benchmarks drive the App through here.
    pub fn update(&mut self, msg: Msg) -> Vec<Cmd> {
        let cmds = self.dispatch(msg);
        self.derive();
        cmds
    }

    /// Works out what the detail pane shows of the selected job from the states about it
    /// (`detail_view.rs`) and the status bar's parts (`status_view.rs`), once a message is
    /// handled: drawing only reads them. The clock's tick is a message too, so text that
    /// counts time stays current.
    fn derive(&mut self) {
        let v = view!(self, self.view_cluster());
        let view = detail_view::derive(&v, &self.progress, &self.sooner, self.edit_key.as_deref());
        self.detail.view = view;
        self.status_parts = status_view::derive(self.queue.shown(), &self.clusters, self.now);
        self.overlays.events_view.derive(&self.clusters);
    }

    fn derived(mut self) -> App {
        self.derive();
        self
    }

    /// Handles a message: one about a cluster (`Msg::Cluster(ix, ..)`) with that cluster's
    /// number, any other (a key, the clock) with the number of the cluster on screen.
    pub(super) fn dispatch(&mut self, msg: Msg) -> Vec<Cmd> {
        match msg {
            Msg::Cluster(ix, mut m) => {
                m.set_cluster(ix);
                if self.multi() {
                    let name = crate::slurm::shared::SharedStr::from(&self.clusters[ix].name);
                    m.set_cluster_name(&name);
                }
                self.on_msg(ix, *m)
            }
            other => {
                let ix = self.view_cluster();
                self.on_msg(ix, other)
            }
        }
    }

    /// Handles `msg`, about cluster `ix`.
    pub(super) fn on_msg(&mut self, ix: u16, msg: Msg) -> Vec<Cmd> {
        match msg {
            Msg::Cluster(..) => self.dispatch(msg),
            Msg::Key(k) => self.on_key(k),
            Msg::Mouse(m) => {
                self.clusters[ix].insight.last_key = Some(self.now);
                self.on_mouse(m)
            }
            Msg::Resize(w, h) => {
                self.size = (w, h);
                let queue = self.areas().queue;
                self.queue
                    .shown_mut()
                    .set_viewport(crate::layout::queue_body_height(queue.height));
                Vec::new()
            }
            Msg::Tick(now) => {
                self.now = now;
                let mut cmds = self.adapt_interval(ix);
                // The selected job's second sample finishes the answer the user asked for.
                let out = self.live.followup_due(&view!(self, ix));
                self.selection_read |= !out.cmds.is_empty();
                cmds.extend(self.apply(out));
                cmds.extend(self.clusters[ix].retry.tick(now));
                // Job top's repeats while it is open: background reads.
                let out = self.overlays.top.due(&view!(self, ix));
                cmds.extend(self.apply(out));
                let shown = self.overlays.view == Some(insight::View::Partitions)
                    && ix == self.view_cluster();
                cmds.extend(self.clusters[ix].insight.partitions_due(shown, now));
                cmds.extend(self.clusters[ix].maintenance.due(now));
                self.form_windows();
                cmds
            }
            Msg::Files(m) => {
                let out = self.overlays.files.on_msg(&view!(self, ix), m);
                self.apply(out)
            }
            Msg::Note(text) => {
                self.say(text);
                Vec::new()
            }
            Msg::ClusterAdded(name) => {
                self.focus_cluster_named(&name);
                self.say(format!("added cluster `{name}`"));
                Vec::new()
            }
            Msg::Ran(rec) => {
                self.overlays.cmdlog.push(ix, *rec);
                Vec::new()
            }
            Msg::Custom(out) => {
                let out = self.overlays.custom.finished(*out);
                self.apply(out)
            }
            Msg::Grep(report) => {
                let chains = &self.clusters[ix].chains;
                let sweep = |j: &crate::slurm::model::JobId| {
                    let task = j.array_task()?;
                    let run = chains.get(&j.base())?.sweep.get(task as usize)?;
                    Some(run.clone()).filter(|r| !r.is_empty())
                };
                self.logs.found = report.log_paths();
                let out = self.overlays.grep.land(*report, &sweep);
                self.apply(out)
            }
            Msg::Poll(m) => self.on_poll_msg(ix, m),
            Msg::Insight(m) => self.on_insight_msg(ix, m),
            Msg::Launch(m) => self.on_launch_msg(ix, m),
            Msg::Job(m) => self.on_job_msg(ix, m),
        }
    }

    /// The status bar's note. The one place it is written: components say theirs in their
    /// [`component::Out`], which [`App::land`] passes here; the App's own paths call it.
    pub(crate) fn say(&mut self, text: impl Into<String>) {
        self.note = Some(text.into());
    }

    /// The note is cleared (a key that answers nothing new, a finished action).
    pub(crate) fn unsay(&mut self) {
        self.note = None;
    }

    /// Lands a component's answer (see [`App::land`]) that did not come from an overlay.
    pub(super) fn apply(&mut self, out: component::Out) -> Vec<Cmd> {
        self.land(None, out)
    }

    /// Lands a component's answer: the one place the status bar's note, the typed line,
    /// the bottom-line question and the rows' busy marks are set from a component, the
    /// overlay that answered (`from`) is closed (before what it opens: a question may ask
    /// another), a selection it asked for is made and what it passes is handed on.
    pub(super) fn land(&mut self, from: Option<Overlay>, out: component::Out) -> Vec<Cmd> {
        let mut cmds = out.cmds;
        if let Some(id) = out.select {
            if !self.queue.shown_mut().select_id(&id) {
                self.queue.shown_mut().set_filter("");
                if !self.queue.shown_mut().select_id(&id) {
                    self.say(format!("job {id} is not shown in the queue"));
                    return cmds;
                }
            }
            cmds.extend(self.selection_changed());
        }
        if let (true, Some(o)) = (out.close, from) {
            self.close_overlay(o);
        }
        if let Some(note) = out.note {
            self.say(note);
        }
        if let Some(prompt) = out.prompt {
            self.overlays.input = Some(prompt);
        }
        if let Some(confirm) = out.confirm {
            self.overlays.confirm = Some(confirm);
        }
        if let Some((ids, label)) = out.busy {
            self.queue.shown_mut().set_busy(&ids, label);
        }
        if let Some(columns) = out.columns {
            self.queue.jobs.set_columns(columns);
        }
        if let Some(form) = out.form {
            self.overlays.form = Some(*form);
            cmds.extend(self.form_opened());
        }
        if let Some(pane) = out.focus {
            self.focus = pane;
        }
        if let Some(a) = out.then {
            cmds.extend(self.on_action(a));
        }
        if let Some(j) = out.jump {
            if self.queue.shown().selected_id() == Some(&j.job) {
                let pane = match j.stream {
                    crate::logview::Stream::Stdout => &mut self.logs.stdout,
                    crate::logview::Stream::Stderr => &mut self.logs.stderr,
                };
                pane.go_to_line(j.line, &j.text);
            }
        }
        if let Some(p) = out.pass {
            cmds.extend(self.pass(p));
        }
        cmds
    }

    /// `:history [DAYS]`: its rows in place of the queue's.
    pub(super) fn open_history(&mut self, days: Option<u32>) -> Vec<Cmd> {
        if !self.history.open {
            self.queue.show_history(true);
            let height = crate::layout::queue_body_height(self.areas().queue.height);
            self.queue.shown_mut().set_viewport(height);
        }
        let v = view!(self, self.view_cluster(), queue: &self.queue.jobs);
        let out = self.history.open(&v, &mut self.queue.history, days);
        self.history_out(out)
    }

    /// Lands `:history`'s answer; while its rows are shown, the selection is followed.
    fn history_out(&mut self, out: component::Out) -> Vec<Cmd> {
        let mut cmds = self.apply(out);
        if self.history.open {
            cmds.extend(self.selection_changed());
        }
        cmds
    }

    /// esc with nothing else to clear: back to the queue (kept current while the history
    /// was shown).
    fn close_history(&mut self) -> Vec<Cmd> {
        self.queue.show_history(false);
        self.history.close();
        self.selection_changed()
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
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod clusters_tests;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod ops_tests;
#[cfg(test)]
mod tests;
