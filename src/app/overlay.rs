//! What is drawn over the panes, as one stack read by key handling, drawing and the mouse.
//!
//! The stack is derived from the state each overlay already has (its [`Overlaid`]): there
//! is no second record of what is open that could disagree with it. The one rule: a key
//! goes to the topmost overlay, and the keymap runs only when none is open (or when the
//! topmost, a full-screen insight view, lets the key through). The overlays are one list,
//! [`overlay_list`]; here too the insight views' keys, where App hands on what an overlay
//! passes ([`Pass`]), and opening the launch form and the column chooser.

use crossterm::event::{KeyCode, KeyEvent};

use super::component::{Keys, Out, Overlaid, OverlayKeys, Pass};
use super::insight::View;
use super::{App, FormState};
use crate::action::Cmd;

/// The overlays, bottom first, one line each: `Kind[(what it shows)] = field: its state's
/// type`. This list is the only place an overlay is named:
/// the states App holds ([`super::Overlays`], one field each, built by `Default`; made in
/// `mod.rs`, so a type is named as from there), the [`Overlay`] enum, [`App::open_overlays`],
/// closing, key routing (to the field's [`OverlayKeys`], whose `Out` App lands), the tests'
/// order and `ui`'s drawing (each field's `ui::overlay::DrawOverlay`) are made from it. The
/// state says whether it is open ([`Overlaid`]).
///
/// When several are open, a later one is drawn over an earlier one and takes the keys. The
/// order follows how they are opened: the full-screen views are opened from the panes; the
/// edit and launch forms open over them (the launch form also arrives by itself after `L`,
/// over whatever is open then); the line being typed and a question sit on the bottom line
/// above all of these; help is topmost (it opens from the files view too, and any key
/// closes it).
///
/// `overlay_list!(m)` expands to `m! { the list }`.
macro_rules! overlay_list {
    ($then:ident) => {
        $then! {
            /// `:partitions`, `:stats` or `:usage`: a full-screen view that leaves the status
            /// bar and lets through the keys it does not use (esc closes it; `r` reads
            /// `:usage` again). It is about whichever cluster is on screen: moving the
            /// selection to another cluster's row keeps it open.
            Insight(View) = view: Option<insight::View>,
            /// `:events`, every cluster's event log.
            Events = events_view: EventsView,
            /// `:deps`, the user's dependency chains as a tree.
            Deps = deps: deps::DepsState,
            /// Job top (`t`, `:jobtop`): a running job's processes per node.
            Top = top: top::TopState,
            /// The command log (`@`, `:log`): the remote commands run, newest first.
            CmdLog = cmdlog: cmdlog::CmdLog,
            /// The user's own commands: `:commands`, or the last one's output.
            Custom = custom: custom::CustomCommands,
            /// `:grep`, `:errors`: matching lines of many jobs' logs.
            Grep = grep: grep::GrepState,
            /// The files view of a job (`y`, `:files`).
            Files = files: FilesState,
            /// The column chooser (`c`); enter sets the live queue's columns.
            Columns = columns: Option<columns::ColumnChooser>,
            /// The edit form of a pending job (`E`).
            Edit = edit: Option<EditForm>,
            /// The launch form (`n`, `L`).
            Form = form: Option<FormState>,
            /// The line being typed (`:`, `/`, filter, the shell and forward prompts), on the
            /// status bar.
            Input = input: Option<Input>,
            /// A question on the status bar (confirm a cancel, ...).
            Confirm = confirm: Option<Confirm>,
            /// The key list (`?`).
            Help = help: help::HelpState,
        }
    };
}
pub(crate) use overlay_list;

/// An entry's place in [`App::open_overlays`] when its field says it is open.
macro_rules! open_as {
    ($field:expr, $kind:ident ($shows:ty)) => {
        $field.map(Overlay::$kind)
    };
    ($field:expr, $kind:ident) => {
        Overlaid::is_open(&$field).then_some(Overlay::$kind)
    };
}

/// A key for an entry on top: to the field's component, whose `Out` lands as from that
/// overlay.
macro_rules! key_to {
    ($app:expr, $o:expr, $k:expr, $field:ident) => {{
        let ix = $app.view_cluster();
        let status_rows = $app.areas().status.height;
        let cx = Keys {
            view: view!($app, ix),
            keymap: &$app.keymap,
            focus: $app.focus,
            status_rows,
        };
        let out = OverlayKeys::overlay_key(&mut $app.overlays.$field, &$k, &cx);
        $app.land(Some($o), out)
    }};
}

/// The enum, the stack, closing and key routing, from the list.
macro_rules! stack {
    ($(
        $(#[$doc:meta])* $kind:ident $(($shows:ty))? = $field:ident: $state:ty,
    )*) => {
        /// One kind of overlay, in stacking order, bottom first (see [`overlay_list`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Overlay {
            $( $(#[$doc])* $kind $(($shows))?, )*
        }

        impl Overlay {
            /// Every kind in stacking order (a kind that shows one of several views, by
            /// its default one).
            #[cfg(test)]
            pub(crate) fn all() -> Vec<Overlay> {
                vec![$( Overlay::$kind $((<$shows>::default()))?, )*]
            }
        }

        impl App {
            /// What is open over the panes, bottom first (the order of [`Overlay`]).
            pub fn open_overlays(&self) -> Vec<Overlay> {
                let open = [$( open_as!(self.overlays.$field, $kind $(($shows))?), )*];
                open.into_iter().flatten().collect()
            }

            /// Closes overlay `o` (its component asked to).
            pub(super) fn close_overlay(&mut self, o: Overlay) {
                match o {
                    $( Overlay::$kind { .. } => Overlaid::close(&mut self.overlays.$field), )*
                }
            }

            /// A key for the topmost overlay, or for the keymap when none is open.
            pub(super) fn on_overlay_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
                match self.top_overlay() {
                    None => self.on_keymap_key(&k),
                    $( Some(o @ Overlay::$kind { .. }) => key_to!(self, o, k, $field), )*
                }
            }
        }
    };
}

overlay_list!(stack);

impl Overlay {
    /// Whether the panes under it take no mouse events. The line being typed sits on the
    /// status bar and leaves the panes clickable.
    pub fn covers_panes(self) -> bool {
        self != Overlay::Input
    }
}

/// A full-screen insight view on top: esc closes it, `:usage` reads again on `r`, and any
/// other key goes to the keymap as if the view were not there.
impl OverlayKeys for View {
    fn overlay_key(&mut self, k: &KeyEvent, _: &Keys) -> Out {
        match (k.code, *self) {
            (KeyCode::Esc, _) => Out::close(),
            (_, View::Usage) => Out::pass(Pass::UsageKey(*k)),
            _ => Out::pass(Pass::Key(*k)),
        }
    }
}

impl App {
    /// The overlay that takes the keys.
    pub fn top_overlay(&self) -> Option<Overlay> {
        self.open_overlays().last().copied()
    }

    /// Hands on what an overlay passed to the state that owns it.
    pub(super) fn pass(&mut self, p: Pass) -> Vec<Cmd> {
        let ix = self.view_cluster();
        let out = match p {
            Pass::Key(k) => return self.on_keymap_key(&k),
            Pass::UsageKey(k) => match self.clusters[ix].usage.on_key(&k) {
                Some(out) => out,
                None => return self.on_keymap_key(&k),
            },
            Pass::Filter(text) => {
                self.queue.shown_mut().set_filter(&text);
                return self.selection_changed();
            }
            Pass::Line(kind, text) => return self.on_line(kind, &text),
            Pass::NoValue => self.overlays.custom.cancel(),
            Pass::Custom(run) => self.overlays.custom.run(*run),
        };
        self.apply(out)
    }

    /// `t`, `:jobtop`: job top over the selected running job, read at once.
    pub(super) fn open_top(&mut self) -> Vec<Cmd> {
        let ix = self.view_cluster();
        let out = self.overlays.top.open(&view!(self, ix));
        self.apply(out)
    }

    /// `c`: the chooser over the live queue's columns (`:history` has its own set).
    pub(super) fn open_columns(&mut self) -> Vec<Cmd> {
        if self.history.open {
            self.note =
                Some("c chooses the live queue's columns: close :history first (esc)".into());
            return Vec::new();
        }
        self.overlays.columns = Some(super::columns::ColumnChooser::new(
            self.queue.shown().columns(),
        ));
        Vec::new()
    }

    fn on_keymap_key(&mut self, k: &KeyEvent) -> Vec<Cmd> {
        match self.keymap.action(self.focus, k) {
            Some(a) => self.on_action(a),
            // Keys the keymap leaves free may run the user's own commands.
            None => match self.overlays.custom.on(k) {
                Some(i) => {
                    let ix = self.view_cluster();
                    let out = self.overlays.custom.start(&view!(self, ix), i);
                    self.apply(out)
                }
                None => Vec::new(),
            },
        }
    }

    /// Something drawn over the panes has the keys: the panes under it take no mouse events.
    pub(super) fn covered(&self) -> bool {
        self.open_overlays().into_iter().any(Overlay::covers_panes)
    }

    /// `n`: opens the form with the last used values (or the defaults).
    pub fn open_form(&mut self) -> Vec<Cmd> {
        let ix = self.view_cluster();
        if self.clusters[ix].read_only {
            self.say("read-only session: launching jobs is off");
            return Vec::new();
        }
        self.overlays.form = Some(FormState::open(&self.clusters[ix]));
        self.form_opened()
    }

    /// A launch form just opened: the facts read fresh (idle GPUs, what each node has
    /// free, pending jobs change), the reservations it warns of handed over, and read
    /// when they never were.
    pub(super) fn form_opened(&mut self) -> Vec<Cmd> {
        let mut cmds = vec![Cmd::FetchLaunchFacts];
        if let Some(ix) = self.overlays.form.as_ref().map(|f| f.cluster) {
            cmds.extend(self.clusters[ix].maintenance.if_never_read(self.now));
        }
        self.form_windows();
        cmds
    }

    /// The launch form's copy of its cluster's reservations and clock, for its outlook
    /// (worked out again only when they change or a minute passes).
    pub(super) fn form_windows(&mut self) {
        let Some(form) = self.overlays.form.as_mut() else {
            return;
        };
        let m = &self.clusters[form.cluster].maintenance;
        form.set_windows(
            m.cluster_now(self.now)
                .map(|cnow| (m.items().to_vec(), cnow)),
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "overlay_tests.rs"]
mod tests;
