//! `slurmdash usage`: the user's CPU- and GPU-hours per account (used in the last N days,
//! in flight, committed) against the account's limits and fair share; the same read and
//! text as the dashboard's `:usage`.

use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{eyre, Result};
use serde_json::{json, Value};

use super::output::printable;
use crate::config::Cluster;
use crate::io::connect::connect;
use crate::slurm::usage::{Tally, UsageReport, DEFAULT_DAYS};

#[derive(Debug, Args)]
pub struct UsageArgs {
    /// How many days back `used` counts (jobs that ended in the window, the part inside it).
    #[arg(long, default_value_t = DEFAULT_DAYS, value_name = "N")]
    pub days: u32,
    /// Print JSON (keys `used`, `in_flight`, `committed` per account; see docs/cli.md).
    #[arg(long)]
    pub json: bool,
}

fn tally(t: &Tally) -> Value {
    json!({
        "cpu_hours": t.cpu_hours(),
        "gpu_hours": t.gpu_hours(),
        "cpu_seconds": t.cpu_seconds,
        "gpu_seconds": t.gpu_seconds,
        "jobs": t.jobs,
    })
}

/// The JSON `--json` prints.
pub fn to_json(cluster: &str, r: &UsageReport) -> Value {
    let mut accounts = serde_json::Map::new();
    for a in &r.accounts {
        let parts: serde_json::Map<String, Value> = a
            .by_partition
            .iter()
            .map(|(p, t)| (p.clone(), tally(t)))
            .collect();
        accounts.insert(
            a.account.clone(),
            json!({
                "used": tally(&a.used),
                "used_by_partition": parts,
                "in_flight": tally(&a.in_flight),
                "committed": tally(&a.committed),
                "pending": tally(&a.pending),
                "limits": a.limits,
                "fair_share": a.fair_share,
            }),
        );
    }
    json!({
        "cluster": cluster,
        "days": r.days,
        "user": r.user,
        "accounts": accounts,
        "pending": tally(&r.pending_total()),
        "problems": r.problems,
    })
}

/// The text `slurmdash usage` prints: the overlay's lines without colour.
pub fn text(r: &UsageReport) -> String {
    let theme = crate::theme::Theme::new(false);
    let mut s = String::new();
    for line in crate::ui::usage::report_lines(&theme, r) {
        for span in &line.spans {
            s.push_str(&printable(&span.content));
        }
        s.push('\n');
    }
    s
}

pub async fn run(cluster: &Cluster, args: &UsageArgs) -> Result<ExitCode> {
    if !(1..=3650).contains(&args.days) {
        return Err(eyre!("--days must be between 1 and 3650"));
    }
    let remote = connect(cluster)?;
    let t = cluster.settings.command_timeout();
    let r = crate::io::usage::read(remote.as_ref(), args.days, t).await;
    remote.close().await;
    let r = r.map_err(|e| eyre!("cluster `{}`: {e}", cluster.name))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&cluster.name, &r))?
        );
    } else {
        println!(
            "{} · {} · last {} days",
            cluster.name,
            r.user.as_deref().unwrap_or("?"),
            r.days
        );
        print!("{}", text(&r));
    }
    for p in &r.problems {
        eprintln!("slurmdash: {}", printable(p));
    }
    Ok(ExitCode::SUCCESS)
}
