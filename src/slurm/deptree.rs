//! The user's dependency chains as the dashboard holds them: built from the queue's rows
//! (each carries squeue's `%E`), with the jobs they name that left the queue filled in from
//! what the dashboard still knows (the kept rows of departed jobs, `:history`). Read by the
//! detail pane (what a job waits on, with each one's state; what waits on it) and drawn as a
//! tree by `:deps`. Pure: built anew from each refresh's rows.

use std::collections::HashMap;

use super::dependency::{Dependency, Join, Met};
use super::model::{Job, JobId, JobState};

/// Slurm's reason for a job whose dependency can never be met.
pub const NEVER_REASON: &str = "DependencyNeverSatisfied";

/// A job of a chain: one that waits, one waited on, or one of a `singleton` group.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The id as listed, or as the dependency names it when the job is not listed.
    pub id: String,
    /// The queue's row of it, when listed.
    pub job: Option<JobId>,
    pub cluster: u16,
    /// Empty when not known.
    pub name: String,
    /// None when the dashboard does not know it (it left the queue long ago).
    pub state: Option<JobState>,
    pub dependency: Option<Dependency>,
    /// It can never start on its dependencies: Slurm says so, a job it needs to end well
    /// ended otherwise, or an `afterok` job of its can itself never start.
    pub never: bool,
}

/// From the job depended on to the job that waits (indices into [`DepGraph::nodes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub from: usize,
    pub to: usize,
    /// `afterok`, `afterany`, ...; several joined by `,` when one job names the other twice.
    pub kind: String,
    pub met: Met,
}

/// One row of the `:deps` tree.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeRow {
    pub depth: usize,
    /// The job (index into [`DepGraph::nodes`]); None for a `singleton` group's heading.
    pub node: Option<usize>,
    /// How it depends on the row it sits under (None at the top).
    pub kind: Option<String>,
    /// A `singleton` group's name, on its heading.
    pub group: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DepGraph {
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    /// Jobs of one user and name of which one waits as a `singleton`, by (cluster, name).
    pub groups: Vec<((u16, String), Vec<usize>)>,
    by_key: HashMap<(u16, String), usize>,
    /// The links from each node (indices into `links`).
    outgoing: Vec<Vec<usize>>,
    /// Each link by its (from, to), so that a job naming another twice joins one link.
    link_of: HashMap<(usize, usize), usize>,
}

#[cfg(test)]
thread_local! {
    /// Steps taken building graphs and trees on this thread, for the test that checks the
    /// work stays linear.
    pub(crate) static STEPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts `n` steps (tests only).
#[inline]
fn step(_n: usize) {
    #[cfg(test)]
    STEPS.with(|c| c.set(c.get() + _n));
}

/// At most this many rows in the tree: a job under every job it waits on repeats whole
/// subtrees, which a lattice of jobs that each wait on several could make explode.
pub const MAX_ROWS: usize = 20_000;

/// The id a condition names without `after:12+30`'s minutes.
fn named(text: &str) -> &str {
    text.split('+').next().unwrap_or(text)
}

/// Whether a job that ended in `state` leaves a condition of this kind forever unmet.
fn ended_the_other_way(kind: &str, state: &JobState) -> bool {
    if !state.is_finished() {
        return false;
    }
    let ok = *state == JobState::Completed;
    match kind {
        "afterok" => !ok,
        "afternotok" => ok,
        _ => false,
    }
}

impl DepGraph {
    /// The chains among `jobs` (a refresh's rows). `known` tells the name and state of a job
    /// a dependency names that is not among them, when the dashboard knows it.
    pub fn build(
        jobs: &[Job],
        known: impl Fn(u16, &str) -> Option<(String, JobState)>,
    ) -> DepGraph {
        let waiting: Vec<(usize, Dependency)> = jobs
            .iter()
            .enumerate()
            .filter_map(|(i, j)| Some((i, Dependency::parse(j.dependency.as_deref()?)?)))
            .collect();
        let mut g = DepGraph::default();
        if waiting.is_empty() {
            return g;
        }
        let mut by_id: HashMap<(u16, &str), usize> = HashMap::with_capacity(jobs.len());
        let mut by_base: HashMap<(u16, u64), usize> = HashMap::new();
        for (i, j) in jobs.iter().enumerate() {
            by_id.insert((j.id.cluster(), j.id.as_str()), i);
            by_base.entry((j.id.cluster(), j.id.base())).or_insert(i);
        }
        let listed = |cluster: u16, text: &str| -> Option<usize> {
            by_id.get(&(cluster, text)).copied().or_else(|| {
                let base = text.split(['_', '+']).next()?.parse::<u64>().ok()?;
                by_base.get(&(cluster, base)).copied()
            })
        };
        // Each `singleton` group (cluster, user, name) once, in the order first named.
        let mut singles: HashMap<(u16, &str, &str), usize> = HashMap::new();
        for (i, dep) in &waiting {
            let j = &jobs[*i];
            let cluster = j.id.cluster();
            let to = g.add_listed(j, Some(dep.clone()));
            for c in &dep.conditions {
                let Some(text) = &c.job else {
                    step(1);
                    let n = singles.len();
                    singles.entry((cluster, &j.user, &j.name)).or_insert(n);
                    continue;
                };
                let text = named(text);
                let from = match listed(cluster, text) {
                    Some(p) => g.add_listed(&jobs[p], None),
                    None => g.add_named(cluster, text, known(cluster, text)),
                };
                g.link(from, to, &c.kind, c.met);
            }
        }
        // Their members, in the queue's order, in one pass over the rows.
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); singles.len()];
        for j in jobs {
            step(1);
            if let Some(&k) = singles.get(&(j.id.cluster(), &*j.user, &*j.name)) {
                members[k].push(g.add_listed(j, None));
            }
        }
        let mut named: Vec<((u16, &str, &str), usize)> = singles.into_iter().collect();
        named.sort_by_key(|&(_, k)| k);
        for ((cluster, _, name), k) in named {
            g.groups
                .push(((cluster, name.to_string()), std::mem::take(&mut members[k])));
        }
        for n in &mut g.nodes {
            if let Some(d) = &n.dependency {
                if !d.can_be_met() {
                    n.never = true;
                }
            }
        }
        for j in jobs
            .iter()
            .filter(|j| j.reason.as_deref() == Some(NEVER_REASON))
        {
            if let Some(&n) = g.by_key.get(&(j.id.cluster(), j.id.as_str().to_string())) {
                g.nodes[n].never = true;
            }
        }
        g.outgoing = vec![Vec::new(); g.nodes.len()];
        for (li, l) in g.links.iter().enumerate() {
            g.outgoing[l.from].push(li);
        }
        g.settle();
        g
    }

    /// Marks the jobs that can never start because of what the jobs they wait on did (or
    /// can never do): each job looked at once, and again each time a job it waits on is
    /// found doomed.
    fn settle(&mut self) {
        let mut incoming: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for (li, l) in self.links.iter().enumerate() {
            incoming[l.to].push(li);
        }
        let mut work: Vec<usize> = (0..self.nodes.len()).collect();
        while let Some(i) = work.pop() {
            if self.nodes[i].never || !self.doomed_by(i, &incoming[i]) {
                continue;
            }
            self.nodes[i].never = true;
            work.extend(self.outgoing[i].iter().map(|&li| self.links[li].to));
        }
    }

    /// Whether job `i` can never start on the links that reach it (`incoming`).
    fn doomed_by(&self, i: usize, incoming: &[usize]) -> bool {
        let Some(d) = &self.nodes[i].dependency else {
            return false;
        };
        let mut never = incoming.iter().map(|&li| self.link_never(&self.links[li]));
        match d.join {
            Join::All => never.any(|n| n),
            // A `singleton` joined by `?` has no link and may still be met.
            Join::Any => {
                !incoming.is_empty()
                    && never.all(|n| n)
                    && !d
                        .conditions
                        .iter()
                        .any(|c| c.job.is_none() && c.met != Met::Never)
            }
        }
    }

    /// Whether this link can never be met: Slurm says so, the job it waits on ended the
    /// other way, or it waits for that job to end well and that job can never start.
    pub fn link_never(&self, l: &Link) -> bool {
        let from = &self.nodes[l.from];
        l.met == Met::Never
            || l.kind.split(',').any(|k| {
                from.state
                    .as_ref()
                    .is_some_and(|s| ended_the_other_way(k, s))
                    || (k == "afterok" && from.never)
            })
    }

    fn add_listed(&mut self, j: &Job, dependency: Option<Dependency>) -> usize {
        let key = (j.id.cluster(), j.id.as_str().to_string());
        if let Some(&i) = self.by_key.get(&key) {
            if dependency.is_some() && self.nodes[i].dependency.is_none() {
                self.nodes[i].dependency = dependency;
            }
            return i;
        }
        self.nodes.push(Node {
            id: j.id.as_str().to_string(),
            job: Some(j.id.clone()),
            cluster: j.id.cluster(),
            name: j.name.to_string(),
            state: Some(j.state.clone()),
            dependency,
            never: false,
        });
        self.by_key.insert(key, self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    fn add_named(&mut self, cluster: u16, text: &str, known: Option<(String, JobState)>) -> usize {
        let key = (cluster, text.to_string());
        if let Some(&i) = self.by_key.get(&key) {
            return i;
        }
        let (name, state) = match known {
            Some((n, s)) => (n, Some(s)),
            None => (String::new(), None),
        };
        self.nodes.push(Node {
            id: text.to_string(),
            job: None,
            cluster,
            name,
            state,
            dependency: None,
            never: false,
        });
        self.by_key.insert(key, self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    fn link(&mut self, from: usize, to: usize, kind: &str, met: Met) {
        step(1);
        if let Some(l) = self
            .link_of
            .get(&(from, to))
            .and_then(|&li| self.links.get_mut(li))
        {
            if !l.kind.split(',').any(|k| k == kind) {
                l.kind = format!("{},{kind}", l.kind);
            }
            if met == Met::Never {
                l.met = Met::Never;
            }
            return;
        }
        self.link_of.insert((from, to), self.links.len());
        self.links.push(Link {
            from,
            to,
            kind: kind.to_string(),
            met,
        });
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node of a job (as listed, or as a dependency names it) on a cluster.
    pub fn node(&self, cluster: u16, id: &str) -> Option<&Node> {
        self.by_key
            .get(&(cluster, named(id).to_string()))
            .map(|&i| &self.nodes[i])
    }

    /// The jobs that wait on this one, each with how.
    pub fn waiters(&self, cluster: u16, id: &str) -> Vec<(&Node, &Link)> {
        let Some(&i) = self.by_key.get(&(cluster, id.to_string())) else {
            return Vec::new();
        };
        let mut v: Vec<(&Node, &Link)> = self.outgoing[i]
            .iter()
            .map(|&li| (&self.nodes[self.links[li].to], &self.links[li]))
            .collect();
        v.sort_by(|a, b| id_order(&a.0.id, &b.0.id));
        v
    }

    /// The other jobs of the `singleton` group this job is in, if any.
    pub fn singleton_of(&self, cluster: u16, id: &str) -> Option<&str> {
        let i = *self.by_key.get(&(cluster, id.to_string()))?;
        self.groups
            .iter()
            .find(|(_, m)| m.contains(&i))
            .map(|((_, name), _)| name.as_str())
    }

    /// The chains drawn as a tree: each job that waits on no job and is waited on at the
    /// top, every job under each job it waits on (a job with `afterok:A:B` under A and
    /// under B), then each `singleton` group under a heading of its name.
    pub fn tree(&self) -> Vec<TreeRow> {
        let mut has_parent = vec![false; self.nodes.len()];
        let mut has_child = vec![false; self.nodes.len()];
        for l in &self.links {
            has_parent[l.to] = true;
            has_child[l.from] = true;
        }
        // A job of a `singleton` group is drawn in its group, with what waits on it.
        let grouped: std::collections::HashSet<usize> = self
            .groups
            .iter()
            .flat_map(|(_, m)| m.iter().copied())
            .collect();
        let mut roots: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| !has_parent[i] && has_child[i] && !grouped.contains(&i))
            .collect();
        roots.sort_by(|&a, &b| self.order(a, b));
        let mut rows = Vec::new();
        // Cleared by each walk as it goes back up: one for the whole tree.
        let mut on_path = vec![false; self.nodes.len()];
        step(on_path.len());
        for r in roots {
            self.walk(r, 0, None, &mut rows, &mut on_path);
        }
        let mut groups: Vec<&((u16, String), Vec<usize>)> = self.groups.iter().collect();
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        for ((_, name), members) in groups {
            rows.push(TreeRow {
                depth: 0,
                node: None,
                kind: None,
                group: Some(name.clone()),
            });
            let mut members = members.clone();
            members.sort_by(|&a, &b| self.order(a, b));
            for m in members {
                let waits = self.nodes[m]
                    .dependency
                    .as_ref()
                    .is_some_and(|d| d.conditions.iter().any(|c| c.job.is_none()));
                let kind = waits.then(|| "singleton".to_string());
                self.walk(m, 1, kind, &mut rows, &mut on_path);
            }
        }
        rows
    }

    fn order(&self, a: usize, b: usize) -> std::cmp::Ordering {
        self.nodes[a]
            .cluster
            .cmp(&self.nodes[b].cluster)
            .then_with(|| id_order(&self.nodes[a].id, &self.nodes[b].id))
    }

    /// Job `i` at `depth` and, depth first, every job that waits on it (without a stack
    /// of calls: a chain may be thousands of jobs long).
    /// `on_path`: all false, and left so.
    fn walk(
        &self,
        i: usize,
        depth: usize,
        kind: Option<String>,
        rows: &mut Vec<TreeRow>,
        on_path: &mut [bool],
    ) {
        let mut stack = vec![(i, depth, kind)];
        // The jobs from `i` down to the current row, to stop at a circle (Slurm refuses
        // circular dependencies; a bound all the same).
        let mut path: Vec<usize> = Vec::new();
        while let Some((i, d, kind)) = stack.pop() {
            if rows.len() >= MAX_ROWS {
                break;
            }
            for gone in path.drain(d - depth..) {
                on_path[gone] = false;
            }
            rows.push(TreeRow {
                depth: d,
                node: Some(i),
                kind,
                group: None,
            });
            if on_path[i] {
                continue;
            }
            path.push(i);
            on_path[i] = true;
            let mut kids: Vec<&Link> = self.outgoing[i].iter().map(|&li| &self.links[li]).collect();
            kids.sort_by(|a, b| self.order(a.to, b.to));
            stack.extend(
                kids.into_iter()
                    .rev()
                    .map(|l| (l.to, d + 1, Some(l.kind.clone()))),
            );
        }
        for gone in path {
            on_path[gone] = false;
        }
    }
}

/// Job ids in numeric order where they are numbers (`9` before `10`).
fn id_order(a: &str, b: &str) -> std::cmp::Ordering {
    let num = |s: &str| {
        s.split(['_', '+', '.'])
            .next()
            .and_then(|n| n.parse::<u64>().ok())
    };
    num(a).cmp(&num(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "deptree_tests.rs"]
pub(crate) mod tests;
