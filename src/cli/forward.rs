//! `slurmdash forward ID REMOTE_PORT [--local PORT] [--open]`: a local port to what a running
//! job serves on its node (Jupyter, TensorBoard, a model server), through the cluster's open
//! SSH connection. It lasts until ctrl-c or the job's end, and is then taken down.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use color_eyre::eyre::{bail, eyre, Result};

use crate::config::Cluster;
use crate::io::connect::connect;

#[derive(Debug, Args)]
pub struct ForwardArgs {
    /// The running job.
    #[arg(value_name = "ID")]
    pub id: String,
    /// The port the job listens on, on its node.
    #[arg(value_name = "REMOTE_PORT")]
    pub port: u16,
    /// The local port (default: the same as REMOTE_PORT when free and above 1023, else the
    /// next free one); taken ports are skipped, and that is said.
    #[arg(long, value_name = "PORT")]
    pub local: Option<u16>,
    /// Which of the job's nodes (default: its first).
    #[arg(long, value_name = "NODE")]
    pub node: Option<String>,
    /// Open the URL in the browser (xdg-open, or open on macOS).
    #[arg(long)]
    pub open: bool,
}

/// How often the job is looked at while the forward lasts.
const JOB_CHECK: Duration = Duration::from_secs(10);

pub async fn run(cluster: &Cluster, args: &ForwardArgs) -> Result<ExitCode> {
    let remote = connect(cluster)?;
    let timeout = cluster.settings.command_timeout();
    let (id, node) = super::running::running_job(
        cluster,
        remote.as_ref(),
        &args.id,
        args.node.as_deref(),
        "a forward",
    )
    .await?;
    let Some(node) = node else {
        bail!("job {id} has no node list yet: try again in a moment");
    };
    let want = args
        .local
        .unwrap_or(if args.port > 1023 { args.port } else { 8000 });
    let local = crate::remote::free_local_port(want)
        .ok_or_else(|| eyre!("no free local port from {want} on"))?;
    if local != want {
        println!("port {want} is in use on this machine: using {local}");
    }
    remote
        .forward(local, &node, args.port, false)
        .await
        .map_err(|e| eyre!("{e}"))?;
    let url = format!("http://127.0.0.1:{local}/");
    println!(
        "forwarding {url} → {node}:{} (job {id}); ctrl-c ends it",
        args.port
    );
    if args.open {
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        if let Err(e) = std::process::Command::new(opener)
            .arg(&url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        {
            println!("could not run {opener} ({e}): open {url} yourself");
        }
    }
    let mut stop = crate::signals::Stop::new()?;
    let ended = loop {
        tokio::select! {
            (name, _) = stop.recv() => break format!("stopped by {name}"),
            _ = tokio::time::sleep(JOB_CHECK) => {
                let argv: Vec<String> = ["squeue", "-h", "-o", "%T", "-j", id.as_str()]
                    .iter().map(|s| s.to_string()).collect();
                if let Ok(out) = remote.run(&argv, None, timeout).await {
                    let state = out.stdout_lossy().trim().to_string();
                    if out.code == Some(0) && state != "RUNNING" {
                        break format!(
                            "job {id} is no longer running ({})",
                            if state.is_empty() { "it left the queue" } else { &state }
                        );
                    }
                }
            }
        }
    };
    let closed = remote.forward(local, &node, args.port, true).await;
    remote.close().await;
    match closed {
        Ok(()) => println!("{ended}: forward of port {local} closed"),
        Err(e) => println!("{ended}; closing the forward failed: {e}"),
    }
    Ok(ExitCode::SUCCESS)
}
