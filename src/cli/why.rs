//! `slurmdash why ID [--json] [--alternatives] [--apply N [--yes]]`: why a pending job
//! waits, in words and numbers (rank, priority factors, fair-share, limits, the
//! scheduler's estimate), the maintenance window its time limit runs into, and with
//! `--alternatives` up to three changes checked with `sbatch --test-only`; `--apply N`
//! applies one with `scontrol update`, after showing its argv and asking.
//!
//! Reads: `scontrol show job` (1 slurmctld RPC), the pending-job batch with the partitions
//! (4) and the reservations with the cluster's clock (1), side by side; the alternatives
//! one `sbatch --test-only` each (2 RPCs each, in one exec), only when asked.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use chrono::NaiveDateTime;
use clap::Args;
use color_eyre::eyre::{eyre, Result};
use serde_json::{json, Value};

use super::output::printable;
use crate::config::Cluster;
use crate::io::connect::connect;
use crate::remote::Remote;
use crate::slurm::command::shell_line;
use crate::slurm::model::{Job, JobDetail, JobId, JobState};
use crate::slurm::pending::{factors, PendingInfo, Rank};
use crate::slurm::reason::{explain, is_held, why_no_estimate, Context};
use crate::slurm::reservation::{window_text, WindowHit};
use crate::slurm::why::{self, Alternative, Shape};

#[derive(Debug, Args)]
pub struct WhyArgs {
    /// Job id (`123`, `123_7` for an array task).
    #[arg(value_name = "ID")]
    pub id: String,
    /// Print JSON: `reason`, `explanation`, `rank`, `estimate`, `maintenance` (`start`,
    /// `end`, `nodes`, or null) and `alternatives` (each `change`, `argv`,
    /// `estimated_start`).
    #[arg(long)]
    pub json: bool,
    /// Also ask the scheduler (`sbatch --test-only`, two RPCs each) when the job would start
    /// with each of up to three changes: a shorter time limit, another partition, fewer
    /// GPUs or nodes.
    #[arg(long)]
    pub alternatives: bool,
    /// Apply alternative N (numbered as `--alternatives` lists them) with `scontrol
    /// update`: its argv is printed first, and on a terminal you are asked (y/N).
    #[arg(long, value_name = "N")]
    pub apply: Option<usize>,
    /// With --apply: apply without asking (needed when standard input is not a terminal).
    #[arg(long, requires = "apply")]
    pub yes: bool,
}

/// Everything `why` prints, worked out from what was read.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub id: String,
    pub name: String,
    pub state: String,
    pub partition: String,
    pub time_limit: String,
    /// Slurm's reason as printed; None when the job is not pending.
    pub reason: Option<String>,
    pub explanation: String,
    pub fix: Option<String>,
    pub rank: Option<Rank>,
    /// Priority factors, fair-share and limit lines, each (label, text).
    pub numbers: Vec<(&'static str, String)>,
    pub estimate: Option<NaiveDateTime>,
    /// Why there is no estimate, when there is none.
    pub no_estimate: String,
    pub window: Option<WindowHit>,
    pub alternatives: Vec<Alternative>,
    /// Why no alternative is offered, when none is.
    pub no_alternatives: Option<String>,
    /// Reads that failed, in words (the rest still shows).
    pub problems: Vec<String>,
}

fn time(t: &NaiveDateTime) -> String {
    t.format("%Y-%m-%dT%H:%M:%S").to_string()
}

impl Report {
    /// The report of a job that is not pending: its state, and that `why` explains only
    /// pending jobs.
    pub fn not_pending(id: &str, state: &str) -> Report {
        Report {
            id: id.to_string(),
            state: state.to_string(),
            explanation: format!(
                "job {id} is {state}, not pending: `slurmdash why` explains jobs that wait (for one that ended, `slurmdash eff {id}`)"
            ),
            ..Report::default()
        }
    }

    /// The JSON `--json` prints.
    pub fn to_json(&self) -> Value {
        let rank = self.rank.as_ref().map(|r| {
            json!({"position": r.position, "of": r.of, "partition": r.partition, "ahead": r.ahead})
        });
        let maintenance = self.window.as_ref().map(|w| {
            json!({
                "start": time(&w.reservation.start),
                "end": time(&w.reservation.end),
                "nodes": w.reservation.node_list,
            })
        });
        let alternatives: Vec<Value> = self
            .alternatives
            .iter()
            .map(|a| {
                json!({
                    "change": a.words,
                    "argv": a.argv,
                    "estimated_start": a.estimated_start.as_ref().map(time),
                })
            })
            .collect();
        let mut v = json!({
            "id": self.id,
            "state": self.state,
            "reason": self.reason,
            "explanation": self.explanation,
            "rank": rank,
            "estimate": self.estimate.as_ref().map(time),
            "maintenance": maintenance,
            "alternatives": alternatives,
        });
        if self.reason.is_none() {
            v["error"] = json!(self.explanation);
        }
        v
    }

    /// The text `why` prints without `--json`.
    pub fn text(&self) -> String {
        let mut s = format!(
            "Job {} {}: {} in {}, time limit {}",
            self.id,
            printable(&self.name),
            self.state,
            printable(&self.partition),
            self.time_limit
        );
        if let Some(r) = &self.reason {
            s.push_str(&format!(", waiting for {}", printable(r)));
        }
        s.push('\n');
        let mut line = |k: &str, v: &str| s.push_str(&format!("{k:<12} {v}\n"));
        line("Why", &self.explanation);
        if let Some(f) = &self.fix {
            line("What to do", f);
        }
        if let Some(w) = &self.window {
            let mut t = format!(
                "{}: its {} limit runs into it",
                window_text(&w.reservation),
                self.time_limit
            );
            match w.longest {
                Some(l) => t.push_str(&format!("; {l} or less would end before it starts")),
                None => t.push_str("; no limit of a minute or more ends before it starts"),
            }
            line("Window", &t);
        }
        match &self.rank {
            Some(r) => line("Rank", &format!("{} ({} ahead)", r.text(), r.ahead)),
            None => line("Rank", "not among the partition's pending jobs"),
        }
        for (k, v) in &self.numbers {
            line(k, v);
        }
        match &self.estimate {
            Some(t) => line("Estimate", &format!("{} (the scheduler's)", time(t))),
            None => line("Estimate", &self.no_estimate),
        }
        for p in &self.problems {
            line("Not read", &printable(p));
        }
        s
    }

    /// The alternatives as `--alternatives` lists them, numbered from 1.
    pub fn alternatives_text(&self) -> String {
        if self.alternatives.is_empty() {
            let why = self
                .no_alternatives
                .clone()
                .unwrap_or_else(|| "nothing to change was found".into());
            return format!("No alternatives: {why}\n");
        }
        let mut s = String::from("Starts sooner if (checked with sbatch --test-only):\n");
        for (i, a) in self.alternatives.iter().enumerate() {
            s.push_str(&format!("  {}. {}\n", i + 1, a.words));
            let answer = match (&a.estimated_start, &a.problem) {
                (Some(t), _) => format!("estimated start {}", time(t)),
                (None, Some(p)) => printable(p),
                (None, None) => "not checked".into(),
            };
            s.push_str(&format!("     {answer}\n"));
            s.push_str(&format!("     {}\n", argv_line(&a.argv)));
        }
        s
    }
}

/// `argv` as one shell line, quoting only the words that need it (`JobId=82` as is).
fn argv_line(argv: &[String]) -> String {
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-=:,./@%+".contains(c))
    };
    argv.iter()
        .map(|w| {
            if plain(w) {
                w.clone()
            } else {
                shell_line(std::slice::from_ref(w)).unwrap_or_else(|_| w.replace('\0', "\\0"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Priority, fair-share and limits: the numbers of the detail pane.
fn numbers(job: &Job, info: &PendingInfo) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    let row = info
        .sprio
        .iter()
        .find(|r| r.partition == job.partition.as_str())
        .or(info.sprio.first());
    if let Some(r) = row {
        let parts: Vec<String> = factors(r)
            .iter()
            .filter(|(_, x)| *x > 0.0)
            .map(|(n, x)| format!("{n} {x:.0}"))
            .collect();
        v.push((
            "Priority",
            format!("{} = {}", r.priority, parts.join(" + ")),
        ));
    }
    let user = info
        .sshare
        .iter()
        .find(|s| s.user.as_deref() == Some(job.user.as_str()));
    if let Some(f) = user.and_then(|u| u.fairshare) {
        v.push(("Fair-share", format!("{f:.3}")));
    }
    if let Some(h) = info.limit_hit(job.reason.as_deref()) {
        v.push(("Limit hit", h.text.clone()));
    }
    for h in info.headroom.iter().filter(|h| h.full) {
        v.push(("Limit", h.text.clone()));
    }
    v
}

/// Slurm's reason as squeue prints it: scontrol writes the detail after the code with
/// underscores for spaces (`ReqNodeNotAvail,_Reserved_for_maintenance`).
fn reason_words(reason: &str) -> String {
    match reason.split_once(',') {
        Some((code, rest)) => format!("{code},{}", rest.replace('_', " ")),
        None => reason.to_string(),
    }
}

/// The report of pending `job` from what was read.
pub fn report(
    job: &Job,
    info: Option<&PendingInfo>,
    window: Option<WindowHit>,
    alternatives: Vec<Alternative>,
) -> Report {
    let reason = reason_words(job.reason.as_deref().unwrap_or("None"));
    // `ReqNodeNotAvail, Reserved for maintenance`, `ReqNodeNotAvail, UnavailableNodes:..`
    let code = reason.split(',').next().unwrap_or("").trim();
    let partition = info.and_then(|i| i.partition(job.partition.as_str()));
    let ctx = Context {
        partition,
        time_limit: Some(job.time_limit),
        nodes: Some(job.nodes),
        dependency: job.dependency.as_deref(),
        edit_key: None,
    };
    let e = explain(code, &ctx);
    let held = is_held(Some(&reason));
    Report {
        id: job.id.to_string(),
        name: job.name.to_string(),
        state: job.state.long_name().to_string(),
        partition: job.partition.to_string(),
        time_limit: job.time_limit.to_slurm(),
        explanation: e.words,
        fix: e.fix,
        rank: info.and_then(|i| i.rank.clone()),
        numbers: info.map(|i| numbers(job, i)).unwrap_or_default(),
        estimate: job.start_time.filter(|_| !held),
        no_estimate: why_no_estimate(Some(code)),
        window,
        no_alternatives: why::why_none(job),
        alternatives,
        problems: info.map(|i| i.problems.clone()).unwrap_or_default(),
        reason: Some(reason),
    }
}

pub async fn run(cluster: &Cluster, args: &WhyArgs) -> Result<ExitCode> {
    let id: JobId = args
        .id
        .parse()
        .map_err(|e| eyre!("`{}` is not a Slurm job id: {e}", args.id))?;
    if args.apply == Some(0) {
        return Err(eyre!(
            "why --apply: alternatives are numbered from 1 (see `slurmdash why {id} --alternatives`)"
        ));
    }
    if args.apply.is_some() && cluster.settings.read_only {
        return Err(eyre!(
            "cluster {} is read-only (--read-only or read_only = true in the config): nothing applied (why without --apply still works)",
            cluster.name
        ));
    }
    let remote = connect(cluster)?;
    let result = explain_job(remote.as_ref(), cluster, &id, args).await;
    remote.close().await;
    result
}

async fn explain_job(
    r: &dyn Remote,
    cluster: &Cluster,
    id: &JobId,
    args: &WhyArgs,
) -> Result<ExitCode> {
    let t = cluster.settings.command_timeout();
    let (detail, _) = crate::io::fetch::detail(r, id, t)
        .await
        .map_err(|e| eyre!("why {id}: {e}"))?;
    let job = match detail.to_job() {
        Some(j) if j.state == JobState::Pending => j,
        _ => return not_pending(&detail, id, args.json),
    };
    let (info, res) = tokio::join!(
        crate::io::pending::fetch(r, &job, t),
        crate::io::reservation::read(r, t)
    );
    let mut problems = Vec::new();
    let info = info.map_err(|e| problems.push(e)).ok();
    let res = res.map_err(|e| problems.push(e)).ok();
    let partitions = info
        .as_ref()
        .map(|i| i.partitions.clone())
        .unwrap_or_default();
    let view = why::Cluster {
        partitions: &partitions,
        reservations: res.as_ref().map(|r| r.items.as_slice()).unwrap_or(&[]),
        now: res
            .as_ref()
            .map(|r| r.now)
            .unwrap_or_else(|| chrono::Local::now().naive_local()),
    };
    let mut alts = Vec::new();
    if args.alternatives || args.apply.is_some() {
        alts = why::alternatives(&job, &Shape::of_detail(&detail), &view);
        if let Err(e) = crate::io::why::check(r, &mut alts, t).await {
            problems.push(e);
        }
    }
    let mut rep = report(&job, info.as_ref(), why::window(&job, &view), alts);
    rep.problems.extend(problems);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rep.to_json())?);
    } else {
        print!("{}", rep.text());
        if args.alternatives || args.apply.is_some() {
            print!("{}", rep.alternatives_text());
        }
    }
    match args.apply {
        None => Ok(ExitCode::SUCCESS),
        Some(n) => apply(r, cluster, &job, &partitions, &rep, n, args).await,
    }
}

fn not_pending(detail: &JobDetail, id: &JobId, json: bool) -> Result<ExitCode> {
    let state = detail
        .state
        .as_ref()
        .map(|s| s.long_name().to_string())
        .unwrap_or_else(|| "in an unknown state".into());
    let rep = Report::not_pending(id.as_str(), &state);
    if json {
        println!("{}", serde_json::to_string_pretty(&rep.to_json())?);
    }
    eprintln!("slurmdash why: {}", rep.explanation);
    Ok(ExitCode::FAILURE)
}

/// Says `text` where the report went: stdout for text, stderr beside JSON.
fn say(json: bool, text: &str) {
    if json {
        eprintln!("{text}");
    } else {
        println!("{text}");
    }
}

async fn apply(
    r: &dyn Remote,
    cluster: &Cluster,
    job: &Job,
    partitions: &[crate::slurm::model::Partition],
    rep: &Report,
    n: usize,
    args: &WhyArgs,
) -> Result<ExitCode> {
    let Some(a) = rep.alternatives.get(n - 1) else {
        return Err(eyre!(
            "why --apply {n}: job {} has {} alternative(s) now{}",
            job.id,
            rep.alternatives.len(),
            rep.no_alternatives
                .as_ref()
                .map(|w| format!(" ({w})"))
                .unwrap_or_default()
        ));
    };
    if let Err(e) = why::check_apply(job, &a.change, partitions) {
        return Err(eyre!("why --apply {n}: not applied: {e}"));
    }
    say(args.json, &format!("Apply {n}: {}", argv_line(&a.argv)));
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(eyre!(
                "why --apply {n}: not applied: standard input is not a terminal, so there is no one to ask; run again with --yes to apply it"
            ));
        }
        eprint!("Apply this change to job {}? [y/N] ", job.id);
        let _ = std::io::stderr().flush();
        if !matches!(read_answer().await?.trim(), "y" | "Y" | "yes") {
            say(args.json, "Not applied.");
            return Ok(ExitCode::FAILURE);
        }
    }
    match crate::io::why::apply(r, &job.id, &a.change, cluster.settings.command_timeout()).await {
        Ok(()) => {
            say(
                args.json,
                &format!("Applied to job {}: {}", job.id, a.change.words()),
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(eyre!("why --apply {n}: {}", printable(&e))),
    }
}

/// One line from the terminal, read on a thread of its own: the single-threaded runtime
/// keeps answering signals meanwhile (ctrl-c at the question stops slurmdash, see
/// `signals::until_stopped`), and the thread does not hold the exit up.
async fn read_answer() -> Result<String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let r = std::io::stdin().lock().read_line(&mut line).map(|_| line);
        let _ = tx.send(r);
    });
    Ok(rx.await.map_err(|_| eyre!("reading the answer"))??)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "why_tests.rs"]
mod tests;
