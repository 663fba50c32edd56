//! `slurmdash eff ID`: how a finished job used what it asked for (like seff).

use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{eyre, Result};

use super::output::printable;
use crate::config::Cluster;
use crate::efficiency::Efficiency;
use crate::io::connect::connect;
use crate::io::{history, ops};
use crate::slurm::eff::size;
use crate::slurm::model::JobId;

#[derive(Debug, Args)]
pub struct EffArgs {
    /// Job id (`123`, `123_7` for an array task).
    #[arg(value_name = "ID")]
    pub id: String,
    /// Print JSON (the keys are listed in docs/efficiency.md) instead of text.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(cluster: &Cluster, args: &EffArgs) -> Result<ExitCode> {
    let id: JobId = args
        .id
        .parse()
        .map_err(|e| eyre!("`{}` is not a Slurm job id: {e}", args.id))?;
    let remote = connect(cluster)?;
    let t = cluster.settings.command_timeout();
    let (jobs, parts) = tokio::join!(
        history::jobs(remote.as_ref(), std::slice::from_ref(&id), t),
        ops::partitions(remote.as_ref(), t)
    );
    remote.close().await;
    let jobs = jobs.map_err(|e| eyre!(e))?;
    for e in &jobs.problems {
        eprintln!("slurmdash: {}", printable(&e.to_string()));
    }
    // Partitions only name where a longer run fits; without them the verdict still reads.
    let parts = parts.unwrap_or_default();
    let Some(u) = jobs
        .items
        .iter()
        .find(|u| u.detail.id.as_ref() == Some(&id))
        .or(jobs.items.first())
    else {
        return Err(eyre!(
            "job {id}: sacct does not know it (wrong id, another user's job, or older than the accounting database keeps)"
        ));
    };
    let e = Efficiency::compute(u, &parts);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&e)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", text(&e));
    Ok(ExitCode::SUCCESS)
}

/// The report as `slurmdash eff` prints it.
pub fn text(e: &Efficiency) -> String {
    let mut s = format!(
        "Job {} {}: {}{}{}\n",
        e.id,
        printable(&e.name),
        e.state,
        e.exit_code
            .map(|c| format!(", exit code {c}"))
            .unwrap_or_default(),
        e.partition
            .as_deref()
            .map(|p| format!(", partition {p}"))
            .unwrap_or_default()
    );
    if let Some(t) = &e.triage {
        s.push_str(&format!("{:<9}{t}\n", "Triage"));
    }
    for (k, v) in e.lines() {
        s.push_str(&format!("{k:<9}{}\n", printable(&v)));
    }
    if !e.steps.is_empty() {
        s.push_str("Steps\n");
        for st in &e.steps {
            s.push_str(&format!(
                "  {:<10} {:<14} {:>8}  CPU {:>8}  peak {:>6}  {}\n",
                printable(&st.step),
                st.state.as_deref().unwrap_or("?"),
                st.elapsed_s
                    .map(|x| crate::slurm::model::SlurmDuration::from_secs(x).to_slurm())
                    .unwrap_or_default(),
                st.cpu_time_s
                    .map(|x| format!("{x:.1}s"))
                    .unwrap_or_default(),
                st.mem_peak_bytes
                    .map(size::show)
                    .unwrap_or_else(|| "-".into()),
                printable(&st.name)
            ));
        }
    }
    s
}
