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
            "pending-job query (squeue, sprio, sshare, scontrol) on {}: {e}",
            remote.host().unwrap_or_else(|| "the cluster".into())
        )
    })?;
    Ok(pending::parse(job, &sections))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::remote::fake::{FakeRemote, FakeReply};
    use crate::slurm::command::{rpc_cost, RpcCost};
    use crate::slurm::parse::parse_squeue;

    /// What one pending-job lookup costs the cluster: one remote exec of five commands,
    /// 6 slurmctld RPCs (squeue --local 2, sprio 1, sshare 1, scontrol show assoc_mgr 1,
    /// scontrol show partition 1, as sdiag counts them) and none of slurmdbd.
    #[tokio::test]
    async fn one_lookup_is_one_exec_six_slurmctld_rpcs_and_no_slurmdbd() {
        let job = parse_squeue(include_str!(
            "../../tests/fixtures/slurm/26.05/squeue_me.out"
        ))
        .unwrap()
        .into_iter()
        .find(|j| j.state == crate::slurm::model::JobState::Pending)
        .unwrap();
        let fake = FakeRemote::new("login1");
        fake.on(&["sh", "-c"], vec![FakeReply::ok("")]);
        let _ = fetch(&fake, &job, Duration::from_secs(5)).await;
        let calls = fake.calls();
        assert_eq!(calls.len(), 1, "one remote exec: {calls:?}");
        assert_eq!(rpc_cost(&calls[0]), RpcCost { ctld: 6, dbd: 0 });
        let programs: Vec<String> = calls[0][2]
            .lines()
            .filter_map(shlex::split)
            .filter_map(|w| {
                let p = w.first()?.clone();
                (p != "printf" && p != "rc=$?;" && p != "exit" && !p.starts_with("m="))
                    .then(|| w.iter().take(3).cloned().collect::<Vec<_>>().join(" "))
            })
            .collect();
        let sprio = format!("sprio --noheader --jobs={}", job.id.per_job_target());
        assert_eq!(
            programs,
            [
                "squeue --noheader --local",
                sprio.as_str(),
                "sshare --noheader --parsable2",
                "scontrol show assoc_mgr",
                "scontrol show partition",
            ]
        );
    }
}
