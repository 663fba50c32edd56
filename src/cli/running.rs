//! What `shell` and `forward` share: the running job they reach into, and its node.

use color_eyre::eyre::{bail, eyre, Result};

use crate::config::Cluster;
use crate::remote::Remote;
use crate::slurm::model::{JobId, Status};

/// Job `id_text` if it runs, and the node to use: `node` if it is one of the job's, else its
/// first (`None` when Slurm lists none yet). Refuses, saying why, a job that does not run;
/// `what` names the use ("a shell", "a forward").
pub(crate) async fn running_job(
    cluster: &Cluster,
    remote: &dyn Remote,
    id_text: &str,
    node: Option<&str>,
    what: &str,
) -> Result<(JobId, Option<String>)> {
    let id: JobId = id_text
        .parse()
        .map_err(|e| eyre!("`{id_text}` is not a Slurm job id: {e}"))?;
    let timeout = cluster.settings.command_timeout();
    let (detail, _) = crate::io::fetch::detail(remote, &id, timeout)
        .await
        .map_err(|e| eyre!(e))?;
    match detail.state.as_ref().map(|s| (s.status(), s.long_name())) {
        Some((Status::Running, _)) => {}
        Some((Status::Pending, _)) => {
            bail!("job {id} is pending: {what} needs it running (once it starts)")
        }
        other => bail!(
            "job {id} is {}: {what} needs a running job",
            other.map_or("unknown", |(_, name)| name)
        ),
    }
    let nodes = detail
        .node_list
        .as_deref()
        .map(crate::slurm::hostlist::expand)
        .unwrap_or_default();
    match node {
        Some(n) if !nodes.is_empty() && !nodes.iter().any(|m| m == n) => bail!(
            "job {id} does not run on {n}: its nodes are {}",
            nodes.join(", ")
        ),
        Some(n) => Ok((id, Some(n.to_string()))),
        None => Ok((id, nodes.into_iter().next())),
    }
}
