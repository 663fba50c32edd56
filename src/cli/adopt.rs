//! `slurmdash adopt ID`: a running or pending job you submitted elsewhere, put under the care
//! of a launch (a retry guard on the cluster, the registry, its chain in the dashboard).

use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{eyre, Result};

use crate::config::{Cluster, Loaded};
use crate::io::connect::connect;
use crate::launch::guard::GuardPlan;
use crate::registry::Registry;

#[derive(Debug, Args)]
pub struct AdoptArgs {
    /// The job's id (a job of yours, running or pending, submitted with plain sbatch).
    #[arg(value_name = "ID")]
    pub id: String,
    #[command(flatten)]
    pub guard: super::submit::GuardArgs,
    /// Print one JSON object: job_id, local_id, cluster, job_dir, script, sha256, guard,
    /// sbatch (the options a resubmission gets), left_out.
    #[arg(long)]
    pub json: bool,
}

/// The guard plan from the config and the arguments, or why the job cannot get one.
pub fn plan(
    loaded: &Loaded,
    retries: Option<u32>,
    resume: Option<&str>,
    max_resumes: Option<u32>,
) -> Result<GuardPlan> {
    let policy = &loaded.config.retry;
    if !policy.guard {
        return Err(eyre!(
            "[retry] guard = false in {}: adopting a job means a guard on the cluster; nothing done",
            loaded.path.display()
        ));
    }
    let on =
        crate::launch::resume::parse(resume.unwrap_or("")).map_err(|e| eyre!("--resume: {e}"))?;
    let patterns = loaded.triage_patterns().map_err(|e| eyre!(e))?;
    let g = GuardPlan::resuming(
        retries.unwrap_or(policy.max_retries),
        &on,
        max_resumes.unwrap_or(loaded.config.launch.max_resumes),
        &[],
        &patterns,
        policy.webhook.as_deref(),
    )
    .map_err(|e| eyre!("{e}: nothing to adopt the job for (--retries N or --resume STATES)"))?;
    Ok(GuardPlan {
        webhook_plain_http: policy.webhook_plain_http,
        ..g
    })
}

pub async fn run(loaded: &Loaded, cluster: &Cluster, args: &AdoptArgs) -> Result<ExitCode> {
    let id = crate::launch::adopt::parse_id(&args.id).map_err(|e| eyre!(e))?;
    if cluster.settings.read_only {
        return Err(eyre!(
            "cluster {} is read-only (--read-only or read_only = true in the config): nothing adopted",
            cluster.name
        ));
    }
    let plan = plan(
        loaded,
        args.guard.retries,
        args.guard.resume.as_deref(),
        args.guard.max_resumes,
    )?;
    let results_root = cluster.results_root().map_err(|e| eyre!("{e}"))?;
    let mode = crate::launch::validate::parse_mode(&loaded.config.launch.job_dir_mode)
        .map_err(|e| eyre!("config file {}: {e}", loaded.path.display()))?;
    let remote = connect(cluster)?;
    let registry = Registry::open_default();
    let t = crate::io::adopt::Target {
        remote: remote.as_ref(),
        cluster: &cluster.name,
        registry: &registry,
        results_root: &results_root,
        job_dir_mode: mode,
        timeout: cluster.settings.command_timeout(),
    };
    let a = match crate::io::adopt::adopt(&t, id, plan.clone()).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("slurmdash: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "job_id": id,
                "local_id": a.local_id,
                "name": a.job.name,
                "cluster": cluster.name,
                "job_dir": a.job_dir,
                "script": a.script,
                "sha256": a.sha256,
                "guard": a.guard,
                "sbatch": a.job.sbatch,
                "exclude": a.job.exclude,
                "left_out": a.job.left_out,
            })
        );
    } else {
        println!(
            "Adopted job {id} ({}, {}) as launch {}",
            a.job.name, a.job.state, a.local_id
        );
        println!("job dir: {}", a.job_dir);
        println!(
            "script:  {} (Slurm's copy, sha256 {})",
            a.script,
            &a.sha256[..12.min(a.sha256.len())]
        );
        println!(
            "retries: up to {} on infrastructure failures, by guard job {} on the cluster; see {}",
            plan.max_attempts - 1,
            a.guard,
            crate::launch::guard::chain_path(&a.job_dir)
        );
        if !plan.resume.is_empty() {
            println!(
                "resume: {} by the same guard",
                crate::launch::resume::describe(&plan.resume, plan.max_resumes)
            );
        }
        println!("a resubmission gets: {}", shown(&a.job));
        println!("not reproduced:");
        for l in &a.job.left_out {
            println!("  - {l}");
        }
    }
    for w in &a.warnings {
        eprintln!("warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The options a resubmission gets, shell-quoted for reading.
pub fn shown(a: &crate::launch::adopt::Adoptable) -> String {
    let mut v: Vec<String> = a
        .sbatch
        .iter()
        .map(|o| {
            let plain = o
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_=.,:/@%+".contains(c));
            if plain {
                o.clone()
            } else {
                crate::slurm::command::shell_line(std::slice::from_ref(o)).unwrap_or_default()
            }
        })
        .collect();
    if !a.exclude.is_empty() {
        v.push(format!("--exclude={}", a.exclude));
    }
    v.join(" ")
}
