//! Adopting a job submitted elsewhere (`slurmdash adopt ID`, the queue's `A`): check whose it
//! is and that it runs or waits, keep Slurm's own copy of its batch script in a new job
//! directory laid out as a launch's, stage the guard with the job's options, arm it beside
//! the job, and record the job in the registry. See `launch::adopt` for the pure parts.

use std::time::Duration;

use chrono::Utc;

use crate::io::fetch::failure;
use crate::io::stage as io_stage;
use crate::launch::adopt::{self, Adoptable};
use crate::launch::guard::GuardPlan;
use crate::launch::script::sha256_hex;
use crate::launch::stage::{mkdirs_argv, unsafe_refusal, UNSAFE_EXIT};
use crate::launch::submit::new_local_id;
use crate::registry::{Attempt, Entry, GuardRecord, Layout, Registry};
use crate::remote::Remote;

/// Where and how.
pub struct Target<'a> {
    pub remote: &'a dyn Remote,
    pub cluster: &'a str,
    pub registry: &'a Registry,
    pub results_root: &'a str,
    /// The job directory's mode (`[launch] job_dir_mode`, 0o700 by default).
    pub job_dir_mode: u32,
    pub timeout: Duration,
}

/// What was done.
#[derive(Debug, Clone)]
pub struct Adopted {
    pub job: Adoptable,
    pub local_id: String,
    pub job_dir: String,
    /// Slurm's copy of the batch script, as staged, and its sha256.
    pub script: String,
    pub sha256: String,
    pub guard: u64,
    pub warnings: Vec<String>,
}

/// Slurm's copies of batch scripts are small; a bigger answer is not one.
const MAX_SCRIPT: usize = 4 << 20;

/// The launch that already holds job `id` on `cluster`, if any.
pub fn recorded(registry: &Registry, cluster: &str, id: u64) -> Result<Option<Entry>, String> {
    let entries = registry.load().map_err(|e| e.to_string())?;
    Ok(entries.into_iter().find(|e| {
        e.cluster == cluster && (e.job_id == id || e.attempts.iter().any(|a| a.job_id == id))
    }))
}

/// Whether job `id` can be adopted, and how (nothing changed anywhere).
pub async fn probe(t: &Target<'_>, id: u64) -> Result<Adoptable, String> {
    if let Some(e) = recorded(t.registry, t.cluster, id)? {
        return Err(format!(
            "job {id} is already under slurmdash's care (launch {}, job directory {}): nothing done",
            e.local_id, e.job_dir
        ));
    }
    let argv = adopt::probe_argv(id);
    let out = t
        .remote
        .run(&argv, None, t.timeout)
        .await
        .map_err(|e| e.to_string())?;
    match out.code {
        Some(0) => {}
        Some(3) => {
            return Err(format!(
                "Slurm does not know job {id} ({}): only a running or pending job can be adopted",
                out.stderr_lossy().trim()
            ))
        }
        _ => return Err(failure(t.remote, &argv, &out)),
    }
    let p = adopt::parse_probe(&out.stdout_lossy())?;
    adopt::check(id, &p, t.results_root)
}

/// Adopts job `id` under `plan` (retries and resumes; its options are filled in here).
pub async fn adopt(t: &Target<'_>, id: u64, plan: GuardPlan) -> Result<Adopted, String> {
    let job = probe(t, id).await?;
    let (remote, to) = (t.remote, t.timeout);
    let argv = adopt::batch_script_argv(id);
    let out = remote
        .run(&argv, None, to)
        .await
        .map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!(
            "Slurm would not give its copy of job {id}'s batch script: {}",
            failure(remote, &argv, &out)
        ));
    }
    let script = out.stdout;
    if script.is_empty() || script.len() > MAX_SCRIPT {
        return Err(format!(
            "`scontrol write batch_script {id} -` printed {} bytes, not a batch script: not adopted",
            script.len()
        ));
    }
    let sha256 = sha256_hex(&script);
    let layout = Layout::new(t.results_root, &new_local_id());
    let argv = mkdirs_argv(&layout, t.job_dir_mode);
    let out = remote
        .run(&argv, None, to)
        .await
        .map_err(|e| e.to_string())?;
    match out.code {
        Some(0) => {}
        Some(UNSAFE_EXIT) => {
            return Err(
                unsafe_refusal(&layout.job_dir, &out.stderr_lossy()).replacen(
                    "not submitted",
                    "not adopted",
                    1,
                ),
            )
        }
        _ => return Err(failure(remote, &argv, &out)),
    }
    io_stage::write_file(remote, &layout.script_path(), &script, to).await?;
    let mut plan = plan;
    plan.sbatch = job.sbatch.clone();
    plan.sbatch
        .extend(adopt::output_opts(&layout.job_dir, &job.dir_name));
    plan.exclude = job.exclude.clone();
    let record = serde_json::json!({
        "job_id": id,
        "name": job.name,
        "state": job.state,
        "sha256": sha256,
        "sbatch": plan.sbatch,
        "exclude": job.exclude,
        "left_out": job.left_out,
        "stdout": job.stdout,
        "stderr": job.stderr,
    });
    io_stage::write_file(
        remote,
        &format!("{}/meta/adopted.json", layout.job_dir),
        record.to_string().as_bytes(),
        to,
    )
    .await?;
    let policy = io_stage::guard_files(
        remote,
        &layout,
        &plan,
        &job.dir_name,
        &job.partition,
        job.account.as_deref(),
        to,
    )
    .await?;
    let now = Utc::now();
    let entry = Entry {
        local_id: layout.local_id.clone(),
        cluster: t.cluster.to_string(),
        job_id: id,
        job_dir: layout.job_dir.clone(),
        name: job.dir_name.clone(),
        submitted_at: now,
        template: None,
        script: layout.script_path(),
        attempts: vec![Attempt {
            job_id: id,
            submitted_at: now,
            state: None,
        }],
        secrets: Vec::new(),
        checksum: Some(sha256.clone()),
        spec_sha256: None,
        requeue: job.requeue,
        guard: Some(GuardRecord::default()),
        sweep: Vec::new(),
        code: None,
    };
    // Recorded before the guard is armed: a lost answer leaves no guard unrecorded.
    t.registry
        .add(entry.clone())
        .map_err(|e| format!("not adopted: job {id} could not be recorded on this machine: {e}"))?;
    let argv = adopt::arm_argv(
        &layout.job_dir,
        id,
        &sha256,
        &policy,
        &layout.script_path(),
        &job,
    );
    let out = match remote.run(&argv, None, to).await {
        Ok(o) => o,
        Err(e) => {
            return Err(format!(
                "arming the guard of job {id}: {e}; launch {} stays recorded (cancel the guard with `slurmdash cancel {id}` if one was queued)",
                layout.local_id
            ))
        }
    };
    let guard = match (out.success(), adopt::parse_armed(&out.stdout_lossy())) {
        (true, Some(g)) => g,
        _ => {
            let _ = t.registry.remove(&layout.local_id);
            return Err(format!(
                "not adopted: the guard could not be queued beside job {id}: {}",
                failure(remote, &argv, &out)
            ));
        }
    };
    let mut warnings = Vec::new();
    let meta = format!("{}/meta/registry.json", layout.job_dir);
    if let Err(e) = io_stage::write_file(remote, &meta, entry.to_json().as_bytes(), to).await {
        warnings.push(format!("{meta} was not written: {e}"));
    }
    if job.requeue {
        warnings.push(format!(
            "job {id} has Requeue=1: after a node failure Slurm itself runs it again under the same id, and the guard waits for that run instead of submitting a copy"
        ));
    }
    Ok(Adopted {
        job,
        local_id: layout.local_id.clone(),
        job_dir: layout.job_dir.clone(),
        script: layout.script_path(),
        sha256,
        guard,
        warnings,
    })
}
