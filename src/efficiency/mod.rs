//! Figures and a one-line verdict for a finished job, like seff, from a [`JobUse`] (the
//! sacct read of `slurm::eff`), with the triage class of how it ended. Above `slurm` and
//! `triage`, which it uses.

use serde::Serialize;

use crate::slurm::eff::{size, tres_value, JobUse};
use crate::slurm::fit::{fits, JobRequest};
use crate::slurm::model::{JobState, Partition, SlurmDuration};
use crate::triage::{classify, Patterns, TriageInput};

/// The built-in triage patterns, compiled once (a history classifies thousands of jobs).
pub fn builtin() -> &'static Patterns {
    static P: std::sync::OnceLock<Patterns> = std::sync::OnceLock::new();
    P.get_or_init(Patterns::builtin)
}

/// The triage class from the state and exit code alone (no logs are read).
pub fn triage_class(d: &crate::slurm::model::JobDetail) -> Option<String> {
    let i = TriageInput::from_detail(d, "", "", None)?;
    classify(&i, builtin()).map(|t| t.class.code().to_string())
}

/// Slurm samples step use every JobAcctGatherFrequency (30 s by default); 22.05 records no
/// MaxRSS for a step that ended before the first sample.
pub const SAMPLE_SECS: u64 = 30;

/// One step, as the report and `slurmdash eff --json` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepFigures {
    pub step: String,
    pub name: String,
    pub state: Option<String>,
    pub elapsed_s: Option<u64>,
    pub cpu_time_s: Option<f64>,
    pub mem_peak_bytes: Option<u64>,
    pub mem_peak_node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_utilization: Option<f64>,
}

/// What the next run should ask for (only what should change).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Suggestion {
    /// Seconds, within the largest MaxTime of a partition that fits.
    pub time_s: Option<u64>,
    /// A partition whose MaxTime allows `time_s`, when the job's own does not.
    pub partition: Option<String>,
    /// Per node, Slurm's `--mem` form (`400M`).
    pub mem: Option<String>,
    pub cpus: Option<u32>,
    pub gpus: Option<u32>,
}

impl Suggestion {
    pub fn is_empty(&self) -> bool {
        *self == Suggestion::default()
    }
}

/// The keys of `slurmdash eff --json` and `history --json` (documented in docs/efficiency.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Efficiency {
    pub id: String,
    pub name: String,
    pub state: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub partition: Option<String>,
    pub start: Option<String>,
    pub end: Option<String>,
    pub elapsed_s: Option<u64>,
    pub time_limit_s: Option<u64>,
    pub time_efficiency: Option<f64>,
    pub nodes: Option<u32>,
    pub cpus: Option<u32>,
    pub cpu_time_s: Option<f64>,
    pub cpu_efficiency: Option<f64>,
    /// Per node (what `--mem` asks for; `--mem-per-cpu` × the CPUs of a node).
    pub mem_requested_bytes: Option<u64>,
    /// The largest MaxRSS of any step (one task's peak).
    pub mem_peak_bytes: Option<u64>,
    pub mem_peak_step: Option<String>,
    pub mem_efficiency: Option<f64>,
    pub gpus: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_utilization: Option<f64>,
    pub triage: Option<String>,
    pub verdict: String,
    pub notes: Vec<String>,
    pub suggestion: Suggestion,
    pub steps: Vec<StepFigures>,
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0 && a.is_finite()).then(|| (a / b * 10_000.0).round() / 10_000.0)
}

fn pct(r: f64) -> String {
    format!("{:.0}%", r * 100.0)
}

/// Rounds a time up to what a person asks for: minutes below an hour, hours above.
fn round_time(secs: u64) -> u64 {
    if secs < 3600 {
        secs.div_ceil(60).max(1) * 60
    } else {
        secs.div_ceil(3600) * 3600
    }
}

fn human(secs: u64) -> String {
    SlurmDuration::from_secs(secs).human()
}

/// Memory per node the job was given: the allocated TRES `mem=` over its nodes, else
/// ReqMem (per CPU when it says so).
fn mem_per_node(u: &JobUse) -> Option<u64> {
    let d = &u.detail;
    let nodes = u64::from(d.nodes.unwrap_or(1).max(1));
    if let Some(m) = d
        .tres
        .as_deref()
        .and_then(|t| tres_value(t, "mem"))
        .and_then(|v| size::parse_bytes(v, 1024 * 1024))
    {
        return Some(m / nodes);
    }
    let req = d.min_memory.as_deref()?;
    let b = size::parse_bytes(req, 1024 * 1024)?;
    match size::per_cpu_suffix(req) {
        Some(true) => Some(b * u64::from(d.cpus.unwrap_or(1)) / nodes),
        _ => Some(b),
    }
}

impl Efficiency {
    /// Figures, verdict and suggestion. `partitions` (from `scontrol show partition`, may be
    /// empty) name where a longer time limit fits.
    pub fn compute(u: &JobUse, partitions: &[Partition]) -> Efficiency {
        let d = &u.detail;
        let state = d.state.clone().unwrap_or(JobState::Unknown("".into()));
        let cpu_efficiency = match (u.total_cpu_s, u.core_s) {
            (Some(t), Some(c)) => ratio(t, c as f64),
            _ => None,
        };
        let mem_requested_bytes = mem_per_node(u);
        let peak_step = u
            .steps
            .iter()
            .filter(|s| s.max_rss.is_some())
            .max_by_key(|s| s.max_rss);
        let mem_peak_bytes = peak_step.and_then(|s| s.max_rss);
        let mem_efficiency = match (mem_peak_bytes, mem_requested_bytes) {
            (Some(p), Some(r)) => ratio(p as f64, r as f64),
            _ => None,
        };
        let time_efficiency = match (u.elapsed_s, u.time_limit_s) {
            (Some(e), Some(l)) => ratio(e as f64, l as f64),
            _ => None,
        };
        let gpus = d.gpus();
        let gpu_utilization = u.gpu_util.or_else(|| {
            u.steps
                .iter()
                .filter_map(|s| s.gpu_util)
                .max_by(f64::total_cmp)
        });
        let triage = TriageInput::from_detail(d, "", "", None)
            .and_then(|i| classify(&i, builtin()))
            .map(|t| t.class.code().to_string());
        let steps = u
            .steps
            .iter()
            .map(|s| StepFigures {
                step: s.step.clone(),
                name: s.name.clone(),
                state: s.state.as_ref().map(|s| s.long_name().to_string()),
                elapsed_s: s.elapsed_s,
                cpu_time_s: s.total_cpu_s,
                mem_peak_bytes: s.max_rss,
                mem_peak_node: s.max_rss_node.clone(),
                gpu_utilization: s.gpu_util,
            })
            .collect();
        let mut e = Efficiency {
            id: d
                .id
                .as_ref()
                .map(|i| i.as_str().to_string())
                .unwrap_or_default(),
            name: d.name.clone(),
            state: state.long_name().to_string(),
            exit_code: d.exit_code.map(|c| c.0),
            signal: d.exit_code.map(|c| c.1),
            partition: d.partition.clone(),
            start: d
                .start_time
                .map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string()),
            end: d
                .end_time
                .map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string()),
            elapsed_s: u.elapsed_s,
            time_limit_s: u.time_limit_s,
            time_efficiency,
            nodes: d.nodes,
            cpus: d.cpus,
            cpu_time_s: u.total_cpu_s.map(|t| (t * 1000.0).round() / 1000.0),
            cpu_efficiency,
            mem_requested_bytes,
            mem_peak_bytes,
            mem_peak_step: peak_step.map(|s| s.step.clone()),
            mem_efficiency,
            gpus,
            gpu_utilization,
            triage,
            verdict: String::new(),
            notes: Vec::new(),
            suggestion: Suggestion::default(),
            steps,
        };
        e.notes = notes(u, &e, &state);
        let (verdict, suggestion) = verdict(u, &e, &state, partitions);
        e.verdict = verdict;
        e.suggestion = suggestion;
        e
    }

    /// The job's figures in a few words: `CPU 61% · mem 310M/1G (30%) · time 47s/5m (16%)`.
    pub fn figures(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.cpu_efficiency {
            parts.push(format!("CPU {} of {}", pct(c), self.cpus.unwrap_or(0)));
        }
        match (self.mem_peak_bytes, self.mem_requested_bytes) {
            (Some(p), Some(r)) => parts.push(format!(
                "mem {}/{} ({})",
                size::show(p),
                size::show(r),
                self.mem_efficiency.map(pct).unwrap_or_default()
            )),
            (None, Some(r)) => parts.push(format!("mem ?/{}", size::show(r))),
            _ => {}
        }
        if let (Some(el), Some(l)) = (self.elapsed_s, self.time_limit_s) {
            parts.push(format!(
                "time {}/{} ({})",
                human(el),
                human(l),
                self.time_efficiency.map(pct).unwrap_or_default()
            ));
        }
        if self.gpus > 0 {
            match self.gpu_utilization {
                Some(g) => parts.push(format!("{} GPUs {g:.0}% busy", self.gpus)),
                None => parts.push(format!("{} GPUs", self.gpus)),
            }
        }
        parts.join(" · ")
    }
}

fn notes(u: &JobUse, e: &Efficiency, state: &JobState) -> Vec<String> {
    let mut n = Vec::new();
    if e.mem_peak_bytes.is_none() && state.is_finished() {
        let short = u
            .steps
            .iter()
            .all(|s| s.elapsed_s.unwrap_or(0) < SAMPLE_SECS);
        if short {
            n.push(format!(
                "no memory peak: Slurm recorded no MaxRSS (every step ended within the {SAMPLE_SECS} s accounting interval)"
            ));
        } else {
            n.push("no memory peak: Slurm recorded no MaxRSS for any step".to_string());
        }
    }
    if e.gpus > 0 && e.gpu_utilization.is_none() {
        n.push(
            "no GPU utilisation recorded on this cluster (no gres/gpuutil in sacct's TRES usage)"
                .to_string(),
        );
    }
    n
}

fn request(u: &JobUse, time_s: u64) -> JobRequest {
    let d = &u.detail;
    JobRequest {
        time_limit: SlurmDuration::from_secs(time_s),
        nodes: d.nodes.unwrap_or(1),
        cpus: d.cpus.unwrap_or(1),
        gpus: d.gpus(),
        account: d.account.clone().unwrap_or_default(),
        qos: d.qos.clone().unwrap_or_default(),
    }
}

fn time_clause(u: &JobUse, limit: u64, partitions: &[Partition], s: &mut Suggestion) -> String {
    let want = round_time(limit + limit / 4);
    let own = u.detail.partition.as_deref().unwrap_or("");
    let own_max = partitions
        .iter()
        .find(|p| p.name == own)
        .map(|p| p.max_time);
    let at = SlurmDuration::from_secs(limit).to_slurm();
    if partitions.is_empty() {
        s.time_s = Some(want);
        return format!("ran out of time at {at}: ask for {}", human(want));
    }
    let allows = |m: SlurmDuration, t: u64| match m {
        SlurmDuration::Known(d) => d.as_secs() >= t,
        SlurmDuration::Unlimited => true,
        _ => false,
    };
    if own_max.is_some_and(|m| allows(m, want)) {
        s.time_s = Some(want);
        return format!("ran out of time at {at}: {} would fit {own}", human(want));
    }
    let mut fitting: Vec<&Partition> = partitions
        .iter()
        .filter(|p| fits(p, &request(u, 0)).is_ok())
        .collect();
    fitting.sort_by_key(|p| match p.max_time {
        SlurmDuration::Known(d) => d.as_secs(),
        _ => u64::MAX,
    });
    if let Some(p) = fitting.iter().find(|p| allows(p.max_time, want)) {
        s.time_s = Some(want);
        if p.name != own {
            s.partition = Some(p.name.clone());
        }
        return format!(
            "ran out of time at {at}: {} would need partition {}",
            human(want),
            p.name
        );
    }
    match fitting
        .last()
        .and_then(|p| p.max_time.known().map(|m| (p, m)))
    {
        Some((p, m)) if m.as_secs() > limit => {
            s.time_s = Some(m.as_secs());
            if p.name != own {
                s.partition = Some(p.name.clone());
            }
            format!(
                "ran out of time at {at}: {} wanted, {} allows at most {}",
                human(want),
                p.name,
                p.max_time.to_slurm()
            )
        }
        _ => format!("ran out of time at {at}: no partition allows more; checkpoint and resume"),
    }
}

fn verdict(
    u: &JobUse,
    e: &Efficiency,
    state: &JobState,
    partitions: &[Partition],
) -> (String, Suggestion) {
    let mut s = Suggestion::default();
    let mut clauses = Vec::new();
    if matches!(state, JobState::Timeout | JobState::Deadline) {
        if let Some(limit) = e.time_limit_s {
            clauses.push(time_clause(u, limit, partitions, &mut s));
        }
    }
    if matches!(state, JobState::OutOfMemory) {
        if let Some(r) = e.mem_requested_bytes {
            let (_, ask) = size::suggest(r + r / 5);
            clauses.push(format!(
                "ran out of memory at {}: ask for {ask}",
                size::show(r)
            ));
            s.mem = Some(ask);
        }
    } else if let (Some(p), Some(r), Some(m)) =
        (e.mem_peak_bytes, e.mem_requested_bytes, e.mem_efficiency)
    {
        // Not worth a clause below a quarter of a gigabyte.
        let (b, ask) = size::suggest(p.max(200 << 20));
        if m < 0.5 && b <= r / 2 {
            clauses.push(format!(
                "asked {}, peaked {}: {ask} would do",
                size::show(r),
                size::show(p)
            ));
            s.mem = Some(ask);
        }
    }
    let long_enough = e.elapsed_s.unwrap_or(0) >= SAMPLE_SECS;
    if let (Some(c), Some(cpus), Some(el), Some(t)) =
        (e.cpu_efficiency, e.cpus, e.elapsed_s, e.cpu_time_s)
    {
        if cpus > 1 && c < 0.5 && long_enough && el > 0 {
            let used = t / el as f64;
            let want = ((used * 1.25).ceil() as u32).clamp(1, cpus);
            if want < cpus {
                clauses.push(format!("used {used:.1} of {cpus} CPUs: {want} would do"));
                s.cpus = Some(want);
            }
        }
    }
    if let (Some(g), true) = (e.gpu_utilization, e.gpus > 0) {
        if g < 50.0 && long_enough {
            let want = ((f64::from(e.gpus) * g / 100.0 * 1.25).ceil() as u32).clamp(1, e.gpus);
            if want < e.gpus {
                clauses.push(format!("{} GPUs {g:.0}% busy: {want} would do", e.gpus));
                s.gpus = Some(want);
            }
        }
    }
    if clauses.is_empty() {
        let mut parts = Vec::new();
        if let Some(c) = e.cpu_efficiency {
            parts.push(format!("CPU {}", pct(c)));
        }
        if let Some(m) = e.mem_efficiency {
            parts.push(format!("memory {}", pct(m)));
        }
        if let Some(t) = e.time_efficiency {
            parts.push(format!("time {} of the limit", pct(t)));
        }
        let lead = if matches!(state, JobState::Completed) && e.mem_efficiency.is_some() {
            "well sized"
        } else {
            "used"
        };
        if parts.is_empty() {
            clauses.push("no use figures recorded".to_string());
        } else {
            clauses.push(format!("{lead}: {}", parts.join(", ")));
        }
    }
    (clauses.join("; "), s)
}

impl Efficiency {
    /// Labelled lines for the detail pane and `slurmdash eff`: CPU, memory, time, GPUs,
    /// the verdict and any notes.
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        let mut l = Vec::new();
        let cpus = self.cpus.unwrap_or(0);
        match (self.cpu_efficiency, self.cpu_time_s, self.elapsed_s) {
            (Some(c), Some(t), Some(el)) => l.push((
                "CPU",
                format!(
                    "{} of {cpus} CPU{} ({} CPU time over {} × {})",
                    pct(c),
                    if cpus == 1 { "" } else { "s" },
                    human(t.round() as u64),
                    cpus,
                    human(el)
                ),
            )),
            _ => l.push(("CPU", "not recorded".into())),
        }
        let req = self
            .mem_requested_bytes
            .map(size::show)
            .unwrap_or_else(|| "?".into());
        match (self.mem_peak_bytes, self.mem_efficiency) {
            (Some(p), eff) => l.push((
                "Memory",
                format!(
                    "peak {} (step {}) of {req} per node{}",
                    size::show(p),
                    self.mem_peak_step.as_deref().unwrap_or("?"),
                    eff.map(|e| format!(": {}", pct(e))).unwrap_or_default()
                ),
            )),
            (None, _) => l.push(("Memory", format!("{req} per node, no peak recorded"))),
        }
        if let Some(el) = self.elapsed_s {
            let limit = self
                .time_limit_s
                .map(|t| format!(" of {}", SlurmDuration::from_secs(t).to_slurm()))
                .unwrap_or_default();
            let p = self
                .time_efficiency
                .map(|t| format!(": {}", pct(t)))
                .unwrap_or_default();
            l.push((
                "Time",
                format!("{}{limit}{p}", SlurmDuration::from_secs(el).to_slurm()),
            ));
        }
        if self.gpus > 0 {
            l.push((
                "GPUs",
                match self.gpu_utilization {
                    Some(g) => format!("{}, {g:.0}% busy on average", self.gpus),
                    None => format!("{}, utilisation not recorded", self.gpus),
                },
            ));
        }
        l.push(("Verdict", self.verdict.clone()));
        for n in &self.notes {
            l.push(("Note", n.clone()));
        }
        l
    }
}
