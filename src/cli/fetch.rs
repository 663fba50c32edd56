//! `slurmdash fetch ID PATH [DEST]`: copies a job's file or directory to this machine over
//! the open SSH connection. A relative PATH is taken below the job directory of a job
//! slurmdash launched, else below the job's work directory. The size is printed first, then
//! the progress, then bytes, time and rate; every file is checked by sha256 on both sides.
//! A file is written beside DEST (`.NAME.slurmdash-part`, 0600) and renamed over it only when
//! whole: a broken copy resumes from that partial file; ctrl-c removes it and leaves what was
//! at DEST before untouched (exit 130).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use color_eyre::eyre::{eyre, Result};

use crate::config::Cluster;
use crate::io::connect::connect;
use crate::jobfiles::copy::{self, CopyOpts};
use crate::jobfiles::list::Kind;
use crate::jobfiles::{base_name, display_name, rate_line, resolve};
use crate::logview::human_bytes;
use crate::remote::Remote;
use crate::slurm::model::JobId;

#[derive(Debug, Args)]
pub struct FetchArgs {
    /// The job.
    #[arg(value_name = "ID")]
    pub id: String,
    /// A file or directory of the job: absolute, or relative to the job directory of a job
    /// slurmdash launched (else the job's work directory), e.g. `specs/launch.json`. A name
    /// starting with `-` is taken as a path.
    #[arg(value_name = "PATH", allow_hyphen_values = true)]
    pub path: PathBuf,
    /// Where to put it (default: the current directory). An existing directory receives it
    /// under its own name. It is replaced only once the copy is whole; a copy broken off
    /// before resumes from its partial file beside it.
    #[arg(value_name = "DEST")]
    pub dest: Option<PathBuf>,
}

/// Progress is printed at most this often (a new line each time when not on a terminal).
const TTY_EVERY: Duration = Duration::from_millis(200);
const LINE_EVERY: Duration = Duration::from_secs(2);

/// The job directory of a launch of this cluster with this Slurm job id (any attempt).
fn launch_dir(cluster: &str, id: &JobId) -> Option<String> {
    if id.array().is_some() || id.het_offset().is_some() {
        return None;
    }
    let entries = crate::registry::Registry::open_default().load().ok()?;
    entries
        .into_iter()
        .find(|e| {
            e.cluster == cluster
                && (e.job_id == id.base() || e.attempts.iter().any(|a| a.job_id == id.base()))
        })
        .map(|e| e.job_dir)
}

/// The directory a relative PATH is taken below.
async fn base_dir(cluster: &Cluster, remote: &dyn Remote, id: &JobId) -> Result<Option<String>> {
    if let Some(d) = launch_dir(&cluster.name, id) {
        return Ok(Some(d));
    }
    let timeout = cluster.settings.command_timeout();
    let (detail, _) = crate::io::fetch::detail(remote, id, timeout)
        .await
        .map_err(|e| eyre!("looking up job {id} for its work directory: {e}"))?;
    Ok(detail.work_dir.filter(|w| !w.is_empty()))
}

fn dest_for(dest: Option<&Path>, name: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let name = Path::new(std::ffi::OsStr::from_bytes(name));
    match dest {
        None => PathBuf::from(".").join(name),
        Some(d) if d.is_dir() => d.join(name),
        Some(d) => d.to_path_buf(),
    }
}

struct Meter {
    tty: bool,
    last: Instant,
    t0: Instant,
    shown: bool,
}

impl Meter {
    fn show(&mut self, done: u64, total: u64, file: &str) {
        let every = if self.tty { TTY_EVERY } else { LINE_EVERY };
        if self.last.elapsed() < every && done < total {
            return;
        }
        self.last = Instant::now();
        let secs = self.t0.elapsed().as_secs_f64().max(0.001);
        let pct = (done.min(total) * 100).checked_div(total).unwrap_or(100);
        let rate = done as f64 / (1u64 << 20) as f64 / secs;
        let file = if file.is_empty() {
            String::new()
        } else {
            format!("  {}", super::output::printable(file))
        };
        let line = format!(
            "{pct:>3}%  {} of {}  {rate:.1} MiB/s{file}",
            human_bytes(done),
            human_bytes(total)
        );
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
        self.shown = true;
    }

    fn end(&self) {
        if self.tty && self.shown {
            let _ = writeln!(std::io::stderr());
        }
    }
}

pub async fn run(cluster: &Cluster, args: &FetchArgs) -> Result<ExitCode> {
    let id: JobId = args
        .id
        .parse()
        .map_err(|e| eyre!("`{}` is not a Slurm job id: {e}", args.id))?;
    let remote = connect(cluster)?;
    let result = fetch(cluster, remote.as_ref(), &id, args).await;
    remote.close().await;
    result
}

async fn fetch(
    cluster: &Cluster,
    remote: &dyn Remote,
    id: &JobId,
    args: &FetchArgs,
) -> Result<ExitCode> {
    let timeout = cluster.settings.command_timeout();
    use std::os::unix::ffi::OsStrExt;
    let given = args.path.as_os_str().as_bytes();
    let src_buf = if given.starts_with(b"/") {
        given.to_vec()
    } else {
        let base = base_dir(cluster, remote, id).await?;
        resolve(given, base.as_deref()).map_err(|e| eyre!("job {id}: {e}"))?
    };
    let src = src_buf.as_slice();
    let path = super::output::printable(&display_name(src));
    let entry = copy::stat(remote, src, timeout)
        .await
        .map_err(|e| eyre!("job {id}: {e}"))?;
    let Some(name) = base_name(src) else {
        return Err(eyre!(
            "{path} has no name to save it under: name a file or directory inside it"
        ));
    };
    let dest = dest_for(args.dest.as_deref(), name);
    let opts = CopyOpts {
        timeout,
        ..CopyOpts::default()
    };
    let mut meter = Meter {
        tty: std::io::stderr().is_terminal(),
        last: Instant::now() - LINE_EVERY,
        t0: Instant::now(),
        shown: false,
    };
    let t0 = Instant::now();
    let mut stop = crate::signals::Stop::new()?;
    match entry.kind {
        Kind::File | Kind::Link { to_dir: false } => {
            let size = entry.size;
            println!(
                "job {id}: {} is {size} bytes ({}) → {}",
                super::output::printable(&display_name(src)),
                human_bytes(size),
                dest.display()
            );
            let _ = std::io::stdout().flush();
            let mut show = |n: u64| meter.show(n, size.max(n), "");
            let outcome = stop
                .or_stop(copy::fetch_file(remote, src, &dest, opts, &mut show))
                .await;
            meter.end();
            let r = match outcome {
                Ok(r) => r,
                Err((name, num)) => {
                    let part = copy::part_path(&dest);
                    let _ = std::fs::remove_file(&part);
                    let before = if dest.exists() {
                        "is as it was before"
                    } else {
                        "was not created"
                    };
                    eprintln!(
                        "slurmdash: stopped by {name}: the partial copy {} was removed; {} {before}",
                        part.display(),
                        dest.display()
                    );
                    return Ok(ExitCode::from(128 + num as u8));
                }
            };
            let r = r.map_err(|e| eyre!("{e}"))?;
            let mut line = format!(
                "fetched {} bytes: {}; sha256 {} on both sides",
                r.size,
                rate_line(r.copied, t0.elapsed().as_secs_f64()),
                r.sha256
            );
            if r.restarted {
                line.push_str(" (the partial file there did not match: copied again whole)");
            } else if r.resumed_from > 0 {
                line.push_str(&format!(" (resumed from {} bytes)", r.resumed_from));
            }
            println!("{line}");
        }
        Kind::Dir | Kind::Link { to_dir: true } => {
            let (_, total) = copy::plan_dir(remote, src, timeout)
                .await
                .map_err(|e| eyre!("{e}"))?;
            println!(
                "job {id}: {}/ holds {total} bytes ({}) → {}",
                super::output::printable(&display_name(src)),
                human_bytes(total),
                dest.display()
            );
            let _ = std::io::stdout().flush();
            let mut show = |d: u64, t: u64, f: &str| meter.show(d, t, f);
            let outcome = stop
                .or_stop(copy::fetch_dir(remote, src, &dest, opts, &mut show))
                .await;
            meter.end();
            let r = match outcome {
                Ok(r) => r,
                Err((name, num)) => {
                    eprintln!("slurmdash: stopped by {name}: the files copied so far stay in {}, and fetching again resumes", dest.display());
                    return Ok(ExitCode::from(128 + num as u8));
                }
            };
            let r = r.map_err(|e| eyre!("{e}"))?;
            println!(
                "fetched {} files, {} bytes: {}; each file's sha256 matched on both sides",
                r.files,
                r.size,
                rate_line(r.copied, t0.elapsed().as_secs_f64())
            );
            if !r.skipped.is_empty() {
                println!(
                    "not copied (links, special files): {}",
                    super::output::printable(&r.skipped.join(", "))
                );
            }
        }
        Kind::Other => {
            return Err(eyre!(
                "{path} is neither a file nor a directory: nothing to fetch"
            ))
        }
    }
    Ok(ExitCode::SUCCESS)
}
