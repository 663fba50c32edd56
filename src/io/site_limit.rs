//! The site's own RPC rate limit and the cluster's Slurm release: `scontrol show config`
//! (1 slurmctld RPC), read once per dashboard and cluster; the parsers are
//! `slurm::ratelimit`, `slurm::statecheck::version_from_config` and
//! `slurm::pending::priority_calc_period`.

use std::time::Duration;

use crate::remote::Remote;
use crate::slurm::ratelimit::{self, RateLimit};
use crate::slurm::statecheck::{self, Version};

/// What one `scontrol show config` says that the dashboard uses.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteConfig {
    /// The site's limit, or why it is not known.
    pub limit: Result<Option<RateLimit>, String>,
    /// The release `SLURM_VERSION` names.
    pub version: Option<Version>,
    /// `PriorityCalcPeriod`.
    pub priority_calc: Option<Duration>,
}

/// Reads the site's config once.
pub async fn read(remote: &dyn Remote, timeout: Duration) -> SiteConfig {
    let failed = |e: String| SiteConfig {
        limit: Err(e),
        version: None,
        priority_calc: None,
    };
    let argv = ratelimit::show_config_argv();
    let out = match remote.run(&argv, None, timeout).await {
        Ok(out) => out,
        Err(e) => return failed(e.to_string()),
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
        return failed(e);
    }
    let text = out.stdout_lossy();
    SiteConfig {
        limit: ratelimit::parse(&text),
        version: statecheck::version_from_config(&text),
        priority_calc: crate::slurm::pending::priority_calc_period(&text),
    }
}
