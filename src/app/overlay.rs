//! What is drawn over the panes, as one stack read by key handling, drawing and the mouse.
//!
//! The stack is derived from the state each overlay already has (`help`, `confirm`, `input`,
//! `form`, `edit`, `files.view`, `events_view.open` and `view`); there is
//! no second record of what is open that could disagree with it. The one rule: a key goes
//! to the topmost overlay, and the keymap runs only when none is open (or when the topmost,
//! a full-screen insight view, lets the key through). Here too: each overlay's keys routed
//! to its component (the forms, the files view, `:deps`, `:events`, the insight views, the
//! column chooser, help), and opening the launch form and the column chooser.

use crossterm::event::{KeyCode, KeyEvent};

use super::insight::View;
use super::{App, FormState};
use crate::action::Cmd;
use crate::keymap::{Action, Pane};

/// One kind of overlay. The variants are in stacking order, bottom first: when several are
/// open, a later one is drawn over an earlier one and takes the keys. The order follows how
/// they are opened: the full-screen views (`:partitions`/`:stats`/`:usage`, then `:events`,
/// `:deps`, then the files view) are opened from the panes; the edit and launch forms open over
/// them (the launch form also arrives by itself after `L`, over whatever is open then); the
/// line being typed and a question sit on the bottom line above all of these; help is
/// topmost (it opens from the files view too, and any key closes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    /// `:partitions`, `:stats` or `:usage`: a full-screen view that leaves the status bar
    /// and lets through the keys it does not use (esc closes it; `r` reads `:usage` again).
    Insight(View),
    /// `:events`, every cluster's event log.
    Events,
    /// `:deps`, the user's dependency chains as a tree.
    Deps,
    /// Job top (`t`, `:jobtop`): a running job's processes per node.
    Top,
    /// The command log (`@`, `:log`): the remote commands run, newest first.
    CmdLog,
    /// The user's own commands: `:commands`, or the last one's output.
    Custom,
    /// `:grep`, `:errors`: matching lines of many jobs' logs.
    Grep,
    /// The files view of a job (`y`, `:files`).
    Files,
    /// The column chooser (`c`).
    Columns,
    /// The edit form of a pending job (`E`).
    Edit,
    /// The launch form (`n`, `L`).
    Form,
    /// The line being typed (`:`, `/`, filter, the shell and forward prompts), on the
    /// status bar.
    Input,
    /// A question on the status bar (confirm a cancel, ...).
    Confirm,
    /// The key list (`?`).
    Help,
}

impl Overlay {
    /// Whether the panes under it take no mouse events. The line being typed sits on the
    /// status bar and leaves the panes clickable.
    pub fn covers_panes(self) -> bool {
        self != Overlay::Input
    }
}

impl App {
    /// What is open over the panes, bottom first (the order of [`Overlay`]).
    pub fn overlays(&self) -> Vec<Overlay> {
        let open = [
            self.view.map(Overlay::Insight),
            self.events_view.open.then_some(Overlay::Events),
            self.deps.open.then_some(Overlay::Deps),
            self.top.open.then_some(Overlay::Top),
            self.cmdlog.open.then_some(Overlay::CmdLog),
            self.custom.shown.is_some().then_some(Overlay::Custom),
            self.grep.open.then_some(Overlay::Grep),
            self.files.view.is_some().then_some(Overlay::Files),
            self.columns.is_some().then_some(Overlay::Columns),
            self.edit.is_some().then_some(Overlay::Edit),
            self.form.is_some().then_some(Overlay::Form),
            self.input.is_some().then_some(Overlay::Input),
            self.confirm.is_some().then_some(Overlay::Confirm),
            self.help.then_some(Overlay::Help),
        ];
        open.into_iter().flatten().collect()
    }

    /// Closes overlay `o` (its component asked to).
    pub(super) fn close_overlay(&mut self, o: Overlay) {
        match o {
            Overlay::Insight(_) => self.view = None,
            Overlay::Events => self.events_view.open = false,
            Overlay::Deps => self.deps.open = false,
            Overlay::Top => self.top.open = false,
            Overlay::CmdLog => self.cmdlog.open = false,
            Overlay::Custom => self.custom.shown = None,
            Overlay::Grep => self.grep.open = false,
            Overlay::Files => self.files.view = None,
            Overlay::Columns => self.columns = None,
            Overlay::Edit => self.edit = None,
            Overlay::Form => self.form = None,
            Overlay::Input => self.input = None,
            Overlay::Confirm => self.confirm = None,
            Overlay::Help => {
                self.help = false;
                self.help_scroll = 0;
            }
        }
    }

    /// The overlay that takes the keys.
    pub fn top_overlay(&self) -> Option<Overlay> {
        self.overlays().last().copied()
    }

    /// A key for the topmost overlay, or for the keymap when none is open.
    pub(super) fn on_overlay_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        let ix = self.view_cluster();
        match self.top_overlay() {
            None => self.on_keymap_key(&k),
            Some(Overlay::Insight(_)) => self.on_insight_key(k),
            Some(Overlay::Events) => self.on_events_key(k),
            Some(Overlay::Deps) => self.on_deps_key(k),
            Some(Overlay::Top) => {
                // A page: the screen less the frame, the title lines and the status bar.
                let page = usize::from(self.size.1.saturating_sub(6)).max(1);
                let out = self.top.on_key(&k, page, self.now);
                self.land(Some(Overlay::Top), out)
            }
            Some(Overlay::CmdLog) => {
                // The full entry replaces the list: a page is the screen less the frame,
                // the header and the status bar.
                let page = usize::from(self.size.1.saturating_sub(5)).max(1);
                let out = self.cmdlog.on_key(&k, page);
                self.land(Some(Overlay::CmdLog), out)
            }
            Some(Overlay::Custom) => {
                // The frame, the command line and the status bar.
                let page = usize::from(self.size.1.saturating_sub(5)).max(1);
                let out = self.custom.on_key(&view!(self, ix), &k, page);
                self.land(Some(Overlay::Custom), out)
            }
            Some(Overlay::Grep) => self.on_grep_key(&k),
            Some(Overlay::Files) => {
                let status_rows = self.areas().status.height;
                let out = self.files.on_key(&view!(self, ix), k, status_rows);
                self.land(Some(Overlay::Files), out)
            }
            Some(Overlay::Columns) => self.on_columns_key(&k),
            Some(Overlay::Edit) => {
                let parts = view!(self, ix).partitions();
                let Some(form) = self.edit.as_mut() else {
                    return Vec::new();
                };
                let out = form.on_key(k, parts);
                self.land(Some(Overlay::Edit), out)
            }
            Some(Overlay::Form) => self.on_form_key(k),
            Some(Overlay::Input) => self.on_input_key(k),
            Some(Overlay::Confirm) => self.on_confirm_key(k),
            Some(Overlay::Help) => self.on_help_key(&k),
        }
    }

    /// The help overlay: the moving keys scroll it when it is taller than the terminal,
    /// any other key closes it.
    fn on_help_key(&mut self, k: &KeyEvent) -> Vec<Cmd> {
        let pane = self.focus;
        let page = self.size.1.saturating_sub(3).max(1);
        let max = self.help_max_scroll();
        let s = self.help_scroll;
        self.help_scroll = match self.keymap.action(pane, k) {
            Some(Action::Down) => s.saturating_add(1),
            Some(Action::Up) => s.saturating_sub(1),
            Some(Action::PageDown) => s.saturating_add(page),
            Some(Action::PageUp) => s.saturating_sub(page),
            Some(Action::Top) => 0,
            Some(Action::Bottom) => max,
            _ => {
                self.help = false;
                self.help_scroll = 0;
                return Vec::new();
            }
        }
        .min(max);
        Vec::new()
    }

    /// How far the help can scroll: its lines ([`help_len`]) past a full-height overlay.
    pub fn help_max_scroll(&self) -> u16 {
        let shown = usize::from(self.size.1.saturating_sub(2));
        u16::try_from(self.help_len().saturating_sub(shown)).unwrap_or(u16::MAX)
    }

    /// The help overlay's line count, as `ui::help::help_lines` writes it (a test holds the
    /// two together): the focused pane's bindings, the `:` commands and the notes around
    /// them; with the files view open, its keys.
    pub fn help_len(&self) -> usize {
        let ix = self.view_cluster();
        if self.files.view.is_some() {
            return super::files::KEYS.len() + 4 + usize::from(self.clusters[ix].read_only);
        }
        // A blank line, the two rules of the queue's marks and what PROGRESS shows.
        let notes = if self.focus == crate::keymap::Pane::Queue {
            4
        } else {
            0
        };
        let read_only = if self.clusters[ix].read_only { 2 } else { 0 };
        // The title; the bindings, the form's line and the session question's; a blank
        // line and the commands' title; the commands; the notes; a blank line and the mouse
        // line.
        // The user's own commands: a blank line, a title and one line each.
        let own = match self.custom.commands.len() {
            0 => 0,
            n => n + 2,
        };
        1 + read_only
            + own
            + self.keymap.bindings(self.focus).len()
            + 2
            + 2
            + super::COMMANDS.len()
            + notes
            + 2
    }

    /// A full-screen insight view on top: esc closes it, `:usage` reads again on `r`, and
    /// any other key goes to the keymap as if the view were not there.
    fn on_insight_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        let ix = self.view_cluster();
        if k.code == KeyCode::Esc {
            self.view = None;
            return Vec::new();
        }
        if self.view == Some(View::Usage) {
            if let Some(out) = self.clusters[ix].usage.on_key(&k) {
                return self.apply(out);
            }
        }
        self.on_keymap_key(&k)
    }

    /// `t`, `:jobtop`: job top over the selected running job, read at once.
    pub(super) fn open_top(&mut self) -> Vec<Cmd> {
        let ix = self.view_cluster();
        let out = self.top.open(&view!(self, ix));
        self.apply(out)
    }

    /// `c`: the chooser over the live queue's columns (`:history` has its own set).
    pub(super) fn open_columns(&mut self) -> Vec<Cmd> {
        if self.history.open {
            self.note =
                Some("c chooses the live queue's columns: close :history first (esc)".into());
            return Vec::new();
        }
        self.columns = Some(super::columns::ColumnChooser::new(
            self.queue.shown().columns(),
        ));
        Vec::new()
    }

    /// Enter applies the chosen columns at once and asks for them to be saved in the
    /// config; esc leaves the queue as it was.
    fn on_columns_key(&mut self, k: &KeyEvent) -> Vec<Cmd> {
        let Some(chooser) = self.columns.as_mut() else {
            return Vec::new();
        };
        let out = chooser.on_key(k, &mut self.queue.jobs);
        self.land(Some(Overlay::Columns), out)
    }

    fn on_keymap_key(&mut self, k: &KeyEvent) -> Vec<Cmd> {
        match self.keymap.action(self.focus, k) {
            Some(a) => self.on_action(a),
            // Keys the keymap leaves free may run the user's own commands.
            None => match self.custom.on(k) {
                Some(i) => {
                    let ix = self.view_cluster();
                    let out = self.custom.start(&view!(self, ix), i);
                    self.apply(out)
                }
                None => Vec::new(),
            },
        }
    }

    /// Something drawn over the panes has the keys: the panes under it take no mouse events.
    pub(super) fn covered(&self) -> bool {
        self.overlays().into_iter().any(Overlay::covers_panes)
    }

    /// `n`: opens the form with the last used values (or the defaults).
    pub fn open_form(&mut self) -> Vec<Cmd> {
        let ix = self.view_cluster();
        if self.clusters[ix].read_only {
            self.note = Some("read-only session: launching jobs is off".into());
            return Vec::new();
        }
        self.form = Some(FormState::open(&self.clusters[ix]));
        self.form_opened()
    }

    /// A launch form just opened: the facts read fresh (idle GPUs, what each node has
    /// free, pending jobs change), the reservations it warns of handed over, and read
    /// when they never were.
    pub(super) fn form_opened(&mut self) -> Vec<Cmd> {
        let mut cmds = vec![Cmd::FetchLaunchFacts];
        if let Some(ix) = self.form.as_ref().map(|f| f.cluster) {
            cmds.extend(self.clusters[ix].maintenance.if_never_read(self.now));
        }
        self.form_windows();
        cmds
    }

    /// The launch form's copy of its cluster's reservations and clock, for its outlook
    /// (worked out again only when they change or a minute passes).
    pub(super) fn form_windows(&mut self) {
        let Some(form) = self.form.as_mut() else {
            return;
        };
        let m = &self.clusters[form.cluster].maintenance;
        form.set_windows(
            m.cluster_now(self.now)
                .map(|cnow| (m.items().to_vec(), cnow)),
        );
    }

    pub(super) fn on_form_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        let ix = self.view_cluster();
        let Some(form) = self.form.as_mut() else {
            return Vec::new();
        };
        let out = form.on_key(k, &self.clusters[ix]);
        self.land(Some(Overlay::Form), out)
    }

    /// A key while `:deps` is on top: the view's own there, what reaches beyond it here.
    fn on_deps_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        let ix = self.view_cluster();
        let page = usize::from(self.size.1.saturating_sub(4)).max(1);
        let action = self.keymap.action(Pane::Queue, &k);
        let out = self.deps.on_key(&view!(self, ix), &k, action, page);
        self.land(Some(Overlay::Deps), out)
    }

    /// A key while the search across logs is on top; enter selects the line's job and
    /// shows its log at that line.
    fn on_grep_key(&mut self, k: &KeyEvent) -> Vec<Cmd> {
        let page = usize::from(self.size.1.saturating_sub(6)).max(1);
        let out = self.grep.on_key(k, page);
        let cmds = self.land(Some(Overlay::Grep), out);
        if let Some(j) = self.grep.jump.take() {
            if self.queue.shown().selected_id() == Some(&j.job) {
                let pane = match j.stream {
                    crate::logview::Stream::Stdout => &mut self.logs.stdout,
                    crate::logview::Stream::Stderr => &mut self.logs.stderr,
                };
                pane.go_to_line(j.line, &j.text);
            }
        }
        cmds
    }

    /// A key while `:events` is on top; the view scrolls over every cluster's events.
    fn on_events_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        let page = usize::from(self.size.1.saturating_sub(4)).max(1);
        let total = self.clusters().map(|c| c.events.log.len()).sum();
        self.events_view.on_key(k, page, total);
        Vec::new()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "overlay_tests.rs"]
mod tests;
