//! The partitions view's data: cached for [`TTL_SECS`], refetched only while the view is open.

use chrono::NaiveDateTime;

use crate::slurm::model::Partition;
use crate::slurm::partview::PartitionRow;

pub const TTL_SECS: i64 = 60;

#[derive(Debug, Clone, Default)]
pub struct PartitionsState {
    pub rows: Vec<PartitionRow>,
    pub at: Option<NaiveDateTime>,
    pub loading: bool,
    pub error: Option<String>,
    /// scontrol records seen by the pending-job fetch (MaxTime for reasons), newest.
    pub configs: Vec<Partition>,
}

impl PartitionsState {
    /// True when nothing is loading and the data is missing or older than the TTL.
    pub fn due(&self, now: NaiveDateTime) -> bool {
        !self.loading && self.at.is_none_or(|t| (now - t).num_seconds() >= TTL_SECS)
    }

    pub fn set(&mut self, result: Result<Vec<PartitionRow>, String>, at: NaiveDateTime) {
        self.loading = false;
        match result {
            Ok(rows) => {
                self.configs = rows.iter().filter_map(|r| r.config.clone()).collect();
                self.rows = rows;
                self.at = Some(at);
                self.error = None;
            }
            Err(e) => {
                self.error = Some(e);
                // Try again after the TTL, not on every tick.
                self.at = Some(at);
            }
        }
    }

    pub fn note_partitions(&mut self, parts: &[Partition], _at: NaiveDateTime) {
        if !parts.is_empty() {
            self.configs = parts.to_vec();
        }
    }
}
