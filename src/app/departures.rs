//! Jobs that left squeue, tracked in one place for a cluster. squeue drops a job as soon as
//! it ends, so its last row is kept on screen until sacct has its final state; the next
//! refreshes ask sacct about it ([`Departures::poll_cmd`]) a few times, then give up. The
//! queue's kept rows, the refresh's sacct part and the events log's "left the queue" all
//! read from here. Pure: no I/O.

use std::collections::{HashMap, HashSet};

use crate::action::Cmd;
use crate::payload::PollExtra;
use crate::slurm::model::{Job, JobDetail, JobId, SharedStr};

/// Jobs that left squeue stay in the queue this many at most (oldest dropped first).
pub const FINISHED_KEEP: usize = 200;
/// sacct is asked about a departed id this many times before giving up.
pub const SACCT_TRIES: u8 = 3;

#[derive(Debug, Clone, Default)]
pub struct Departures {
    /// Ids in the last list (squeue and the registry's jobs), as hashes (8 bytes a job).
    live: HashSet<u64>,
    /// The last rows of jobs that left, with their final state once sacct answered.
    pub rows: Vec<Job>,
    /// Ids the next refresh asks sacct about, and how often each was asked.
    asking: Vec<JobId>,
    tries: HashMap<JobId, u8>,
    /// Final states sacct gave in this refresh for jobs its list drops (a state check saw
    /// them leave and asked at once), applied as they are found gone.
    early: Vec<JobDetail>,
    /// Counts the lists that may have changed which rows are kept.
    pub generation: u64,
}

impl Departures {
    /// The refresh command: squeue, plus sacct only for departed ids.
    pub fn poll_cmd(&self) -> Cmd {
        if self.asking.is_empty() {
            Cmd::PollQueue
        } else {
            Cmd::PollWith {
                sacct: self.asking.clone(),
            }
        }
    }

    /// A refresh's list (`jobs`) replacing `previous` (the rows on screen): notes the jobs
    /// that left since the last list and returns their last rows. A job back in the list
    /// (requeued) is no longer departed. A collapsed pending array changes its id as tasks
    /// start: that is not a departure.
    pub fn on_list(&mut self, jobs: &[Job], previous: &[Job]) -> Vec<Job> {
        // Nothing changed (the very same records): no job left or came back, and the ids
        // listed are those of the last list.
        if self.early.is_empty() && crate::slurm::model::same_list(jobs, previous) {
            return Vec::new();
        }
        self.generation += 1;
        let now: HashSet<u64> = jobs.iter().map(|j| id_key(&j.id)).collect();
        let mut gone = Vec::new();
        for old in previous {
            let k = id_key(&old.id);
            if self.live.contains(&k)
                && !now.contains(&k)
                && old.id.array_pending().is_none()
                && !self.rows.iter().any(|f| f.id == old.id)
                && !gone.iter().any(|g: &Job| g.id == old.id)
            {
                let mut row = old.clone();
                if let Some(d) = self.early.iter().find(|d| d.id.as_ref() == Some(&old.id)) {
                    apply_final(&mut row, d);
                }
                gone.push(row);
            }
        }
        // Those whose final state came with this refresh need no more sacct.
        let settled: Vec<JobId> = gone
            .iter()
            .filter(|g| {
                self.early.iter().any(|d| {
                    d.id.as_ref() == Some(&g.id)
                        && d.state.as_ref().is_some_and(|s| s.is_finished())
                })
            })
            .map(|g| g.id.clone())
            .collect();
        self.early.clear();
        self.rows.extend(gone.iter().cloned());
        self.asking.extend(
            gone.iter()
                .map(|j| j.id.clone())
                .filter(|id| !settled.contains(id)),
        );
        self.rows.retain(|f| !now.contains(&id_key(&f.id)));
        self.asking.retain(|d| !now.contains(&id_key(d)));
        self.tries.retain(|d, _| !now.contains(&id_key(d)));
        if self.rows.len() > FINISHED_KEEP {
            let cut = self.rows.len() - FINISHED_KEEP;
            self.rows.drain(..cut);
        }
        self.live = now;
        gone
    }

    /// The queue to show: the list plus the kept rows of jobs that left it.
    pub fn shown(&self, mut jobs: Vec<Job>) -> Vec<Job> {
        jobs.extend(self.rows.iter().cloned());
        jobs
    }

    /// A kept row of a job that left squeue.
    pub fn is_kept(&self, id: &JobId) -> bool {
        self.rows.iter().any(|f| &f.id == id)
    }

    /// The sacct part of a refresh: final states go into the kept rows; each id asked about
    /// counts a try. Returns the ids given up on (asked [`SACCT_TRIES`] times without a
    /// final state).
    pub fn on_sacct(&mut self, extra: &PollExtra) -> Vec<JobId> {
        for d in &extra.finished {
            let Some(id) = &d.id else { continue };
            match self.rows.iter_mut().find(|f| &f.id == id) {
                Some(row) => apply_final(row, d),
                // Asked before squeue dropped it: kept for this refresh's list.
                None => self.early.push(d.clone()),
            }
        }
        let mut given_up = Vec::new();
        for id in &extra.asked {
            if !self.asking.contains(id) {
                continue;
            }
            // A record still completing (or not yet final) is asked about again.
            let known = extra.finished.iter().any(|d| {
                d.id.as_ref() == Some(id) && d.state.as_ref().is_some_and(|s| s.is_finished())
            });
            let n = self.tries.entry(id.clone()).or_insert(0);
            *n += 1;
            if known || *n >= SACCT_TRIES {
                self.asking.retain(|d| d != id);
                self.tries.remove(id);
                if !known {
                    given_up.push(id.clone());
                }
            }
        }
        given_up
    }
}

/// Puts sacct's final word into the row kept for a job that left squeue.
fn apply_final(row: &mut Job, d: &JobDetail) {
    if let Some(s) = &d.state {
        row.state = s.clone();
    }
    row.reason = d
        .reason
        .as_deref()
        .filter(|r| *r != "None")
        .map(SharedStr::from);
    if let Some(e) = d.elapsed {
        row.time_used = e;
    }
    if d.start_time.is_some() {
        row.start_time = d.start_time;
    }
    if let Some(n) = d.node_list.clone().filter(|n| n != "None assigned") {
        row.node_list = Some(n.into());
    }
}

/// FNV-1a: job ids come from our own cluster, so no hash flooding to guard against, and a
/// 20,000-job refresh does 20,000 lookups on the UI thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// A job id as a 64-bit FNV-1a hash of its text: 20,000 ids collide with odds of about
/// 1 in 10^10, and the maps hold no strings.
pub(crate) fn id_key(id: &JobId) -> u64 {
    use std::hash::Hasher;
    let mut h = Fnv::default();
    h.write(id.as_str().as_bytes());
    h.finish()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::slurm::model::JobState;

    fn job(id: &str, state: JobState) -> Job {
        let mut j = crate::slurm::parse::parse_squeue(include_str!(
            "../../tests/fixtures/slurm/squeue_me.out"
        ))
        .unwrap()
        .remove(0);
        j.id = id.parse().unwrap();
        j.state = state;
        j
    }

    fn sacct(id: &str, state: JobState) -> JobDetail {
        JobDetail {
            id: Some(id.parse().unwrap()),
            state: Some(state),
            ..JobDetail::default()
        }
    }

    #[test]
    fn a_job_that_left_is_kept_asked_about_and_settled_by_its_final_state() {
        let mut d = Departures::default();
        let first = vec![job("10", JobState::Running), job("11", JobState::Pending)];
        assert!(
            d.on_list(&first, &[]).is_empty(),
            "the first list sets the baseline"
        );
        let now = vec![job("11", JobState::Pending)];
        let gone = d.on_list(&now, &first);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].id.as_str(), "10");
        assert_eq!(
            d.shown(now.clone()).len(),
            2,
            "its last row stays on screen"
        );
        assert!(matches!(d.poll_cmd(), Cmd::PollWith { sacct } if sacct.len() == 1));
        // Seen once only: the next list does not report it again.
        let shown = d.shown(now.clone());
        assert!(d.on_list(&now, &shown).is_empty());
        let given_up = d.on_sacct(&PollExtra {
            finished: vec![sacct("10", JobState::Failed)],
            asked: vec!["10".parse().unwrap()],
            problems: Vec::new(),
        });
        assert!(given_up.is_empty());
        assert_eq!(d.poll_cmd(), Cmd::PollQueue);
        assert_eq!(d.rows[0].state, JobState::Failed);
    }

    #[test]
    fn a_final_state_asked_before_squeue_dropped_the_job_settles_it_at_once() {
        // A state check saw 10 leave: the full read asks sacct about it with squeue.
        let mut d = Departures::default();
        let first = vec![job("10", JobState::Running), job("11", JobState::Pending)];
        d.on_list(&first, &[]);
        d.on_sacct(&PollExtra {
            finished: vec![sacct("10", JobState::Cancelled)],
            asked: vec!["10".parse().unwrap()],
            problems: Vec::new(),
        });
        let now = vec![job("11", JobState::Pending)];
        let gone = d.on_list(&now, &first);
        assert_eq!(
            gone[0].state,
            JobState::Cancelled,
            "the events log sees it final"
        );
        assert_eq!(
            d.rows[0].state,
            JobState::Cancelled,
            "its row shows it at once"
        );
        assert_eq!(d.poll_cmd(), Cmd::PollQueue, "nothing left to ask sacct");
    }

    #[test]
    fn an_id_sacct_never_settles_is_given_up_once_after_the_tries() {
        let mut d = Departures::default();
        let first = vec![job("10", JobState::Running)];
        d.on_list(&first, &[]);
        d.on_list(&[], &first);
        let ask = PollExtra {
            finished: vec![sacct("10", JobState::Completing)],
            asked: vec!["10".parse().unwrap()],
            problems: Vec::new(),
        };
        let mut given_up = Vec::new();
        for _ in 0..SACCT_TRIES + 2 {
            given_up.extend(d.on_sacct(&ask));
        }
        assert_eq!(given_up, vec!["10".parse::<JobId>().unwrap()]);
        assert_eq!(d.poll_cmd(), Cmd::PollQueue);
    }

    #[test]
    fn a_requeued_job_back_in_the_list_is_no_longer_departed() {
        let mut d = Departures::default();
        let first = vec![job("10", JobState::Running)];
        d.on_list(&first, &[]);
        let shown = d.shown(Vec::new());
        d.on_list(&[], &first);
        let back = vec![job("10", JobState::Pending)];
        assert!(d.on_list(&back, &shown).is_empty());
        assert!(d.rows.is_empty());
        assert_eq!(d.poll_cmd(), Cmd::PollQueue);
    }
}
