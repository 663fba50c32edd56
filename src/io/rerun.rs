//! Reads for rerunning an array's unfinished tasks: the array's own records (`sacct
//! --jobs=ARRAYID` lists every task, `ARRAYID_IDX`, with its steps) and the cluster's
//! MaxArraySize (`scontrol show config`). The plan is `launch::rerun`.

use std::time::Duration;

use crate::io::fetch::stdout_of;
use crate::launch::relaunch::ArrayRead;
use crate::launch::rerun::{max_array_size, show_config_argv, DEFAULT_MAX_ARRAY_SIZE};
use crate::remote::Remote;
use crate::slurm::command::{since_ever, RECENT};
use crate::slurm::eff::{self, JobUse};
use crate::slurm::model::JobId;

fn tasks_of(out: &str, base: u64) -> Result<Vec<JobUse>, String> {
    let p = eff::read_eff(out);
    if let (Some(e), true) = (p.problems.first(), p.items.is_empty()) {
        return Err(format!("sacct printed something unexpected: {e}"));
    }
    Ok(p.items
        .into_iter()
        .filter(|u| {
            u.detail
                .id
                .as_ref()
                .is_some_and(|id| id.base() == base && id.array().is_some())
        })
        .collect())
}

/// Array `base`'s tasks and the cluster's MaxArraySize (Slurm's default when
/// `scontrol show config` does not say).
pub async fn read(remote: &dyn Remote, base: u64, timeout: Duration) -> Result<ArrayRead, String> {
    let ids = [JobId::new(base)];
    let (sacct, show) = (eff::sacct_eff_jobs(&ids, RECENT), show_config_argv());
    let (recent, config) = tokio::join!(
        stdout_of(remote, &sacct, None, timeout),
        stdout_of(remote, &show, None, timeout)
    );
    let mut tasks = tasks_of(&recent?, base)?;
    if tasks.is_empty() {
        // An array older than the recent window: the whole history.
        let all = stdout_of(
            remote,
            &eff::sacct_eff_jobs(&ids, since_ever()),
            None,
            timeout,
        )
        .await?;
        tasks = tasks_of(&all, base)?;
    }
    Ok(ArrayRead {
        tasks,
        max_array_size: config
            .ok()
            .and_then(|c| max_array_size(&c))
            .unwrap_or(DEFAULT_MAX_ARRAY_SIZE),
    })
}
