//! What the launch form says of a request before it is sent (issue 39): whether its time
//! limit runs into a maintenance window on the nodes its partitions hold, and the largest
//! request that would start at once there. Pure: from the facts the form read when it
//! opened (`sinfo --Node` with what jobs hold of each node) and the reservations the
//! dashboard keeps (`app::maintenance`), on the cluster's clock. Nothing here costs a read:
//! it is worked out again as the form's fields change.
//!
//! "Starts now" is what the nodes' free resources and the reservations allow; a pending job
//! of higher priority may still take those resources first (`t` asks the scheduler).

use std::time::Duration;

use chrono::NaiveDateTime;

use super::facts::{ClusterFacts, NodeShape};
use super::spec::LaunchSpec;
use super::validate::{mem_mb, parse_time};
use crate::slurm::reservation::{self, Need, Reservation, WindowHit};
use crate::slurm::time::SlurmDuration;

/// What the form asks for, as far as nodes and windows go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The partitions listed (the cluster's default when none is).
    pub partitions: Vec<String>,
    pub nodes: u32,
    pub gpus_per_node: u32,
    /// One task a node (`--ntasks-per-node=1`): its CPUs.
    pub cpus_per_node: u32,
    /// `--mem` (per node), when given.
    pub mem_mb: Option<u64>,
    /// None while the time limit does not read.
    pub time: Option<Duration>,
}

impl Request {
    /// The request of `spec` the way validation reads it (GPUs at or above a node's
    /// maximum take whole nodes).
    pub fn of(spec: &LaunchSpec, facts: &ClusterFacts) -> Request {
        let partitions = crate::launch::validate::chosen_partitions(spec, facts);
        let max_per_node = spec.max_gpus_per_node.max(1);
        let (nodes, gpus_per_node) = if spec.gpus >= max_per_node {
            (
                spec.nodes.max(spec.gpus.div_ceil(max_per_node)),
                max_per_node,
            )
        } else {
            let n = spec.nodes.max(1);
            (n, spec.gpus.div_ceil(n))
        };
        Request {
            partitions,
            nodes,
            gpus_per_node,
            cpus_per_node: spec.cpus_per_task.max(1),
            mem_mb: mem_mb(spec.mem.trim()).filter(|_| !spec.mem.trim().is_empty()),
            time: parse_time(&spec.time).ok(),
        }
    }

    /// The nodes of its partitions (each once; a node in two of them counts once).
    pub fn nodes_of<'a>(&self, facts: &'a ClusterFacts) -> Vec<&'a NodeShape> {
        let mut seen = std::collections::HashSet::new();
        facts
            .nodes
            .iter()
            .filter(|n| self.partitions.contains(&n.partition))
            .filter(|n| seen.insert(n.node.as_str()))
            .collect()
    }

    fn partition_text(&self) -> String {
        self.partitions.join(",")
    }
}

/// The maintenance window the request's time limit runs into on its partitions' nodes,
/// if it started now (`cnow`: the cluster's clock), with the longest limit that ends
/// before it. None without a time limit that reads or without the nodes.
pub fn maintenance(
    req: &Request,
    facts: &ClusterFacts,
    reservations: &[Reservation],
    cnow: NaiveDateTime,
) -> Option<WindowHit> {
    let time = req.time?;
    let usable: Vec<String> = req
        .nodes_of(facts)
        .into_iter()
        .map(|n| n.node.clone())
        .collect();
    let need = Need {
        usable: &usable,
        nodes: req.nodes,
        time_limit: SlurmDuration::Known(time),
        from: cnow,
    };
    reservation::maintenance_hit(reservations, &need)
}

/// The form's warning: "your 4h limit runs into maintenance 2026-11-28 12:00–14:00 on
/// gpu[01-02] (in 1h50m); a limit of 1h50m or less starts before it".
pub fn maintenance_text(hit: &WindowHit, req: &Request, cnow: NaiveDateTime) -> String {
    let r = &hit.reservation;
    let limit = req
        .time
        .map(|t| SlurmDuration::Known(t).human())
        .unwrap_or_default();
    let window = reservation::window_text(r);
    let window = crate::queue::format::one_line(&window);
    let when = reservation::when_text(r, cnow);
    match &hit.longest {
        Some(l) => format!(
            "your {limit} limit runs into {window} ({when}); a limit of {} or less starts before it",
            l.human()
        ),
        None => format!(
            "{window} ({when}) holds the nodes of {}: the job waits until it ends",
            req.partition_text()
        ),
    }
}

/// The largest request that would start at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartsNow {
    /// `nodes` nodes of `gpus_per_node` GPUs (or `cpus_per_node` CPUs on a partition
    /// without GPUs) each, for up to `limit` (None: no limit in the way).
    Up {
        nodes: u32,
        gpus_per_node: u32,
        cpus_per_node: u32,
        limit: Option<Duration>,
        /// What ends the limit: the next reservation on those nodes (None: MaxTime).
        until: Option<Box<Reservation>>,
        /// The form's own request fits in it.
        fits: bool,
    },
    /// Nothing of the form's size starts now.
    Nothing(Blocked),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocked {
    /// Every node is in a reservation now: open again at its end.
    Reserved(Box<Reservation>),
    /// No node is idle or mixed (all busy, drained or down): how many there are.
    Busy(usize),
    /// Some are open, but fewer than `nodes` have the CPUs and memory asked.
    TooFew { open: usize },
}

/// Per node: the longest a job starting now may run there (None: no reservation ahead),
/// or None at all when a reservation holds it now.
fn window_of(node: &str, reservations: &[Reservation], cnow: NaiveDateTime) -> Option<Window> {
    let mut next: Option<&Reservation> = None;
    for r in reservations.iter().filter(|r| r.end > cnow) {
        if !r.nodes.iter().any(|n| n == node) {
            continue;
        }
        if r.start <= cnow {
            return None;
        }
        if next.is_none_or(|n| r.start < n.start) {
            next = Some(r);
        }
    }
    Some(Window {
        next: next.cloned(),
    })
}

#[derive(Debug, Clone)]
struct Window {
    next: Option<Reservation>,
}

impl Window {
    /// Seconds a job starting at `cnow` has before the window (u64::MAX: unbounded).
    fn secs(&self, cnow: NaiveDateTime) -> u64 {
        match &self.next {
            Some(r) => reservation::longest_before(cnow, r.start)
                .and_then(|d| d.known())
                .map_or(0, |d| d.as_secs()),
            None => u64::MAX,
        }
    }
}

/// The largest request like `req` (its node count, CPUs and memory a node) that the open
/// nodes of its partitions (idle or mixed, in no reservation now) have free at once: the
/// most GPUs a node on `req.nodes` nodes, and for those the longest time limit before the
/// next reservation on them, capped by the partitions' MaxTime. A job cannot run on
/// reserved nodes during their reservation unless it names it, which the form does not.
pub fn starts_now(
    req: &Request,
    facts: &ClusterFacts,
    reservations: &[Reservation],
    cnow: NaiveDateTime,
) -> Option<StartsNow> {
    let all = req.nodes_of(facts);
    // Without the nodes, or without what jobs hold of them (state unread), nothing is said.
    if all.iter().all(|n| n.state.is_empty()) {
        return None;
    }
    let with_gpus = all.iter().any(|n| n.gpus > 0);
    // Open now: idle or mixed and in no reservation at this moment.
    let open: Vec<(&NodeShape, Window)> = all
        .iter()
        .filter(|n| n.open())
        .filter_map(|n| window_of(&n.node, reservations, cnow).map(|w| (*n, w)))
        .collect();
    if open.is_empty() {
        let reserved = all
            .iter()
            .filter_map(|n| {
                reservations
                    .iter()
                    .find(|r| r.start <= cnow && r.end > cnow && r.nodes.contains(&n.node))
            })
            .max_by_key(|r| r.end);
        let every_reserved = all.iter().all(|n| {
            reservations
                .iter()
                .any(|r| r.start <= cnow && r.end > cnow && r.nodes.contains(&n.node))
        });
        return Some(StartsNow::Nothing(match reserved {
            Some(r) if every_reserved => Blocked::Reserved(Box::new(r.clone())),
            _ => Blocked::Busy(all.len()),
        }));
    }
    let fits_base = |n: &NodeShape| {
        n.cpus_idle >= req.cpus_per_node && req.mem_mb.is_none_or(|m| n.mem_free_mb() >= m)
    };
    let base: Vec<&(&NodeShape, Window)> = open.iter().filter(|(n, _)| fits_base(n)).collect();
    let want = usize::try_from(req.nodes.max(1)).unwrap_or(usize::MAX);
    if base.len() < want {
        return Some(StartsNow::Nothing(Blocked::TooFew { open: open.len() }));
    }
    // The most GPUs a node that `want` nodes have free (the want-th largest).
    let mut free: Vec<u32> = base.iter().map(|(n, _)| n.gpus_free()).collect();
    free.sort_unstable_by(|a, b| b.cmp(a));
    let gpus = free[want - 1];
    let mut cpus: Vec<u32> = base.iter().map(|(n, _)| n.cpus_idle).collect();
    cpus.sort_unstable_by(|a, b| b.cmp(a));
    let cpus_per_node = cpus[want - 1];
    // Among the nodes with that many free, the `want` with the longest windows.
    let mut chosen: Vec<&&(&NodeShape, Window)> = base
        .iter()
        .filter(|(n, _)| !with_gpus || n.gpus_free() >= gpus)
        .collect();
    chosen.sort_by_key(|(_, w)| std::cmp::Reverse(w.secs(cnow)));
    let (_, w) = chosen.get(want - 1)?;
    let window = w.secs(cnow);
    let max_time = req
        .partitions
        .iter()
        .filter_map(|p| facts.partition(p))
        .map(|p| p.max_time.map_or(u64::MAX, |d| d.as_secs()))
        .max()
        .unwrap_or(u64::MAX);
    let (limit, until) = if window < max_time {
        (Some(window), w.next.clone().map(Box::new))
    } else {
        ((max_time != u64::MAX).then_some(max_time), None)
    };
    if limit == Some(0) {
        return Some(StartsNow::Nothing(Blocked::Reserved(Box::new(
            w.next.clone()?,
        ))));
    }
    let fits = (!with_gpus || req.gpus_per_node <= gpus)
        && req
            .time
            .is_some_and(|t| limit.is_none_or(|l| t.as_secs() <= l));
    Some(StartsNow::Up {
        nodes: req.nodes.max(1),
        gpus_per_node: if with_gpus { gpus } else { 0 },
        cpus_per_node,
        limit: limit.map(Duration::from_secs),
        until,
        fits,
    })
}

/// The form's line: "up to 2 GPUs for up to 1h50m start now on spare (until maintenance
/// 12:00); yours fits" / "nothing starts now on gpu: all 8 nodes busy".
pub fn starts_now_text(s: &StartsNow, req: &Request) -> String {
    let on = req.partition_text();
    match s {
        StartsNow::Up {
            nodes,
            gpus_per_node,
            cpus_per_node,
            limit,
            until,
            fits,
        } => {
            let what = match (*nodes, *gpus_per_node) {
                (1, 0) => format!("up to {cpus_per_node} CPUs"),
                (n, 0) => format!("{n} nodes of up to {cpus_per_node} CPUs"),
                (1, g) => format!("up to {g} GPU{}", if g == 1 { "" } else { "s" }),
                (n, g) => format!(
                    "{n} nodes of up to {g} GPU{} each",
                    if g == 1 { "" } else { "s" }
                ),
            };
            let how_long = match (limit, until) {
                (Some(l), Some(r)) => format!(
                    " for up to {} (until {} {})",
                    SlurmDuration::Known(*l).human(),
                    if r.is_maintenance() {
                        "maintenance".to_string()
                    } else {
                        format!("reservation {}", r.name)
                    },
                    r.start.format("%H:%M")
                ),
                (Some(l), None) => {
                    format!(" for up to {} (MaxTime)", SlurmDuration::Known(*l).human())
                }
                (None, _) => " for any time limit".to_string(),
            };
            let yours = if *fits {
                "yours fits"
            } else {
                "yours would wait"
            };
            format!("{what}{how_long} start now on {on}; {yours}")
        }
        StartsNow::Nothing(Blocked::Reserved(r)) => format!(
            "nothing starts now on {on}: its nodes are reserved ({}) until {}",
            if r.is_maintenance() {
                "maintenance".to_string()
            } else {
                r.name.clone()
            },
            r.end.format("%H:%M")
        ),
        StartsNow::Nothing(Blocked::Busy(n)) => format!(
            "nothing starts now on {on}: all {n} node{} busy or unavailable",
            if *n == 1 { "" } else { "s" }
        ),
        StartsNow::Nothing(Blocked::TooFew { open }) => {
            let mem = req
                .mem_mb
                .map(|m| format!(" and {} MiB", m))
                .unwrap_or_default();
            format!(
                "nothing of this size starts now on {on}: {open} node{} open, {} with {} CPUs{mem} free",
                if *open == 1 { "" } else { "s" },
                if req.nodes == 1 { "none".to_string() } else { format!("fewer than {}", req.nodes) },
                req.cpus_per_node
            )
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "outlook_tests.rs"]
mod tests;
