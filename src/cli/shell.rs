//! `slurmdash shell ID [--node N]`: an interactive shell inside a running job's allocation
//! (`srun --overlap --pty`), over the cluster's open SSH connection.

use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{bail, eyre, Result, WrapErr};

use super::connect;
use crate::config::Cluster;
use crate::slurm::model::{JobId, Status};

#[derive(Debug, Args)]
pub struct ShellArgs {
    /// The running job (`123`, `123_7` for an array task).
    #[arg(value_name = "ID")]
    pub id: String,
    /// Which of the job's nodes (default: its first).
    #[arg(long, value_name = "NODE")]
    pub node: Option<String>,
}

pub async fn run(cluster: &Cluster, args: &ShellArgs) -> Result<ExitCode> {
    let id: JobId = args
        .id
        .parse()
        .map_err(|e| eyre!("`{}` is not a Slurm job id: {e}", args.id))?;
    let remote = connect(cluster)?;
    let timeout = cluster.settings.command_timeout();
    let (detail, _) = crate::worker::fetch::detail(remote.as_ref(), &id, timeout)
        .await
        .map_err(|e| eyre!(e))?;
    let state = detail.state.clone();
    match state.as_ref().map(|s| s.status()) {
        Some(Status::Running) => {}
        Some(Status::Pending) => bail!("job {id} is pending: a shell opens once it runs"),
        Some(_) | None => bail!(
            "job {id} is {}: no shell, it has no allocation any more",
            state
                .map(|s| s.long_name().to_string())
                .unwrap_or_else(|| "unknown".into())
        ),
    }
    let nodes = detail
        .node_list
        .as_deref()
        .map(crate::slurm::hostlist::expand)
        .unwrap_or_default();
    if let Some(n) = &args.node {
        if !nodes.is_empty() && !nodes.contains(n) {
            bail!(
                "job {id} does not run on {n}: its nodes are {}",
                nodes.join(", ")
            );
        }
    }
    let node = args.node.clone().or_else(|| nodes.first().cloned());
    let argv = crate::slurm::shell::shell_argv(&id, node.as_deref());
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
