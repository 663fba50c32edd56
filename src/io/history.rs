//! Reads of finished jobs' use: one job (the detail pane, `slurmdash eff`) and the jobs that
//! ended in a time window (`:history`, `slurmdash history`). One sacct each.

use std::time::Duration;

use crate::io::fetch::stdout_of;
use crate::remote::Remote;
use crate::slurm::command::{since_ever, RECENT};
use crate::slurm::eff::{self, Edge, JobUse};
use crate::slurm::model::JobId;
use crate::slurm::parse::Parsed;

pub use crate::launch::relaunch::Recovered;
pub use crate::payload::{Page, Request};

fn read(out: &str) -> Result<Parsed<JobUse>, String> {
    let p = eff::read_eff(out);
    match p.problems.first() {
        Some(e) if p.items.is_empty() => Err(format!("sacct printed something unexpected: {e}")),
        _ => Ok(p),
    }
}

/// These jobs with every step.
pub async fn jobs(
    remote: &dyn Remote,
    ids: &[JobId],
    timeout: Duration,
) -> Result<Parsed<JobUse>, String> {
    let recent = read(&stdout_of(remote, &eff::sacct_eff_jobs(ids, RECENT), None, timeout).await?)?;
    if ids.iter().all(|id| {
        recent
            .items
            .iter()
            .any(|u| u.detail.id.as_ref() == Some(id))
    }) {
        return Ok(recent);
    }
    // An id older than the recent window: the whole history.
    read(
        &stdout_of(
            remote,
            &eff::sacct_eff_jobs(ids, since_ever()),
            None,
            timeout,
        )
        .await?,
    )
}

/// Own jobs that ended in `[start, end]`; with `steps`, their steps too.
pub async fn ended(
    remote: &dyn Remote,
    start: Edge,
    end: Edge,
    steps: bool,
    timeout: Duration,
) -> Result<Parsed<JobUse>, String> {
    let out = stdout_of(remote, &eff::sacct_ended(start, end, steps), None, timeout)
        .await
        .map_err(|e| match e.starts_with('`') {
            // `failure` names the command already; a transport error does not.
            true => e,
            false => format!("`sacct` (jobs that ended) could not run: {e}"),
        })?;
    read(&out)
}

/// Runs `req`, calling `send` with each page; stops at the first error (returned).
pub async fn run(
    remote: &dyn Remote,
    req: &Request,
    timeout: Duration,
    send: &(dyn Fn(Page) + Send + Sync),
) -> Result<(), String> {
    let n = req.windows.len();
    for steps in [false, true] {
        for (i, (start, end)) in req.windows.iter().enumerate() {
            let p = ended(remote, *start, *end, steps, timeout).await?;
            send(Page {
                generation: req.generation,
                steps,
                jobs: p.items,
                problems: p.problems.iter().map(ToString::to_string).collect(),
                last: steps && i + 1 == n,
            });
        }
    }
    Ok(())
}

/// The detail pane's fetch: `scontrol show job` while slurmctld knows the job, else ONE
/// sacct read with every step, which gives both the detail and the use figures. A finished
/// job slurmctld still knows gets that sacct read too (for its use figures).
pub async fn detail(
    remote: &dyn Remote,
    id: &JobId,
    timeout: Duration,
) -> (
    Result<(crate::slurm::model::JobDetail, crate::payload::DetailSource), String>,
    Option<JobUse>,
) {
    use crate::payload::DetailSource;
    use crate::slurm::parse::parse_scontrol_jobs;
    let asked = match id.array_pending() {
        Some(_) => JobId::new(id.base()),
        None => id.clone(),
    };
    let argv = crate::slurm::command::scontrol_show_job(&asked, false);
    let out = match remote.run(&argv, None, timeout).await {
        Ok(o) => o,
        Err(e) => return (Err(e.to_string()), None),
    };
    if out.success() {
        let details = match parse_scontrol_jobs(&out.stdout_lossy()) {
            Ok(d) => d,
            Err(e) => {
                return (
                    Err(format!("scontrol printed something unexpected: {e}")),
                    None,
                )
            }
        };
        let wanted = details
            .iter()
            .find(|d| d.id.as_ref() == Some(&asked))
            .or_else(|| details.first());
        if let Some(d) = wanted {
            // A finished job slurmctld still knows (until MinJobAge): its use is in sacct.
            let finished = d.state.as_ref().is_some_and(|s| s.is_finished());
            let used = match finished {
                true => jobs(remote, std::slice::from_ref(&asked), timeout)
                    .await
                    .ok()
                    .and_then(|p| {
                        p.items
                            .into_iter()
                            .find(|u| u.detail.id.as_ref() == Some(&asked))
                    }),
                false => None,
            };
            return (Ok((d.clone(), DetailSource::Scontrol)), used);
        }
    }
    match jobs(remote, std::slice::from_ref(&asked), timeout).await {
        Err(e) => (Err(e), None),
        Ok(p) => {
            let found = p
                .items
                .iter()
                .position(|u| u.detail.id.as_ref() == Some(&asked))
                .or((!p.items.is_empty()).then_some(0));
            match found {
                Some(i) => {
                    let u = p.items.into_iter().nth(i);
                    let d = u.as_ref().map(|u| u.detail.clone()).unwrap_or_default();
                    (Ok((d, DetailSource::Sacct)), u)
                }
                None => (
                    Err(format!(
                        "job {asked} is unknown to both slurmctld and the accounting database (sacct)"
                    )),
                    None,
                ),
            }
        }
    }
}

/// What `L` needs to launch a finished job again: the spec staged in its job directory (and
/// its sha256, to compare with the one recorded at launch) and its use (for the suggested
/// values), read at the same time.
pub async fn relaunch(
    remote: &dyn Remote,
    id: &JobId,
    job_dir: &str,
    timeout: Duration,
) -> Result<crate::launch::relaunch::Relaunchable, String> {
    let (spec, used) = tokio::join!(
        launch_spec(remote, job_dir, timeout),
        jobs(remote, std::slice::from_ref(id), timeout)
    );
    let (spec, spec_sha256) = spec?;
    let used = used.ok().and_then(|p| {
        p.items
            .into_iter()
            .find(|u| u.detail.id.as_ref() == Some(id))
    });
    Ok(crate::launch::relaunch::Relaunchable {
        spec,
        spec_sha256,
        used,
    })
}

/// `L` on a launch `slurmdash adopt` made: it has no launch spec, and its batch script is
/// Slurm's copy that adopt kept in the job directory, checked against the sha256 recorded
/// then (`meta/adopted.json`); its options and use come from sacct as for any job
/// slurmdash did not launch. `Ok(None)`: `job_dir` is not an adopted launch's.
pub async fn recover_adopted(
    remote: &dyn Remote,
    id: &JobId,
    job_dir: &str,
    timeout: Duration,
) -> Result<Option<Recovered>, String> {
    let meta = format!("{job_dir}/meta/adopted.json");
    let argv = vec!["cat".to_string(), "--".into(), meta.clone()];
    let Ok(text) = stdout_of(remote, &argv, None, timeout).await else {
        return Ok(None);
    };
    let record: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{meta} is not adopt's record: {e}"))?;
    let sha = record["sha256"]
        .as_str()
        .ok_or_else(|| format!("{meta} names no sha256 of the script"))?;
    let local_id = job_dir
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("");
    let path = crate::registry::Layout {
        local_id: local_id.to_string(),
        results_root: String::new(),
        job_dir: job_dir.to_string(),
    }
    .script_path();
    let argv = vec!["cat".to_string(), "--".into(), path.clone()];
    let script = stdout_of(remote, &argv, None, timeout).await?;
    if crate::launch::script::sha256_hex(script.as_bytes()) != sha {
        return Err(format!(
            "{path} changed since job {id} was adopted (its sha256 is not the one recorded then): not relaunched"
        ));
    }
    let mut r = recover(remote, id, timeout, None).await?;
    r.script = Some(script);
    r.script_from = format!("the copy adopt kept ({path})");
    Ok(Some(r))
}

/// The spec a launch staged in its job directory (`specs/launch.json`), with the sha256 of
/// the bytes read (to compare with the one recorded at launch).
pub async fn launch_spec(
    remote: &dyn Remote,
    job_dir: &str,
    timeout: Duration,
) -> Result<(crate::launch::LaunchSpec, String), String> {
    let path = format!("{job_dir}/specs/launch.json");
    let argv = vec!["cat".to_string(), "--".into(), path.clone()];
    let text = stdout_of(remote, &argv, None, timeout).await?;
    let sha256 = crate::launch::script::sha256_hex(text.as_bytes());
    let spec = serde_json::from_str(&text)
        .map_err(|e| format!("{path} is not a launch spec slurmdash can read: {e}"))?;
    Ok((spec, sha256))
}

/// The job's options and use (one sacct read) and its batch script: `scontrol write
/// batch_script` while slurmctld knows the job, else the copy slurmdash kept when the job
/// was selected (`kept`: the store and the cluster's name), else `sacct -B`.
pub async fn recover(
    remote: &dyn Remote,
    id: &JobId,
    timeout: Duration,
    kept: Option<(&crate::kept_scripts::KeptScripts, &str)>,
) -> Result<Recovered, String> {
    use crate::slurm::eff::recover as r;
    let whoami = ["id".to_string(), "-un".into()];
    let (p, me) = tokio::join!(
        jobs(remote, std::slice::from_ref(id), timeout),
        stdout_of(remote, &whoami, None, timeout)
    );
    let p = p?;
    let me = me
        .ok()
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty());
    let used = p
        .items
        .into_iter()
        .find(|u| u.detail.id.as_ref() == Some(id))
        .ok_or_else(|| format!("sacct does not know job {id}"))?;
    if let Ok(s) = stdout_of(remote, &r::scontrol_batch_script(id), None, timeout).await {
        if !s.trim().is_empty() {
            return Ok(Recovered {
                used,
                script: Some(s),
                script_from: "scontrol write batch_script".into(),
                me,
            });
        }
    }
    let copy = kept
        .zip(used.detail.submit_time)
        .and_then(|((store, cluster), submit)| store.get(cluster, id.as_str(), submit));
    if let Some(k) = copy {
        let when = chrono::DateTime::<chrono::Local>::from(k.kept_at).format("%Y-%m-%d %H:%M");
        return Ok(Recovered {
            used,
            script: Some(k.script),
            script_from: format!("the copy slurmdash kept on {when}"),
            me,
        });
    }
    let (script, script_from) = match stdout_of(remote, &r::sacct_batch_script(id), None, timeout).await {
        Ok(out) => match r::parse_sacct_script(&out) {
            Some(s) => (Some(s), "sacct --batch-script".to_string()),
            None => (
                None,
                match kept {
                    Some(_) => "slurmctld no longer knows the job, slurmdash kept no copy (it keeps one when a job it did not launch is selected while queued or running) and the cluster does not store batch scripts (AccountingStoreFlags=job_script)",
                    None => "slurmctld no longer knows the job and the cluster does not store batch scripts (AccountingStoreFlags=job_script)",
                }
                .to_string(),
            ),
        },
        Err(e) => (None, e),
    };
    Ok(Recovered {
        used,
        script,
        script_from,
        me,
    })
}
