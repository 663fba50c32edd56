//! Builds the transport for a configured cluster.

use std::io::IsTerminal;
use std::sync::Arc;

use color_eyre::eyre::{eyre, Result, WrapErr};

use crate::config::Cluster;
use crate::remote::{
    interactive_login, running_login, runtime_dir, LocalRemote, Login, Remote, SharedMasters,
    SshOptions, SshRemote,
};

/// The SSH options of `cluster`. Its masters are shared with every other slurmdash process
/// (one per host, in the runtime directory); this fails, saying what to do, if that
/// directory is not private.
pub fn ssh_options(cluster: &Cluster) -> Result<SshOptions> {
    let s = &cluster.settings;
    let dir = runtime_dir().map_err(|e| eyre!("cannot keep SSH connections: {e}"))?;
    Ok(SshOptions {
        hosts: s.hosts.clone(),
        user: s.user.clone(),
        port: s.port,
        key_path: s.key_path.clone(),
        ssh_config: s.ssh_config.clone(),
        control_path: s.control_path.clone(),
        shared: Some(SharedMasters {
            dir,
            cluster: cluster.name.clone(),
            state_dir: Some(crate::registry::default_dir()),
        }),
        connect_timeout: s.connect_timeout(),
        persist: s.persist(),
        interactive_login: s.interactive_login,
        ..SshOptions::default()
    })
}

/// The remote for `cluster`: local commands, or SSH through the cluster's shared master.
/// With `interactive_login`, the master is opened first in this terminal so that password
/// and 2FA prompts can be answered, and every later command reuses it; a master left open by
/// `slurmdash login` (or another slurmdash) is picked up the same way.
pub fn connect(cluster: &Cluster) -> Result<Arc<dyn Remote>> {
    if cluster.settings.local {
        return Ok(Arc::new(LocalRemote::new()));
    }
    let opts = ssh_options(cluster)?;
    let login = if cluster.settings.interactive_login {
        let login = match running_login(&opts) {
            Some(login) => login,
            None if !std::io::stdin().is_terminal() => color_eyre::eyre::bail!(
                "cluster `{}` needs an interactive login (password or one-time code) and there is no terminal to ask in: run `slurmdash --cluster {} login` in a terminal first; later commands reuse that connection",
                cluster.name,
                cluster.name
            ),
            None => interactive_login(&opts)
                .wrap_err_with(|| format!("logging in to cluster `{}`", cluster.name))?,
        };
        Some(login)
    } else {
        None
    };
    ssh_remote(cluster, opts, login)
}

/// Like [`connect`], but never prompts and never blocks: used from inside the dashboard
/// (`:cluster NAME`), where the terminal belongs to the UI and the check runs on a worker.
/// A cluster that needs an interactive login must have a live master.
pub async fn connect_quiet(cluster: &Cluster) -> Result<Arc<dyn Remote>> {
    if cluster.settings.local {
        return Ok(Arc::new(LocalRemote::new()));
    }
    let opts = ssh_options(cluster)?;
    let login = if cluster.settings.interactive_login {
        let check = opts.clone();
        let found = tokio::task::spawn_blocking(move || running_login(&check))
            .await
            .ok()
            .flatten();
        match found {
            Some(login) => Some(login),
            None => color_eyre::eyre::bail!(
                "cluster `{}` needs an interactive login: quit and run `slurmdash --cluster {} login` first",
                cluster.name,
                cluster.name
            ),
        }
    } else {
        None
    };
    ssh_remote(cluster, opts, login)
}

/// The SSH remote of `cluster`, holding the interactive `login` it reuses, if any.
fn ssh_remote(
    cluster: &Cluster,
    opts: SshOptions,
    login: Option<Login>,
) -> Result<Arc<dyn Remote>> {
    let remote = SshRemote::new(opts)
        .wrap_err_with(|| format!("setting up SSH for cluster `{}`", cluster.name))?;
    if let Some(login) = login {
        remote.keep(login);
    }
    Ok(Arc::new(remote))
}
