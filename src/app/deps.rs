//! The user's dependency chains: the graph built from each refresh's rows (for the detail
//! pane: what a job waits on, with each one's state, and what waits on it) and the `:deps`
//! view of it as a tree (only the chains of the jobs the queue's filter shows, when one is
//! set), with the queue's keys: up/down/top/bottom move, enter selects the
//! job in the queue and closes, `d`/`D` ask to cancel it, `y`/`Y` as in the queue, esc
//! closes.

use std::collections::HashSet;

use crossterm::event::{KeyCode, KeyEvent};

use super::component::{Out, View};
use super::history::HistoryState;
#[cfg(test)]
use super::App;
use crate::keymap::Action;
use crate::slurm::dependency::Dependency;
use crate::slurm::deptree::{DepGraph, TreeRow};
use crate::slurm::model::{Job, JobDetail, JobId, JobState};
use crate::slurm::ops::{JobOp, OpKind};

#[derive(Debug, Clone, Default)]
pub struct DepsState {
    /// Built anew from each refresh's rows while something reads it (`:deps`, the detail
    /// pane of a job in a chain); empty otherwise.
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
    /// `graph` (empty when nothing read it) is of the latest refresh's rows.
    current: bool,
    /// Graphs built so far (the tests check none is built while nothing reads it).
    #[cfg(test)]
    pub builds: usize,
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
        self.build(jobs, known);
        self.tree = self.graph.tree();
        self.filter = None;
        if let Some((filter, ids)) = shown {
            self.tree = self.only_chains_of(&ids);
            self.filter = Some(filter);
        }
        // The same job under the same parent, else the same job, else the same place.
        let at = self.selected.as_ref().and_then(|want| {
            let keys = self.keys();
            keys.iter()
                .position(|k| k == want)
                .or_else(|| keys.iter().position(|k| k.0 == want.0))
        });
        self.cursor = at
            .unwrap_or(self.cursor)
            .min(self.tree.len().saturating_sub(1));
        self.remember();
    }

    fn build(&mut self, jobs: &[Job], known: impl Fn(u16, &str) -> Option<(String, JobState)>) {
        self.graph = DepGraph::build(jobs, known);
        #[cfg(test)]
        {
            self.builds += 1;
        }
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

    /// The job of row `i`, or a group's heading.
    fn id_of(&self, i: usize) -> Option<String> {
        let r = self.tree.get(i)?;
        match r.node {
            Some(n) => Some(self.graph.nodes[n].id.clone()),
            None => r.group.as_ref().map(|g| format!("singleton {g}")),
        }
    }

    /// The row `i` sits under.
    fn parent_of(&self, i: usize) -> Option<usize> {
        let depth = self.tree.get(i).map_or(0, |r| r.depth);
        (0..i).rev().find(|&p| self.tree[p].depth < depth)
    }

    /// The job of row `i` and the job it sits under.
    fn key(&self, i: usize) -> (Option<String>, Option<String>) {
        (self.id_of(i), self.parent_of(i).and_then(|p| self.id_of(p)))
    }

    /// [`Self::key`] of every row, in one pass (the rows above each one kept as a stack,
    /// rather than looked for again for each row).
    fn keys(&self) -> Vec<(Option<String>, Option<String>)> {
        let mut above: Vec<usize> = Vec::new();
        (0..self.tree.len())
            .map(|i| {
                let depth = self.tree[i].depth;
                while above.last().is_some_and(|&p| self.tree[p].depth >= depth) {
                    above.pop();
                }
                let parent = above.last().and_then(|&p| self.id_of(p));
                above.push(i);
                (self.id_of(i), parent)
            })
            .collect()
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

/// Whether the detail pane may read the chains of the queue's selected job: it waits on a
/// job, or a job's dependency names one of its id (its base id as a whole number: a
/// dependency on an array names its tasks by it). May say yes for a job in no chain, never
/// no for one in a chain.
fn in_a_chain(v: &View) -> bool {
    let Some(sel) = v.queue.selected_job() else {
        return false;
    };
    if sel
        .dependency
        .as_deref()
        .and_then(Dependency::parse)
        .is_some()
    {
        return true;
    }
    let base = sel.id.base().to_string();
    v.queue.jobs().iter().any(|j| {
        j.dependency
            .as_deref()
            .is_some_and(|d| names_number(d, &base))
    })
}

/// Whether `text` holds `number` with no digit next to it.
fn names_number(text: &str, number: &str) -> bool {
    let b = text.as_bytes();
    text.match_indices(number).any(|(i, m)| {
        let before = i.checked_sub(1).and_then(|p| b.get(p));
        let after = b.get(i + m.len());
        !before.is_some_and(u8::is_ascii_digit) && !after.is_some_and(u8::is_ascii_digit)
    })
}

/// The component's handlers.
impl DepsState {
    /// After each refresh: the chains among the queue's rows (the kept rows of jobs that
    /// left it included), the jobs they name that are gone from it filled in from
    /// `:history` where it has them; built only when something reads them (see
    /// [`Self::on_select`]).
    pub fn refresh(&mut self, v: &View, history: &HistoryState) {
        self.current = false;
        self.on_select(v, history);
    }

    /// The queue's selection moved (and after each refresh): the chains are built when
    /// `:deps` is open or the detail pane may show the selected job's, and are not built
    /// again until the next refresh.
    pub fn on_select(&mut self, v: &View, history: &HistoryState) {
        // While `:history` is shown its rows are (sacct's, without dependencies): the
        // chains of the last refresh stay.
        if history.open || self.current {
            return;
        }
        if !self.open && !in_a_chain(v) {
            // Nothing reads them: none kept, none built.
            if !self.graph.is_empty() {
                self.graph = DepGraph::default();
            }
            self.tree.clear();
            return;
        }
        self.current = true;
        let known = |cluster: u16, id: &str| {
            let id = id.parse::<JobId>().ok()?.on(cluster);
            history.known(&id).and_then(known_of)
        };
        if self.open {
            let filter = v.queue.filter();
            let shown = (!filter.is_empty()).then(|| {
                let ids = v.queue.rows().map(|r| r.job.id.clone()).collect();
                (filter.to_string(), ids)
            });
            self.rebuild(v.queue.jobs(), known, shown);
        } else {
            // Only `:deps` draws the tree.
            self.build(v.queue.jobs(), known);
            self.tree.clear();
        }
    }

    /// `:deps`: the chains of the jobs the queue shows (all of them without a filter).
    pub fn open_view(&mut self, v: &View, history: &HistoryState) -> Out {
        self.open = true;
        self.current = false;
        self.on_select(v, history);
        if self.tree.is_empty() {
            return Out::note(
                "no dependency chains among your jobs (sbatch --dependency=afterok:ID …)",
            );
        }
        Out::none()
    }

    /// A key while `:deps` is on top (`action`: what the queue's keymap makes of it): the
    /// queue's keys, on the tree's rows. Enter selects the row's job in the queue and
    /// closes the view; `y`/`Y` select it and go on from the queue.
    pub fn on_key(&mut self, v: &View, k: &KeyEvent, action: Option<Action>, page: usize) -> Out {
        let done = Out::none();
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
            Action::Refresh | Action::Help => Out::then(a),
            Action::Select | Action::Files | Action::Copy => match self.selected_job() {
                Some(id) => {
                    let then = (a != Action::Select).then_some(a);
                    Out {
                        select: Some(id.clone()),
                        close: then.is_none(),
                        then,
                        focus: then.map(|_| crate::keymap::Pane::Queue),
                        ..Out::default()
                    }
                }
                None => Out::note("not a job of the queue: it left it (or heads a group)"),
            },
            Action::Cancel | Action::CancelNow => {
                match v.read_only_refusal(crate::slurm::ops::OpKind::Cancel.verb()) {
                    Some(why) => Out::note(why),
                    None => self.cancel(v),
                }
            }
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
        Out::confirm(super::confirm::Confirm::one_job(
            JobOp::new(OpKind::Cancel, [id]),
            job,
        ))
    }
}

impl super::component::Overlaid for DepsState {
    fn is_open(&self) -> bool {
        self.open
    }

    fn close(&mut self) {
        self.open = false;
    }
}

/// The view's own keys here; the queue's action for the key says what reaches beyond it.
impl super::component::OverlayKeys for DepsState {
    fn overlay_key(&mut self, k: &KeyEvent, cx: &super::component::Keys) -> Out {
        let action = cx.keymap.action(crate::keymap::Pane::Queue, k);
        self.on_key(&cx.view, k, action, cx.page(4))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "deps_tests.rs"]
mod tests;
