//! Launch work for the dashboard: the form's cluster facts, `--test-only`, submission, and
//! re-attaching to registry jobs through sacct (`io::fetch::registry_jobs`). Each command
//! runs as one background task and answers with one message.

use crate::action::LaunchMsg;
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
            Cmd::FetchLaunchFacts => Msg::Launch(LaunchMsg::LaunchFacts(
                crate::io::facts::fetch(r, timeout).await,
            )),
            Cmd::TestOnly(p) => Msg::Launch(LaunchMsg::TestOnly(
                crate::io::submit::test_only(r, &p, timeout).await,
            )),
            Cmd::Submit { cluster, prepared } => {
                let target = crate::io::submit::Target {
                    remote: r,
                    cluster: &cluster,
                    registry: &registry,
                    timeout,
                    convert_timeout: Duration::from_secs(30 * 60),
                };
                let secrets =
                    submit::read_secrets(&prepared.plan.secrets, |n| std::env::var(n).ok());
                let result = match (with_code(*prepared).await, secrets) {
                    (Ok(prepared), Ok(secrets)) => {
                        crate::io::submit::submit(&target, &prepared, &secrets).await
                    }
                    (Err(e), _) | (_, Err(e)) => Err(e),
                };
                if result.is_ok() {
                    send_launches(&registry, &cluster, &tx);
                }
                Msg::Launch(LaunchMsg::Submitted(Box::new(result)))
            }
            Cmd::LoadRegistryJobs(cluster) => {
                Msg::Launch(LaunchMsg::RegistryJobs(match registry.load() {
                    Ok(entries) => {
                        // This laptop's record first: what was launched is known before sacct
                        // answers.
                        let mine = entries.iter().filter(|e| e.cluster == cluster);
                        let _ = tx.send(Msg::Launch(LaunchMsg::Launches(mine.cloned().collect())));
                        registry_jobs(r, &cluster, &entries, timeout).await
                    }
                    Err(e) => Err(e.to_string()),
                }))
            }
            _ => return,
        };
        let _ = tx.send(msg);
    })
}

/// The launches of `cluster` as the registry holds them now, to the App (nothing when it
/// cannot be read: the next retry check says why).
pub fn send_launches(registry: &Registry, cluster: &str, tx: &UnboundedSender<Msg>) {
    if let Ok(entries) = registry.load() {
        let mine = entries
            .into_iter()
            .filter(|e| e.cluster == cluster)
            .collect();
        let _ = tx.send(Msg::Launch(LaunchMsg::Launches(mine)));
    }
}

/// The form's launch with `code = "snapshot"` carries the repository this dashboard was
/// started in, read here (off the UI path) just before it is staged.
async fn with_code(p: submit::Prepared) -> Result<submit::Prepared, String> {
    if p.code.is_some() {
        return Ok(p);
    }
    if p.spec.code == "same" {
        let Some(r) = p.spec.snapshot_ran() else {
            return Err("not submitted: code `same` but the launch ran no snapshot".into());
        };
        return Ok(p.with_code(crate::launch::code::Snapshot::reused(&r)));
    }
    if p.spec.code != "snapshot" {
        return Ok(p);
    }
    let here = std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?;
    let max = p.spec.code_max_mb;
    let snap = tokio::task::spawn_blocking(move || crate::io::code::snapshot(&here, max))
        .await
        .map_err(|e| format!("making the code snapshot: {e}"))?
        .map_err(|e| format!("not submitted: {e}"))?;
    Ok(p.with_code(snap))
}
