//! The site's own RPC rate limit and the cluster's Slurm release: `scontrol show config`
//! (1 slurmctld RPC), read once per dashboard and cluster; the parsers are
//! `slurm::ratelimit` and `slurm::statecheck::version_from_config`.

use std::time::Duration;

use crate::remote::Remote;
use crate::slurm::ratelimit::{self, RateLimit};
use crate::slurm::statecheck::{self, Version};

/// The site's limit (or why it is not known) and the release `SLURM_VERSION` names.
pub async fn read(
    remote: &dyn Remote,
    timeout: Duration,
) -> (Result<Option<RateLimit>, String>, Option<Version>) {
    let argv = ratelimit::show_config_argv();
    let out = match remote.run(&argv, None, timeout).await {
        Ok(out) => out,
        Err(e) => return (Err(e.to_string()), None),
    };
    if !out.success() {
        let e = format!(
            "scontrol show config failed: {}",
            out.stderr_lossy()
                .trim()
                .lines()
                .next()
                .unwrap_or("no message")
        );
        return (Err(e), None);
    }
    let text = out.stdout_lossy();
    (
        ratelimit::parse(&text),
        statecheck::version_from_config(&text),
    )
}
