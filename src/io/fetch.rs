//! One remote round trip each: the queue, one job's detail, sacct's records of jobs (the
//! registry's launches among them). Shared by the dashboard's workers and the command line.

use std::time::Duration;

pub use crate::payload::DetailSource;
use crate::registry::Entry;
use crate::remote::{display_argv, Remote, RunOutput};
use crate::slurm::command::{self, SqueueQuery};
use crate::slurm::model::{Job, JobDetail, JobId, JobState};
use crate::slurm::parse::{parse_scontrol_jobs, read_sacct, read_squeue, Parsed};
use crate::slurm::time::Edge;

/// Runs an `squeue` of known job ids: its stdout, or none when squeue refuses the list
/// because it knows none of them any more ("Invalid job id"), or the failure in words.
pub async fn squeue_ids(
    remote: &dyn Remote,
    argv: &[String],
    timeout: std::time::Duration,
) -> Result<Option<String>, String> {
    let out = remote
        .run(argv, None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    if !out.success() {
        if out.stderr_lossy().contains("Invalid job id") {
            return Ok(None);
        }
        return Err(failure(remote, argv, &out));
    }
    Ok(Some(out.stdout_lossy()))
}

/// A failed command as one sentence naming the command (shortened), the host, the exit
/// status and what the command printed on stderr.
pub fn failure(remote: &dyn Remote, argv: &[String], out: &RunOutput) -> String {
    let host = remote.host().unwrap_or_else(|| "the cluster".into());
    let code = out
        .code
        .map_or_else(|| "killed by a signal".to_string(), |c| format!("exit {c}"));
    let said = out.stderr_lossy();
    let said = said.trim();
    let mut argv0 = display_argv(argv);
    if argv0.len() > 80 {
        argv0 = format!("{}…", argv0.chars().take(79).collect::<String>());
    }
    if said.is_empty() {
        format!("`{argv0}` on {host} failed ({code})")
    } else {
        format!("`{argv0}` on {host} failed ({code}): {said}")
    }
}

/// Runs `argv` and returns its stdout; a transport error or a non-zero exit becomes the
/// sentence of [`failure`].
pub async fn stdout_of(
    remote: &dyn Remote,
    argv: &[String],
    stdin: Option<&[u8]>,
    timeout: Duration,
) -> Result<String, String> {
    let out = remote
        .run(argv, stdin, timeout)
        .await
        .map_err(|e| e.to_string())?;
    if out.success() {
        Ok(out.stdout_lossy())
    } else {
        Err(failure(remote, argv, &out))
    }
}

/// Runs squeue for `query` and parses it. Errors are user-facing sentences naming the
/// command; a record that does not read is only a problem of its own (see `read_squeue`).
pub async fn queue_read(
    remote: &dyn Remote,
    query: &SqueueQuery,
    timeout: Duration,
) -> Result<Parsed<Job>, String> {
    let out = stdout_of(remote, &command::squeue(query), None, timeout).await?;
    Ok(read_squeue(&out))
}

/// [`queue_read`]'s rows (a row that did not read cleanly has its `problem` set).
pub async fn queue(
    remote: &dyn Remote,
    query: &SqueueQuery,
    timeout: Duration,
) -> Result<Vec<Job>, String> {
    queue_read(remote, query, timeout).await.map(|p| p.items)
}

/// `scontrol show job` while slurmctld knows the job, else sacct.
pub async fn detail(
    remote: &dyn Remote,
    id: &JobId,
    timeout: Duration,
) -> Result<(JobDetail, DetailSource), String> {
    // A collapsed pending array (`123_[4-99]`) is asked for by its array job id.
    let asked = match id.array_pending() {
        Some(_) => JobId::new(id.base()),
        None => id.clone(),
    };
    let id = &asked;
    let argv = command::scontrol_show_job(id, false);
    let out = remote
        .run(&argv, None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    if out.success() {
        let details = parse_scontrol_jobs(&out.stdout_lossy())
            .map_err(|e| format!("scontrol printed something unexpected: {e}"))?;
        let wanted = details
            .iter()
            .find(|d| d.id.as_ref() == Some(id))
            .or_else(|| details.first());
        if let Some(d) = wanted {
            return Ok((d.clone(), DetailSource::Scontrol));
        }
    }
    // A job slurmctld no longer knows: first among the recent ones, then (an old id typed or
    // kept) in the whole history.
    let one = std::slice::from_ref(id);
    let mut details = final_states(remote, one, command::RECENT, timeout).await?;
    if !details.iter().any(|d| d.id.as_ref() == Some(id)) {
        details = final_states(remote, one, command::since_ever(), timeout).await?;
    }
    let wanted = details
        .iter()
        .find(|d| d.id.as_ref() == Some(id))
        .or_else(|| details.first())
        .cloned()
        .ok_or_else(|| {
            format!("job {id} is unknown to both slurmctld and the accounting database (sacct)")
        })?;
    Ok((wanted, DetailSource::Sacct))
}

/// sacct records of these jobs, e.g. their final states (one command for all).
pub async fn final_states(
    remote: &dyn Remote,
    ids: &[JobId],
    since: Edge,
    timeout: Duration,
) -> Result<Vec<JobDetail>, String> {
    let out = stdout_of(remote, &command::sacct_jobs(ids, since), None, timeout).await?;
    // An odd record costs only itself.
    let p = read_sacct(&out);
    match p.problems.first() {
        Some(e) if p.items.is_empty() => Err(format!("sacct printed something unexpected: {e}")),
        _ => Ok(p.items),
    }
}

/// How many of the newest registry launches are re-attached at start.
pub const REATTACH_MAX: usize = 200;

/// The cluster's newest registry launches as sacct knows them (the latest attempt of each).
pub async fn registry_jobs(
    remote: &dyn Remote,
    cluster: &str,
    entries: &[Entry],
    timeout: Duration,
) -> Result<Vec<Job>, String> {
    let newest: Vec<&Entry> = entries
        .iter()
        .rev()
        // A launch still being submitted (job id 0) has no job to look up yet.
        .filter(|e| e.cluster == cluster && e.job_id != 0)
        .take(REATTACH_MAX)
        .collect();
    let ids: Vec<JobId> = newest.iter().map(|e| JobId::new(e.job_id)).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let since = crate::slurm::command::since_launched(crate::registry::oldest_secs(&newest));
    let details = final_states(remote, &ids, since, timeout).await?;
    // Right after a job ends, slurmdbd may hold a partial record (named `allocation`, no
    // partition or work dir) until slurmctld's start message lands: fill in what we know.
    Ok(details
        .iter()
        // A launch's job, or an ended task of a launch's array (a sweep's runs): tasks
        // still to run are squeue's, and a pending array's one record would stand for
        // them long after they started.
        .filter(|d| {
            d.id.as_ref().is_some_and(|i| {
                ids.contains(i)
                    || (i.array_task().is_some()
                        && d.state.as_ref().is_some_and(JobState::is_finished)
                        && ids.iter().any(|l| l.base() == i.base()))
            })
        })
        .filter_map(JobDetail::to_job)
        .map(|mut j| {
            if let Some(e) = entries
                .iter()
                .rev()
                .find(|e| e.cluster == cluster && e.job_id == j.id.base())
            {
                j.name = e.name.as_str().into();
                if j.work_dir.is_empty() {
                    j.work_dir = e.job_dir.as_str().into();
                }
            }
            j
        })
        .collect())
}
