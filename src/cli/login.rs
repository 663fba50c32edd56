use std::process::ExitCode;

use color_eyre::eyre::{Result, WrapErr};

use crate::config::Cluster;
use crate::io::connect::ssh_options;
use crate::remote::interactive_login;

pub fn run(cluster: &Cluster) -> Result<ExitCode> {
    if cluster.settings.local {
        println!(
            "cluster `{}` runs commands locally; no login needed",
            cluster.name
        );
        return Ok(ExitCode::SUCCESS);
    }
    let persist = cluster.settings.persist_secs;
    if persist == 0 {
        color_eyre::eyre::bail!(
            "cluster `{}` has persist_secs = 0: its connection ends when the slurmdash that opened it exits, so a login made now would end at once; set persist_secs (e.g. 28800 for a working day) or run the dashboard, which logs in by itself",
            cluster.name
        );
    }
    let login = interactive_login(&ssh_options(cluster)?)
        .wrap_err_with(|| format!("logging in to cluster `{}`", cluster.name))?;
    println!(
        "connected to cluster `{}` through {}; the connection stays open at {} until {persist} s after its last use, and every slurmdash command reuses it (so does `ssh -S {} {}`)",
        cluster.name,
        login.host,
        login.socket.display(),
        shlex::try_quote(&login.socket.to_string_lossy()).unwrap_or_default(),
        login.host,
    );
    Ok(ExitCode::SUCCESS)
}
