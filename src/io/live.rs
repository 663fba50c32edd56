//! One live sample of the selected running job: the fixed script of `slurm::live` (sstat of
//! its steps, nvidia-smi on each of its nodes through `srun --overlap`) in ONE remote exec.

use std::time::Duration;

use crate::remote::Remote;
use crate::slurm::live::{self, LiveSample, LiveTarget};

/// Each node's `srun … nvidia-smi` gets this long: half the command's limit, 3 to 15 s.
pub fn probe_secs(timeout: Duration) -> u64 {
    (timeout.as_secs() / 2).clamp(3, 15)
}

/// Takes one sample.
pub async fn sample(
    remote: &dyn Remote,
    target: &LiveTarget,
    timeout: Duration,
) -> Result<LiveSample, String> {
    let mut t = target.clone();
    t.timeout_secs = probe_secs(timeout);
    let m = format!("SLURMDASH-LIVE-{}", crate::slurm::batch::nonce());
    let out = remote
        .run(&live::argv(&t, &m), None, timeout)
        .await
        .map_err(|e| {
            format!(
                "live sample (sstat, srun … nvidia-smi) of job {}: {e}",
                t.id
            )
        })?;
    live::parse_sample(&out.stdout_lossy(), &m).map_err(|e| {
        let said = out.stderr_lossy();
        let said = said.trim();
        match said.is_empty() {
            true => format!("live sample of job {}: {e}", t.id),
            false => format!("live sample of job {}: {e} ({said})", t.id),
        }
    })
}
