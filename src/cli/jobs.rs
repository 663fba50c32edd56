use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{eyre, Result};
use serde_json::{json, Value};

use super::output::printable;
use crate::config::Cluster;
use crate::io::connect::connect;
use crate::io::fetch;
use crate::slurm::command::{Scope, SqueueQuery};
use crate::slurm::model::{Job, JobState};
use crate::slurm::time::format_time;

/// Which jobs to list; shared by `jobs` and the dashboard. The filters run in squeue.
#[derive(Debug, Args, Default, Clone)]
pub struct QueueArgs {
    /// Every user's jobs, not only your own.
    #[arg(long)]
    pub all: bool,
    /// Only jobs in this partition (repeatable).
    #[arg(long, value_name = "P")]
    pub partition: Vec<String>,
    /// Only jobs charged to this account (repeatable).
    #[arg(long, value_name = "A")]
    pub account: Vec<String>,
}

impl QueueArgs {
    pub fn query(&self) -> SqueueQuery {
        SqueueQuery {
            scope: if self.all { Scope::All } else { Scope::Me },
            partitions: self.partition.clone(),
            accounts: self.account.clone(),
            ..SqueueQuery::default()
        }
    }
}

#[derive(Debug, Args, Default)]
pub struct JobsArgs {
    #[command(flatten)]
    pub queue: QueueArgs,
    /// Print JSON (one array of job objects) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One cluster's queue, or why it could not be read (naming the cluster and the command).
async fn one(cluster: &Cluster, args: &JobsArgs) -> Result<Vec<Job>> {
    let remote = connect(cluster)?;
    let parsed = fetch::queue_read(
        remote.as_ref(),
        &args.queue.query(),
        cluster.settings.command_timeout(),
    )
    .await
    .map_err(|e| eyre!(e));
    remote.close().await;
    let parsed = parsed?;
    // A record that did not read is named on stderr; the others (and its row, with what
    // could be read and a `!` after its id) are listed as usual.
    for e in &parsed.problems {
        eprintln!("slurmdash: {}", printable(&e.to_string()));
    }
    Ok(parsed.items)
}

/// Prints the queues of `clusters`, asked at the same time. A cluster that cannot be read
/// is reported on stderr and makes the exit status 1; the others are printed all the same.
pub async fn run(clusters: &[Cluster], args: &JobsArgs) -> Result<ExitCode> {
    let answers = futures_util::future::join_all(clusters.iter().map(|c| one(c, args))).await;
    let several = clusters.len() > 1;
    let mut failed = false;
    let mut rows: Vec<(&str, Job)> = Vec::new();
    for (c, answer) in clusters.iter().zip(answers) {
        match answer {
            Ok(jobs) => rows.extend(jobs.into_iter().map(|j| (c.name.as_str(), j))),
            Err(e) if !several => return Err(e),
            Err(e) => {
                failed = true;
                eprintln!("slurmdash: cluster `{}`: {e:#}", c.name);
            }
        }
    }
    if args.json {
        let v: Vec<Value> = rows
            .iter()
            .map(|(cluster, j)| {
                let mut o = job_json(j);
                o["cluster"] = json!(cluster);
                o
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if several {
        let names: Vec<&str> = rows.iter().map(|(c, _)| *c).collect();
        let items: Vec<Job> = rows.into_iter().map(|(_, x)| x).collect();
        print!(
            "{}",
            super::output::with_cluster_column(&names, &table(&items))
        );
    } else {
        let jobs: Vec<Job> = rows.into_iter().map(|(_, j)| j).collect();
        print!("{}", table(&jobs));
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub fn job_json(j: &Job) -> Value {
    json!({
        "id": j.id.as_str(),
        "name": j.name,
        "user": j.user,
        "account": j.account,
        "partition": j.partition,
        "state": j.state.long_name(),
        "status": format!("{:?}", j.status()),
        "reason": j.reason,
        "time_used": j.time_used.to_slurm(),
        "time_limit": j.time_limit.to_slurm(),
        "nodes": j.nodes,
        "cpus": j.cpus,
        "gpus": j.gpus(),
        "node_list": j.node_list,
        "submit_time": j.submit_time.map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string()),
        "start_time": j.start_time.map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string()),
        "work_dir": j.work_dir,
        "qos": j.qos,
        "problem": j.problem,
    })
}

const NAME_WIDTH: usize = 28;

fn clip(s: &str, width: usize) -> String {
    let s = printable(s);
    if s.chars().count() <= width {
        s
    } else {
        let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// The plain-text queue: one row per job, pending jobs with their reason and start
/// estimate, running ones with their nodes.
pub fn table(jobs: &[Job]) -> String {
    let mut rows: Vec<[String; 8]> = vec![[
        "JOBID".into(),
        "NAME".into(),
        "PARTITION".into(),
        "STATE".into(),
        "TIME/LIMIT".into(),
        "NODES".into(),
        "GPUS".into(),
        "REASON / NODELIST".into(),
    ]];
    for j in jobs {
        let where_ = if j.state == JobState::Pending {
            let reason = j.reason.as_deref().unwrap_or("-").to_string();
            match j.start_time {
                Some(t) => format!("{reason} (start {})", format_time(&Some(t))),
                None => reason,
            }
        } else {
            j.node_list.as_deref().unwrap_or_default().to_string()
        };
        rows.push([
            match j.problem {
                Some(_) => format!("{}!", j.id.as_str()),
                None => j.id.as_str().to_string(),
            },
            clip(&j.name, NAME_WIDTH),
            printable(&j.partition),
            j.state.long_name().to_string(),
            format!("{}/{}", j.time_used.to_slurm(), j.time_limit.to_slurm()),
            j.nodes.to_string(),
            j.gpus().to_string(),
            printable(&where_),
        ]);
    }
    let mut widths = [0usize; 8];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(widths.iter()).enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                line.push_str(c);
                line.push_str(&" ".repeat(w - c.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if jobs.is_empty() {
        out.push_str("(no jobs)\n");
    }
    out
}
