//! The selected job's detail pane state: what was read, from where, how far it scrolled,
//! and the details read before (shown again at once).

use super::{kept, TriageView};
use crate::payload::DetailSource;
use crate::slurm::model::{JobDetail, JobId};
use crate::slurm::usage::waits::Waited;

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
    /// Details read before, shown again at once when their job is selected again.
    pub kept: kept::KeptDetails,
    /// A failed read was tried again once after a refresh that worked.
    pub retried: bool,
    /// What the pane shows that is worked out from other states, for the selected job
    /// (`detail_view.rs`, after each message).
    pub view: DetailView,
}

/// The detail pane's text worked out from the selected job and the states about it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DetailView {
    /// What a sweep's task runs, or the sweep's runs for its folded row
    /// ([`crate::retry::Chain::sweep_text`]).
    pub sweep: Option<String>,
    /// Progress read from the job's log, and what to do when the time limit comes first.
    pub progress: Option<ProgressView>,
    /// The detail read waits for the RPC budget: what to say instead of "loading".
    pub held: Option<String>,
    /// How long the user's recent jobs like this one waited.
    pub waited: Option<Waited>,
    /// The maintenance window a pending job's time limit runs into, in words
    /// (`maintenance::explain`).
    pub maintenance: Option<String>,
    /// `:sooner`'s changes with the scheduler's estimates (`sooner::lines`).
    pub sooner: Vec<String>,
}

/// A job's progress as the detail pane shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressView {
    pub summary: crate::logview::progress::Summary,
    /// What to do when the time limit comes before the end (`progress::advice`).
    pub advice: String,
}
