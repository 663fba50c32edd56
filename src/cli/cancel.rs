use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{eyre, Result};

use crate::config::Cluster;
use crate::io::connect::connect;
use crate::slurm::model::{CancelOutcome, JobId};
use crate::slurm::parse::parse_scancel;

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// Job ids (`123`, `123_7` for one array task, `123+1` for a het component).
    #[arg(required = true, value_name = "ID")]
    pub ids: Vec<String>,
}

pub async fn run(cluster: &Cluster, args: &CancelArgs) -> Result<ExitCode> {
    if cluster.settings.read_only {
        return Err(eyre!(
            "cluster {} is read-only (--read-only or read_only = true in the config): nothing cancelled",
            cluster.name
        ));
    }
    let ids = args
        .ids
        .iter()
        .map(|s| {
            s.parse::<JobId>()
                .map_err(|e| eyre!("`{s}` is not a Slurm job id: {e}"))
        })
        .collect::<Result<Vec<_>>>()?;
    // A heterogeneous job is cancelled as a whole: Slurm refuses single components.
    let mut targets: Vec<JobId> = Vec::new();
    for id in &ids {
        let t = id.cancel_target();
        if t != *id {
            println!("{id}: part of heterogeneous job {t}, which is cancelled as a whole");
        }
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    let ids = targets;
    let remote = connect(cluster)?;
    // Retry guards of these jobs go first, in the same command: nothing resubmits them.
    let argv = crate::launch::guard::cancel_argv(&ids);
    let out = remote
        .run(&argv, None, cluster.settings.command_timeout())
        .await?;
    let code = out.code.unwrap_or(-1);
    let mut failed = false;
    for (id, outcome) in parse_scancel(&ids, &out.stderr_lossy(), code) {
        let line = match outcome {
            CancelOutcome::Cancelled => "cancelled".to_string(),
            CancelOutcome::AlreadyGone => {
                "already gone (Slurm no longer knows it); counts as cancelled".to_string()
            }
            CancelOutcome::AlreadyFinished => "already finished; counts as cancelled".to_string(),
            CancelOutcome::Failed(msg) => {
                failed = true;
                format!("NOT cancelled: {msg}")
            }
        };
        println!("{id}: {line}");
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
