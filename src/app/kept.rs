//! Details kept across selections: moving back to a job already read shows its detail at
//! once and reads nothing, as long as the queue still lists it in the state it was read in
//! (a job that moved on, say from pending to running, is read again: its nodes and log
//! paths changed). Pure: no I/O.

use std::collections::VecDeque;

use crate::payload::DetailSource;
use crate::slurm::model::{JobDetail, JobId, JobState};

/// How many details are kept (the oldest read goes first).
pub const KEPT: usize = 128;

#[derive(Debug, Clone, Default)]
pub struct KeptDetails {
    kept: VecDeque<(JobId, JobDetail, DetailSource)>,
}

impl KeptDetails {
    /// Keeps `detail` of `id`, replacing an older one of the same job.
    pub fn keep(&mut self, id: &JobId, detail: &JobDetail, source: DetailSource) {
        self.kept.retain(|(k, _, _)| k != id);
        self.kept.push_back((id.clone(), detail.clone(), source));
        while self.kept.len() > KEPT {
            self.kept.pop_front();
        }
    }

    /// The detail kept of `id`, if it was read while the job was in `state` (the queue's
    /// state of it now).
    pub fn get(&self, id: &JobId, state: &JobState) -> Option<(JobDetail, DetailSource)> {
        self.kept
            .iter()
            .find(|(k, d, _)| k == id && d.state.as_ref() == Some(state))
            .map(|(_, d, s)| (d.clone(), *s))
    }

    pub fn len(&self) -> usize {
        self.kept.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn detail(id: &str, state: JobState) -> JobDetail {
        JobDetail {
            id: Some(id.parse().unwrap()),
            state: Some(state),
            ..JobDetail::default()
        }
    }

    #[test]
    fn a_detail_is_kept_while_its_job_stays_in_the_state_it_was_read_in() {
        let mut k = KeptDetails::default();
        let id: JobId = "7".parse().unwrap();
        k.keep(&id, &detail("7", JobState::Pending), DetailSource::Scontrol);
        assert!(k.get(&id, &JobState::Pending).is_some());
        assert!(
            k.get(&id, &JobState::Running).is_none(),
            "moved on: read again"
        );
        assert!(k.get(&"8".parse().unwrap(), &JobState::Pending).is_none());
        k.keep(&id, &detail("7", JobState::Running), DetailSource::Scontrol);
        assert_eq!(k.len(), 1, "one per job");
        assert!(k.get(&id, &JobState::Running).is_some());
    }

    #[test]
    fn the_oldest_goes_first_past_the_limit() {
        let mut k = KeptDetails::default();
        for n in 0..KEPT + 3 {
            let id: JobId = n.to_string().parse().unwrap();
            k.keep(
                &id,
                &detail(&n.to_string(), JobState::Pending),
                DetailSource::Scontrol,
            );
        }
        assert_eq!(k.len(), KEPT);
        assert!(k.get(&"0".parse().unwrap(), &JobState::Pending).is_none());
        let last: JobId = (KEPT + 2).to_string().parse().unwrap();
        assert!(k.get(&last, &JobState::Pending).is_some());
    }
}
