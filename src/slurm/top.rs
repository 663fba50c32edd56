//! Job top: a running job's processes on each of its nodes, as a tree, with the step each
//! belongs to and the GPU memory each uses. The argv of the one remote command that reads
//! it (`top_sample.sh`: one `srun --overlap` step with a task on each node, running
//! `top_node.sh`: `ps`, `scontrol listpids`, `nvidia-smi --query-compute-apps`), and a pure
//! parser for what it prints.

use std::collections::{HashMap, HashSet};

use super::error::ParseError;
use super::model::JobId;

/// The login-node script: the srun over the job's nodes.
pub const SCRIPT: &str = include_str!("top_sample.sh");
/// The program each node runs (handed to the script as an argument).
pub const NODE_SCRIPT: &str = include_str!("top_node.sh");
/// `$0` of the script.
pub const NAME: &str = "slurmdash-top";

/// At most this many of a job's nodes are read in one sample.
pub const MAX_NODES: usize = 16;
/// A command line is kept up to this many characters (the node program cuts at 300 bytes).
pub const MAX_COMMAND: usize = 300;
/// At most this many processes are kept per node.
pub const MAX_PROCS: usize = 2000;

/// What one sample is about: the job, the nodes to read, and the srun's time limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopTarget {
    pub id: JobId,
    pub nodes: Vec<String>,
    /// Nodes of the job beyond those read (over [`MAX_NODES`]).
    pub nodes_skipped: usize,
    pub timeout_secs: u64,
}

/// The argv of one sample: `sh -c SCRIPT slurmdash-top MARKER JOB TIMEOUT N NODES NODE_SCRIPT`.
pub fn argv(t: &TopTarget, marker: &str) -> Vec<String> {
    let mut v = super::command::sample_argv(SCRIPT, NAME, marker, &t.id, t.timeout_secs);
    v.extend([
        t.nodes.len().max(1).to_string(),
        t.nodes.join(","),
        NODE_SCRIPT.to_string(),
    ]);
    v
}

/// The slurmctld RPCs one sample costs: its one `srun --overlap` (`scontrol listpids` asks
/// the node's slurmstepd, nvidia-smi the driver: neither reaches slurmctld), and for an
/// array task or a heterogeneous component the `squeue --local` that finds its own id.
pub fn rpc_cost(t: &TopTarget) -> u64 {
    let resolve = t.id.as_str().contains(['_', '+']);
    let squeue = ["squeue", "--local"].map(String::from);
    crate::slurm::command::rpc_cost(&argv(t, "m")).ctld
        + if resolve {
            crate::slurm::command::rpc_cost(&squeue).ctld
        } else {
            0
        }
}

/// Where a node's step of each process came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepSource {
    /// `scontrol listpids`, answered by the node's slurmstepd.
    Listpids,
    /// `scontrol listpids` did not answer (its words); the steps are read from the process
    /// titles of Slurm's step daemons (`slurmstepd: [JOB.STEP]`), which the processes
    /// descend from.
    Titles(String),
    /// Neither: the processes are not tied to a step (its words).
    Unknown(String),
}

/// One process's GPU use, from `nvidia-smi --query-compute-apps` joined with
/// `--query-gpu` by the GPU's UUID.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GpuUse {
    /// The GPU's index on the node, when nvidia-smi listed it.
    pub index: Option<u32>,
    /// Memory this process holds on it, MiB (None: `[N/A]`).
    pub mem_mib: Option<u64>,
    /// The whole GPU's utilisation, percent (nvidia-smi gives none per process).
    pub util: Option<u32>,
}

/// One process of the job on a node.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    /// `ps`'s STAT (`R`, `S`, `D`, `Z`, with its flags).
    pub state: String,
    /// `ps`'s %CPU: its CPU time over its life so far.
    pub cpu: Option<f32>,
    pub rss_kib: u64,
    pub elapsed_secs: u64,
    /// The command line, control characters shown as `?`, cut to [`MAX_COMMAND`].
    pub command: String,
    /// The step (`batch`, `0`, `extern`), when known.
    pub step: Option<String>,
    /// How deep in the tree (0: a step's first process).
    pub depth: usize,
    pub gpus: Vec<GpuUse>,
}

/// One node's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeTop {
    pub node: String,
    /// In tree order: each process before its children.
    pub procs: Vec<Proc>,
    pub steps: StepSource,
    /// Why there are no GPU figures (no nvidia-smi, no driver, ...); None when it answered.
    pub gpu_note: Option<String>,
    /// Lines that could not be read, as sentences.
    pub problems: Vec<String>,
}

/// One sample, as parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct TopSample {
    pub nodes: Vec<NodeTop>,
    /// srun's exit (None: the script's closing line is missing).
    pub srun_exit: Option<i32>,
}

/// Shows control characters and the marks that reorder text (bidi overrides) as `?`, and
/// cuts to `max` characters (with `…`).
pub fn safe_text(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n + 1 > max {
            out.push('…');
            break;
        }
        let reorders = matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        out.push(if c.is_control() || reorders { '?' } else { c });
    }
    out
}

/// `0: text`, ` 3: text`: srun's task label and the text.
fn unlabel(line: &str) -> Option<(u32, &str)> {
    let t = line.trim_start();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let task = t[..digits].parse().ok()?;
    let rest = t[digits..].strip_prefix(": ").or_else(|| {
        // An empty line is labelled `N: ` and may lose its space.
        (t[digits..] == *":").then_some("")
    })?;
    Some((task, rest))
}

/// A section of one task's output: its name (with the header's words) and body lines.
struct Section<'a> {
    head: Vec<&'a str>,
    body: Vec<&'a str>,
    rc: Option<i32>,
}

fn sections<'a>(lines: &[&'a str], marker: &str) -> Vec<Section<'a>> {
    let start = format!("{marker} ");
    let mut out: Vec<Section> = Vec::new();
    for line in lines {
        match line.strip_prefix(&start) {
            Some(h) => {
                let head: Vec<&str> = h.split(' ').collect();
                if head.first() == Some(&"rc") {
                    if let Some(s) = out.last_mut() {
                        s.rc = head.get(1).and_then(|r| r.trim().parse().ok());
                    }
                } else {
                    out.push(Section {
                        head,
                        body: Vec::new(),
                        rc: None,
                    });
                }
            }
            None => {
                if let Some(s) = out.last_mut() {
                    s.body.push(line);
                }
            }
        }
    }
    out
}

/// One `ps -o pid=,ppid=,stat=,pcpu=,rss=,etimes=,args=` line.
fn parse_ps_line(line: &str) -> Option<Proc> {
    let mut rest = line.trim_start();
    let mut f = Vec::with_capacity(6);
    for _ in 0..6 {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        f.push(&rest[..end]);
        rest = rest[end..].trim_start_matches([' ', '\t']);
    }
    Some(Proc {
        pid: f[0].parse().ok()?,
        ppid: f[1].parse().ok()?,
        state: safe_text(f[2], 8),
        cpu: f[3]
            .parse::<f32>()
            .ok()
            .filter(|c| c.is_finite() && *c >= 0.0),
        rss_kib: f[4].parse().ok()?,
        elapsed_secs: f[5].parse().ok()?,
        command: safe_text(rest.trim_end_matches('\r'), MAX_COMMAND),
        ..Proc::default()
    })
}

/// `slurmstepd: [123.batch]` → (`123`, `batch`).
fn stepd_title(command: &str) -> Option<(&str, &str)> {
    let inner = command.strip_prefix("slurmstepd: [")?.split(']').next()?;
    inner.split_once('.')
}

/// The first line of a command's words, for a note.
fn first_words(body: &[&str]) -> String {
    let l = body
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    safe_text(l, 160)
}

/// Reads one node's sections; `job`: the job id as the script was given it.
fn node_top(secs: &[Section], job: &str) -> Option<NodeTop> {
    let head = secs.iter().find(|s| s.head.first() == Some(&"node"))?;
    let node = safe_text(head.head.get(1).copied().unwrap_or("?"), 64);
    let own_step = head.head.get(2).copied().unwrap_or("").trim();
    // The job's own id, as the script resolved it (an array task's), when it says.
    let job = head
        .head
        .get(3)
        .map(|j| j.trim())
        .filter(|j| !j.is_empty())
        .unwrap_or(job);
    let find = |name: &str| secs.iter().find(|s| s.head.first() == Some(&name));
    let mut problems = Vec::new();

    let mut ps: Vec<Proc> = Vec::new();
    match find("ps") {
        Some(s) => {
            let mut bad = 0;
            for l in &s.body {
                match parse_ps_line(l) {
                    Some(p) => ps.push(p),
                    None if l.trim().is_empty() => {}
                    None => bad += 1,
                }
            }
            if bad > 0 {
                problems.push(format!(
                    "{bad} line{} of ps unreadable (first: {:?})",
                    if bad == 1 { "" } else { "s" },
                    first_words(&s.body)
                ));
            }
        }
        None => problems.push("no ps output (cut off?)".into()),
    }

    // The job's processes that seed the tree, with their step.
    let mut step_of: HashMap<u32, String> = HashMap::new();
    let listpids = find("listpids");
    let mut listed = false;
    if let Some(s) = listpids.filter(|s| s.rc == Some(0)) {
        for l in &s.body {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (Some(pid), Some(step)) = (f.first().and_then(|p| p.parse::<u32>().ok()), f.get(2))
            else {
                continue;
            };
            listed = true;
            if *step != own_step {
                step_of.insert(pid, safe_text(step, 24));
            }
        }
    }
    let job_num = job.split(['_', '+']).next().unwrap_or(job);
    let steps = if listed {
        StepSource::Listpids
    } else {
        let said = match listpids {
            Some(s) if !first_words(&s.body).is_empty() => first_words(&s.body),
            Some(s) => format!("exit {}", s.rc.map_or("?".into(), |r| r.to_string())),
            None => "no answer".into(),
        };
        // Slurm's step daemons, by their titles: their children are the steps' processes.
        let daemons: Vec<(u32, String)> = ps
            .iter()
            .filter_map(|p| {
                let (j, s) = stepd_title(&p.command)?;
                (j == job_num && s != own_step).then(|| (p.pid, safe_text(s, 24)))
            })
            .collect();
        for p in &ps {
            if let Some((_, s)) = daemons.iter().find(|(d, _)| *d == p.ppid) {
                step_of.insert(p.pid, s.clone());
            }
        }
        if daemons.is_empty() {
            StepSource::Unknown(said)
        } else {
            StepSource::Titles(said)
        }
    };

    // Every descendant of a seed is the job's too, in the step of its nearest seed.
    let mut changed = true;
    let mut rounds = 0;
    while changed && rounds < 64 {
        changed = false;
        rounds += 1;
        for p in &ps {
            if step_of.contains_key(&p.pid) {
                continue;
            }
            if let Some(s) = step_of.get(&p.ppid).cloned() {
                step_of.insert(p.pid, s);
                changed = true;
            }
        }
    }

    let mut kept: Vec<Proc> = ps
        .into_iter()
        .filter(|p| step_of.contains_key(&p.pid) && stepd_title(&p.command).is_none())
        .map(|mut p| {
            p.step = step_of.get(&p.pid).cloned();
            p
        })
        .collect();
    if kept.len() > MAX_PROCS {
        problems.push(format!(
            "{} processes: the first {MAX_PROCS} shown",
            kept.len()
        ));
        kept.truncate(MAX_PROCS);
    }

    // GPU use by pid.
    let mut gpu_note = None;
    match (find("apps"), find("gpus")) {
        (None, _) => gpu_note = Some("no nvidia-smi on this node".to_string()),
        (Some(a), _) if a.rc != Some(0) => {
            gpu_note = Some(match first_words(&a.body) {
                w if w.is_empty() => format!(
                    "nvidia-smi exited {}",
                    a.rc.map_or("?".into(), |r| r.to_string())
                ),
                w => format!("nvidia-smi: {w}"),
            })
        }
        (Some(a), g) => {
            let mut index_of: HashMap<String, (Option<u32>, Option<u32>)> = HashMap::new();
            for l in g
                .filter(|g| g.rc == Some(0))
                .map(|g| &g.body[..])
                .unwrap_or(&[])
            {
                let f: Vec<&str> = l.split(',').map(str::trim).collect();
                if f.len() == 3 {
                    index_of.insert(f[1].to_string(), (f[0].parse().ok(), number(f[2])));
                }
            }
            let mut bad = 0;
            for l in &a.body {
                if l.trim().is_empty() || l.starts_with("pid,") {
                    continue;
                }
                let f: Vec<&str> = l.splitn(4, ',').map(str::trim).collect();
                let Some(pid) = f.first().and_then(|p| p.parse::<u32>().ok()) else {
                    bad += 1;
                    continue;
                };
                if f.len() < 3 {
                    bad += 1;
                    continue;
                }
                let (index, util) = index_of.get(f[1]).copied().unwrap_or((None, None));
                if let Some(p) = kept.iter_mut().find(|p| p.pid == pid) {
                    p.gpus.push(GpuUse {
                        index,
                        mem_mib: number(f[2]).map(u64::from),
                        util,
                    });
                }
            }
            if bad > 0 {
                problems.push(format!(
                    "{bad} line{} of nvidia-smi unreadable",
                    if bad == 1 { "" } else { "s" }
                ));
            }
        }
    }

    Some(NodeTop {
        node,
        procs: tree_order(kept),
        steps,
        gpu_note,
        problems,
    })
}

/// A whole number nvidia-smi printed (`[N/A]` and the like: None).
fn number(v: &str) -> Option<u32> {
    let v = v
        .trim()
        .trim_end_matches("MiB")
        .trim_end_matches('%')
        .trim();
    v.parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0 && *n < f64::from(u32::MAX))
        .map(|n| n.round() as u32)
}

/// Orders processes as a tree (steps in order `batch`, `extern`, then by number; each
/// process before its children, siblings by pid) and sets each one's depth.
fn tree_order(procs: Vec<Proc>) -> Vec<Proc> {
    let pids: HashSet<u32> = procs.iter().map(|p| p.pid).collect();
    let mut children: HashMap<u32, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (i, p) in procs.iter().enumerate() {
        if pids.contains(&p.ppid) && p.ppid != p.pid {
            children.entry(p.ppid).or_default().push(i);
        } else {
            roots.push(i);
        }
    }
    let step_key = |s: &Option<String>| match s.as_deref() {
        Some("batch") => (0, 0, String::new()),
        Some("extern") => (1, 0, String::new()),
        Some(n) => match n.parse::<u64>() {
            Ok(k) => (2, k, String::new()),
            Err(_) => (3, 0, n.to_string()),
        },
        None => (4, 0, String::new()),
    };
    roots.sort_by_key(|&i| (step_key(&procs[i].step), procs[i].pid));
    for c in children.values_mut() {
        c.sort_by_key(|&i| procs[i].pid);
    }
    let mut order = Vec::with_capacity(procs.len());
    let mut seen = HashSet::new();
    let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        if !seen.insert(i) {
            continue;
        }
        order.push((i, depth));
        if let Some(c) = children.get(&procs[i].pid) {
            stack.extend(c.iter().rev().map(|&k| (k, depth + 1)));
        }
    }
    // A cycle in ppids (not possible from one ps, but the text is not trusted): the rest.
    for i in 0..procs.len() {
        if !seen.contains(&i) {
            order.push((i, 0));
        }
    }
    let mut slots: Vec<Option<Proc>> = procs.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|(i, depth)| {
            let mut p = slots[i].take()?;
            p.depth = depth;
            Some(p)
        })
        .collect()
}

/// Reads the script's output (stdout): each srun task's labelled lines make one node.
/// `job`: the job id the script was given.
pub fn parse_sample(out: &str, marker: &str, job: &str) -> Result<TopSample, ParseError> {
    let closing = format!("{marker} srun ");
    let mut srun_exit = None;
    let mut tasks: Vec<(u32, Vec<&str>)> = Vec::new();
    for line in out.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(rc) = line.strip_prefix(&closing) {
            srun_exit = rc.trim().parse().ok();
            continue;
        }
        let Some((task, text)) = unlabel(line) else {
            continue;
        };
        match tasks.iter_mut().find(|(t, _)| *t == task) {
            Some((_, v)) => v.push(text),
            None => tasks.push((task, vec![text])),
        }
    }
    tasks.sort_by_key(|(t, _)| *t);
    let nodes: Vec<NodeTop> = tasks
        .iter()
        .filter_map(|(_, lines)| node_top(&sections(lines, marker), job))
        .collect();
    if srun_exit.is_none() && nodes.is_empty() {
        return Err(ParseError::new(
            "job top",
            0,
            "no answer from the script (output cut off?)",
            "",
        ));
    }
    Ok(TopSample { nodes, srun_exit })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "top_tests.rs"]
mod tests;
