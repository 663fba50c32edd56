//! `slurmdash history`: own jobs that ended in the last N days, with their use figures.

use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{eyre, Result};

use super::output::printable;
use crate::config::Cluster;
use crate::efficiency::Efficiency;
use crate::io::connect::connect;
use crate::io::{history, ops};
use crate::slurm::eff;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// How many days back.
    #[arg(long, default_value_t = 7, value_name = "N")]
    pub days: u32,
    /// Print JSON (one array; the keys are listed in docs/efficiency.md) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Days per sacct read.
pub const WINDOW_DAYS: u32 = 7;

/// One cluster's rows (newest first), or why they could not be read (naming the command).
async fn one(cluster: &Cluster, days: u32) -> Result<Vec<Efficiency>> {
    let remote = connect(cluster)?;
    let t = cluster.settings.command_timeout();
    let parts = ops::partitions(remote.as_ref(), t)
        .await
        .unwrap_or_default();
    let mut rows: Vec<Efficiency> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut failure = None;
    for (start, end) in eff::windows(0, days, WINDOW_DAYS) {
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
    Ok(rows)
}

/// Prints the finished jobs of `clusters`, read at the same time, newest first. A cluster
/// that cannot be read is reported on stderr and makes the exit status 1; the others are
/// printed all the same.
pub async fn run(clusters: &[Cluster], args: &HistoryArgs) -> Result<ExitCode> {
    if args.days == 0 {
        return Err(eyre!("--days must be at least 1"));
    }
    let answers = futures_util::future::join_all(clusters.iter().map(|c| one(c, args.days))).await;
    let several = clusters.len() > 1;
    let mut failed = false;
    let mut rows: Vec<(&str, Efficiency)> = Vec::new();
    for (c, answer) in clusters.iter().zip(answers) {
        match answer {
            Ok(r) => rows.extend(r.into_iter().map(|e| (c.name.as_str(), e))),
            Err(e) if !several => return Err(e),
            Err(e) => {
                failed = true;
                eprintln!("slurmdash: cluster `{}`: {e:#}", c.name);
            }
        }
    }
    // Newest end first; the same end keeps the clusters' order.
    rows.sort_by(|a, b| b.1.end.cmp(&a.1.end));
    if args.json {
        let mut v = Vec::with_capacity(rows.len());
        for (cluster, e) in &rows {
            let mut o = serde_json::to_value(e)?;
            o["cluster"] = serde_json::json!(cluster);
            v.push(o);
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if several {
        let names: Vec<&str> = rows.iter().map(|(c, _)| *c).collect();
        let items: Vec<Efficiency> = rows.into_iter().map(|(_, x)| x).collect();
        print!(
            "{}",
            super::output::with_cluster_column(&names, &table(&items))
        );
    } else {
        let rows: Vec<Efficiency> = rows.into_iter().map(|(_, e)| e).collect();
        print!("{}", table(&rows));
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
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
