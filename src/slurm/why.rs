//! "Starts now if…": for a pending job, up to three concrete changes (a shorter time limit,
//! another partition, fewer GPUs or nodes), each with the `scontrol update` that applies it
//! and the `sbatch --test-only` that asks the scheduler when a job of that shape would
//! start. Pure: which changes to offer ([`alternatives`]), their argv, the up-front checks
//! ([`check_apply`]) and Slurm's refusals in words ([`refusal`]). `io::why` runs the checks
//! (one exec for all of them) and applies one.
//!
//! What a user may change on a pending job of theirs, as the dev clusters (Slurm 22.05,
//! 24.11, 26.05) answer it: a lower time limit (a higher one only up to the partition's
//! MaxTime, never on a running job: "Access/permission denied"), the partition, the node
//! count and the GPUs per node (`TresPerNode=gres/gpu:N`).

use chrono::NaiveDateTime;

use super::fit::{fits, JobRequest};
use super::model::{Job, JobDetail, JobState, Partition, SlurmDuration};
use super::reservation::{self, Need, Reservation, WindowHit};

/// What a job asks for, as `sbatch --test-only` needs it to ask about a job of that shape.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shape {
    pub partition: String,
    pub account: String,
    pub qos: String,
    pub time_limit: SlurmDuration,
    pub nodes: u32,
    pub ntasks: Option<u32>,
    pub cpus_per_task: Option<u32>,
    /// Total CPUs (used when tasks and CPUs per task are unknown).
    pub cpus: u32,
    /// `--mem` (per node) or `--mem-per-cpu`, as Slurm printed it (`1G`, `500M`).
    pub mem_per_node: Option<String>,
    pub mem_per_cpu: Option<String>,
    /// Per node, as sbatch's `--gres` takes it: `gpu:2`, `gpu:a100:1`.
    pub gres: Option<String>,
    pub constraint: Option<String>,
    pub nodelist: Option<String>,
    pub exclude: Option<String>,
    pub reservation: Option<String>,
}

fn set(v: Option<&str>) -> Option<String> {
    v.map(str::trim)
        .filter(|v| !v.is_empty() && !matches!(*v, "(null)" | "N/A" | "None"))
        .map(str::to_string)
}

fn lead_num(v: Option<&str>) -> Option<u32> {
    let v = v?.trim();
    let end = v
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(v.len());
    v[..end].parse().ok()
}

/// `gres/gpu:2`, `gres:gpu:2` (squeue's `%b`) → `gpu:2`, each item of a list.
fn gres_of(tres_per_node: &str) -> Option<String> {
    let items: Vec<&str> = tres_per_node
        .split(',')
        .map(|i| {
            let i = i.trim();
            i.strip_prefix("gres/")
                .or_else(|| i.strip_prefix("gres:"))
                .unwrap_or(i)
        })
        .filter(|i| !i.is_empty() && *i != "N/A")
        .collect();
    (!items.is_empty()).then(|| items.join(","))
}

impl Shape {
    /// From the queue's row alone: tasks are read as one per node with the CPUs shared
    /// evenly, and memory is left to the partition's default.
    pub fn of_job(job: &Job) -> Shape {
        let nodes = job.nodes.max(1);
        let (ntasks, cpt) = if job.cpus > 0 && job.cpus.is_multiple_of(nodes) {
            (Some(nodes), Some(job.cpus / nodes))
        } else {
            (None, None)
        };
        Shape {
            partition: job.partition.to_string(),
            account: job.account.to_string(),
            qos: job.qos.to_string(),
            time_limit: job.time_limit,
            nodes,
            ntasks,
            cpus_per_task: cpt,
            cpus: job.cpus,
            gres: job.tres_per_node.as_deref().and_then(gres_of),
            ..Shape::default()
        }
    }

    /// From `scontrol show job`: tasks, CPUs per task, memory, constraints and node lists
    /// as the job asked for them.
    pub fn of_detail(d: &JobDetail) -> Shape {
        let f = |k: &str| d.field(k);
        let (mem_per_node, mem_per_cpu) = match (set(f("MinMemoryNode")), set(f("MinMemoryCPU"))) {
            (Some(n), _) if n != "0" => (Some(n), None),
            (_, Some(c)) => (None, Some(c)),
            _ => (None, None),
        };
        Shape {
            partition: d.partition.clone().unwrap_or_default(),
            account: d.account.clone().unwrap_or_default(),
            qos: d.qos.clone().unwrap_or_default(),
            time_limit: d.time_limit.unwrap_or_default(),
            nodes: d.nodes.unwrap_or(1).max(1),
            ntasks: lead_num(f("NumTasks")),
            cpus_per_task: lead_num(f("CPUs/Task")),
            cpus: d.cpus.unwrap_or(0),
            mem_per_node,
            mem_per_cpu,
            gres: d.tres_per_node.as_deref().and_then(gres_of),
            constraint: set(f("Features")),
            nodelist: set(f("ReqNodeList")),
            exclude: set(f("ExcNodeList")),
            reservation: set(f("Reservation")),
        }
    }

    /// `sbatch --test-only` for a job of this shape running `true`: nothing is queued, the
    /// answer (on stderr) is the scheduler's estimated start. Two slurmctld RPCs.
    pub fn test_only_argv(&self) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "sbatch".into(),
            "--test-only".into(),
            "--job-name=slurmdash-why".into(),
            "--output=/dev/null".into(),
        ];
        let mut opt = |k: &str, v: Option<String>| {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                a.push(format!("--{k}={v}"));
            }
        };
        opt("partition", Some(self.partition.clone()));
        opt("account", Some(self.account.clone()));
        opt("qos", Some(self.qos.clone()));
        opt(
            "time",
            self.time_limit
                .known()
                .map(|_| self.time_limit.to_slurm())
                .or_else(|| {
                    (self.time_limit == SlurmDuration::Unlimited).then(|| "UNLIMITED".into())
                }),
        );
        opt("nodes", Some(self.nodes.max(1).to_string()));
        match (self.ntasks, self.cpus_per_task) {
            (Some(n), Some(c)) => {
                opt("ntasks", Some(n.to_string()));
                opt("cpus-per-task", Some(c.to_string()));
            }
            _ if self.cpus > 0 => opt("ntasks", Some(self.cpus.to_string())),
            _ => {}
        }
        opt("mem", self.mem_per_node.clone());
        opt("mem-per-cpu", self.mem_per_cpu.clone());
        opt("gres", self.gres.clone());
        opt("constraint", self.constraint.clone());
        opt("nodelist", self.nodelist.clone());
        opt("exclude", self.exclude.clone());
        opt("reservation", self.reservation.clone());
        a.push("--wrap=true".into());
        a
    }

    /// GPUs per node and the GPU type, when the request names GPUs (`gpu:a100:2`).
    fn gpus(&self) -> Option<(Option<String>, u32)> {
        let g = self.gres.as_deref()?;
        g.split(',').find_map(|item| {
            let rest = item.strip_prefix("gpu")?;
            let rest = rest.strip_prefix(':').unwrap_or(rest);
            match rest.rsplit_once(':') {
                Some((ty, n)) => Some((Some(ty.to_string()), n.parse().ok()?)),
                None if rest.is_empty() => Some((None, 1)),
                None => rest.parse().ok().map(|n| (None, n)),
            }
        })
    }
}

/// One change to a pending job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    TimeLimit {
        from: SlurmDuration,
        to: SlurmDuration,
    },
    Partition {
        from: String,
        to: String,
    },
    Nodes {
        from: u32,
        to: u32,
    },
    /// GPUs per node, of the type the job named (if any).
    Gpus {
        kind: Option<String>,
        from: u32,
        to: u32,
    },
}

impl Change {
    /// `scontrol update JobId=ID Key=value`: what applies it to the pending job.
    pub fn argv(&self, id: &str) -> Vec<String> {
        let kv = match self {
            Change::TimeLimit { to, .. } => format!("TimeLimit={}", to.to_slurm()),
            Change::Partition { to, .. } => format!("Partition={to}"),
            Change::Nodes { to, .. } => format!("NumNodes={to}"),
            Change::Gpus { kind, to, .. } => match kind {
                Some(k) => format!("TresPerNode=gres/gpu:{k}:{to}"),
                None => format!("TresPerNode=gres/gpu:{to}"),
            },
        };
        vec![
            "scontrol".into(),
            "update".into(),
            format!("JobId={id}"),
            kv,
        ]
    }

    /// The shape after the change.
    pub fn applied_to(&self, s: &Shape) -> Shape {
        let mut s = s.clone();
        match self {
            Change::TimeLimit { to, .. } => s.time_limit = *to,
            Change::Partition { to, .. } => s.partition = to.clone(),
            Change::Nodes { from, to } => {
                s.nodes = *to;
                // Tasks spread over the nodes: as many fewer as nodes fewer.
                if let Some(n) = s.ntasks.filter(|n| *n == *from) {
                    s.ntasks = Some(n.min(*to).max(1));
                }
                if s.cpus > 0 && *from > 0 {
                    s.cpus = (s.cpus / from * to).max(1);
                }
            }
            Change::Gpus { kind, to, .. } => {
                s.gres = Some(match kind {
                    Some(k) => format!("gpu:{k}:{to}"),
                    None => format!("gpu:{to}"),
                });
            }
        }
        s
    }

    /// "time limit 19:00 instead of 30:00", "partition short instead of spare".
    pub fn words(&self) -> String {
        match self {
            Change::TimeLimit { from, to } => {
                format!("time limit {to} instead of {from}")
            }
            Change::Partition { from, to } => format!("partition {to} instead of {from}"),
            Change::Nodes { from, to } => format!("{to} nodes instead of {from}"),
            Change::Gpus { from, to, .. } => {
                format!("{to} GPUs per node instead of {from}")
            }
        }
    }
}

/// One checked way to start sooner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternative {
    pub change: Change,
    /// The change and why it may help, in words.
    pub words: String,
    /// `scontrol update JobId=ID …`: what applies it.
    pub argv: Vec<String>,
    /// The `sbatch --test-only` that checks it (see [`Shape::test_only_argv`]).
    pub check: Vec<String>,
    /// The scheduler's estimated start for a job of the changed shape, once checked.
    pub estimated_start: Option<NaiveDateTime>,
    /// Why the check gave no estimate (the scheduler refused the shape, or no answer).
    pub problem: Option<String>,
}

impl Alternative {
    fn new(id: &str, shape: &Shape, change: Change, why: &str) -> Alternative {
        let words = if why.is_empty() {
            change.words()
        } else {
            format!("{}: {why}", change.words())
        };
        Alternative {
            argv: change.argv(id),
            check: change.applied_to(shape).test_only_argv(),
            change,
            words,
            estimated_start: None,
            problem: None,
        }
    }
}

/// What is known about the cluster when alternatives are worked out.
#[derive(Debug, Clone, Copy)]
pub struct Cluster<'a> {
    pub partitions: &'a [Partition],
    pub reservations: &'a [Reservation],
    /// The cluster's clock (see `io::reservation::read`).
    pub now: NaiveDateTime,
}

/// Whether a change can make `job` start sooner at all: not while it is held or waits for
/// a dependency or a begin time (the scheduler's test-only answer ignores those, so its
/// estimate would mislead). None when it can; else why not, in words.
pub fn why_none(job: &Job) -> Option<String> {
    if job.state != JobState::Pending {
        return Some(format!(
            "job {} is {}, not pending",
            job.id,
            job.state.long_name()
        ));
    }
    let reason = job.reason.as_deref().unwrap_or("");
    let code = reason.split(',').next().unwrap_or("").trim();
    if super::reason::is_held(Some(reason)) {
        return Some("it is held: release it first (scontrol release)".into());
    }
    match code {
        "Dependency" | "DependencyNeverSatisfied" => {
            Some("it waits for a dependency, which no change of its request shortens".into())
        }
        "BeginTime" => Some("it waits for its begin time".into()),
        _ => None,
    }
}

/// The window `job` runs into on `cluster`: a maintenance window first, else any
/// reservation that does not admit the job's user and account.
pub fn window(job: &Job, cluster: &Cluster) -> Option<WindowHit> {
    let usable = reservation::usable_nodes(job.partition.as_str(), cluster.partitions);
    let need = Need {
        usable: &usable,
        nodes: job.nodes,
        time_limit: job.time_limit,
        from: cluster.now,
    };
    reservation::maintenance_hit(cluster.reservations, &need).or_else(|| {
        reservation::closed_hit(
            cluster.reservations,
            &need,
            job.user.as_str(),
            job.account.as_str(),
        )
    })
}

fn request(s: &Shape, gpus: u32) -> JobRequest {
    JobRequest {
        time_limit: s.time_limit,
        nodes: s.nodes,
        cpus: s.cpus,
        gpus,
        account: s.account.clone(),
        qos: s.qos.clone(),
    }
}

/// Up to three changes that may start `job` sooner, in this order: a shorter time limit
/// (the longest that ends before the window it runs into, else half its limit, for a gap
/// the backfill scheduler may have), another partition it may use (whose nodes no window
/// closes to it; the first by PriorityTier, then as listed), and fewer GPUs per node (half)
/// or else fewer nodes (half). Unchecked: `io::why::check` asks the scheduler about each.
/// None for a job [`why_none`] names.
pub fn alternatives(job: &Job, shape: &Shape, cluster: &Cluster) -> Vec<Alternative> {
    if why_none(job).is_some() {
        return Vec::new();
    }
    let id = job.id.as_str();
    let mut out = Vec::new();
    let limit = job.time_limit;
    let max_time = job
        .partition
        .split(',')
        .filter_map(|p| cluster.partitions.iter().find(|x| x.name == p))
        .filter_map(|p| p.max_time.known())
        .max();
    match (window(job, cluster), limit.known()) {
        (Some(hit), Some(cur)) => {
            if let Some(l) = hit.longest.filter(|l| l.known() < Some(cur)) {
                let why = format!(
                    "it ends before the {}",
                    reservation::window_text(&hit.reservation)
                );
                out.push(Alternative::new(
                    id,
                    shape,
                    Change::TimeLimit { from: limit, to: l },
                    &why,
                ));
            }
        }
        (None, Some(cur)) if max_time.is_some_and(|m| cur > m) => {
            let to = SlurmDuration::Known(max_time.unwrap_or(cur));
            out.push(Alternative::new(
                id,
                shape,
                Change::TimeLimit { from: limit, to },
                "the partition's MaxTime",
            ));
        }
        (None, Some(cur)) if cur.as_secs() >= 120 => {
            let to = SlurmDuration::from_secs(cur.as_secs() / 2 / 60 * 60);
            out.push(Alternative::new(
                id,
                shape,
                Change::TimeLimit { from: limit, to },
                "half: a shorter job may fit a gap the scheduler can fill now",
            ));
        }
        _ => {}
    }
    let current: Vec<&str> = job.partition.as_str().split(',').collect();
    let gpus = job.gpus();
    let mut others: Vec<&Partition> = cluster
        .partitions
        .iter()
        .filter(|p| !current.contains(&p.name.as_str()))
        .filter(|p| fits(p, &request(shape, gpus)).is_ok())
        .filter(|p| {
            let moved = Job::new(crate::slurm::model::JobRecord {
                partition: p.name.as_str().into(),
                ..(**job).clone()
            });
            window(&moved, cluster).is_none()
        })
        .collect();
    others.sort_by_key(|p| std::cmp::Reverse(p.priority_tier.unwrap_or(0)));
    if let Some(p) = others.first() {
        out.push(Alternative::new(
            id,
            shape,
            Change::Partition {
                from: job.partition.to_string(),
                to: p.name.clone(),
            },
            "",
        ));
    }
    if let Some((kind, g)) = shape.gpus().filter(|(_, g)| *g >= 2) {
        out.push(Alternative::new(
            id,
            shape,
            Change::Gpus {
                kind,
                from: g,
                to: g / 2,
            },
            "",
        ));
    } else if shape.nodes >= 2 {
        out.push(Alternative::new(
            id,
            shape,
            Change::Nodes {
                from: shape.nodes,
                to: shape.nodes / 2,
            },
            "",
        ));
    }
    out.truncate(3);
    out
}

/// Why `change` cannot be applied to `job` as it stands, checked before anything is sent:
/// the job is not pending, a time limit above its partition's MaxTime (Slurm lets a user
/// raise a pending job's limit only up to it), a partition that cannot run it.
pub fn check_apply(job: &Job, change: &Change, partitions: &[Partition]) -> Result<(), String> {
    if job.state != JobState::Pending {
        return Err(format!(
            "job {} is {}: Slurm lets a user change a job's request only while it is pending",
            job.id,
            job.state.long_name()
        ));
    }
    match change {
        Change::TimeLimit { to, .. } => {
            let raise = match (to.known(), job.time_limit.known()) {
                (Some(t), Some(cur)) => t > cur,
                (None, _) => true,
                _ => false,
            };
            if raise {
                let max = job
                    .partition
                    .split(',')
                    .filter_map(|p| partitions.iter().find(|x| x.name == p))
                    .map(|p| p.max_time)
                    .next();
                let over = match (to.known(), max.and_then(|m| m.known())) {
                    (Some(t), Some(m)) => t > m,
                    (None, Some(_)) => true,
                    _ => false,
                };
                if over {
                    return Err(format!(
                        "raising job {}'s time limit to {to} is refused: a user may lower a time limit, and raise a pending job's only up to its partition's MaxTime ({}); past that only a Slurm operator can",
                        job.id,
                        max.unwrap_or_default()
                    ));
                }
            }
            Ok(())
        }
        Change::Partition { to, .. } => {
            let Some(p) = partitions.iter().find(|p| &p.name == to) else {
                return Err(format!("no partition {to} on this cluster"));
            };
            let shape = Shape::of_job(job);
            fits(p, &request(&shape, job.gpus()))
                .map_err(|why| format!("partition {to} cannot run job {}: {why}", job.id))
        }
        Change::Nodes { to, .. } | Change::Gpus { to, .. } if *to == 0 => {
            Err("a job needs at least one node, and a GPU job one GPU".into())
        }
        _ => Ok(()),
    }
}

/// Slurm's refusal of `change` (what `scontrol update` printed) in words, with what to do.
pub fn refusal(change: &Change, said: &str) -> String {
    let said = said.trim();
    let m = said.to_ascii_lowercase();
    let what = if m.contains("permission denied") || m.contains("access") {
        match change {
            Change::TimeLimit { .. } => {
                "Slurm refused to raise the time limit: a user may lower a job's time limit, and raise a pending job's only up to its partition's MaxTime; past that, or on a running job, only a Slurm operator can"
            }
            _ => "Slurm lets you change only your own pending jobs",
        }
    } else if m.contains("invalid partition") {
        "Slurm does not know that partition, or it is not open to you"
    } else if m.contains("time limit") {
        "the time limit is outside what the partition, account or QOS allows"
    } else if m.contains("already completed") || m.contains("pending") || m.contains("finished") {
        "the job is no longer pending"
    } else {
        "Slurm refused the change"
    };
    if said.is_empty() {
        what.to_string()
    } else {
        format!("{what} (Slurm said: {said})")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "why_tests.rs"]
mod tests;
