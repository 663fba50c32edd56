use std::process::ExitCode;

use color_eyre::eyre::{Result, WrapErr};

use super::connect::ssh_options;
use crate::config::Cluster;
use crate::remote::interactive_login;

pub fn run(cluster: &Cluster) -> Result<ExitCode> {
    if cluster.settings.local {
        println!(
            "cluster `{}` runs commands locally; no login needed",
            cluster.name
        );
        return Ok(ExitCode::SUCCESS);
    }
    let socket = interactive_login(&ssh_options(cluster))
        .wrap_err_with(|| format!("logging in to cluster `{}`", cluster.name))?;
    println!(
        "connected to cluster `{}`; the connection stays open at {} and slurmdash reuses it",
        cluster.name,
        socket.display()
    );
    Ok(ExitCode::SUCCESS)
}
