//! `slurmdash shell ID [--node N]`: an interactive shell inside a running job's allocation
//! (`srun --overlap --pty`), over the cluster's open SSH connection.

use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{eyre, Result, WrapErr};

use crate::config::Cluster;
use crate::io::connect::connect;

#[derive(Debug, Args)]
pub struct ShellArgs {
    /// The running job (`123`, `123_7` for an array task).
    #[arg(value_name = "ID")]
    pub id: String,
    /// Which of the job's nodes (default: its first).
    #[arg(long, value_name = "NODE")]
    pub node: Option<String>,
    /// A command for your shell to run there (`$SHELL -c`, not a login shell) instead of
    /// an interactive session (`slurmdash shell 123 -- nvidia-smi`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

pub async fn run(cluster: &Cluster, args: &ShellArgs) -> Result<ExitCode> {
    let remote = connect(cluster)?;
    let (id, node) = super::running::running_job(
        cluster,
        remote.as_ref(),
        &args.id,
        args.node.as_deref(),
        "a shell",
    )
    .await?;
    let command = if args.command.is_empty() {
        None
    } else {
        Some(
            crate::slurm::command::shell_line(&args.command)
                .map_err(|_| eyre!("the command contains a NUL byte"))?,
        )
    };
    let argv = crate::slurm::shell::shell_argv_running(&id, node.as_deref(), command.as_deref());
    let local = remote.terminal_argv(&argv).ok_or_else(|| {
        eyre!(
            "cluster `{}`: no connection to hand a terminal over",
            cluster.name
        )
    })?;
    let status = tokio::process::Command::new(&local[0])
        .args(&local[1..])
        .status()
        .await
        .wrap_err_with(|| format!("running `{}`", local[0]))?;
    remote.close().await;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}
