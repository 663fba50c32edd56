//! Live use of the selected running job: one sample (sstat + nvidia-smi on its nodes) at
//! most once per refresh, the session's history of each job's samples (for sparklines), and
//! the queue's marks on jobs whose GPUs stay idle (`z`) or that use much less CPU or memory
//! than they asked (`u`). Pure: no I/O.

use std::collections::{HashMap, HashSet, VecDeque};

use chrono::NaiveDateTime;

use super::component::{Out, View};
#[cfg(test)]
use super::App;
use crate::action::Cmd;
use crate::queue::QueueView;
use crate::slurm::live::{
    requested_memory, GpuProbe, LiveSample, LiveTarget, NodeGpus, MAX_GPU_NODES,
};
use crate::slurm::model::{Job, JobId, Status};

/// Samples kept per job (the sparklines show the newest that fit).
pub const LIVE_HISTORY: usize = 240;
/// Cores busy is measured over at least this many seconds of samples (sstat counts CPU
/// time in whole seconds).
const CPU_WINDOW_SECS: f64 = 10.0;
/// ... and over no less than this: a shorter window would be mostly rounding.
const CPU_MIN_SECS: f64 = 5.0;
/// A sample not answered after this long no longer holds the next one back.
const STUCK_SECS: i64 = 120;
/// Selecting a running job shows its last sample if it is younger than this (with its
/// age) and reads nothing; an older one, or none, is read at once, as the user's request.
/// While the job stays selected, later samples come with the refresh, as background reads.
pub const KEEP_SECS: i64 = 180;
/// A first sample without a CPU figure is followed by a second this much later.
pub const FOLLOWUP_SECS: i64 = 10;

/// One GPU's figures in one sample.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuPoint {
    pub node: String,
    pub index: u32,
    pub util: Option<u32>,
    pub mem_used_mib: Option<u64>,
    pub mem_total_mib: Option<u64>,
}

/// One sample, reduced to what the pane draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub at: NaiveDateTime,
    /// Cores busy since an earlier sample; None for the first one.
    pub cores_busy: Option<f64>,
    /// Resident memory of all running steps now, bytes.
    pub rss: Option<u64>,
    pub gpus: Vec<GpuPoint>,
}

/// What the session knows of one running job's use.
#[derive(Debug, Clone, Default)]
pub struct JobLive {
    pub points: VecDeque<Point>,
    /// The last sample as parsed (steps, I/O, each node's GPU answer).
    pub latest: Option<LiveSample>,
    pub at: Option<NaiveDateTime>,
    /// The last sample failed as a whole (the command could not run).
    pub error: Option<String>,
    /// The highest resident memory seen: sstat's per-step peaks, or a higher sum seen here.
    pub peak_rss: u64,
    /// CPU seconds of the running steps at the latest sample: over the job's elapsed time,
    /// how busy its cores were on average ([`JobLive::avg_busy`]), a figure even before
    /// two samples measure the pace.
    pub cpu_total: Option<f64>,
    /// (login-node clock, CPU seconds per step) of recent samples, for cores busy.
    cpu: VecDeque<(f64, HashMap<String, f64>)>,
    /// Since when every GPU of the job has shown 0 % in every sample.
    pub idle_since: Option<NaiveDateTime>,
    /// Cores the job was given (0: unknown), as the queue or its detail said at its last
    /// sample.
    pub asked_cores: u32,
    /// Memory it asked for in all (its TRES `mem=`), bytes, when its detail was known.
    pub asked_mem: Option<u64>,
    /// The first and the latest sample in which sstat saw a running step.
    pub steps_first: Option<NaiveDateTime>,
    pub steps_last: Option<NaiveDateTime>,
}

/// When a sampled running job counts as using much less than it asked: `[ui]
/// idle_gpu_minutes` (the span, shared with the idle-GPU mark; 0 turns both off),
/// `low_cpu_percent` and `low_mem_percent` (0 turns that test off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LowUseRules {
    pub minutes: u64,
    pub cpu_percent: u64,
    pub mem_percent: u64,
}

/// Why a job counts as using much less than it asked, with the figures that say so.
#[derive(Debug, Clone, PartialEq)]
pub enum LowUse {
    /// Cores busy stayed under the share of `of` in every measured sample for `minutes`;
    /// `busy` is their mean over those samples.
    Cores { busy: f64, of: u32, minutes: i64 },
    /// Peak resident memory stayed under the share of the request over `minutes` of
    /// samples.
    Memory { peak: u64, asked: u64, minutes: i64 },
}

impl LowUse {
    /// One line for the detail pane: "1.2 of 8 cores busy for 14 min".
    pub fn describe(&self) -> String {
        use crate::logview::human_bytes;
        match self {
            LowUse::Cores { busy, of, minutes } => format!(
                "{busy:.1} of {of} core{} busy for {minutes} min",
                if *of == 1 { "" } else { "s" }
            ),
            LowUse::Memory {
                peak,
                asked,
                minutes,
            } => format!(
                "peak {} of {} asked over {minutes} min",
                human_bytes(*peak),
                human_bytes(*asked)
            ),
        }
    }
}

impl JobLive {
    /// The GPUs of the latest sample that answered, as (node, index), in order.
    pub fn gpu_keys(&self) -> Vec<(String, u32)> {
        self.points
            .back()
            .map(|p| p.gpus.iter().map(|g| (g.node.clone(), g.index)).collect())
            .unwrap_or_default()
    }

    /// One series over the session (oldest first), e.g. a GPU's utilisation.
    pub fn series(&self, f: impl Fn(&Point) -> Option<f64>) -> Vec<Option<f64>> {
        self.points.iter().map(f).collect()
    }

    /// Cores busy on average from `started` to the latest sample (none before 5 s).
    pub fn avg_busy(&self, started: Option<NaiveDateTime>) -> Option<f64> {
        let secs = (self.at? - started?).num_seconds();
        (secs as f64 >= CPU_MIN_SECS)
            .then(|| self.cpu_total.unwrap_or(0.0) / secs as f64)
            .filter(|_| self.cpu_total.is_some())
    }

    /// Adds a sample answered at `at`.
    pub fn add(&mut self, s: LiveSample, at: NaiveDateTime) {
        self.at = Some(at);
        self.error = None;
        let mut cores = None;
        let mut rss = None;
        if let Ok(steps) = &s.steps {
            let now: HashMap<String, f64> = steps
                .iter()
                .map(|st| (st.step.clone(), st.cpu_secs))
                .collect();
            let clock = s
                .clock
                .unwrap_or_else(|| at.and_utc().timestamp_millis() as f64 / 1000.0);
            // The oldest kept sample at least CPU_WINDOW_SECS back, else the oldest.
            let base = self
                .cpu
                .iter()
                .rev()
                .find(|(t, _)| clock - t >= CPU_WINDOW_SECS)
                .or(self.cpu.front());
            if let Some((t0, then)) = base {
                let dt = clock - t0;
                if dt >= CPU_MIN_SECS {
                    let used: f64 = now
                        .iter()
                        .filter_map(|(k, v)| then.get(k).map(|p| (v - p).max(0.0)))
                        .sum();
                    cores = Some(used / dt);
                }
            }
            self.cpu.push_back((clock, now));
            while self.cpu.len() > 8 {
                self.cpu.pop_front();
            }
            self.cpu_total = Some(steps.iter().map(|st| st.cpu_secs).sum());
            let sum: u64 = steps.iter().map(|st| st.rss_now).sum();
            let peak: u64 = steps.iter().map(|st| st.rss_peak).max().unwrap_or(0);
            self.peak_rss = self.peak_rss.max(sum).max(peak);
            rss = Some(sum);
            self.steps_first.get_or_insert(at);
            self.steps_last = Some(at);
        }
        let gpus: Vec<GpuPoint> = s
            .gpus
            .iter()
            .flat_map(|n: &NodeGpus| match &n.probe {
                GpuProbe::Gpus(g) => g
                    .iter()
                    .map(|g| GpuPoint {
                        node: n.node.clone(),
                        index: g.index,
                        util: g.util,
                        mem_used_mib: g.mem_used_mib,
                        mem_total_mib: g.mem_total_mib,
                    })
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        // A node that could not be asked leaves the count as it was: it is not known to
        // be idle, nor known to work.
        let unknown = s
            .gpus
            .iter()
            .any(|n| matches!(n.probe, GpuProbe::Failed(_)));
        let idle = !gpus.is_empty() && gpus.iter().all(|g| g.util == Some(0));
        match (idle, unknown) {
            (_, true) => {}
            (true, false) => {
                self.idle_since.get_or_insert(at);
            }
            (false, false) => self.idle_since = None,
        }
        self.points.push_back(Point {
            at,
            cores_busy: cores,
            rss,
            gpus,
        });
        while self.points.len() > LIVE_HISTORY {
            self.points.pop_front();
        }
        self.latest = Some(s);
    }

    /// Every GPU has been at 0 % in every sample for at least `minutes` (0: never).
    pub fn gpus_idle_for(&self, minutes: u64) -> bool {
        match (self.idle_since, self.at) {
            (Some(since), Some(last)) if minutes > 0 => {
                (last - since).num_seconds() >= (minutes * 60) as i64
            }
            _ => false,
        }
    }

    /// What the job uses much less of than it asked, judged on the samples taken (none
    /// when `rules.minutes` is 0 or the samples span less).
    pub fn low_use(&self, rules: &LowUseRules) -> Vec<LowUse> {
        let mut out = Vec::new();
        if rules.minutes == 0 {
            return out;
        }
        let need = (rules.minutes * 60) as i64;
        if rules.cpu_percent > 0 && self.asked_cores > 0 {
            let limit = f64::from(self.asked_cores) * rules.cpu_percent as f64 / 100.0;
            // The newest run of measured samples all under the limit (a sample without a
            // figure neither breaks nor extends it).
            let (mut sum, mut n, mut since) = (0.0, 0u32, None);
            for p in self.points.iter().rev() {
                match p.cores_busy {
                    None => continue,
                    Some(b) if b < limit => {
                        sum += b;
                        n += 1;
                        since = Some(p.at);
                    }
                    Some(_) => break,
                }
            }
            let last = self
                .points
                .iter()
                .rev()
                .find(|p| p.cores_busy.is_some())
                .map(|p| p.at);
            if let (Some(since), Some(last)) = (since, last) {
                let span = (last - since).num_seconds();
                if n >= 2 && span >= need {
                    out.push(LowUse::Cores {
                        busy: sum / f64::from(n),
                        of: self.asked_cores,
                        minutes: span / 60,
                    });
                }
            }
        }
        if let (true, Some(asked), Some(first), Some(last)) = (
            rules.mem_percent > 0,
            self.asked_mem,
            self.steps_first,
            self.steps_last,
        ) {
            let span = (last - first).num_seconds();
            let limit = asked as f64 * rules.mem_percent as f64 / 100.0;
            if self.peak_rss > 0 && (self.peak_rss as f64) < limit && span >= need {
                out.push(LowUse::Memory {
                    peak: self.peak_rss,
                    asked,
                    minutes: span / 60,
                });
            }
        }
        out
    }
}

#[derive(Debug, Clone)]
pub struct LiveState {
    /// `[ui] idle_gpu_minutes`: mark running jobs whose GPUs stayed at 0 % this long.
    pub idle_minutes: u64,
    /// `[ui] low_cpu_percent`: mark (`u`) running jobs whose cores busy stayed under this
    /// share of their cores for `idle_minutes`; 0 turns it off.
    pub low_cpu_percent: u64,
    /// `[ui] low_mem_percent`: ... whose peak memory stayed under this share of the
    /// request; 0 turns it off.
    pub low_mem_percent: u64,
    /// `[ui] live_sample_secs`: at least this long between two samples of one job (each
    /// costs slurmctld a few RPCs; the refresh can come every few seconds).
    pub min_gap_secs: u64,
    pub jobs: HashMap<JobId, JobLive>,
    /// Jobs squeue listed as running at each cluster's last refresh.
    running: HashSet<JobId>,
    /// The sample out now, and since when.
    in_flight: HashMap<JobId, NaiveDateTime>,
    /// A sample was taken since the last refresh (of the selected job's cluster).
    sampled: bool,
    /// The selected job's sample gave no CPU figure (it had run under 5 s): a second one is
    /// read then, to finish the answer the user asked for.
    followup: Option<(JobId, NaiveDateTime)>,
}

impl Default for LiveState {
    fn default() -> Self {
        LiveState {
            idle_minutes: 10,
            low_cpu_percent: 25,
            low_mem_percent: 25,
            min_gap_secs: 0,
            jobs: HashMap::new(),
            running: HashSet::new(),
            in_flight: HashMap::new(),
            sampled: false,
            followup: None,
        }
    }
}

impl LiveState {
    pub fn job(&self, id: &JobId) -> Option<&JobLive> {
        self.jobs.get(id)
    }

    /// The sample out was never sent (the RPC budget dropped it).
    pub fn clear_in_flight(&mut self, id: &JobId) {
        self.in_flight.remove(id);
    }

    /// Whether a sample of `id` is out.
    pub fn sampling(&self, id: &JobId) -> bool {
        self.in_flight.contains_key(id)
    }

    /// Jobs to mark in the queue.
    pub fn idle_jobs(&self) -> HashSet<JobId> {
        self.jobs
            .iter()
            .filter(|(_, j)| j.gpus_idle_for(self.idle_minutes))
            .map(|(id, _)| id.clone())
            .collect()
    }

    pub fn rules(&self) -> LowUseRules {
        LowUseRules {
            minutes: self.idle_minutes,
            cpu_percent: self.low_cpu_percent,
            mem_percent: self.low_mem_percent,
        }
    }

    /// Jobs to mark `u` in the queue: much less CPU or memory used than asked.
    pub fn low_use_jobs(&self) -> HashSet<JobId> {
        let rules = self.rules();
        self.jobs
            .iter()
            .filter(|(_, j)| !j.low_use(&rules).is_empty())
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// What to sample for `job`: its nodes when it has GPUs (at most MAX_GPU_NODES).
pub fn target(job: &Job) -> LiveTarget {
    let nodes = match job.gpus() {
        0 => Vec::new(),
        _ => job.nodes(),
    };
    let skipped = nodes.len().saturating_sub(MAX_GPU_NODES);
    LiveTarget {
        id: job.id.clone(),
        gpu_nodes: nodes.into_iter().take(MAX_GPU_NODES).collect(),
        nodes_skipped: skipped,
        timeout_secs: 0,
    }
}

/// The component's handlers: what to sample and the samples' answers. The queue's `z` and
/// `u` marks follow with `mark` (the router hands it the queue).
impl LiveState {
    /// A sample of the selected job, if it runs on the cluster being worked on, none was
    /// taken since that cluster's last refresh, and none is out.
    pub fn due(&mut self, v: &View) -> Out {
        let Some(job) = self.samplable(v) else {
            return Out::none();
        };
        if self.sampled {
            return Out::none();
        }
        // Too soon after this job's last sample: a later refresh takes it. A sample that
        // failed (the login gone, a node that did not answer) holds nothing back: the next
        // refresh tries again, so the pane does not keep an outage's error once it is over.
        let last = self
            .jobs
            .get(&job.id)
            .filter(|j| j.error.is_none())
            .and_then(|j| j.at);
        let gap = self.min_gap_secs as i64;
        if gap > 0 && last.is_some_and(|at| (v.now - at).num_seconds() < gap) {
            return Out::none();
        }
        self.sampled = true;
        self.in_flight.insert(job.id.clone(), v.now);
        Out::cmds(vec![Cmd::SampleLive(Box::new(target(job)))])
    }

    /// The selected job, if it runs on the cluster being worked on (a job that left squeue
    /// keeps its last row, RUNNING, until sacct answers: not sampled) and no sample of it
    /// is out (one unanswered after [`STUCK_SECS`] no longer counts).
    fn samplable<'v>(&self, v: &View<'v>) -> Option<&'v Job> {
        let job = v.queue.selected_job()?;
        let runs = job.status() == Status::Running && self.running.contains(&job.id);
        let out = self
            .in_flight
            .get(&job.id)
            .is_some_and(|since| (v.now - *since).num_seconds() < STUCK_SECS);
        (runs && job.id.cluster() == v.cluster.ix && !out).then_some(job)
    }

    /// The user selected a job: if it runs and no sample of it younger than [`KEEP_SECS`]
    /// is kept, one is read at once (whatever else was sampled since the last refresh).
    pub fn on_select(&mut self, v: &View) -> Out {
        let Some(job) = self.samplable(v) else {
            return Out::none();
        };
        let kept = self
            .jobs
            .get(&job.id)
            .filter(|j| j.error.is_none())
            .and_then(|j| j.at);
        if kept.is_some_and(|at| (v.now - at).num_seconds() < KEEP_SECS) {
            return Out::none();
        }
        self.sampled = true;
        self.in_flight.insert(job.id.clone(), v.now);
        Out::cmds(vec![Cmd::SampleLive(Box::new(target(job)))])
    }

    /// Once a second: the follow-up sample of the selected job, when it is due.
    pub fn followup_due(&mut self, v: &View) -> Out {
        let Some((id, at)) = self.followup.clone() else {
            return Out::none();
        };
        if v.now < at {
            return Out::none();
        }
        self.followup = None;
        let Some(job) = self.samplable(v).filter(|j| j.id == id) else {
            return Out::none();
        };
        self.in_flight.insert(id, v.now);
        Out::cmds(vec![Cmd::SampleLive(Box::new(target(job)))])
    }

    /// A refresh of the cluster being worked on answered with these jobs running: forget
    /// its jobs that no longer run, and sample the selected one if it runs.
    pub fn on_refresh(&mut self, v: &View, running: &[JobId]) -> Out {
        let ix = v.cluster.ix;
        self.running.retain(|id| id.cluster() != ix);
        self.running.extend(running.iter().cloned());
        let running = &self.running;
        self.jobs
            .retain(|id, _| id.cluster() != ix || running.contains(id));
        if v.queue.selected_job().is_some_and(|j| j.id.cluster() == ix) {
            self.sampled = false;
        }
        self.due(v)
    }

    /// A sample's answer.
    pub fn on_sample(
        &mut self,
        v: &View,
        id: JobId,
        result: Result<LiveSample, String>,
        at: NaiveDateTime,
    ) -> Out {
        self.in_flight.remove(&id);
        let (cores, mem) = asked(v, &id);
        let selected = v.queue.selected_job().filter(|j| j.id == id);
        let started = selected.and_then(|j| j.start_time);
        let job = self.jobs.entry(id.clone()).or_default();
        match result {
            Ok(s) => {
                job.add(s, at);
                let no_cpu = job.points.back().is_some_and(|p| p.cores_busy.is_none())
                    && job.avg_busy(started).is_none();
                if selected.is_some() && no_cpu {
                    self.followup = Some((id, at + chrono::Duration::seconds(FOLLOWUP_SECS)));
                }
            }
            Err(e) => {
                job.error = Some(e);
                job.at = Some(at);
            }
        }
        job.asked_cores = cores.unwrap_or(job.asked_cores);
        job.asked_mem = mem.or(job.asked_mem);
        Out::none()
    }

    /// The queue's `z` and `u` marks, from what the samples say.
    pub fn mark(&self, queue: &mut QueueView) {
        queue.set_idle(self.idle_jobs());
        queue.set_low_use(self.low_use_jobs());
    }
}

/// The cores and memory `id` asked for: its detail's when shown, else the queue's cores
/// (memory only from the detail's TRES, which counts every node).
fn asked(v: &View, id: &JobId) -> (Option<u32>, Option<u64>) {
    let detail = v
        .detail
        .detail
        .as_ref()
        .filter(|_| v.detail.id.as_ref() == Some(id));
    let queue = v.queue.jobs().iter().find(|j| &j.id == id);
    let cores = detail
        .and_then(|d| d.cpus)
        .or(queue.map(|j| j.cpus))
        .filter(|c| *c > 0);
    (cores, detail.and_then(requested_memory))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "live_tests.rs"]
mod tests;
