//! Launch work for the dashboard: the form's cluster facts, `--test-only`, submission, and
//! re-attaching to registry jobs through sacct. Each command runs as one background task
//! and answers with one message.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use crate::action::{Cmd, Msg};
use crate::launch::submit;
use crate::registry::{Entry, Registry};
use crate::remote::Remote;
use crate::slurm::model::{Job, JobDetail, JobId};

/// How many of the newest registry launches are re-attached at start.
pub const REATTACH_MAX: usize = 200;

/// Runs one launch command in the background, recording launches in `registry`; other
/// commands are ignored. The task's handle lets a leaving dashboard wait for a submission.
pub fn spawn(
    cmd: Cmd,
    remote: Arc<dyn Remote>,
    registry: Arc<Registry>,
    tx: UnboundedSender<Msg>,
    timeout: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let r = remote.as_ref();
        let msg = match cmd {
            Cmd::FetchLaunchFacts => Msg::LaunchFacts(crate::io::facts::fetch(r, timeout).await),
            Cmd::TestOnly(p) => Msg::TestOnly(crate::io::submit::test_only(r, &p, timeout).await),
            Cmd::Submit { cluster, prepared } => {
                let target = crate::io::submit::Target {
                    remote: r,
                    cluster: &cluster,
                    registry: &registry,
                    timeout,
                    convert_timeout: Duration::from_secs(30 * 60),
                };
                let result = match submit::read_secrets(&prepared.plan.secrets, |n| {
                    std::env::var(n).ok()
                }) {
                    Ok(secrets) => crate::io::submit::submit(&target, &prepared, &secrets).await,
                    Err(e) => Err(e),
                };
                Msg::Submitted(Box::new(result))
            }
            Cmd::LoadRegistryJobs(cluster) => {
                let entries = registry.load();
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
    })
}

/// The cluster's newest registry launches as sacct knows them (the latest attempt of each).
pub async fn registry_jobs(
    remote: &dyn Remote,
    cluster: &str,
    entries: &[Entry],
    timeout: Duration,
) -> Result<Vec<Job>, String> {
    let newest: Vec<&Entry> = entries
        .iter()
        .rev()
        // A launch still being submitted (job id 0) has no job to look up yet.
        .filter(|e| e.cluster == cluster && e.job_id != 0)
        .take(REATTACH_MAX)
        .collect();
    let ids: Vec<JobId> = newest.iter().map(|e| JobId::new(e.job_id)).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let since = crate::slurm::command::since_launched(crate::registry::oldest_secs(&newest));
    let details = crate::io::fetch::final_states(remote, &ids, since, timeout).await?;
    // Right after a job ends, slurmdbd may hold a partial record (named `allocation`, no
    // partition or work dir) until slurmctld's start message lands: fill in what we know.
    Ok(details
        .iter()
        .filter(|d| d.id.as_ref().is_some_and(|i| ids.contains(i)))
        .filter_map(JobDetail::to_job)
        .map(|mut j| {
            if let Some(e) = entries
                .iter()
                .rev()
                .find(|e| e.cluster == cluster && e.job_id == j.id.base())
            {
                j.name = e.name.as_str().into();
                if j.work_dir.is_empty() {
                    j.work_dir = e.job_dir.as_str().into();
                }
            }
            j
        })
        .collect())
}
