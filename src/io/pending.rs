//! Why pending jobs wait: rank, priority factors, fair-share, limits and partitions for
//! every pending job of one user, in one batched remote exec of 3 or 4 slurmctld RPCs
//! (`slurm::pending`). Asked for when the user selects a pending job the kept answer does
//! not cover, or that answer is old; never per poll.

use std::time::Duration;

use crate::remote::Remote;
use crate::slurm::batch;
use crate::slurm::model::Job;
use crate::slurm::pending::{self, Ask, Batch, PendingInfo};

/// One read for every pending job `ask` names.
pub async fn fetch_batch(
    remote: &dyn Remote,
    ask: &Ask,
    timeout: Duration,
) -> Result<Batch, String> {
    let cmds = pending::commands(ask);
    let b = batch::script(&cmds).map_err(|e| format!("building the pending-job query: {e}"))?;
    let out = remote
        .run(&batch::argv(&b), None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    let sections = batch::split(&b, &out.stdout_lossy(), &out.stderr_lossy()).map_err(|e| {
        format!(
            "pending-job query (sprio, sshare, scontrol) on {}: {e}",
            remote.host().unwrap_or_else(|| "the cluster".into())
        )
    })?;
    Ok(pending::parse(ask, &sections))
}

/// What one read says of `job` alone (the command line's and the tests' way in).
pub async fn fetch(
    remote: &dyn Remote,
    job: &Job,
    timeout: Duration,
) -> Result<PendingInfo, String> {
    let ask = Ask::of(job.user.as_str(), [job], true)
        .ok_or_else(|| format!("job {} is not pending", job.id))?;
    Ok(fetch_batch(remote, &ask, timeout).await?.info_for(job))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::remote::fake::{FakeRemote, FakeReply};
    use crate::slurm::command::{rpc_cost, RpcCost};
    use crate::slurm::parse::parse_squeue;

    /// What one read costs the cluster, for every pending job of the user at once: one
    /// remote exec, 4 slurmctld RPCs with the partitions (sprio 1, sshare 1, scontrol show
    /// assoc_mgr 1, scontrol show partition 1, as sdiag counts them), 3 without, and none
    /// of slurmdbd.
    #[tokio::test]
    async fn one_read_for_all_pending_jobs_is_one_exec_of_four_slurmctld_rpcs() {
        let jobs = parse_squeue(include_str!(
            "../../tests/fixtures/slurm/26.05/squeue_me.out"
        ))
        .unwrap();
        let user = jobs
            .iter()
            .find(|j| j.state == crate::slurm::model::JobState::Pending)
            .unwrap()
            .user
            .to_string();
        let ask = Ask::of(&user, &jobs, true).unwrap();
        let fake = FakeRemote::new("login1");
        fake.on(&["sh", "-c"], vec![FakeReply::ok("")]);
        let _ = fetch_batch(&fake, &ask, Duration::from_secs(5)).await;
        let calls = fake.calls();
        assert_eq!(calls.len(), 1, "one remote exec: {calls:?}");
        assert_eq!(rpc_cost(&calls[0]), RpcCost { ctld: 4, dbd: 0 });
        let programs: Vec<String> = calls[0][2]
            .lines()
            .filter_map(shlex::split)
            .filter_map(|w| {
                let p = w.first()?.clone();
                (p != "printf" && p != "rc=$?;" && p != "exit" && !p.starts_with("m="))
                    .then(|| w.iter().take(3).cloned().collect::<Vec<_>>().join(" "))
            })
            .collect();
        let sprio = format!("sprio --noheader --partition={}", ask.partitions.join(","));
        assert_eq!(
            programs,
            [
                sprio.as_str(),
                "sshare --noheader --parsable2",
                "scontrol show assoc_mgr",
                "scontrol show partition",
            ]
        );
        let kept = Ask {
            with_partitions: false,
            ..ask
        };
        let _ = fetch_batch(&fake, &kept, Duration::from_secs(5)).await;
        assert_eq!(rpc_cost(&fake.calls()[1]).ctld, 3);
    }
}
