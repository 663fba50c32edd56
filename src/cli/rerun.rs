//! `slurmdash rerun ID --failed`: the tasks of an array that did not complete, submitted
//! again as a new array of exactly those indices (several when they exceed MaxArraySize),
//! with the same script and time and memory sized from those tasks' own use. Planned by
//! `launch::rerun`, submitted through the one submission path (`io::submit`).

use std::process::ExitCode;

use clap::Args;
use color_eyre::eyre::{eyre, Result};
use serde::Serialize;

use crate::config::{Cluster, Loaded};
use crate::io::connect::connect;
use crate::launch::rerun::{self, NoRerun};
use crate::launch::{submit, LaunchSpec};
use crate::registry::Registry;
use crate::slurm::model::JobId;

#[derive(Debug, Args)]
pub struct RerunArgs {
    /// The array's job id (`123`), or any of its tasks (`123_7`).
    #[arg(value_name = "ID")]
    pub id: String,
    /// Rerun the tasks that did not complete (failed, timed out, out of memory, cancelled,
    /// node failure, never started). Required: it is the only kind of rerun there is.
    #[arg(long, required = true)]
    pub failed: bool,
    /// Print JSON (`job_id`, `indices`, `array`, `submissions`, ...) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Rerun an array another user submitted (its batch script runs as you).
    #[arg(long)]
    pub yes: bool,
    /// The code a launch with a code snapshot runs: `same` (default: the snapshot it ran,
    /// from the cluster's copy), `current` (the repository as it is now) or `none`.
    #[arg(long, value_name = "same|current|none")]
    pub code: Option<String>,
}

/// One submission of the rerun.
#[derive(Debug, Serialize)]
struct Submission {
    job_id: u64,
    indices: Vec<u32>,
    array: String,
    local_id: String,
    job_dir: String,
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct Report {
    /// The new array's job id (the first submission's when there are several).
    job_id: Option<u64>,
    /// Every index rerun, ascending.
    indices: Vec<u32>,
    rerun_of: u64,
    tasks: usize,
    changed: Vec<String>,
    submissions: Vec<Submission>,
    /// Why nothing was submitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    nothing: Option<String>,
}

/// The spec the array ran with, the job directory it ran in (a launch of slurmdash's),
/// and the secrets its launch passed (from this machine's registry).
struct Source {
    spec: LaunchSpec,
    job_dir: Option<String>,
    missing: Vec<String>,
}

pub async fn run(loaded: &Loaded, cluster: &Cluster, args: &RerunArgs) -> Result<ExitCode> {
    let id: JobId = args
        .id
        .parse()
        .map_err(|e| eyre!("`{}` is not a Slurm job id: {e}", args.id))?;
    let base = id.base();
    if cluster.settings.read_only {
        return Err(eyre!(
            "cluster {} is read-only (--read-only or read_only = true in the config): nothing submitted",
            cluster.name
        ));
    }
    let results_root = cluster.results_root().map_err(|e| eyre!("{e}"))?;
    let mut stop = crate::signals::Stop::new()?;
    let remote = connect(cluster)?;
    let r = remote.as_ref();
    let t = cluster.settings.command_timeout();
    let registry = Registry::open_default();
    let entry = registry
        .load()
        .map_err(|e| eyre!("reading the launch registry: {e}"))?
        .into_iter()
        .find(|e| {
            e.cluster == cluster.name
                && (e.job_id == base || e.attempts.iter().any(|a| a.job_id == base))
        });

    let read = async {
        let (array, parts, facts) = tokio::join!(
            crate::io::rerun::read(r, base, t),
            crate::io::ops::partitions(r, t),
            crate::io::facts::fetch(r, t)
        );
        let array = array.map_err(|e| eyre!("reading array {base} from sacct: {e}"))?;
        let facts = facts.map_err(|e| eyre!("reading the cluster's partitions: {e}"))?;
        Ok::<_, color_eyre::Report>((array, parts.unwrap_or_default(), facts))
    };
    let (array, parts, facts) = tokio::select! {
        x = read => x?,
        (name, num) = stop.recv() => {
            eprintln!("slurmdash: stopped by {name}; nothing was submitted");
            return Ok(ExitCode::from(128 + num as u8));
        }
    };
    let plan = match rerun::plan(base, &array.tasks, &parts, array.max_array_size) {
        Ok(p) => p,
        Err(why) => {
            remote.close().await;
            return nothing(args, base, &why);
        }
    };

    let source = match &entry {
        Some(e) => {
            let (spec, sha) = crate::io::history::launch_spec(r, &e.job_dir, t)
                .await
                .map_err(|e| eyre!(e))?;
            // The job (or anyone who can write its directory) may have rewritten the spec
            // since it was launched: not rerun without a look and --yes.
            if e.spec_sha256.as_deref().is_some_and(|rec| rec != sha) && !args.yes {
                remote.close().await;
                return Err(eyre!(
                    "{}/specs/launch.json changed since the array was launched (its sha256 is not the one recorded then): check its command and environment, then run again with --yes",
                    e.job_dir
                ));
            }
            let mut spec = spec;
            if let Err(e) = crate::launch::relaunch::choose_code(&mut spec, args.code.as_deref()) {
                remote.close().await;
                return Err(eyre!("{e}"));
            }
            Source {
                spec,
                job_dir: Some(e.job_dir.clone()),
                missing: Vec::new(),
            }
        }
        None => {
            // Not launched by slurmdash: the options sacct recorded and the batch script,
            // recovered as `L` recovers them, from one of the tasks to rerun.
            let task = JobId::new(base);
            let task: JobId = format!("{}_{}", task.as_str(), plan.indices[0])
                .parse()
                .map_err(|e| eyre!("{e}"))?;
            let rec = crate::io::history::recover(r, &task, t, None)
                .await
                .map_err(|e| eyre!("recovering array {base}'s batch script: {e}"))?;
            let owner = rec.used.detail.user.clone().filter(|u| !u.is_empty());
            if (owner.is_none() || owner != rec.me) && !args.yes {
                remote.close().await;
                return Err(eyre!(
                    "array {base} is {}'s, not yours ({}): its batch script would run as you, with your account and files; pass --yes to rerun it anyway",
                    owner.as_deref().unwrap_or("an unknown user"),
                    rec.me.as_deref().unwrap_or("unknown")
                ));
            }
            let report = crate::efficiency::Efficiency::compute(&rec.used, &parts);
            let mut spec = loaded
                .config
                .launch_spec(None)
                .map_err(|e| eyre!("config file {}: {e}", loaded.path.display()))?;
            let missing = crate::launch::relaunch::spec_from_job(&mut spec, &rec, &report);
            if spec.command.trim().is_empty() && spec.batch_script.is_empty() {
                remote.close().await;
                return Err(eyre!(
                    "array {base}'s command could not be recovered: {}",
                    missing.join("; ")
                ));
            }
            Source {
                spec,
                job_dir: None,
                missing,
            }
        }
    };
    // The names of secrets come from this machine's record of the launch, never from the
    // cluster's copy of the spec.
    let secret_names = entry
        .as_ref()
        .map(|e| e.secrets.clone())
        .unwrap_or_default();
    let secrets =
        submit::read_secrets(&secret_names, |n| std::env::var(n).ok()).map_err(|e| eyre!(e))?;
    let patterns = loaded.triage_patterns().map_err(|e| eyre!(e))?;

    let target = crate::io::submit::Target {
        remote: r,
        cluster: &cluster.name,
        registry: &registry,
        timeout: t,
        convert_timeout: std::time::Duration::from_secs(30 * 60),
    };
    let mut report = Report {
        job_id: None,
        indices: plan.indices.clone(),
        rerun_of: base,
        tasks: plan.total,
        changed: Vec::new(),
        submissions: Vec::new(),
        nothing: None,
    };
    for (n, array) in plan.arrays.iter().enumerate() {
        let mut spec = source.spec.clone();
        spec.secrets = secret_names.clone();
        let changed = rerun::respec(&mut spec, &plan, array, source.job_dir.as_deref());
        if n == 0 {
            report.changed = changed;
        }
        // The snapshot the array ran (or, with --code current, the code as it is now).
        let code = match super::submit::code_snapshot(&spec).await {
            Ok(c) => c,
            Err(e) => {
                remote.close().await;
                return Err(e);
            }
        };
        let Some(mut prepared) = super::submit::prepare_or_say(&spec, &facts, &results_root) else {
            remote.close().await;
            return Ok(ExitCode::from(2));
        };
        if let Some(c) = code {
            prepared = prepared.with_code(c);
        }
        prepared.guard = prepared.guard_plan(&loaded.config.retry, &patterns, None);
        // Once under way a submission is finished (queued and recorded, or not queued);
        // a signal then stops the rerun before the next one.
        let work = crate::io::submit::submit(&target, &prepared, &secrets);
        tokio::pin!(work);
        let mut interrupted: Option<(&str, i32)> = None;
        let s = loop {
            tokio::select! {
                r = &mut work => break r,
                (name, num) = stop.recv() => {
                    eprintln!("slurmdash: {name}: finishing this submission first");
                    interrupted = Some((name, num));
                }
            }
        };
        let s = s.map_err(|e| eyre!(e))?;
        report.job_id.get_or_insert(s.job_id);
        report.submissions.push(Submission {
            job_id: s.job_id,
            indices: rerun::expand(array),
            array: array.clone(),
            local_id: s.local_id.clone(),
            job_dir: s.job_dir.clone(),
        });
        for w in &s.warnings {
            eprintln!("warning: {w}");
        }
        if let Some((name, num)) = interrupted {
            print(args, &plan, &source, &report);
            if n + 1 < plan.arrays.len() {
                eprintln!("slurmdash: stopped by {name} after job {}: the rest of the tasks were not submitted", s.job_id);
            }
            remote.close().await;
            return Ok(ExitCode::from(128 + num as u8));
        }
    }
    remote.close().await;
    print(args, &plan, &source, &report);
    Ok(ExitCode::SUCCESS)
}

fn nothing(args: &RerunArgs, base: u64, why: &NoRerun) -> Result<ExitCode> {
    let text = format!("array {base}: {why}");
    if args.json {
        let r = Report {
            job_id: None,
            indices: Vec::new(),
            rerun_of: base,
            tasks: match why {
                NoRerun::AllCompleted(n) | NoRerun::NotEnded(_, n) => *n,
                NoRerun::NoTasks => 0,
            },
            changed: Vec::new(),
            submissions: Vec::new(),
            nothing: Some(text.clone()),
        };
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!("{text}");
    }
    // Every task completed: done, not an error. Tasks still running or no array: an error.
    Ok(match why {
        NoRerun::AllCompleted(_) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}

fn print(args: &RerunArgs, plan: &rerun::RerunPlan, source: &Source, report: &Report) {
    if args.json {
        match serde_json::to_string_pretty(report) {
            Ok(j) => println!("{j}"),
            Err(e) => eprintln!("slurmdash: {e}"),
        }
        return;
    }
    println!(
        "array {}: {} of {} tasks did not complete",
        report.rerun_of,
        plan.indices.len(),
        plan.total
    );
    for s in &report.submissions {
        println!(
            "Submitted job {} (launch {}): --array={}",
            s.job_id, s.local_id, s.array
        );
        println!("job dir: {}", s.job_dir);
    }
    if !report.changed.is_empty() {
        println!("sized: {}", report.changed.join(", "));
    }
    if !source.missing.is_empty() {
        println!("not recovered: {}", source.missing.join("; "));
    }
}
