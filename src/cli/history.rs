//! `slurmdash history`: own jobs that ended in the last N days, with their use figures.

use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{eyre, Result};

use super::{connect, printable};
use crate::config::Cluster;
use crate::slurm::eff::{self, Efficiency};
use crate::worker::{history, ops};

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// How many days back.
    #[arg(long, default_value_t = 7, value_name = "N")]
    pub days: u32,
    /// Print JSON (one array; the keys are listed in the README) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Days per sacct read.
pub const WINDOW_DAYS: u32 = 7;

pub async fn run(cluster: &Cluster, args: &HistoryArgs) -> Result<ExitCode> {
    if args.days == 0 {
        return Err(eyre!("--days must be at least 1"));
    }
    let remote = connect(cluster)?;
    let t = cluster.settings.command_timeout();
    let parts = ops::partitions(remote.as_ref(), t)
        .await
        .unwrap_or_default();
    let mut rows: Vec<Efficiency> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut failure = None;
    for (start, end) in eff::windows(0, args.days, WINDOW_DAYS) {
        match history::ended(remote.as_ref(), start, end, true, t).await {
            Ok(p) => {
                for e in &p.problems {
                    eprintln!("slurmdash: {}", printable(&e.to_string()));
                }
                for u in &p.items {
                    let e = Efficiency::compute(u, &parts);
                    // A job that ended on a window's edge is in both reads.
                    if seen.insert(e.id.clone()) {
                        rows.push(e);
                    }
                }
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    remote.close().await;
    if let Some(e) = failure {
        return Err(eyre!(e));
    }
    rows.sort_by(|a, b| b.end.cmp(&a.end));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", table(&rows));
    }
    Ok(ExitCode::SUCCESS)
}

fn pct(v: Option<f64>) -> String {
    v.map(|v| format!("{:.0}%", v * 100.0))
        .unwrap_or_else(|| "-".into())
}

/// The table `slurmdash history` prints, newest first.
pub fn table(rows: &[Efficiency]) -> String {
    let mut s = format!(
        "{:<12} {:<24} {:<14} {:>4} {:>9} {:>5} {:>5} {:>5} {:<13} {}\n",
        "JOBID", "NAME", "STATE", "EXIT", "ELAPSED", "CPU", "MEM", "TIME", "TRIAGE", "END"
    );
    for e in rows {
        let mut name = printable(&e.name);
        if name.chars().count() > 24 {
            name = name.chars().take(23).collect::<String>() + "…";
        }
        s.push_str(&format!(
            "{:<12} {:<24} {:<14} {:>4} {:>9} {:>5} {:>5} {:>5} {:<13} {}\n",
            e.id,
            name,
            e.state,
            e.exit_code.map(|c| c.to_string()).unwrap_or_default(),
            e.elapsed_s
                .map(|x| crate::slurm::model::SlurmDuration::from_secs(x).to_slurm())
                .unwrap_or_default(),
            pct(e.cpu_efficiency),
            pct(e.mem_efficiency),
            pct(e.time_efficiency),
            e.triage.as_deref().unwrap_or("-"),
            e.end.as_deref().unwrap_or("-"),
        ));
    }
    s
}
