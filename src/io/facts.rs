//! The cluster facts a launch is validated against, in one round trip's worth of waiting.

use std::time::Duration;

use crate::io::fetch::stdout_of;
use crate::launch::facts::{
    accounts_argv, nodes_argv, parse_accounts, parse_nodes, parse_sbatch_env, partitions,
    pending_argv, pyxis_in_srun_help, srun_help_argv, ClusterFacts,
};
use crate::remote::Remote;
use crate::slurm::parse::{parse_scontrol_partitions, parse_sinfo};

/// Runs the commands and joins their output. Partitions are required; accounts and Pyxis
/// are best effort (`None` when the command failed).
pub async fn fetch(remote: &dyn Remote, timeout: Duration) -> Result<ClusterFacts, String> {
    let run = |argv: Vec<String>| async move { stdout_of(remote, &argv, None, timeout).await };
    // Independent commands: one round trip's worth of waiting over the shared connection.
    let (parts, usage, pending, accounts, help, nodes) = tokio::join!(
        run(crate::slurm::command::scontrol_show_partition()),
        run(crate::slurm::command::sinfo()),
        run(pending_argv()),
        run(accounts_argv()),
        run(srun_help_argv()),
        run(nodes_argv()),
    );
    let parts = parse_scontrol_partitions(&parts?)
        .map_err(|e| format!("scontrol show partition printed something unexpected: {e}"))?;
    let usage =
        parse_sinfo(&usage?).map_err(|e| format!("sinfo printed something unexpected: {e}"))?;
    let pending = pending.unwrap_or_default();
    let sbatch_env = accounts
        .as_deref()
        .map(parse_sbatch_env)
        .unwrap_or_default();
    let accounts = accounts
        .ok()
        .map(|o| parse_accounts(&o))
        .filter(|a| !a.is_empty());
    let pyxis = help.ok().map(|h| pyxis_in_srun_help(&h));
    let nodes = parse_nodes(&nodes?)?;
    Ok(ClusterFacts {
        partitions: partitions(&parts, &usage, &pending),
        accounts,
        pyxis,
        nodes,
        sbatch_env,
    })
}
