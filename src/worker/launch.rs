//! Launch work for the dashboard: the form's cluster facts, `--test-only`, submission, and
//! re-attaching to registry jobs through sacct (`io::fetch::registry_jobs`). Each command
//! runs as one background task and answers with one message.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use crate::action::{Cmd, Msg};
use crate::io::fetch::registry_jobs;
use crate::launch::submit;
use crate::registry::Registry;
use crate::remote::Remote;

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
            Cmd::LoadRegistryJobs(cluster) => Msg::RegistryJobs(match registry.load() {
                Ok(entries) => registry_jobs(r, &cluster, &entries, timeout).await,
                Err(e) => Err(e.to_string()),
            }),
            _ => return,
        };
        let _ = tx.send(msg);
    })
}
