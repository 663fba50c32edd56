//! One job top sample: the fixed script of `slurm::top` (one `srun --overlap` step over
//! the job's nodes running ps, scontrol listpids and nvidia-smi on each) in ONE remote exec.

use std::time::Duration;

use crate::remote::Remote;
use crate::slurm::top::{self, TopSample, TopTarget};

/// The srun gets this long: the command's limit less a few seconds, 5 to 30 s.
pub fn srun_secs(timeout: Duration) -> u64 {
    timeout.as_secs().saturating_sub(3).clamp(5, 30)
}

/// Takes one sample.
pub async fn sample(
    remote: &dyn Remote,
    target: &TopTarget,
    timeout: Duration,
) -> Result<TopSample, String> {
    let mut t = target.clone();
    t.timeout_secs = srun_secs(timeout);
    let m = format!("SLURMDASH-TOP-{}", crate::slurm::batch::nonce());
    let out = remote
        .run(&top::argv(&t, &m), None, timeout)
        .await
        .map_err(|e| format!("job top (srun --overlap … ps) of job {}: {e}", t.id))?;
    let said = out.stderr_lossy();
    let said = crate::slurm::top::safe_text(
        said.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or(""),
        200,
    );
    let sample =
        top::parse_sample(&out.stdout_lossy(), &m, t.id.as_str()).map_err(|e| {
            match said.as_str() {
                "" => format!("job top of job {}: {e}", t.id),
                s => format!("job top of job {}: {e} ({s})", t.id),
            }
        })?;
    match sample.srun_exit {
        Some(rc) if rc != 0 && sample.nodes.is_empty() => Err(match said.as_str() {
            "" => format!("srun --overlap into job {} exited {rc}", t.id),
            s => format!("srun --overlap into job {} exited {rc}: {s}", t.id),
        }),
        _ => Ok(sample),
    }
}
