//! The one submission path, used by `slurmdash submit` and by the dashboard's form, from a
//! `launch::submit::Prepared`: check inputs -> convert the image (optional) -> stage ->
//! submit -> record.

use std::time::Duration;

use chrono::Utc;
use serde::Serialize;

use crate::io::fetch::failure;
use crate::io::retry::claim_stale_after;
use crate::io::stage as io_stage;
use crate::launch::container;
use crate::launch::script;
use crate::launch::spec::LaunchSpec;
use crate::launch::stage::{Estimate, SubmitError};
use crate::launch::submit::{Prepared, Submitted};
use crate::registry::{Attempt, Entry, GuardRecord, Registry};
use crate::remote::Remote;

/// What `meta/request.json` holds: what was asked and how it was resolved.
#[derive(Serialize)]
struct Request<'a> {
    spec: &'a LaunchSpec,
    partition: &'a str,
    account: Option<&'a str>,
    nodes: u32,
    gpus_per_node: u32,
    exclusive: bool,
    time_secs: u64,
    image: Option<&'a str>,
}

#[derive(Serialize)]
struct EnvFile<'a> {
    env: &'a std::collections::BTreeMap<String, String>,
    /// Names only: the values never leave the submitting machine except through sbatch.
    secrets: &'a [String],
}

pub struct Target<'a> {
    pub remote: &'a dyn Remote,
    pub cluster: &'a str,
    pub registry: &'a Registry,
    pub timeout: Duration,
    /// For the `enroot import` step, which can take many minutes.
    pub convert_timeout: Duration,
}

/// Stages and submits `p`; records the launch locally and in `<job_dir>/meta/`.
pub async fn submit(
    t: &Target<'_>,
    p: &Prepared,
    secrets: &[(String, String)],
) -> Result<Submitted, String> {
    let (remote, to) = (t.remote, t.timeout);
    if let (false, Err(why)) = (p.plan.resume.is_empty(), &p.guard) {
        return Err(format!(
            "auto-resume is done by a guard job on the cluster, and this launch gets none ({why}); nothing was submitted: clear resume or allow the guard"
        ));
    }
    io_stage::check_inputs(remote, &p.plan.inputs, to).await?;
    if let Some(c) = &p.conversion {
        let argv = c.argv();
        let out = remote
            .run(&argv, None, t.convert_timeout)
            .await
            .map_err(|e| e.to_string())?;
        if out.code == Some(container::UNSAFE_CACHE) {
            return Err(format!(
                "{}; nothing was submitted",
                out.stderr_lossy().trim().trim_start_matches("slurmdash: ")
            ));
        }
        if !out.success() {
            return Err(format!(
                "converting {} to {} failed; nothing was submitted: {}",
                c.image,
                c.sqsh,
                failure(remote, &argv, &out)
            ));
        }
    }
    let l = &p.layout;
    io_stage::make_dirs(remote, l, p.plan.job_dir_mode, to).await?;
    let code_note = match &p.code {
        Some(c) => {
            let (how, pruned) = crate::io::code::stage(
                remote,
                &l.results_root,
                &l.job_dir,
                c,
                to,
                t.convert_timeout,
            )
            .await
            .map_err(|e| format!("{e}; nothing was submitted"))?;
            let what = if c.reused {
                "the snapshot an earlier launch ran".to_string()
            } else {
                format!(
                    "{} files, {:.1} MB",
                    c.files,
                    c.bytes as f64 / (1024.0 * 1024.0)
                )
            };
            let pruned = match pruned {
                0 => String::new(),
                n => format!(
                    "; removed {n} snapshot{} no launch used for {} days",
                    if n == 1 { "" } else { "s" },
                    crate::launch::code::KEEP_DAYS
                ),
            };
            Some(format!(
                "{} ({what}): {} {}/code{pruned}",
                crate::launch::code::summary(&c.commit, c.dirty),
                match how {
                    crate::io::code::Staged::Reused(d) =>
                        format!("reused {d} (nothing uploaded), copied to"),
                    crate::io::code::Staged::Uploaded(d) => format!("uploaded to {d}, copied to"),
                },
                l.job_dir
            ))
        }
        None => None,
    };
    let json = |v: &dyn erased::Json| v.json();
    let request = Request {
        spec: &p.spec,
        partition: &p.plan.partition,
        account: p.plan.account.as_deref(),
        nodes: p.plan.nodes,
        gpus_per_node: p.plan.gpus_per_node,
        exclusive: p.plan.exclusive,
        time_secs: p.plan.time.as_secs(),
        image: p.plan.image.as_ref().map(|i| i.pyxis()),
    };
    let env = EnvFile {
        env: &p.plan.env,
        secrets: &p.plan.secrets,
    };
    let spec_json = json(&p.spec);
    // Hashed here: `L` tells a spec the job rewrote from the one launched.
    let spec_sha256 = script::sha256_hex(spec_json.as_bytes());
    let mut files = vec![
        (format!("{}/specs/launch.json", l.job_dir), spec_json),
        (format!("{}/env/env.json", l.job_dir), json(&env)),
        (format!("{}/meta/request.json", l.job_dir), json(&request)),
    ];
    if let Some(body) = &p.plan.batch_script {
        // Before the script that checks it.
        files.push((l.recovered_path(), body.clone()));
    }
    files.push((l.script_path(), p.script.clone()));
    for (path, content) in &files {
        io_stage::write_file(remote, path, content.as_bytes(), to).await?;
    }
    let mut warnings = Vec::new();
    let guard = match &p.guard {
        Ok(g) if secrets.is_empty() => {
            let staged = io_stage::guard_files(
                remote,
                l,
                g,
                &p.plan.name,
                &p.plan.partition,
                p.plan.account.as_deref(),
                to,
            )
            .await;
            match staged {
                Ok(policy) => Some(policy),
                Err(e) => {
                    warnings.push(format!("{e}; retries of this launch need a dashboard"));
                    None
                }
            }
        }
        _ => None,
    };
    // Hashed here, on the laptop: the cluster submits only a copy with this sha256.
    let checksum = script::sha256_hex(p.script.as_bytes());
    // Recorded before it is queued, as a claimed first attempt (job id 0): if this process
    // is killed or the answer is lost, a dashboard adopts the job the cluster queued (or
    // submits the launch) once the claim is stale; nothing queued goes unrecorded.
    let now = Utc::now();
    let mut entry = Entry {
        local_id: l.local_id.clone(),
        cluster: t.cluster.to_string(),
        job_id: 0,
        job_dir: l.job_dir.clone(),
        name: p.plan.name.clone(),
        submitted_at: now,
        template: p.spec.template.clone(),
        script: l.script_path(),
        attempts: vec![Attempt {
            job_id: 0,
            submitted_at: now,
            state: None,
        }],
        secrets: p.plan.secrets.clone(),
        checksum: Some(checksum.clone()),
        spec_sha256: Some(spec_sha256),
        requeue: p.plan.requeue,
        guard: None,
        sweep: crate::launch::sweep::registry_runs(&p.plan.sweep, p.plan.array.as_deref()),
        code: p.code.as_ref().map(crate::launch::code::Snapshot::record),
    };
    t.registry.add(entry.clone()).map_err(|e| {
        format!("not submitted: the launch could not be recorded on this machine first: {e}")
    })?;
    let queued = match io_stage::submit_held_guarded(
        remote,
        l,
        &p.plan.name,
        secrets,
        &checksum,
        guard.as_deref(),
        to,
    )
    .await
    {
        Ok(q) => q,
        Err(SubmitError::Refused(e)) => {
            let _ = t.registry.remove(&l.local_id);
            return Err(e);
        }
        Err(SubmitError::Lost(e)) => {
            return Err(format!(
                "{e}; launch {} stays recorded as being submitted: a dashboard opened on {} adopts its job (or submits it once) after {} s",
                l.local_id,
                t.cluster,
                claim_stale_after(to).num_seconds()
            ))
        }
    };
    let job_id = queued.job_id;
    let now = Utc::now();
    entry.job_id = job_id;
    entry.attempts[0] = Attempt {
        job_id,
        submitted_at: now,
        state: None,
    };
    entry.guard = queued.guard.map(|_| GuardRecord::default());
    if guard.is_some() && queued.guard.is_none() && !queued.existing {
        warnings.push(format!(
            "the retry guard could not be queued ({}); retries of this launch need a dashboard",
            queued
                .guard_error
                .as_deref()
                .unwrap_or("see meta/ in the job directory")
        ));
    }
    if !queued.unset_env.is_empty() {
        warnings.push(format!(
            "your login environment sets {}: not used for this job, whose script sets those options itself (the form's values win)",
            queued.unset_env.join(", ")
        ));
    }
    if queued.existing {
        warnings.push(format!(
            "launch {} was already queued as job {job_id} (an earlier submission whose answer was lost): not submitted a second time",
            l.local_id
        ));
    }
    match &queued.released {
        Some(Ok(())) => warnings.push(format!(
            "job {job_id} had been left held by the interrupted submission: released now"
        )),
        Some(Err(why)) => warnings.push(format!(
            "job {job_id} was left held by the interrupted submission and `scontrol release {job_id}` was refused ({why}): release it yourself (`scontrol release {job_id}`) or cancel it"
        )),
        None => {}
    }
    let recorded = t.registry.update(&l.local_id, 1, |x| {
        x.attempts = entry.attempts.clone();
        x.job_id = job_id;
        x.guard = entry.guard.clone();
    });
    if !matches!(recorded, Ok(true)) {
        warnings.push(format!(
            "job {job_id} is queued but its record on this machine was not updated ({}): a dashboard adopts it later",
            match recorded {
                Err(e) => e.to_string(),
                _ => "another slurmdash changed it meanwhile".into(),
            }
        ));
    }
    // A recovered or own script belongs to that launch, not to the next form.
    let mut last = p.spec.clone();
    last.batch_script.clear();
    last.script_args.clear();
    if let Err(e) = t.registry.save_last(&last) {
        warnings.push(format!("the form's last-used values were not saved: {e}"));
    }
    let meta = format!("{}/meta/registry.json", l.job_dir);
    if let Err(e) = io_stage::write_file(remote, &meta, entry.to_json().as_bytes(), to).await {
        warnings.push(format!(
            "job {job_id} is queued but {meta} was not written: {e}"
        ));
    }
    Ok(Submitted {
        job_id,
        local_id: l.local_id.clone(),
        job_dir: l.job_dir.clone(),
        script_path: l.script_path(),
        stdout: l.stdout(&p.plan.name, job_id),
        stderr: l.stderr(&p.plan.name, job_id),
        entry,
        warnings,
        code: code_note,
    })
}

/// Asks the scheduler when and where the job would start, without queueing it.
pub async fn test_only(remote: &dyn Remote, p: &Prepared, t: Duration) -> Result<Estimate, String> {
    io_stage::test_only(remote, &p.script, t).await
}

mod erased {
    /// Compact JSON of anything serializable, behind a trait object for a uniform list.
    pub trait Json {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap_or_default()
        }
    }
}
