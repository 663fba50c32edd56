//! Launch work for the dashboard: the form's cluster facts, `--test-only`, submission, and
//! re-attaching to registry jobs through sacct. Each command runs as one background task
//! and answers with one message.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use crate::action::{Cmd, Msg};
use crate::launch::{facts, submit};
use crate::registry::{Entry, Registry};
use crate::remote::Remote;
use crate::slurm::model::{Job, JobDetail, JobId, JobState, SlurmDuration};

/// How many of the newest registry launches are re-attached at start.
pub const REATTACH_MAX: usize = 200;

/// Runs one launch command in the background; other commands are ignored.
pub fn spawn(cmd: Cmd, remote: Arc<dyn Remote>, tx: UnboundedSender<Msg>, timeout: Duration) {
    tokio::spawn(async move {
        let r = remote.as_ref();
        let msg = match cmd {
            Cmd::FetchLaunchFacts => Msg::LaunchFacts(facts::fetch(r, timeout).await),
            Cmd::TestOnly(p) => Msg::TestOnly(submit::test_only(r, &p, timeout).await),
            Cmd::Submit { cluster, prepared } => {
                let registry = Registry::open_default();
                let target = submit::Target {
                    remote: r,
                    cluster: &cluster,
                    registry: &registry,
                    timeout,
                    convert_timeout: Duration::from_secs(30 * 60),
                };
                let result =
                    match submit::read_secrets(&prepared.plan.secrets, |n| std::env::var(n).ok()) {
                        Ok(secrets) => submit::submit(&target, &prepared, &secrets).await,
                        Err(e) => Err(e),
                    };
                Msg::Submitted(Box::new(result))
            }
            Cmd::LoadRegistryJobs(cluster) => {
                let entries = Registry::open_default().load();
                match entries {
                    Ok(entries) => {
                        Msg::RegistryJobs(registry_jobs(r, &cluster, &entries, timeout).await)
                    }
                    Err(e) => Msg::RegistryJobs(Err(e.to_string())),
                }
            }
            _ => return,
        };
        let _ = tx.send(msg);
    });
}

/// The cluster's newest registry launches as sacct knows them (the latest attempt of each).
pub async fn registry_jobs(
    remote: &dyn Remote,
    cluster: &str,
    entries: &[Entry],
    timeout: Duration,
) -> Result<Vec<Job>, String> {
    let ids: Vec<JobId> = entries
        .iter()
        .rev()
        .filter(|e| e.cluster == cluster)
        .take(REATTACH_MAX)
        .map(|e| JobId::new(e.job_id))
        .collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let details = crate::worker::fetch::final_states(remote, &ids, timeout).await?;
    // Right after a job ends, slurmdbd may hold a partial record (named `allocation`, no
    // partition or work dir) until slurmctld's start message lands: fill in what we know.
    Ok(details
        .iter()
        .filter(|d| d.id.as_ref().is_some_and(|i| ids.contains(i)))
        .filter_map(job_from_detail)
        .map(|mut j| {
            if let Some(e) = entries
                .iter()
                .rev()
                .find(|e| e.cluster == cluster && e.job_id == j.id.base())
            {
                j.name = e.name.clone();
                if j.work_dir.is_empty() {
                    j.work_dir = e.job_dir.as_str().into();
                }
            }
            j
        })
        .collect())
}

/// A queue row from a sacct record.
pub fn job_from_detail(d: &JobDetail) -> Option<Job> {
    let id = d.id.clone()?;
    Some(Job {
        id,
        cluster: "".into(),
        array_job_id: d.array_job_id,
        array_task: d.array_task.clone(),
        name: d.name.clone(),
        user: d.user.clone().unwrap_or_default().into(),
        account: d.account.clone().unwrap_or_default().into(),
        partition: d.partition.clone().unwrap_or_default().into(),
        state: d.state.clone().unwrap_or(JobState::Unknown(String::new())),
        reason: d.reason.clone(),
        time_used: d.elapsed.unwrap_or_default(),
        time_limit: d.time_limit.unwrap_or(SlurmDuration::Unknown),
        nodes: d.nodes.unwrap_or(0),
        cpus: d.cpus.unwrap_or(0),
        min_memory: d.min_memory.clone(),
        tres_per_node: d.tres_per_node.clone().or_else(|| {
            d.tres.as_deref().and_then(|t| {
                let g = crate::slurm::model::gpus_in_tres(t);
                let n = d.nodes.unwrap_or(1).max(1);
                (g > 0).then(|| format!("gres:gpu:{}", g / n))
            })
        }),
        node_list: d.node_list.clone(),
        submit_time: d.submit_time,
        start_time: d.start_time,
        work_dir: d.work_dir.clone().unwrap_or_default().into(),
        qos: d.qos.clone().unwrap_or_default().into(),
        priority: d.priority,
        problem: None,
    })
}
