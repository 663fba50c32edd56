//! A running job's live use: the argv of the one remote command that samples it (sstat of
//! its steps and nvidia-smi on each of its nodes through `srun --overlap`, the fixed
//! script `live_sample.sh`), and pure parsers for what it prints.

use super::error::ParseError;
use super::model::{JobDetail, JobId};

pub use super::command::{LIVE_NAME as NAME, LIVE_SCRIPT as SCRIPT};

/// At most this many nodes of a job are asked for GPU figures in one sample.
pub const MAX_GPU_NODES: usize = 16;

/// nvidia-smi's fields, in the order the script asks for them.
pub const GPU_QUERY: &str = "index,uuid,name,utilization.gpu,memory.used,memory.total";

/// What one sample is about: the job, its nodes to ask for GPU figures (none when the job
/// has no GPU), and each srun's time limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTarget {
    pub id: JobId,
    pub gpu_nodes: Vec<String>,
    /// Nodes the job has beyond those asked (over [`MAX_GPU_NODES`]).
    pub nodes_skipped: usize,
    pub timeout_secs: u64,
}

/// The argv of one sample: `sh -c SCRIPT slurmdash-live MARKER JOB TIMEOUT NODE...`.
pub fn argv(t: &LiveTarget, marker: &str) -> Vec<String> {
    let mut v = super::command::sample_argv(SCRIPT, NAME, marker, &t.id, t.timeout_secs);
    v.extend(t.gpu_nodes.iter().cloned());
    v
}

/// The slurmctld RPCs one sample costs: its sstat and one `srun --overlap` per node asked
/// (the script's loop runs one per node; `command::rpc_cost` of the argv counts the same).
pub fn rpc_cost(t: &LiveTarget) -> u64 {
    use crate::slurm::command::rpc_cost as cost;
    let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    let sstat = cost(&words("sstat --allsteps")).ctld;
    let srun = cost(&words("srun --overlap")).ctld;
    sstat + srun * t.gpu_nodes.len() as u64
}

/// The sstat fields the script asks for, in order.
pub const SSTAT_FIELDS: [&str; 9] = [
    "JobID",
    "NTasks",
    "Nodelist",
    "AveCPU",
    "MaxRSS",
    "AveRSS",
    "TRESUsageInTot",
    "TRESUsageInMax",
    "TRESUsageOutTot",
];

/// One running step as sstat reports it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepUsage {
    /// `123.0`, `123.batch`, `123.extern`.
    pub step: String,
    pub tasks: u32,
    pub nodes: String,
    /// CPU time of all its tasks so far (TRESUsageInTot cpu), seconds.
    pub cpu_secs: f64,
    /// Resident memory of all its tasks now (TRESUsageInTot mem), bytes.
    pub rss_now: u64,
    /// The largest task's peak resident memory (MaxRSS), bytes.
    pub rss_peak: u64,
    /// Bytes read from and written to file systems so far (fs/disk), when reported.
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
}

/// `1-02:03:04`, `02:03:04`, `03:04.567`, `00:00:07`: seconds.
pub fn parse_cpu_time(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<f64>().ok()?, r),
        None => (0.0, s),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let nums: Option<Vec<f64>> = parts.iter().map(|p| p.parse::<f64>().ok()).collect();
    let nums = nums?;
    if nums
        .iter()
        .chain([&days])
        .any(|n| !n.is_finite() || *n < 0.0)
    {
        return None;
    }
    let secs = match nums.as_slice() {
        [h, m, s] => h * 3600.0 + m * 60.0 + s,
        [m, s] => m * 60.0 + s,
        [s] => *s,
        _ => return None,
    };
    Some(days * 86400.0 + secs).filter(|t| t.is_finite())
}

/// Slurm's sizes: `951568K`, `279.50M`, `1.5G`, `0`, `34335` (bytes when no unit).
pub fn parse_size(s: &str, plain_unit: u64) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 'K' | 'k') => (&s[..i], 1u64 << 10),
        (i, 'M' | 'm') => (&s[..i], 1 << 20),
        (i, 'G' | 'g') => (&s[..i], 1 << 30),
        (i, 'T' | 't') => (&s[..i], 1 << 40),
        (i, 'P' | 'p') => (&s[..i], 1 << 50),
        _ => (s, plain_unit),
    };
    let n: f64 = num.parse().ok()?;
    let bytes = (n * mult as f64).round();
    // Not a size, or one no u64 holds.
    (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

/// `cpu=00:00:07,energy=0,fs/disk=992070,mem=951568K,...`: the value of `key`.
fn tres<'a>(list: &'a str, key: &str) -> Option<&'a str> {
    list.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then_some(v)
    })
}

/// `sstat --allsteps --parsable2 --noheader --format=<SSTAT_FIELDS>`: one step a line.
pub fn parse_sstat(text: &str) -> Result<Vec<StepUsage>, ParseError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('|').collect();
        let bad = |what: String| ParseError::new("sstat", n + 1, what, line);
        if f.len() < SSTAT_FIELDS.len() {
            return Err(bad(format!(
                "{} fields where {} were asked for",
                f.len(),
                SSTAT_FIELDS.len()
            )));
        }
        let tot = f[6];
        let tasks: Option<u32> = f[1].trim().parse().ok();
        let cpu = tres(tot, "cpu")
            .and_then(parse_cpu_time)
            .or_else(|| {
                // Without TRES figures: the average per task times the tasks.
                Some(parse_cpu_time(f[3])? * f64::from(tasks?)).filter(|t| t.is_finite())
            })
            .ok_or_else(|| bad(format!("no CPU time in {:?} or AveCPU {:?}", tot, f[3])))?;
        let rss_peak = parse_size(f[4], 1024).unwrap_or(0);
        let rss_now = tres(tot, "mem")
            .and_then(|v| parse_size(v, 1))
            .or_else(|| parse_size(f[5], 1024)?.checked_mul(tasks?.into()))
            .unwrap_or(0);
        out.push(StepUsage {
            step: f[0].trim().to_string(),
            tasks: tasks.unwrap_or(0),
            nodes: f[2].trim().to_string(),
            cpu_secs: cpu,
            rss_now,
            rss_peak,
            read_bytes: tres(tot, "fs/disk").and_then(|v| parse_size(v, 1)),
            write_bytes: tres(f[8], "fs/disk").and_then(|v| parse_size(v, 1)),
        });
    }
    Ok(out)
}

/// One GPU as nvidia-smi reports it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GpuUsage {
    /// nvidia-smi's index (on a node whose devices Slurm does not constrain, the node's
    /// GPU index, as in CUDA_VISIBLE_DEVICES).
    pub index: u32,
    pub uuid: String,
    pub name: String,
    /// Percent of time a kernel ran over the last sample period; None for `[N/A]`.
    pub util: Option<u32>,
    pub mem_used_mib: Option<u64>,
    pub mem_total_mib: Option<u64>,
}

/// A value of nvidia-smi's CSV, without its unit; None for `[N/A]`, `[Not Supported]`...
fn gpu_number(v: &str) -> Option<f64> {
    let v = v.trim();
    if v.starts_with('[') {
        return None;
    }
    let v = v
        .trim_end_matches('%')
        .trim_end_matches("MiB")
        .trim_end_matches("W")
        .trim();
    v.parse::<f64>().ok().filter(|n| n.is_finite() && *n >= 0.0)
}

/// `nvidia-smi --query-gpu=index,uuid,name,utilization.gpu,memory.used,memory.total
/// --format=csv[,noheader][,nounits]`: one GPU a line (a header line is skipped).
pub fn parse_nvidia_smi(text: &str) -> Result<Vec<GpuUsage>, ParseError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.starts_with("index,") {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let bad = |what: &str| ParseError::new("nvidia-smi", n + 1, what, line);
        if f.len() != 6 {
            return Err(bad("not the 6 fields asked for (index, uuid, name, utilization.gpu, memory.used, memory.total)"));
        }
        let index = f[0].parse().map_err(|_| bad("the index is not a number"))?;
        out.push(GpuUsage {
            index,
            uuid: f[1].to_string(),
            name: f[2].to_string(),
            util: gpu_number(f[3]).map(|u| u.round().min(100.0) as u32),
            mem_used_mib: gpu_number(f[4]).map(|m| m.round() as u64),
            mem_total_mib: gpu_number(f[5]).map(|m| m.round() as u64),
        });
    }
    Ok(out)
}

/// What asking one node for its GPUs gave.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuProbe {
    Gpus(Vec<GpuUsage>),
    /// The node has no GPU telemetry: nvidia-smi is missing, has no driver, or finds no
    /// device. Holds nvidia-smi's (or srun's) own words.
    NoTelemetry(String),
    /// The probe itself failed (timeout, srun refused, unreadable output).
    Failed(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodeGpus {
    pub node: String,
    pub probe: GpuProbe,
}

/// One sample, as parsed: the steps (or why sstat said nothing) and each node's GPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSample {
    /// When sstat ran, by the login node's clock (seconds since the epoch), for CPU-time
    /// deltas that do not depend on how long the GPU probes took.
    pub clock: Option<f64>,
    pub steps: Result<Vec<StepUsage>, String>,
    pub gpus: Vec<NodeGpus>,
}

/// One framed section of the script's output: its header words, body and stderr.
struct Section<'a> {
    head: Vec<&'a str>,
    body: &'a str,
    err: &'a str,
}

fn sections<'a>(out: &'a str, marker: &str) -> Vec<Section<'a>> {
    let start = format!("{marker} ");
    let stderr = format!("\n{marker} stderr\n");
    let end = format!("\n{marker} end");
    let mut v = Vec::new();
    let mut rest = out;
    while let Some(p) = rest.find(&start) {
        let after = &rest[p + start.len()..];
        let Some(nl) = after.find('\n') else { break };
        let head: Vec<&str> = after[..nl].split(' ').collect();
        let tail = &after[nl..];
        let Some(e) = tail.find(&end) else { break };
        let inner = &tail[..e];
        let (body, err) = match inner.find(&stderr) {
            Some(s) => (&inner[..s], &inner[s + stderr.len()..]),
            None => (inner, ""),
        };
        v.push(Section {
            head,
            body: body.strip_prefix('\n').unwrap_or(body),
            err,
        });
        rest = &tail[e + end.len()..];
    }
    v
}

/// Words nvidia-smi or srun print when a node has no GPU telemetry to give.
fn no_telemetry(words: &str) -> bool {
    let w = words.to_ascii_lowercase();
    [
        "couldn't communicate with the nvidia driver",
        "no devices were found",
        "nvidia-smi: no such file",
        "nvidia-smi: command not found",
        "execve(): nvidia-smi",
        "unable to determine the device handle",
    ]
    .iter()
    .any(|p| w.contains(p))
}

fn first_line(s: &str) -> String {
    let l = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    l.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect()
}

/// Reads the script's output (stdout; its sections carry their own stderr).
pub fn parse_sample(out: &str, marker: &str) -> Result<LiveSample, ParseError> {
    let secs = sections(out, marker);
    let sstat = secs
        .iter()
        .find(|s| s.head.first() == Some(&"sstat"))
        .ok_or_else(|| {
            let what = match out
                .lines()
                .find(|l| l.starts_with(&format!("{marker} error")))
            {
                Some(l) => format!("the sample script could not start: {l}"),
                None => "no sstat section (output cut off?)".to_string(),
            };
            ParseError::new("live sample", 0, what, "")
        })?;
    let rc = sstat.head.get(1).copied().unwrap_or("");
    let clock = sstat
        .head
        .get(2)
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|t| t.is_finite());
    let steps = match parse_sstat(sstat.body) {
        Ok(s) if s.is_empty() => Err(match first_line(sstat.err).as_str() {
            "" if rc != "0" => format!("sstat failed (exit {rc})"),
            "" => "sstat reports no running step".to_string(),
            e => e.to_string(),
        }),
        Ok(s) => Ok(s),
        Err(e) => Err(e.to_string()),
    };
    let mut gpus = Vec::new();
    for s in secs.iter().filter(|s| s.head.first() == Some(&"gpu")) {
        let rc = s.head.get(1).copied().unwrap_or("none");
        let node = s.head[2.min(s.head.len())..].join(" ");
        let said = if s.body.trim().is_empty() {
            first_line(s.err)
        } else {
            first_line(s.body)
        };
        let probe = match rc {
            "0" => match parse_nvidia_smi(s.body) {
                Ok(g) if g.is_empty() => GpuProbe::NoTelemetry("nvidia-smi listed no GPU".into()),
                Ok(g) => GpuProbe::Gpus(g),
                Err(e) => GpuProbe::Failed(e.to_string()),
            },
            _ if no_telemetry(s.body) || no_telemetry(s.err) => GpuProbe::NoTelemetry(said),
            "124" | "137" => {
                GpuProbe::Failed("nvidia-smi through srun did not answer in time".into())
            }
            rc => GpuProbe::Failed(match said.as_str() {
                "" => format!("srun … nvidia-smi exited {rc}"),
                w => format!("srun … nvidia-smi exited {rc}: {w}"),
            }),
        };
        gpus.push(NodeGpus { node, probe });
    }
    Ok(LiveSample { clock, steps, gpus })
}

/// The job's memory request in bytes, from its TRES (`mem=1G`), when known.
pub fn requested_memory(d: &JobDetail) -> Option<u64> {
    let t = d.tres.as_deref()?;
    parse_size(tres(t, "mem")?, 1 << 20)
}

#[cfg(test)]
#[path = "live_props.rs"]
mod props;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "live_tests.rs"]
mod tests;
