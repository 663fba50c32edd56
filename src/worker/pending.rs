//! The selected pending job's rank, priority factors, fair-share, limits and partitions: one
//! batched remote exec, run only when a pending job is selected (never per poll).

use std::time::Duration;

use crate::remote::Remote;
use crate::slurm::batch;
use crate::slurm::model::Job;
use crate::slurm::pending::{self, PendingInfo};

pub async fn fetch(
    remote: &dyn Remote,
    job: &Job,
    timeout: Duration,
) -> Result<PendingInfo, String> {
    let cmds = pending::commands(job);
    let b = batch::script(&cmds).map_err(|e| format!("building the pending-job query: {e}"))?;
    let out = remote
        .run(&batch::argv(&b), None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    let sections = batch::split(&b, &out.stdout_lossy(), &out.stderr_lossy()).map_err(|e| {
        format!(
            "pending-job query (squeue, sprio, sshare, sacctmgr, scontrol) on {}: {e}",
            remote.host().unwrap_or_else(|| "the cluster".into())
        )
    })?;
    Ok(pending::parse(job, &sections))
}
