//! `slurmdash deps [ID]`: the user's dependency chains (one `squeue --me` with `%E`), as
//! text or as a graph in JSON (`nodes` with id, name, state; `edges` with `from`, `to`,
//! `type`, an edge running from the job depended on to the job that waits).

use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{eyre, Result};
use serde_json::json;

use super::output::printable;
use crate::config::Cluster;
use crate::io::connect::connect;
use crate::slurm::dependency::{self, DepJob, Edge, Met};

#[derive(Debug, Args)]
pub struct DepsArgs {
    /// Only the chain this job is part of (what it waits on and what waits on it).
    pub id: Option<String>,
    /// Print JSON (`nodes`, `edges`; see docs/cli.md).
    #[arg(long)]
    pub json: bool,
}

fn met(m: Met) -> &'static str {
    match m {
        Met::Waiting => "waiting",
        Met::Never => "never",
        Met::Unknown => "unknown",
    }
}

/// The JSON `--json` prints: the jobs that have or are a dependency (all of `ids` when
/// given), and every edge between them.
pub fn to_json(jobs: &[DepJob], edges: &[Edge], ids: Option<&[String]>) -> serde_json::Value {
    let linked = |id: &str| edges.iter().any(|e| e.from == id || e.to == id);
    let nodes: Vec<_> = jobs
        .iter()
        .filter(|j| ids.map_or_else(|| linked(&j.id), |ids| ids.contains(&j.id)))
        .map(|j| {
            json!({
                "id": j.id,
                "name": j.name,
                "state": j.state,
                "can_start": j.dependency.as_ref().is_none_or(|d| d.can_be_met()),
            })
        })
        .collect();
    let edges: Vec<_> = edges
        .iter()
        .filter(|e| ids.is_none_or(|ids| ids.contains(&e.to)))
        .map(|e| json!({"from": e.from, "to": e.to, "type": e.kind, "met": met(e.met)}))
        .collect();
    json!({"nodes": nodes, "edges": edges})
}

pub async fn run(cluster: &Cluster, args: &DepsArgs) -> Result<ExitCode> {
    let remote = connect(cluster)?;
    let t = cluster.settings.command_timeout();
    let out =
        crate::io::fetch::stdout_of(remote.as_ref(), &dependency::squeue_argv(), None, t).await;
    remote.close().await;
    let out = out.map_err(|e| eyre!("cluster `{}`: {e}", cluster.name))?;
    let jobs = dependency::parse_jobs(&out).map_err(|e| eyre!(e))?;
    let edges = dependency::edges(&jobs);
    let ids = match &args.id {
        Some(id) => {
            if !jobs.iter().any(|j| &j.id == id) {
                return Err(eyre!(
                    "job {} is not among your jobs in the queue (squeue --me)",
                    printable(id)
                ));
            }
            Some(dependency::chain_of(id, &edges))
        }
        None => None,
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&jobs, &edges, ids.as_deref()))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut any = false;
    for j in &jobs {
        if ids.as_ref().is_some_and(|ids| !ids.contains(&j.id)) {
            continue;
        }
        let waits: Vec<&Edge> = edges.iter().filter(|e| e.to == j.id).collect();
        if waits.is_empty() && !edges.iter().any(|e| e.from == j.id) {
            continue;
        }
        any = true;
        println!("{} {} {}", j.id, printable(&j.name), j.state);
        for e in waits {
            println!("  waits on {} ({}, {})", e.from, e.kind, met(e.met));
        }
        if j.dependency.as_ref().is_some_and(|d| !d.can_be_met()) {
            println!(
                "  can never start on its dependencies: cancel it (slurmdash cancel {})",
                j.id
            );
        }
    }
    if !any {
        println!("no dependencies among your jobs in the queue");
    }
    Ok(ExitCode::SUCCESS)
}
