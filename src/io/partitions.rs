//! Partition data for `:partitions` (and anything else that needs it): sinfo, scontrol and an
//! all-users squeue in one remote exec. Callers cache the result (the App keeps it 60 s).

use std::time::Duration;

use crate::remote::Remote;
use crate::slurm::batch;
use crate::slurm::partview::{self, PartitionRow};

pub async fn fetch(remote: &dyn Remote, timeout: Duration) -> Result<Vec<PartitionRow>, String> {
    let b = batch::script(&partview::commands())
        .map_err(|e| format!("building the partitions query: {e}"))?;
    let out = remote
        .run(&batch::argv(&b), None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    let host = remote.host().unwrap_or_else(|| "the cluster".into());
    let s = batch::split(&b, &out.stdout_lossy(), &out.stderr_lossy())
        .map_err(|e| format!("partitions query (sinfo, scontrol, squeue) on {host}: {e}"))?;
    let names = ["sinfo", "scontrol show partition", "squeue --all"];
    for (sec, name) in s.iter().zip(names) {
        if !sec.success() {
            return Err(format!(
                "{name} on {host} failed: {}",
                sec.stderr.trim().lines().next().unwrap_or("no message")
            ));
        }
    }
    partview::parse(&s[0].stdout, &s[1].stdout, &s[2].stdout)
        .map_err(|e| format!("partitions query printed something unexpected: {e}"))
}
