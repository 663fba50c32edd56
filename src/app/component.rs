//! What App's components share: the read-only `View` of the rest of the dashboard they are
//! handed, and the `Out` they hand back.
//!
//! A component (Files, Tunnels, Triage, ...) owns its own state and has no `impl App`:
//! its handlers take `&mut self` and a `View`, and return an `Out` (commands for the
//! workers, a note for the status bar, a line to type on, a question). App routes keys and
//! messages to it and lands the `Out` in one place, `App::apply`, which is where the status
//! bar's note is set.

use chrono::NaiveDateTime;

use super::detail::DetailState;
pub use super::out::{Out, Pass};
use super::{ClusterState, Clusters, LogState};
use crate::queue::QueueView;
use crate::slurm::model::JobId;

/// What a component may read of the rest of the App (never write): the queue and its
/// selection, the selected job's detail and logs, the clusters, the time.
pub struct View<'a> {
    pub queue: &'a QueueView,
    pub detail: &'a DetailState,
    pub logs: &'a LogState,
    /// The cluster being worked on (the message's, or the one on screen).
    pub cluster: &'a ClusterState,
    /// Every cluster, by number.
    pub clusters: &'a Clusters,
    pub now: NaiveDateTime,
    /// Terminal size.
    pub size: (u16, u16),
}

impl<'a> View<'a> {
    /// Every cluster, by number.
    pub fn clusters(&self) -> impl Iterator<Item = &'a ClusterState> {
        self.clusters.iter()
    }

    /// Cluster number `ix`.
    pub fn cluster_by_ix(&self, ix: u16) -> Option<&'a ClusterState> {
        self.clusters.get(ix)
    }

    /// The same View, about cluster `ix` (a job's own cluster).
    pub fn on(&self, ix: u16) -> View<'a> {
        View {
            cluster: &self.clusters[ix],
            ..*self
        }
    }

    /// More than one cluster is open.
    pub fn multi(&self) -> bool {
        self.clusters.multi()
    }

    /// Why a changing action (`what`: "edit", "cancel", ...) is refused, if it is: the
    /// session is read-only.
    pub fn read_only_refusal(&self, what: &str) -> Option<String> {
        self.cluster.read_only.then(|| format!(
            "read-only session: {what} is disabled (started with --read-only or read_only = true in the config)"
        ))
    }

    /// The partitions of the cluster being worked on, as last read (none if not read).
    pub fn partitions(&self) -> &'a [crate::slurm::model::Partition] {
        match &self.cluster.partitions {
            Some(Ok(p)) => p,
            _ => &[],
        }
    }

    /// The launch a Slurm job belongs to (jobs slurmdash submitted; plain job ids only),
    /// from the job's own cluster (a key may select another cluster's row).
    pub fn launch_of(&self, id: &JobId) -> Option<&'a crate::retry::Chain> {
        if id.array().is_some() || id.het_offset().is_some() {
            return None;
        }
        let own = self.clusters.get(id.cluster()).unwrap_or(self.cluster);
        own.chains.get(&id.base())
    }

    /// The active cluster's rows (all rows when there is one cluster).
    pub fn own_jobs(&self) -> std::borrow::Cow<'a, [crate::slurm::model::Job]> {
        let queue: &'a QueueView = self.queue;
        queue.jobs_on(self.multi().then_some(self.cluster.ix))
    }
}

/// The `View` of an App, borrowing each field on its own so that a component field of the
/// same App can be borrowed mutably beside it:
/// `let out = self.tunnels.open(&view!(self, ix)); self.apply(out)`, where `ix` is the
/// number of the cluster the work is about.
macro_rules! view {
    // With `queue` given: where a component also borrows one of `App::queue`'s lists
    // mutably (`:history` its rows), its View reads the other,
    // `view!(self, ix, queue: &self.queue.jobs)`.
    ($app:expr, $ix:expr, queue: $queue:expr) => {
        $crate::app::component::View {
            queue: $queue,
            detail: &$app.detail,
            logs: &$app.logs,
            cluster: &$app.clusters[$ix],
            clusters: &$app.clusters,
            now: $app.now,
            size: $app.size,
        }
    };
    ($app:expr, $ix:expr) => {
        view!($app, $ix, queue: $app.queue.shown())
    };
}

/// The open/closed side of an overlay: its own state says whether it is open (no second
/// flag), and closing it is its own business. `App::open_overlays` reads this for every entry of
/// the overlay list (`overlay_list!` in `overlay.rs`).
pub trait Overlaid {
    fn is_open(&self) -> bool;
    fn close(&mut self);
}

/// An overlay held as an `Option`: open while there is one.
impl<T> Overlaid for Option<T> {
    fn is_open(&self) -> bool {
        self.is_some()
    }

    fn close(&mut self) {
        *self = None;
    }
}

/// An overlay held as a flag (help).
/// The keys of an overlay on top: a component answers with an `Out`, which App lands with
/// the overlay as its sender (so `Out::close` closes this one).
pub trait OverlayKeys {
    fn overlay_key(&mut self, k: &crossterm::event::KeyEvent, cx: &Keys) -> Out;
}

/// An overlay held as an `Option`: its value takes the keys.
impl<T: OverlayKeys> OverlayKeys for Option<T> {
    fn overlay_key(&mut self, k: &crossterm::event::KeyEvent, cx: &Keys) -> Out {
        match self {
            Some(t) => t.overlay_key(k, cx),
            None => Out::none(),
        }
    }
}

/// What an overlay's keys may read besides its own state.
pub struct Keys<'a> {
    pub view: View<'a>,
    pub keymap: &'a crate::keymap::Keymap,
    /// The pane whose keys apply.
    pub focus: crate::keymap::Pane,
    /// The status bar's height, as the screen lays it out.
    pub status_rows: u16,
}

impl Keys<'_> {
    /// Rows on a page: the screen less `chrome` rows (frame, titles, status bar), at least 1.
    pub fn page(&self, chrome: u16) -> usize {
        usize::from(self.view.size.1.saturating_sub(chrome)).max(1)
    }
}
