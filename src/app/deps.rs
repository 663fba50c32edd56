//! The user's dependency chains: the graph built from each refresh's rows (for the detail
//! pane: what a job waits on, with each one's state, and what waits on it) and the `:deps`
//! view of it as a tree (only the chains of the jobs the queue's filter shows, when one is
//! set), with the queue's keys: up/down/top/bottom move, enter selects the
//! job in the queue and closes, `d`/`D` ask to cancel it, `y`/`Y` as in the queue, esc
//! closes.

use std::collections::HashSet;

use crossterm::event::{KeyCode, KeyEvent};

use super::component::{Out, View};
use super::confirm::{Answer, Choice, Confirm};
use super::history::HistoryState;
#[cfg(test)]
use super::App;
use crate::keymap::Action;
use crate::slurm::deptree::{DepGraph, TreeRow};
use crate::slurm::model::{Job, JobDetail, JobId, JobState};
use crate::slurm::ops::{JobOp, OpKind};

#[derive(Debug, Clone, Default)]
pub struct DepsState {
    /// Built anew from each refresh's rows.
    pub graph: DepGraph,
    /// The graph as `:deps` draws it.
    pub tree: Vec<TreeRow>,
    pub open: bool,
    /// The queue's filter when the tree keeps only the chains of jobs it shows.
    pub filter: Option<String>,
    /// The selected row of `tree`.
    pub cursor: usize,
    /// The selected row's job and the job it sits under, kept across refreshes.
    selected: Option<(Option<String>, Option<String>)>,
}

impl DepsState {
    /// A refresh's rows; `known` names the jobs that left them. With `shown` (the queue's
    /// filter and the jobs it shows) only the chains that hold one of those jobs are kept.
    pub fn rebuild(
        &mut self,
        jobs: &[Job],
        known: impl Fn(u16, &str) -> Option<(String, JobState)>,
        shown: Option<(String, HashSet<JobId>)>,
    ) {
        self.graph = DepGraph::build(jobs, known);
        self.tree = self.graph.tree();
        self.filter = None;
        if let Some((filter, ids)) = shown {
            self.tree = self.only_chains_of(&ids);
            self.filter = Some(filter);
        }
        // The same job under the same parent, else the same job, else the same place.
        let at = self.selected.as_ref().and_then(|want| {
            let keys: Vec<_> = (0..self.tree.len()).map(|i| self.key(i)).collect();
            keys.iter()
                .position(|k| k == want)
                .or_else(|| keys.iter().position(|k| k.0 == want.0))
        });
        self.cursor = at
            .unwrap_or(self.cursor)
            .min(self.tree.len().saturating_sub(1));
        self.remember();
    }

    /// The tree's top-level blocks that hold a job of `ids`.
    fn only_chains_of(&self, ids: &HashSet<JobId>) -> Vec<TreeRow> {
        let mut out = Vec::new();
        let mut block: Vec<TreeRow> = Vec::new();
        let mut keep = false;
        let end = TreeRow {
            depth: 0,
            node: None,
            kind: None,
            group: None,
        };
        for r in self.tree.iter().chain(std::iter::once(&end)) {
            if r.depth == 0 {
                if keep {
                    out.append(&mut block);
                }
                block.clear();
                keep = false;
            }
            keep |= r
                .node
                .and_then(|n| self.graph.nodes[n].job.as_ref())
                .is_some_and(|id| ids.contains(id));
            block.push(r.clone());
        }
        out
    }

    /// The job of row `i` and the job it sits under.
    fn key(&self, i: usize) -> (Option<String>, Option<String>) {
        let id_of = |i: usize| -> Option<String> {
            let r = self.tree.get(i)?;
            match r.node {
                Some(n) => Some(self.graph.nodes[n].id.clone()),
                None => r.group.as_ref().map(|g| format!("singleton {g}")),
            }
        };
        let depth = self.tree.get(i).map_or(0, |r| r.depth);
        let parent = (0..i)
            .rev()
            .find(|&p| self.tree[p].depth < depth)
            .and_then(id_of);
        (id_of(i), parent)
    }

    fn remember(&mut self) {
        self.selected = (!self.tree.is_empty()).then(|| self.key(self.cursor));
    }

    /// The job of the selected row, when it is one the queue lists.
    pub fn selected_job(&self) -> Option<&JobId> {
        let n = self.tree.get(self.cursor)?.node?;
        self.graph.nodes[n].job.as_ref()
    }

    fn go(&mut self, a: Action, page: usize) {
        let last = self.tree.len().saturating_sub(1);
        self.cursor = match a {
            Action::Up => self.cursor.saturating_sub(1),
            Action::Down => (self.cursor + 1).min(last),
            Action::PageUp => self.cursor.saturating_sub(page),
            Action::PageDown => (self.cursor + page).min(last),
            Action::Top => 0,
            Action::Bottom => last,
            _ => self.cursor,
        };
        self.remember();
    }
}

/// The name and state of a job that left the queue, from its detail as `:history` read it.
pub(super) fn known_of(d: &JobDetail) -> Option<(String, JobState)> {
    Some((d.name.clone(), d.state.clone()?))
}

/// What a key on `:deps` asks of the router, beyond what the view does itself.
#[derive(Debug)]
pub enum DepsKey {
    /// Done here: nothing more, or a note.
    Done(Out),
    Refresh,
    Help,
    /// `d`/`D`: the cancel question for the selected row's job.
    Cancel,
    /// Select this job in the queue (clearing a filter that hides it); then close the view
    /// (`None`), or go on with `y`/`Y` from the queue (`Some`).
    Select(JobId, Option<Action>),
}

/// The component's handlers.
impl DepsState {
    /// After each refresh: the chains among the queue's rows (the kept rows of jobs that
    /// left it included), the jobs they name that are gone from it filled in from
    /// `:history` where it has them.
    pub fn refresh(&mut self, v: &View, history: &HistoryState) {
        // While `:history` is shown its rows are (sacct's, without dependencies): the
        // chains of the last refresh stay.
        if history.open {
            return;
        }
        let known = |cluster: u16, id: &str| {
            let id = id.parse::<JobId>().ok()?.on(cluster);
            history.known(&id).and_then(known_of)
        };
        let filter = v.queue.filter();
        let shown = (!filter.is_empty()).then(|| {
            let ids = v.queue.rows().map(|r| r.job.id.clone()).collect();
            (filter.to_string(), ids)
        });
        self.rebuild(v.queue.jobs(), known, shown);
    }

    /// `:deps`: the chains of the jobs the queue shows (all of them without a filter).
    pub fn open_view(&mut self, v: &View, history: &HistoryState) -> Out {
        self.open = true;
        self.refresh(v, history);
        if self.tree.is_empty() {
            return Out::note(
                "no dependency chains among your jobs (sbatch --dependency=afterok:ID …)",
            );
        }
        Out::none()
    }

    /// A key while `:deps` is on top (`action`: what the queue's keymap makes of it): the
    /// queue's keys, on the tree's rows.
    pub fn on_key(&mut self, k: &KeyEvent, action: Option<Action>, page: usize) -> DepsKey {
        let done = DepsKey::Done(Out::none());
        if k.code == KeyCode::Esc {
            self.open = false;
            return done;
        }
        let Some(a) = action else {
            return done;
        };
        match a {
            Action::Up
            | Action::Down
            | Action::Top
            | Action::Bottom
            | Action::PageUp
            | Action::PageDown => {
                self.go(a, page);
                done
            }
            Action::Quit => {
                self.open = false;
                done
            }
            Action::Refresh => DepsKey::Refresh,
            Action::Help => DepsKey::Help,
            Action::Select | Action::Files | Action::Copy => match self.selected_job() {
                Some(id) => DepsKey::Select(id.clone(), (a != Action::Select).then_some(a)),
                None => DepsKey::Done(Out::note(
                    "not a job of the queue: it left it (or heads a group)",
                )),
            },
            Action::Cancel | Action::CancelNow => DepsKey::Cancel,
            _ => done,
        }
    }

    /// The cancel question for the selected row's job (always asked here: the job may not
    /// be the one the queue shows selected).
    pub fn cancel(&self, v: &View) -> Out {
        let Some(id) = self.selected_job().cloned() else {
            return Out::note("nothing to cancel: not a job of the queue");
        };
        let Some(job) = v.queue.jobs().iter().find(|j| j.id == id) else {
            return Out::note(format!("job {id} is not in the queue"));
        };
        let name = crate::queue::format::one_line(&job.name);
        let prompt = format!(
            "{} {id} ({}, {})?",
            OpKind::Cancel,
            crate::queue::format::fit(&name, 40),
            job.state.long_name()
        );
        Out::confirm(Confirm {
            prompt,
            choices: vec![Choice {
                key: 'y',
                label: OpKind::Cancel.verb().into(),
                answer: Answer::Op(JobOp::new(OpKind::Cancel, [id])),
            }],
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "deps_tests.rs"]
mod tests;
