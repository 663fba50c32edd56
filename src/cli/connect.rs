//! Builds the transport for a configured cluster.

use std::io::IsTerminal;
use std::sync::Arc;

use color_eyre::eyre::{Result, WrapErr};

use crate::config::Cluster;
use crate::remote::{
    control_master_alive, default_control_path, interactive_login, master_answers, LocalRemote,
    Remote, SshOptions, SshRemote,
};

pub fn ssh_options(cluster: &Cluster) -> SshOptions {
    let s = &cluster.settings;
    SshOptions {
        hosts: s.hosts.clone(),
        user: s.user.clone(),
        port: s.port,
        key_path: s.key_path.clone(),
        ssh_config: s.ssh_config.clone(),
        control_path: s.control_path.clone(),
        connect_timeout: s.connect_timeout(),
        interactive_login: s.interactive_login,
        ..SshOptions::default()
    }
}

/// The socket of an interactive login: the configured one, else the default for the first host.
fn login_socket(opts: &SshOptions) -> Option<std::path::PathBuf> {
    opts.control_path
        .clone()
        .or_else(|| opts.hosts.first().map(|h| default_control_path(h)))
}

/// The remote for `cluster`: local commands, or SSH through one ControlMaster. With
/// `interactive_login`, the master is opened first in this terminal so that password and
/// 2FA prompts can be answered, and every later command reuses it; a master left open by
/// `slurmdash login` is picked up the same way.
pub fn connect(cluster: &Cluster) -> Result<Arc<dyn Remote>> {
    if cluster.settings.local {
        return Ok(Arc::new(LocalRemote::new()));
    }
    let mut opts = ssh_options(cluster);
    if cluster.settings.interactive_login {
        let socket = login_socket(&opts);
        if !std::io::stdin().is_terminal() && !socket.as_deref().is_some_and(control_master_alive) {
            color_eyre::eyre::bail!(
                "cluster `{}` needs an interactive login (password or one-time code) and there is no terminal to ask in: run `slurmdash --cluster {} login` in a terminal first; later commands reuse that connection",
                cluster.name,
                cluster.name
            );
        }
        let socket = interactive_login(&opts)
            .wrap_err_with(|| format!("logging in to cluster `{}`", cluster.name))?;
        opts.control_path = Some(socket);
    } else if opts.control_path.is_none() {
        // A master opened earlier by `slurmdash login` is reused.
        if let Some(first) = opts.hosts.first() {
            let socket = default_control_path(first);
            if control_master_alive(&socket) {
                opts.control_path = Some(socket);
            }
        }
    }
    let remote = SshRemote::new(opts)
        .wrap_err_with(|| format!("setting up SSH for cluster `{}`", cluster.name))?;
    Ok(Arc::new(remote))
}

/// Like [`connect`], but never prompts and never blocks: used from inside the dashboard
/// (`:cluster NAME`), where the terminal belongs to the UI and the check runs on a worker.
/// A cluster that needs an interactive login must have a live master.
pub async fn connect_quiet(cluster: &Cluster) -> Result<Arc<dyn Remote>> {
    if cluster.settings.local {
        return Ok(Arc::new(LocalRemote::new()));
    }
    let mut opts = ssh_options(cluster);
    let socket = login_socket(&opts);
    let alive = match &socket {
        Some(s) => master_answers(s).await,
        None => false,
    };
    if cluster.settings.interactive_login && !alive {
        color_eyre::eyre::bail!(
            "cluster `{}` needs an interactive login: quit and run `slurmdash --cluster {} login` first",
            cluster.name,
            cluster.name
        );
    }
    if alive {
        opts.control_path = socket;
    }
    let remote = SshRemote::new(opts)
        .wrap_err_with(|| format!("setting up SSH for cluster `{}`", cluster.name))?;
    Ok(Arc::new(remote))
}
