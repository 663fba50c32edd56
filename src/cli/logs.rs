use std::future::Future;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use color_eyre::eyre::{eyre, Result, WrapErr};

use super::output::run_checked;
use crate::config::Cluster;
use crate::io::connect::connect;
use crate::io::fetch::{self, DetailSource};
use crate::logview::terminal::TerminalText;
use crate::remote::{ReadPos, Remote, RemoteError};
use crate::slurm::command::{self, Scope, SqueueQuery};
use crate::slurm::logpath::{default_pattern, resolve_log_path, LogContext};
use crate::slurm::model::{JobDetail, JobId, JobState};
use crate::slurm::parse::read_squeue;

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Job id.
    #[arg(value_name = "ID")]
    pub id: String,
    /// Print stderr instead of stdout.
    #[arg(long)]
    pub err: bool,
    /// Keep printing new output until the job ends.
    #[arg(long, short)]
    pub follow: bool,
    /// Print the log's bytes as they are, escape sequences included. Without it, output to a
    /// terminal keeps colours and drops every other escape sequence and control character
    /// (as the log pane does); output to a pipe or file is always as is.
    #[arg(long)]
    pub raw: bool,
}

/// Bytes fetched per remote read.
const CHUNK: u64 = 4 << 20;
const FOLLOW_EVERY: Duration = Duration::from_secs(1);
/// How often `--follow` asks whether the job ended.
const ASK_EVERY: Duration = Duration::from_secs(5);
/// The first wait after a read that returned nothing though the file is longer.
const STALL_FIRST: Duration = Duration::from_millis(100);
/// Such reads in a row (about 8 s of waits) before `logs` stops at what it printed, unless
/// it follows a job still running.
const STALLED_READS: u32 = 12;

/// Where a job's output is, as far as Slurm still says.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLocation {
    pub path: String,
    /// Set when the path is a guess (Slurm no longer reports it).
    pub note: Option<String>,
    pub state: Option<JobState>,
}

pub async fn run(cluster: &Cluster, args: &LogsArgs) -> Result<ExitCode> {
    let id: JobId = args
        .id
        .parse()
        .map_err(|e| eyre!("`{}` is not a Slurm job id: {e}", args.id))?;
    let remote = connect(cluster)?;
    let loc = locate(remote.as_ref(), cluster, &id, args.err).await?;
    if let Some(note) = &loc.note {
        eprintln!("slurmdash: {note}");
    }
    let finished = loc.state.as_ref().is_none_or(JobState::is_finished);
    let mut stdout = std::io::stdout().lock();
    // On a terminal, a job's escape sequences never reach it (`--raw`: as they are).
    let safe = (!args.raw && stdout.is_terminal()).then(TerminalText::default);
    let r = remote.as_ref();
    print_file(r, &loc, args.follow, finished, safe, &mut stdout, || {
        job_finished(r, cluster, &id)
    })
    .await
    .wrap_err_with(|| format!("reading the output of job {id}"))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the file at `loc` from its start to `out`; with `follow`, goes on printing what
/// is added until `job_finished` (asked every few seconds) says the job ended, then reads
/// once more for its last lines. `finished`: the job had already ended.
async fn print_file<F: Future<Output = bool>>(
    remote: &dyn Remote,
    loc: &LogLocation,
    follow: bool,
    mut finished: bool,
    safe: Option<TerminalText>,
    out: &mut dyn Write,
    mut job_finished: impl FnMut() -> F,
) -> Result<()> {
    let mut offset = 0u64;
    let mut waiting_said = false;
    let mut safe = safe;
    // Reads in a row that returned nothing though the file is longer.
    let mut stalled = 0u32;
    // Time waited since the job's state was last asked.
    let mut since_asked = Duration::ZERO;
    loop {
        let wait = match remote
            .read_file(&loc.path, ReadPos::Offset(offset), CHUNK)
            .await
        {
            Ok(chunk) if chunk.truncated() => {
                eprintln!(
                    "slurmdash: {} shrank to {} bytes (truncated or replaced); reading it again from the start",
                    loc.path, chunk.size
                );
                offset = 0;
                continue;
            }
            Ok(chunk) if !chunk.data.is_empty() => {
                out.write_all(&shown(&mut safe, &chunk.data))?;
                out.flush()?;
                offset = chunk.next_offset();
                stalled = 0;
                if offset < chunk.size {
                    continue;
                }
                FOLLOW_EVERY
            }
            // Its length says more than could be read (a network file system's size may
            // run ahead of its data): read again after a wait that grows.
            Ok(chunk) if offset < chunk.size => {
                stalled += 1;
                if stalled > STALLED_READS && (!follow || finished) {
                    eprintln!(
                        "slurmdash: {} says it holds {} bytes, but nothing after byte {offset} could be read; stopping there",
                        loc.path, chunk.size
                    );
                    break;
                }
                stall_wait(stalled)
            }
            Ok(_) => {
                stalled = 0;
                FOLLOW_EVERY
            }
            Err(RemoteError::NotFound { .. }) if follow && !finished => {
                if !waiting_said {
                    eprintln!(
                        "slurmdash: waiting for {} (job is {})",
                        loc.path,
                        loc.state
                            .as_ref()
                            .map_or("not started", |s| s.long_name())
                            .to_lowercase()
                    );
                    waiting_said = true;
                }
                FOLLOW_EVERY
            }
            Err(e) => return Err(e.into()),
        };
        if stalled == 0 && (!follow || finished) {
            break;
        }
        tokio::time::sleep(wait).await;
        since_asked += wait;
        if follow && !finished && since_asked >= ASK_EVERY {
            // One last read after the job ended picks up its final lines.
            finished = job_finished().await;
            since_asked = Duration::ZERO;
        }
    }
    if let Some(t) = safe.as_mut() {
        out.write_all(&t.finish())?;
        out.flush()?;
    }
    Ok(())
}

/// The wait before the `n`th read in a row of a file whose data lags its length: 100 ms,
/// doubling, at most [`FOLLOW_EVERY`].
fn stall_wait(n: u32) -> Duration {
    (STALL_FIRST * 2u32.saturating_pow(n.saturating_sub(1).min(16))).min(FOLLOW_EVERY)
}

/// What of `data` goes out: as is, or made safe for the terminal (`safe`).
fn shown<'a>(safe: &mut Option<TerminalText>, data: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
    match safe {
        Some(t) => t.push(data).into(),
        None => data.into(),
    }
}

async fn job_finished(remote: &dyn Remote, cluster: &Cluster, id: &JobId) -> bool {
    let q = SqueueQuery {
        scope: Scope::All,
        jobs: vec![id.clone()],
        ..SqueueQuery::default()
    };
    match run_checked(remote, cluster, &command::squeue(&q)).await {
        // An odd record of this job still gives its state.
        Ok(out) => {
            let p = read_squeue(&out);
            (!p.items.is_empty() || p.problems.is_empty())
                && p.items.iter().all(|j| j.state.is_finished())
        }
        // squeue rejects ids it no longer knows.
        Err(_) => true,
    }
}

/// Finds the job's stdout (or stderr) path: from `scontrol show job` while slurmctld knows the
/// job, else from sacct's work dir and Slurm's default file name.
pub async fn locate(
    remote: &dyn Remote,
    cluster: &Cluster,
    id: &JobId,
    stderr: bool,
) -> Result<LogLocation> {
    let (d, source) = fetch::detail(remote, id, cluster.settings.command_timeout())
        .await
        .map_err(|e| eyre!(e))?;
    let ctx = context(&d, id);
    let default = default_pattern(d.array_task.is_some());
    let pattern = if stderr {
        d.stderr.clone().or_else(|| d.stdout.clone())
    } else {
        d.stdout.clone()
    };
    let (pattern, note) = match (pattern, source) {
        (Some(p), _) => (p, None),
        (None, DetailSource::Scontrol) => (
            default.to_string(),
            Some("Slurm reports no output path; trying its default file name".to_string()),
        ),
        (None, DetailSource::Sacct) => (
            default.to_string(),
            Some(format!(
                "job {id} has left the controller, which alone knows its output path; trying Slurm's default {}",
                resolve_log_path(default, &ctx)
            )),
        ),
    };
    Ok(LogLocation {
        path: resolve_log_path(&pattern, &ctx),
        note,
        state: d.state.clone(),
    })
}

fn context(d: &JobDetail, id: &JobId) -> LogContext {
    LogContext::from_detail(d).unwrap_or_else(|| LogContext {
        job_id: id.base(),
        job_name: d.name.clone(),
        user: d.user.clone().unwrap_or_default(),
        ..LogContext::default()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "logs_tests.rs"]
mod tests;
