//! The selected job's detail pane state: what was read, from where, how far it scrolled,
//! and the details read before (shown again at once).

use super::{kept, TriageView};
use crate::payload::DetailSource;
use crate::slurm::model::{JobDetail, JobId};

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
}
