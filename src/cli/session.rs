//! `slurmdash session`: an allocation to work in, without holding a terminal. It is launched
//! like any other launch (`submit`'s path: the form's checks, containers, account, the
//! script hashed here and sbatch reading exactly those bytes), prints the job id and returns;
//! `--wait` waits until it runs and prints the node. `--ssh-config ID` prints the `ssh`
//! lines for an editor's remote mode, `--end ID` cancels it.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use color_eyre::eyre::{bail, eyre, Result};
use serde_json::json;

use crate::config::{Cluster, Loaded};
use crate::io::connect::connect;
use crate::launch::session::{self, SessionOpts};
use crate::remote::Remote;

#[derive(Debug, Args)]
pub struct SessionArgs {
    /// GPUs for the session (default 0).
    #[arg(long, value_name = "N")]
    pub gpus: Option<u32>,
    /// Its time limit (`2h`, `90m`, `1-00:00:00`; default 1h).
    #[arg(long, value_name = "TIME")]
    pub time: Option<String>,
    /// Its partition (default: the cluster's, as for any launch).
    #[arg(long, value_name = "NAME")]
    pub partition: Option<String>,
    /// Its account (default: the cluster's).
    #[arg(long, value_name = "NAME")]
    pub account: Option<String>,
    /// CPUs (default `[launch] cpus_per_task`, fitted to the partition's nodes when they
    /// have fewer: their share for the GPUs asked, said on stderr).
    #[arg(long, value_name = "N")]
    pub cpus: Option<u32>,
    /// Memory, as Slurm takes it (`64G`; default `[launch] mem`, fitted as CPUs are).
    #[arg(long, value_name = "SIZE")]
    pub mem: Option<String>,
    /// A container image: the session's command runs in it (a shell does not).
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// Its name after `session-` (default: the time, HHMMSS).
    #[arg(long, value_name = "LABEL")]
    pub name: Option<String>,
    /// Wait until it runs, then print its node.
    #[arg(long)]
    pub wait: bool,
    /// Print one JSON object: job_id, name, state (RUNNING with --wait, else SUBMITTED),
    /// node, cluster, local_id, stdout.
    #[arg(long)]
    pub json: bool,
    /// Validate and print the script; submit nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the `ssh` config lines that reach session ID's node through the login host
    /// (`ProxyJump`), for an editor's remote mode.
    #[arg(long, value_name = "ID", conflicts_with_all = ["end", "wait", "dry_run"])]
    pub ssh_config: Option<String>,
    /// End session ID: cancel its job.
    #[arg(long, value_name = "ID", conflicts_with_all = ["wait", "dry_run"])]
    pub end: Option<String>,
    /// A command started in the session beside the allocation it keeps (a Jupyter or VS
    /// Code server); its output, and the URL it prints, go to the session's log.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl SessionArgs {
    fn opts(&self) -> Result<SessionOpts> {
        let command = if self.command.is_empty() {
            None
        } else {
            Some(
                crate::slurm::command::shell_line(&self.command)
                    .map_err(|_| eyre!("the command contains a NUL byte"))?,
            )
        };
        Ok(SessionOpts {
            label: self.name.clone(),
            gpus: self.gpus,
            cpus: self.cpus,
            mem: self.mem.clone(),
            time: self.time.clone(),
            partition: self.partition.clone(),
            account: self.account.clone(),
            image: self.image.clone(),
            command,
        })
    }
}

pub async fn run(loaded: &Loaded, cluster: &Cluster, args: &SessionArgs) -> Result<ExitCode> {
    if let Some(id) = &args.ssh_config {
        return ssh_config(cluster, id).await;
    }
    if let Some(id) = &args.end {
        return end(cluster, id).await;
    }
    let base = loaded
        .config
        .launch_spec(None)
        .map_err(|e| eyre!("config file {}: {e}", loaded.path.display()))?
        .with_cluster_defaults(
            cluster.settings.partition.as_deref(),
            cluster.settings.account.as_deref(),
        );
    let stamp = chrono::Local::now().format("%H%M%S").to_string();
    let spec = session::spec(&base, &args.opts()?, &stamp);
    let submit_args = super::submit::SubmitArgs {
        script: None,
        json: false,
        template: None,
        set: Vec::new(),
        dry_run: args.dry_run,
        test_only: false,
        preview: false,
        guard: super::submit::GuardArgs::default(),
        mail_type: None,
        mail_user: None,
        webhook_env: None,
        code: None,
        command: Vec::new(),
        fit: Some(crate::launch::validate::Chosen {
            cpus: args.cpus.is_some(),
            mem: args.mem.is_some(),
        }),
    };
    let (s, _prepared, interrupted) =
        match super::submit::launch(loaded, cluster, &submit_args, spec).await? {
            super::submit::Launched::Done(code) => return Ok(code),
            super::submit::Launched::Submitted(l) => *l,
        };
    let id = s.job_id.to_string();
    if let Some((name, num)) = interrupted {
        eprintln!(
            "slurmdash: {name} came after the submission had begun: session job {id} is queued; `slurmdash session --end {id}` ends it"
        );
        return Ok(ExitCode::from(128 + num as u8));
    }
    // Without --wait, only that it was queued is known.
    let mut state = "SUBMITTED".to_string();
    let mut node = None;
    if args.wait {
        if !args.json {
            println!("session job {id} ({}) submitted; waiting for it to run (ctrl-c stops waiting, the session stays queued)", s.entry.name);
        }
        let remote = connect(cluster)?;
        match wait_running(remote.as_ref(), cluster, &id, args.json).await? {
            Waited::Running(n) => {
                state = "RUNNING".into();
                node = Some(n);
            }
            Waited::Stopped(num) => {
                eprintln!("stopped waiting: session job {id} stays queued (`slurmdash session --end {id}` ends it)");
                return Ok(ExitCode::from(128 + num as u8));
            }
        }
        remote.close().await;
    }
    if args.json {
        println!(
            "{}",
            json!({
                "job_id": s.job_id,
                "name": s.entry.name,
                "state": state,
                "node": node,
                "cluster": cluster.name,
                "local_id": s.local_id,
                "stdout": s.stdout,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    match &node {
        Some(n) => println!("session job {id} ({}) runs on {n}", s.entry.name),
        None => println!("session job {id} ({}) submitted", s.entry.name),
    }
    println!("  a shell in it:     slurmdash shell {id}");
    println!("  a port of it here: slurmdash forward {id} PORT");
    println!("  editor over ssh:   slurmdash session --ssh-config {id}");
    println!("  end it:            slurmdash session --end {id}");
    for w in &s.warnings {
        eprintln!("warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

enum Waited {
    Running(String),
    /// A signal stopped the wait (its number).
    Stopped(i32),
}

/// Until job `id` runs: its node. Says why it waits when that changes; fails when the job
/// leaves the queue or ends without running.
async fn wait_running(
    remote: &dyn Remote,
    cluster: &Cluster,
    id: &str,
    quiet: bool,
) -> Result<Waited> {
    let mut stop = crate::signals::Stop::new()?;
    let every = cluster.settings.poll_interval().max(Duration::from_secs(2));
    let argv: Vec<String> = ["squeue", "-h", "-o", "%T|%N|%r|%S", "-j", id]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut said = String::new();
    let mut missing = 0;
    loop {
        let out = remote
            .run(&argv, None, cluster.settings.command_timeout())
            .await?;
        let line = out.stdout_lossy().trim().to_string();
        let mut parts = line.splitn(4, '|');
        let (state, nodes, reason, start) = (
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        match state {
            "RUNNING" if !nodes.is_empty() => {
                let first = crate::slurm::hostlist::expand(nodes)
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| nodes.to_string());
                return Ok(Waited::Running(first));
            }
            "PENDING" | "CONFIGURING" | "RUNNING" | "REQUEUED" | "RESIZING" => {
                let mut now = format!("{state} ({reason})");
                if state == "PENDING" && start.contains('T') {
                    now.push_str(&format!(", estimated start {}", start.replace('T', " ")));
                }
                if now != said && !quiet {
                    println!("  {}", super::output::printable(&now));
                }
                said = now;
            }
            "" if out.success() => {
                // Just submitted: squeue may not list it for a moment.
                missing += 1;
                if missing > 3 {
                    bail!("session job {id} left the queue before it ran (`sacct -j {id}` says how it ended)");
                }
            }
            "" => bail!(
                "squeue -j {id} failed: {}",
                super::output::printable(out.stderr_lossy().trim())
            ),
            other => bail!(
                "session job {id} is {} and did not run",
                super::output::printable(other)
            ),
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            (_, num) = stop.recv() => return Ok(Waited::Stopped(num)),
        }
    }
}

/// `--ssh-config ID`: the `ssh` block for the session's node, through the first login host.
async fn ssh_config(cluster: &Cluster, id_text: &str) -> Result<ExitCode> {
    let login = cluster.settings.hosts.first().cloned().ok_or_else(|| {
        eyre!(
            "cluster `{}` names no login host (hosts = [...]) to jump through",
            cluster.name
        )
    })?;
    let remote = connect(cluster)?;
    let (id, node) =
        super::running::running_job(cluster, remote.as_ref(), id_text, None, "an ssh config")
            .await?;
    remote.close().await;
    let node = node.ok_or_else(|| eyre!("job {id} has no node list yet: try again in a moment"))?;
    let jump = session::Jump {
        host: login,
        user: cluster.settings.user.clone(),
        port: cluster.settings.port,
    };
    let alias = session::host_alias(&cluster.name, id.as_str());
    let block = session::ssh_config(&alias, &node, &jump).map_err(|e| eyre!(e))?;
    print!("{block}");
    eprintln!("(add these lines to ~/.ssh/config; `ssh {alias}` or an editor's remote mode then reaches {node} through {}, while job {id} runs)", jump.host);
    if let Some(f) = &cluster.settings.ssh_config {
        eprintln!(
            "note: this cluster's ssh settings are in {}: the editor's ssh needs them too (`Include {}`)",
            f.display(),
            f.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `--end ID`: cancels the session's job (only a session's: `slurmdash cancel` is for the
/// rest).
async fn end(cluster: &Cluster, id_text: &str) -> Result<ExitCode> {
    let remote = connect(cluster)?;
    let argv: Vec<String> = ["squeue", "-h", "-o", "%j", "-j", id_text]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let out = remote
        .run(&argv, None, cluster.settings.command_timeout())
        .await?;
    let name = out.stdout_lossy().trim().to_string();
    remote.close().await;
    if out.success() && !name.is_empty() && !session::is_session(&name) {
        bail!(
            "job {id_text} ({}) is not a session: `slurmdash cancel {id_text}` cancels it",
            super::output::printable(&name)
        );
    }
    let args = super::cancel::CancelArgs {
        ids: vec![id_text.to_string()],
    };
    super::cancel::run(cluster, &args).await
}
