//! The site's own RPC rate limit: `scontrol show config` (1 slurmctld RPC), read once per
//! dashboard and cluster; the parser is `slurm::ratelimit`.

use std::time::Duration;

use crate::remote::Remote;
use crate::slurm::ratelimit::{self, RateLimit};

pub async fn read(remote: &dyn Remote, timeout: Duration) -> Result<Option<RateLimit>, String> {
    let argv = ratelimit::show_config_argv();
    let out = remote
        .run(&argv, None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!(
            "scontrol show config failed: {}",
            out.stderr_lossy()
                .trim()
                .lines()
                .next()
                .unwrap_or("no message")
        ));
    }
    ratelimit::parse(&out.stdout_lossy())
}
