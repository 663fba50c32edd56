//! Marks for bulk actions, the "cancelling…" state of rows with an action in flight, and
//! badges after job names. All are kept by job id, so they follow their rows through sorting and refreshes;
//! a mark on a job that left the queue is dropped.

use std::collections::{HashMap, HashSet};

use super::QueueView;
use crate::slurm::model::JobId;

impl QueueView {
    /// Marks or unmarks the selected row; returns whether it is now marked.
    pub fn toggle_mark(&mut self) -> bool {
        let Some(id) = self.selected_id().cloned() else {
            return false;
        };
        self.mark_anchor = Some(id.clone());
        if self.marks.remove(&id) {
            false
        } else {
            self.marks.insert(id);
            true
        }
    }

    /// Marks every shown row between the last row marked with `toggle_mark` (or the
    /// first row, if none) and the selected one, both included. Returns how many rows
    /// the range holds.
    pub fn mark_range(&mut self) -> usize {
        let Some(cur) = self.selected_index() else {
            return 0;
        };
        let anchor = self
            .mark_anchor
            .as_ref()
            .and_then(|a| self.rows().position(|r| r.job.id == *a))
            .unwrap_or(cur);
        let (lo, hi) = (anchor.min(cur), anchor.max(cur));
        let ids: Vec<JobId> = (lo..=hi)
            .filter_map(|i| self.row(i).map(|r| r.job.id.clone()))
            .collect();
        let n = ids.len();
        self.marks.extend(ids);
        self.mark_anchor = self.selected_id().cloned();
        n
    }

    /// Marks every row the filter shows.
    pub fn mark_all_shown(&mut self) -> usize {
        let ids: Vec<JobId> = self.rows().map(|r| r.job.id.clone()).collect();
        let n = ids.len();
        self.marks.extend(ids);
        n
    }

    pub fn clear_marks(&mut self) -> bool {
        self.mark_anchor = None;
        let had = !self.marks.is_empty();
        self.marks.clear();
        had
    }

    pub fn unmark(&mut self, id: &JobId) {
        self.marks.remove(id);
    }

    pub fn is_marked(&self, id: &JobId) -> bool {
        self.marks.contains(id)
    }

    pub fn mark_count(&self) -> usize {
        self.marks.len()
    }

    /// Marked jobs in the order the table shows them (then any hidden by the filter).
    pub fn marked_ids(&self) -> Vec<JobId> {
        let mut out: Vec<JobId> = self
            .rows()
            .filter(|r| self.marks.contains(&r.job.id))
            .map(|r| r.job.id.clone())
            .collect();
        let shown: HashSet<&JobId> = out.iter().collect();
        let mut hidden: Vec<JobId> = self
            .marks
            .iter()
            .filter(|id| !shown.contains(id))
            .cloned()
            .collect();
        hidden.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        out.extend(hidden);
        out
    }

    pub(super) fn prune_marks(&mut self) {
        if self.marks.is_empty() && self.busy.is_empty() {
            return;
        }
        let present: HashSet<&JobId> = self.jobs.iter().map(|j| &j.id).collect();
        let synth: HashSet<&JobId> = self.all.synth.iter().map(|j| &j.id).collect();
        self.marks
            .retain(|id| present.contains(id) || synth.contains(id));
    }

    /// The rows of these jobs say `label` (e.g. "cancelling…") until `clear_busy`.
    pub fn set_busy(&mut self, ids: &[JobId], label: &'static str) {
        for id in ids {
            self.busy.insert(id.clone(), label);
        }
        // Widen the state column so the label is read in full (the next refresh
        // measures the column again).
        let w = u16::try_from(unicode_width::UnicodeWidthStr::width(label)).unwrap_or(u16::MAX);
        for (c, cw) in &mut self.widths {
            if *c == super::Column::State {
                *cw = (*cw).max(w);
            }
        }
    }

    pub fn clear_busy(&mut self, ids: &[JobId]) {
        for id in ids {
            self.busy.remove(id);
        }
    }

    /// Also for a row whose printed id differs from the id the action was sent for
    /// (`123_[4-99%4]` is cancelled as `123_[4-99]`).
    pub fn busy(&self, id: &JobId) -> Option<&'static str> {
        if self.busy.is_empty() {
            return None;
        }
        self.busy
            .get(id)
            .or_else(|| self.busy.get(&id.cancel_target()))
            .copied()
    }

    /// Words shown after the names of these jobs (plain job ids) of `cluster`, replacing
    /// that cluster's earlier ones.
    pub fn set_badges(&mut self, cluster: u16, badges: HashMap<u64, String>) {
        self.badges.retain(|(c, _), _| *c != cluster);
        self.badges
            .extend(badges.into_iter().map(|(id, b)| ((cluster, id), b)));
        self.measure();
    }

    /// The sweeps of `cluster` slurmdash launched (array job id -> its runs), replacing
    /// that cluster's earlier ones: each is folded into one row.
    pub fn set_sweeps(&mut self, cluster: u16, sweeps: HashMap<u64, u32>) {
        let mut next = self.sweeps.clone();
        next.retain(|(c, _), _| *c != cluster);
        next.extend(sweeps.into_iter().map(|(id, n)| ((cluster, id), n)));
        if next != self.sweeps {
            self.sweeps = next;
            self.rebuild();
        }
    }

    /// The running jobs whose GPUs have been idle for `[ui] idle_gpu_minutes`.
    pub fn set_idle(&mut self, ids: HashSet<JobId>) {
        self.idle = ids;
    }

    pub fn is_idle(&self, id: &JobId) -> bool {
        !self.idle.is_empty() && self.idle.contains(id)
    }

    /// The running jobs that used much less CPU or memory than they asked
    /// (`[ui] low_cpu_percent`, `low_mem_percent`).
    pub fn set_low_use(&mut self, ids: HashSet<JobId>) {
        self.low_use = ids;
    }

    pub fn is_low_use(&self, id: &JobId) -> bool {
        !self.low_use.is_empty() && self.low_use.contains(id)
    }

    pub fn badge(&self, id: &JobId) -> Option<&str> {
        if id.array().is_some() || id.het_offset().is_some() {
            return None;
        }
        self.badges.get(&id.array_key()).map(String::as_str)
    }

    /// The badge shown after the job's name: a guard standing by (`↻ guarded`) only while
    /// the job has not ended (its guard ends with it).
    pub fn shown_badge(&self, job: &crate::slurm::model::Job) -> Option<&str> {
        self.badge(&job.id)
            .filter(|b| !(job.state.is_finished() && *b == super::GUARDED))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::slurm::synth::squeue_rows;

    fn view(n: usize) -> QueueView {
        let mut v = QueueView::default();
        let me = include_str!("../../tests/fixtures/slurm/squeue_me.out");
        let text = squeue_rows(me, n);
        v.set_jobs(crate::slurm::parse::parse_squeue(&text).unwrap());
        v
    }

    /// `↻ guarded` stands by a job that has not ended; an ended one's guard ended with it.
    /// Retry counts stay on ended jobs: they say how many attempts it took.
    #[test]
    fn a_finished_job_is_not_shown_as_guarded() {
        let mut v = view(2);
        let mut job = v.jobs()[0].clone();
        let n = job.id.as_str().parse::<u64>().unwrap();
        v.set_badges(0, HashMap::from([(n, crate::queue::GUARDED.to_string())]));
        assert_eq!(v.shown_badge(&job), Some("↻ guarded"));
        job.state = crate::slurm::model::JobState::Completed;
        assert_eq!(v.shown_badge(&job), None);
        v.set_badges(0, HashMap::from([(n, "↻2/11".to_string())]));
        assert_eq!(v.shown_badge(&job), Some("↻2/11"));
    }

    #[test]
    fn marks_follow_ids_and_drop_with_their_jobs() {
        let mut v = view(6);
        v.select_index(1);
        assert!(v.toggle_mark());
        let first = v.selected_id().unwrap().clone();
        v.select_index(4);
        assert_eq!(v.mark_range(), 4);
        assert_eq!(v.mark_count(), 4);
        let marked = v.marked_ids();
        assert_eq!(marked[0], first);
        // A refresh where the first marked job is gone keeps the others.
        let jobs: Vec<_> = v.jobs().iter().filter(|j| j.id != first).cloned().collect();
        v.set_jobs(jobs);
        assert_eq!(v.mark_count(), 3);
        assert!(!v.is_marked(&first));
        assert!(v.clear_marks());
        assert_eq!(v.mark_count(), 0);
    }

    #[test]
    fn toggle_unmarks_and_all_marks_only_shown_rows() {
        let mut v = view(5);
        v.select_index(0);
        assert!(v.toggle_mark());
        assert!(!v.toggle_mark());
        let name = v.row(2).unwrap().job.id.as_str().to_string();
        v.set_filter(&name);
        let shown = v.len();
        assert_eq!(v.mark_all_shown(), shown);
        assert!(shown < 5);
    }
}
