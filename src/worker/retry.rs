//! The retry check: for every launch of this cluster whose latest attempt has not been seen
//! to finish, one sacct for all of them; each that finished is classified (state, log tails,
//! status.json) and its final state recorded; an infrastructure failure is re-submitted from
//! its staged script. The registry's compare-and-set claims a retry before it is submitted,
//! so two dashboards on one registry never both submit it. Runs at start (catching up on
//! failures that happened while slurmdash was closed) and then periodically.

use std::time::Duration;

use chrono::Utc;

use crate::registry::{Attempt, Entry, Registry};
use crate::remote::{ReadPos, Remote};
use crate::retry::{layout, RetryPolicy};
use crate::slurm::model::{JobDetail, JobId};
use crate::triage::{Class, Patterns};
use crate::worker::fetch::DetailSource;
use crate::worker::triage::triage_job;

/// What the check did, for the status line and the events log.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryEvent {
    /// A launched job reached a final state.
    Finished {
        local_id: String,
        job_id: u64,
        state: String,
        class: Option<Class>,
    },
    /// An infrastructure failure was submitted again.
    Resubmitted {
        local_id: String,
        failed: u64,
        new: u64,
        attempt: usize,
        max_attempts: usize,
    },
    /// An infrastructure failure that is not retried (limit reached, retry off, or the
    /// re-submission failed), with why.
    NotRetried {
        local_id: String,
        job_id: u64,
        reason: String,
    },
}

impl RetryEvent {
    pub fn line(&self) -> String {
        match self {
            RetryEvent::Finished {
                job_id,
                state,
                class: Some(c),
                ..
            } => format!("launched job {job_id} ended {state} ({c})"),
            RetryEvent::Finished { job_id, state, .. } => {
                format!("launched job {job_id} ended {state}")
            }
            RetryEvent::Resubmitted {
                failed,
                new,
                attempt,
                max_attempts,
                ..
            } => format!(
                "job {failed} failed on infrastructure: resubmitted as {new} (attempt {attempt}/{max_attempts})"
            ),
            RetryEvent::NotRetried { job_id, reason, .. } => {
                format!("job {job_id} failed on infrastructure and was not resubmitted: {reason}")
            }
        }
    }
}

pub struct RetryCheck<'a> {
    pub remote: &'a dyn Remote,
    pub registry: &'a Registry,
    pub cluster: &'a str,
    pub policy: RetryPolicy,
    pub patterns: &'a Patterns,
    pub timeout: Duration,
    /// Reads a secret's value from this machine's environment.
    pub secret: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// False in a read-only session: failures are reported, nothing is submitted, and
    /// the retriable ones stay open for a session that may submit.
    pub allow_submit: bool,
}

/// Runs one check. Returns what happened and the registry entries of this cluster as they
/// are afterwards (for the attempt chains the dashboard shows).
pub async fn check(c: &RetryCheck<'_>) -> Result<(Vec<RetryEvent>, Vec<Entry>), String> {
    let mine = |all: Vec<Entry>| -> Vec<Entry> {
        all.into_iter().filter(|e| e.cluster == c.cluster).collect()
    };
    let entries = mine(c.registry.load().map_err(|e| e.to_string())?);
    let open: Vec<&Entry> = entries
        .iter()
        .filter(|e| {
            e.attempts
                .last()
                .is_some_and(|a| a.state.is_none() && a.job_id != 0)
        })
        .collect();
    if open.is_empty() {
        return Ok((Vec::new(), entries));
    }
    let ids: Vec<JobId> = open
        .iter()
        .filter_map(|e| e.attempts.last().map(|a| JobId::new(a.job_id)))
        .collect();
    let details = crate::worker::fetch::final_states(c.remote, &ids, c.timeout).await?;
    let mut events = Vec::new();
    for e in open {
        let Some(last) = e.attempts.last() else {
            continue;
        };
        let want = JobId::new(last.job_id);
        let Some(d) = details.iter().find(|d| d.id.as_ref() == Some(&want)) else {
            continue; // not in accounting yet
        };
        if !d.state.as_ref().is_some_and(|s| s.is_finished()) {
            continue;
        }
        events.extend(finished(c, e, d).await);
    }
    let entries = mine(c.registry.load().map_err(|e| e.to_string())?);
    Ok((events, entries))
}

/// One launch whose latest attempt finished: record, classify, maybe re-submit.
async fn finished(c: &RetryCheck<'_>, e: &Entry, d: &JobDetail) -> Vec<RetryEvent> {
    let n = e.attempts.len();
    let job_id = e.attempts.last().map_or(0, |a| a.job_id);
    let state = d
        .state
        .as_ref()
        .map_or_else(|| "UNKNOWN".to_string(), |s| s.long_name().to_string());
    let l = layout(e);
    // sacct does not know where the logs went: they are in the job dir's slurm-logs.
    let mut detail = d.clone();
    detail.stdout = Some(l.stdout(&e.name, job_id));
    detail.stderr = Some(l.stderr(&e.name, job_id));
    // Right after a job ends sacct may not have its work dir yet; the paths above are
    // absolute, so the job dir does.
    if detail.work_dir.as_deref().is_none_or(str::is_empty) {
        detail.work_dir = Some(l.job_dir.clone());
    }
    let class = match triage_job(
        c.remote,
        &detail,
        DetailSource::Sacct,
        Some(&l.job_dir),
        c.patterns,
    )
    .await
    {
        Ok(Some(r)) => Some(r.triage.class),
        Ok(None) => None,
        Err(_) => return Vec::new(), // connection trouble: try again next time
    };
    if !c.allow_submit && class.is_some_and(|k| c.policy.should_retry(e, k)) {
        return vec![RetryEvent::NotRetried {
            local_id: e.local_id.clone(),
            job_id,
            reason: "this session is read-only (a session that may change jobs will resubmit it)"
                .into(),
        }];
    }
    let recorded = format!(
        "{state}{}",
        class.map(|c| format!(" {c}")).unwrap_or_default()
    );
    // Record the final state, unless another dashboard did (then it also acts on it).
    let mut first = false;
    let updated = c.registry.update(&e.local_id, n, |x| {
        if let Some(a) = x.attempts.last_mut() {
            if a.state.is_none() {
                a.state = Some(recorded.clone());
                first = true;
            }
        }
    });
    if !matches!(updated, Ok(true)) || !first {
        return Vec::new();
    }
    let mut events = vec![RetryEvent::Finished {
        local_id: e.local_id.clone(),
        job_id,
        state: state.clone(),
        class,
    }];
    let Some(class) = class else {
        return events;
    };
    if !class.is_retriable() {
        return events;
    }
    if !c.policy.should_retry(e, class) {
        events.push(RetryEvent::NotRetried {
            local_id: e.local_id.clone(),
            job_id,
            reason: if c.policy.max_retries == 0 {
                "automatic retry is off ([retry] max_retries = 0)".into()
            } else {
                format!(
                    "it has had {n} attempts, the limit ([retry] max_retries = {})",
                    c.policy.max_retries
                )
            },
        });
        return events;
    }
    // Claim attempt n+1 before submitting it: only one dashboard wins.
    let claimed = c.registry.update(&e.local_id, n, |x| {
        x.attempts.push(Attempt {
            job_id: 0,
            submitted_at: Utc::now(),
            state: None,
        });
    });
    if !matches!(claimed, Ok(true)) {
        return events;
    }
    let result = match secrets(c, &l.job_dir).await {
        Ok(secrets) => {
            crate::launch::stage::submit_held(c.remote, &l, &e.name, &secrets, c.timeout).await
        }
        Err(err) => Err(err),
    };
    match result {
        Ok(new) => {
            let _ = c.registry.update(&e.local_id, n + 1, |x| {
                if let Some(a) = x.attempts.last_mut() {
                    a.job_id = new;
                    a.submitted_at = Utc::now();
                }
            });
            events.push(RetryEvent::Resubmitted {
                local_id: e.local_id.clone(),
                failed: job_id,
                new,
                attempt: n + 1,
                max_attempts: c.policy.max_attempts(),
            });
        }
        Err(err) => {
            let _ = c.registry.update(&e.local_id, n + 1, |x| {
                x.attempts.pop();
            });
            events.push(RetryEvent::NotRetried {
                local_id: e.local_id.clone(),
                job_id,
                reason: err,
            });
        }
    }
    events
}

/// The secrets the launch was submitted with, read again from this machine's environment.
async fn secrets(c: &RetryCheck<'_>, job_dir: &str) -> Result<Vec<(String, String)>, String> {
    let path = format!("{job_dir}/env/env.json");
    let names: Vec<String> = match c.remote.read_file(&path, ReadPos::Offset(0), 1 << 20).await {
        Ok(chunk) => serde_json::from_slice::<serde_json::Value>(&chunk.data)
            .ok()
            .and_then(|v| {
                v.get("secrets")?.as_array().map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
            })
            .unwrap_or_default(),
        Err(crate::remote::RemoteError::NotFound { .. }) => Vec::new(),
        Err(e) => return Err(format!("reading {path}: {e}")),
    };
    crate::launch::submit::read_secrets(&names, |n| (c.secret)(n))
}
