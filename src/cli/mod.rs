//! The command line: global options, subcommands, and the shared set-up of config and
//! transport. Every subcommand uses the same Slurm layer and transport as the dashboard.

mod adopt;
mod cancel;
mod deps;
mod doctor;
mod eff;
mod fetch;
mod forward;
mod history;
mod jobs;
mod login;
mod logs;
mod output;
mod rerun;
mod running;
mod session;
mod shell;
mod submit;
mod usage;
mod why;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use color_eyre::eyre::{eyre, Result, WrapErr};

use crate::config::{Env, Loaded};
use crate::dashboard::{self, Session};
use crate::io::connect::connect;
use crate::keymap::Keymap;

#[derive(Debug, Parser)]
#[command(
    name = "slurmdash",
    version,
    about = "Watch and drive Slurm jobs on a remote cluster over SSH"
)]
pub struct Cli {
    /// Config file (default: $XDG_CONFIG_HOME/slurmdash/config.toml).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Cluster from the config (default: `watch`, else default_cluster). The dashboard and
    /// `jobs` take several: `--cluster a,b`.
    #[arg(long, global = true, value_name = "NAME[,NAME...]")]
    pub cluster: Option<String>,
    /// Refuse every action that changes jobs (cancel, hold, release, requeue, top, edit).
    #[arg(long, global = true)]
    pub read_only: bool,
    /// Append a debug log to FILE (for bug reports): every remote command with its argv,
    /// exit status, duration and bytes, and every error. Never secret values. Off by default.
    #[arg(long, global = true, value_name = "FILE", env = "SLURMDASH_LOG")]
    pub log: Option<PathBuf>,
    /// Which jobs the dashboard shows.
    #[command(flatten)]
    pub queue: jobs::QueueArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check that SSH, the Slurm commands and the results root work; exit 0 only if all pass.
    Doctor,
    /// Print one snapshot of the queue (own jobs by default).
    Jobs(jobs::JobsArgs),
    /// Cancel jobs. A job that is already gone or finished counts as cancelled.
    Cancel(cancel::CancelArgs),
    /// How a finished job used what it asked for: CPU, memory, time and GPU efficiency,
    /// with a verdict (`--json` for scripts).
    Eff(eff::EffArgs),
    /// Your jobs that ended in the last N days, with their efficiency (`--json` for scripts).
    History(history::HistoryArgs),
    /// Your CPU- and GPU-hours per account: used in the last N days, in flight and
    /// committed, against the account's GrpTRESMins and fair share (`--json` for scripts).
    Usage(usage::UsageArgs),
    /// Your jobs' dependency chains: what each waits on, and whether it can still be met
    /// (`--json`: `nodes` and `edges`, from the job depended on to the one that waits).
    Deps(deps::DepsArgs),
    /// Why a pending job waits: the reason in words, rank, priority, the scheduler's estimate
    /// and the maintenance window its time limit runs into; `--alternatives` asks the
    /// scheduler about changes that start it sooner, `--apply N` applies one, e.g.
    /// `slurmdash why 4242 --alternatives`.
    Why(why::WhyArgs),
    /// Print (and follow) a job's output.
    Logs(logs::LogsArgs),
    /// A shell inside a running job's allocation, on its first node or `--node N`
    /// (`srun --overlap --pty`, over the open SSH connection); exits with the shell's status.
    Shell(shell::ShellArgs),
    /// Forward a local port to a port a running job listens on (Jupyter, TensorBoard, a
    /// server) over the open SSH connection, until ctrl-c or the job's end.
    Forward(forward::ForwardArgs),
    /// Copy a job's file or directory here over the open SSH connection (relative paths
    /// are below the job directory of a launch, else the work directory); resumes a partial
    /// file and checks sha256 on both sides.
    Fetch(fetch::FetchArgs),
    /// Open the SSH connection in this terminal (answer password/2FA prompts here); later
    /// commands and the dashboard reuse it.
    Login,
    /// Launch a job (the dashboard's `n` form from the command line), e.g.
    /// `slurmdash submit --template train-8gpu --set time=2h -- python train.py`, or your
    /// own batch script: `slurmdash submit train.sbatch -- --lr 3e-4`.
    Submit(submit::SubmitArgs),
    /// Put a running or pending job you submitted elsewhere (plain sbatch) under slurmdash's
    /// care: Slurm's copy of its script is kept in a job directory, and a guard job on the
    /// cluster resubmits it after an infrastructure failure, e.g. `slurmdash adopt 4242 --json`.
    Adopt(adopt::AdoptArgs),
    /// A work session: an allocation to work in, without holding a terminal, e.g.
    /// `slurmdash session --gpus 1 --time 2h --wait`; then `shell ID`, `forward ID PORT`,
    /// `session --ssh-config ID` (an editor's remote mode), `session --end ID`.
    Session(session::SessionArgs),
    /// Submit again the tasks of an array that did not complete, as a new array of exactly
    /// those indices, with the same script and time/memory sized from their own use, e.g.
    /// `slurmdash rerun 4242 --failed --json`.
    Rerun(rerun::RerunArgs),
    /// Print shell completions, e.g. `slurmdash completions bash > ~/.local/share/bash-completion/completions/slurmdash`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `slurmdash man > ~/.local/share/man/man1/slurmdash.1`;
    /// with `--dir DIR`, write it and one page per subcommand there.
    Man {
        /// Write slurmdash.1 and slurmdash-SUBCOMMAND.1 into this directory.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Completions and the man page come from the same clap definitions as the parser, so they
/// can never list a subcommand or option that does not exist.
fn print_generated(command: &Command) -> Result<Option<ExitCode>> {
    use clap::CommandFactory;
    use std::io::Write;
    let mut text = Vec::new();
    match command {
        Command::Completions { shell } => {
            clap_complete::generate(*shell, &mut Cli::command(), "slurmdash", &mut text);
        }
        Command::Man { dir: Some(dir) } => {
            clap_mangen::generate_to(Cli::command(), dir)
                .wrap_err_with(|| format!("writing man pages to {}", dir.display()))?;
        }
        Command::Man { dir: None } => clap_mangen::Man::new(Cli::command())
            .render(&mut text)
            .wrap_err("rendering the man page")?,
        _ => return Ok(None),
    }
    match std::io::stdout().lock().write_all(&text) {
        // `slurmdash man | head` closes the pipe early: not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).wrap_err("writing to standard output")
        }
        _ => Ok(Some(ExitCode::SUCCESS)),
    }
}

pub async fn run(cli: Cli) -> Result<ExitCode> {
    // Neither needs a config or a cluster.
    if let Some(code) = cli
        .command
        .as_ref()
        .map(print_generated)
        .transpose()?
        .flatten()
    {
        return Ok(code);
    }
    let loaded = Loaded::load(cli.config.as_deref())?;
    let mut clusters = loaded
        .clusters(cli.cluster.as_deref(), &Env::from_process())
        .wrap_err("choosing the cluster")?;
    for c in &mut clusters {
        if cli.read_only {
            c.settings.read_only = true;
        }
    }
    let several = clusters.len() > 1;
    let cluster = clusters[0].clone();
    let one_only = |what: &str| {
        let names: Vec<&str> = clusters.iter().map(|c| c.name.as_str()).collect();
        eyre!(
            "`{what}` works on one cluster at a time, and {} are chosen ({}): pass --cluster NAME",
            names.len(),
            names.join(", ")
        )
    };
    use crate::signals::until_stopped;
    match (&cli.command, several) {
        (Some(Command::Cancel(_)), true) => return Err(one_only("cancel")),
        (Some(Command::Logs(_)), true) => return Err(one_only("logs")),
        (Some(Command::Login), true) => return Err(one_only("login")),
        (Some(Command::Shell(_)), true) => return Err(one_only("shell")),
        (Some(Command::Forward(_)), true) => return Err(one_only("forward")),
        (Some(Command::Fetch(_)), true) => return Err(one_only("fetch")),
        (Some(Command::Submit(_)), true) => return Err(one_only("submit")),
        (Some(Command::Adopt(_)), true) => return Err(one_only("adopt")),
        (Some(Command::Rerun(_)), true) => return Err(one_only("rerun")),
        (Some(Command::Session(_)), true) => return Err(one_only("session")),
        (Some(Command::Eff(_)), true) => return Err(one_only("eff")),
        (Some(Command::Usage(_)), true) => return Err(one_only("usage")),
        (Some(Command::Deps(_)), true) => return Err(one_only("deps")),
        (Some(Command::Why(_)), true) => return Err(one_only("why")),
        _ => {}
    }
    match cli.command {
        Some(Command::Doctor) => {
            let mut code = ExitCode::SUCCESS;
            for c in &clusters {
                if several {
                    println!("== cluster {} ==", c.name);
                }
                if until_stopped(doctor::run(&loaded, c)).await? != ExitCode::SUCCESS {
                    code = ExitCode::FAILURE;
                }
            }
            Ok(code)
        }
        Some(Command::Jobs(args)) => until_stopped(jobs::run(&clusters, &args)).await,
        Some(Command::Cancel(args)) => until_stopped(cancel::run(&cluster, &args)).await,
        Some(Command::Logs(args)) => until_stopped(logs::run(&cluster, &args)).await,
        Some(Command::Eff(args)) => until_stopped(eff::run(&cluster, &args)).await,
        Some(Command::History(args)) => until_stopped(history::run(&clusters, &args)).await,
        Some(Command::Usage(args)) => until_stopped(usage::run(&cluster, &args)).await,
        Some(Command::Deps(args)) => until_stopped(deps::run(&cluster, &args)).await,
        Some(Command::Why(args)) => until_stopped(why::run(&cluster, &args)).await,
        // It ends itself on ctrl-c (removing the partial file).
        Some(Command::Fetch(args)) => fetch::run(&cluster, &args).await,
        // It ends itself on ctrl-c (after closing the forward).
        Some(Command::Forward(args)) => forward::run(&cluster, &args).await,
        Some(Command::Shell(args)) => {
            // ctrl-c belongs to the remote shell (ssh puts the terminal in raw mode).
            let _keep = crate::signals::Stop::new()?;
            shell::run(&cluster, &args).await
        }
        Some(Command::Login) => {
            // ctrl-c at ssh's prompt ends ssh (the login fails with a message), not us.
            let _keep = crate::signals::Stop::new()?;
            login::run(&cluster)
        }
        // It handles the signals itself: a submission under way is finished first.
        Some(Command::Submit(args)) => submit::run(&loaded, &cluster, &args).await,
        Some(Command::Adopt(args)) => until_stopped(adopt::run(&loaded, &cluster, &args)).await,
        // Like submit, it handles the signals itself.
        Some(Command::Session(args)) => session::run(&loaded, &cluster, &args).await,
        // Like submit, it handles the signals itself.
        Some(Command::Rerun(args)) => rerun::run(&loaded, &cluster, &args).await,
        Some(Command::Completions { .. } | Command::Man { .. }) => Ok(ExitCode::SUCCESS),
        None => {
            let args = &cli.queue;
            let keymap = Keymap::with_overrides(&loaded.config.keys)
                .map_err(|e| eyre!("config file {}: {e}", loaded.path.display()))?;
            // As for `login`: ctrl-c at an interactive login's prompt ends ssh, not us.
            let _keep = crate::signals::Stop::new()?;
            let mut sites = Vec::new();
            for c in clusters {
                let remote = connect(&c)?;
                sites.push(dashboard::Site { cluster: c, remote });
            }
            let session = Session {
                query: args.query(),
                scope: if args.all {
                    "all users".into()
                } else {
                    "your jobs".into()
                },
                columns: loaded.config.ui.columns.clone(),
                quick_cancel: loaded.config.ui.quick_cancel,
                force_read_only: cli.read_only,
                sites,
            };
            dashboard::run(&loaded, session, keymap).await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
