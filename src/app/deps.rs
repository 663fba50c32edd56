//! The user's dependency chains: the graph built from each refresh's rows (for the detail
//! pane: what a job waits on, with each one's state, and what waits on it) and the `:deps`
//! view of it as a tree (only the chains of the jobs the queue's filter shows, when one is
//! set), with the queue's keys: up/down/top/bottom move, enter selects the
//! job in the queue and closes, `d`/`D` ask to cancel it, `y`/`Y` as in the queue, esc
//! closes.

use std::collections::HashSet;

use crossterm::event::{KeyCode, KeyEvent};

use super::confirm::{Answer, Choice, Confirm};
use super::App;
use crate::action::Cmd;
use crate::keymap::{Action, Pane};
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

impl App {
    /// After each refresh: the chains among the queue's rows (the kept rows of jobs that
    /// left it included), the jobs they name that are gone from it filled in from
    /// `:history` where it has them.
    pub(super) fn rebuild_deps(&mut self) {
        // While `:history` is shown the queue holds its rows (sacct's, without dependencies):
        // the chains of the last refresh stay.
        if self.history.open {
            return;
        }
        let history = &self.history;
        let known = |cluster: u16, id: &str| {
            let id = id.parse::<JobId>().ok()?.on(cluster);
            history.known(&id).and_then(known_of)
        };
        let filter = self.queue.filter();
        let shown = (!filter.is_empty()).then(|| {
            let ids = self.queue.rows().map(|r| r.job.id.clone()).collect();
            (filter.to_string(), ids)
        });
        self.deps.rebuild(self.queue.jobs(), known, shown);
    }

    /// `:deps`: the chains of the jobs the queue shows (all of them without a filter).
    pub(super) fn open_deps(&mut self) -> Vec<Cmd> {
        self.deps.open = true;
        self.rebuild_deps();
        if self.deps.tree.is_empty() {
            self.note = Some(
                "no dependency chains among your jobs (sbatch --dependency=afterok:ID …)".into(),
            );
        }
        Vec::new()
    }

    /// A key while `:deps` is on top: the queue's keys, on the tree's rows.
    pub(super) fn on_deps_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        if k.code == KeyCode::Esc {
            self.deps.open = false;
            return Vec::new();
        }
        let page = usize::from(self.size.1.saturating_sub(4)).max(1);
        let Some(a) = self.keymap.action(Pane::Queue, &k) else {
            return Vec::new();
        };
        match a {
            Action::Up
            | Action::Down
            | Action::Top
            | Action::Bottom
            | Action::PageUp
            | Action::PageDown => {
                self.deps.go(a, page);
                Vec::new()
            }
            Action::Quit => {
                self.deps.open = false;
                Vec::new()
            }
            Action::Refresh => self.cluster.refresh_now(self.queue.selected_job()),
            Action::Help => {
                self.help = true;
                Vec::new()
            }
            Action::Select => {
                let cmds = self.select_from_deps();
                if self.note.is_none() {
                    self.deps.open = false;
                }
                cmds
            }
            Action::Cancel | Action::CancelNow => self.cancel_from_deps(),
            Action::Files | Action::Copy => {
                let mut cmds = self.select_from_deps();
                if self.note.is_some() {
                    return cmds;
                }
                self.focus = Pane::Queue;
                cmds.extend(if a == Action::Copy {
                    self.copy()
                } else {
                    let out = self.files.open(&view!(self));
                    self.apply(out)
                });
                cmds
            }
            _ => Vec::new(),
        }
    }

    /// Selects the selected row's job in the queue (clearing a filter that hides it); a
    /// note says why when it cannot.
    fn select_from_deps(&mut self) -> Vec<Cmd> {
        let Some(id) = self.deps.selected_job().cloned() else {
            self.note = Some("not a job of the queue: it left it (or heads a group)".into());
            return Vec::new();
        };
        if !self.queue.select_id(&id) {
            self.queue.set_filter("");
            if !self.queue.select_id(&id) {
                self.note = Some(format!("job {id} is not shown in the queue"));
                return Vec::new();
            }
        }
        self.selection_changed()
    }

    /// `d`/`D`: the cancel question for the selected row's job (always asked here: the job
    /// may not be the one the queue shows selected).
    fn cancel_from_deps(&mut self) -> Vec<Cmd> {
        if self.refuse_read_only(OpKind::Cancel.verb()) {
            return Vec::new();
        }
        let Some(id) = self.deps.selected_job().cloned() else {
            self.note = Some("nothing to cancel: not a job of the queue".into());
            return Vec::new();
        };
        let Some(job) = self.queue.jobs().iter().find(|j| j.id == id) else {
            self.note = Some(format!("job {id} is not in the queue"));
            return Vec::new();
        };
        let name = crate::queue::format::one_line(&job.name);
        let prompt = format!(
            "{} {id} ({}, {})?",
            OpKind::Cancel,
            crate::queue::format::fit(&name, 40),
            job.state.long_name()
        );
        self.confirm = Some(Confirm {
            prompt,
            choices: vec![Choice {
                key: 'y',
                label: OpKind::Cancel.verb().into(),
                answer: Answer::Op(JobOp::new(OpKind::Cancel, [id])),
            }],
        });
        Vec::new()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "deps_tests.rs"]
mod tests;
