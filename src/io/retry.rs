//! The retry check: for every launch of this cluster whose latest attempt has not been seen
//! to finish, one sacct for all of them; each that finished is classified (state, log tails,
//! status.json) and its final state recorded; an infrastructure failure is re-submitted from
//! its staged script. The registry's compare-and-set claims a retry before it is submitted,
//! so two dashboards on one registry never both submit it. Runs at start (catching up on
//! failures that happened while slurmdash was closed) and then periodically.
//!
//! Slurm's own requeue wins: a launch submitted with `--requeue` that ends NODE_FAIL,
//! PREEMPTED or BOOT_FAIL is requeued by Slurm under the same id (sacct `--duplicates`
//! then shows the earlier record and a new PENDING one; for a moment sacct still shows only
//! the failure while squeue already has the job pending again, so squeue decides then).
//! An attempt claimed by a dashboard that stopped before submitting it (job id 0 in the
//! registry) is submitted once the claim is stale; the staging script adopts a job the
//! stopped dashboard had already queued instead of submitting a second one.

use crate::launch::stage::{Queued, SubmitError};
use std::time::Duration;

use chrono::Utc;

use crate::io::fetch::DetailSource;
use crate::io::triage::triage_job;
pub use crate::payload::RetryEvent;
use crate::registry::{Attempt, Entry, Registry};
use crate::remote::Remote;
use crate::retry::{layout, RetryPolicy};
use crate::slurm::model::{JobDetail, JobId};
use crate::triage::Patterns;

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

/// States after which Slurm requeues a job submitted with `--requeue`.
const SLURM_REQUEUES: [&str; 3] = ["NODE_FAIL", "PREEMPTED", "BOOT_FAIL"];

/// A claimed attempt (job id 0) older than this was left by a dashboard that stopped:
/// its submission (one command of at most `timeout`, killed on the login node a few
/// seconds after) is long over.
pub fn claim_stale_after(timeout: Duration) -> chrono::Duration {
    chrono::Duration::from_std(timeout.saturating_mul(2)).unwrap_or(chrono::Duration::MAX)
        + chrono::Duration::seconds(10)
}

/// Runs one check. Returns what happened and the registry entries of this cluster as they
/// are afterwards (for the attempt chains the dashboard shows).
pub async fn check(c: &RetryCheck<'_>) -> Result<(Vec<RetryEvent>, Vec<Entry>), String> {
    let mine = |all: Vec<Entry>| -> Vec<Entry> {
        all.into_iter().filter(|e| e.cluster == c.cluster).collect()
    };
    let entries = mine(c.registry.load().map_err(|e| e.to_string())?);
    // Launches with a retry guard on the cluster: what it decided, and which to leave to it.
    let (mut events, leave) =
        crate::io::guard_sync::sync(c.remote, c.registry, &c.policy, c.timeout, &entries).await?;
    let entries = if events.is_empty() {
        entries
    } else {
        mine(c.registry.load().map_err(|e| e.to_string())?)
    };
    for e in entries.iter().filter(|e| {
        e.attempts
            .last()
            .is_some_and(|a| a.state.is_none() && a.job_id == 0)
    }) {
        events.extend(recover(c, e).await);
    }
    let open: Vec<&Entry> = entries
        .iter()
        .filter(|e| {
            e.attempts
                .last()
                .is_some_and(|a| a.state.is_none() && a.job_id != 0)
                && !leave.contains(&e.local_id)
        })
        .collect();
    if open.is_empty() {
        if events.is_empty() {
            return Ok((events, entries));
        }
        let entries = mine(c.registry.load().map_err(|e| e.to_string())?);
        return Ok((events, entries));
    }
    let ids: Vec<JobId> = open
        .iter()
        .filter_map(|e| e.attempts.last().map(|a| JobId::new(a.job_id)))
        .collect();
    // Every record of each job: a requeued job has the earlier run's record before its
    // current one.
    let since = crate::slurm::command::since_launched(crate::registry::oldest_secs(&open));
    let mut argv = crate::slurm::command::sacct_jobs(&ids, since);
    argv.push("--duplicates".into());
    let out = crate::io::fetch::stdout_of(c.remote, &argv, None, c.timeout).await?;
    let records = crate::slurm::parse::parse_sacct(&out)
        .map_err(|e| format!("sacct printed something unexpected: {e}"))?;
    // Finished with a state Slurm requeues on, for a launch that asked for it: squeue
    // (slurmctld) already knows whether it is pending again while sacct catches up.
    let mut maybe_requeued = Vec::new();
    for e in &open {
        let Some(last) = e.attempts.last() else {
            continue;
        };
        let want = JobId::new(last.job_id);
        if let Some(d) = records.iter().rfind(|d| d.id.as_ref() == Some(&want)) {
            if e.requeue
                && d.state
                    .as_ref()
                    .is_some_and(|s| SLURM_REQUEUES.contains(&s.long_name()))
            {
                maybe_requeued.push(want);
            }
        }
    }
    let live = if maybe_requeued.is_empty() {
        Vec::new()
    } else {
        live_jobs(c.remote, &maybe_requeued, c.timeout).await?
    };
    for e in open {
        let Some(last) = e.attempts.last() else {
            continue;
        };
        let want = JobId::new(last.job_id);
        let mine: Vec<&JobDetail> = records
            .iter()
            .filter(|d| d.id.as_ref() == Some(&want))
            .collect();
        let Some(d) = mine.last() else {
            continue; // not in accounting yet
        };
        let finished = d.state.as_ref().is_some_and(|s| s.is_finished());
        // Earlier runs of this job; a record of another job that had the same id (ids
        // restart when a cluster's state is reset) has another name.
        let earlier: Vec<&&JobDetail> = mine[..mine.len() - 1]
            .iter()
            .filter(|r| r.name == e.name && r.state.as_ref().is_some_and(|s| s.is_finished()))
            .collect();
        if finished && !live.contains(&want) {
            events.extend(finished_attempt(c, e, d).await);
        } else if finished || !earlier.is_empty() {
            // Requeued by Slurm: it runs again under the same id.
            let state = if finished {
                d
            } else {
                earlier[earlier.len() - 1]
            };
            events.push(RetryEvent::Requeued {
                local_id: e.local_id.clone(),
                job_id: last.job_id,
                state: state
                    .state
                    .as_ref()
                    .map_or_else(|| "UNKNOWN".into(), |s| s.long_name().to_string()),
                times: earlier.len() + usize::from(finished),
            });
        }
    }
    let entries = mine(c.registry.load().map_err(|e| e.to_string())?);
    Ok((events, entries))
}

/// The ids among `ids` that slurmctld still has queued or running.
async fn live_jobs(remote: &dyn Remote, ids: &[JobId], t: Duration) -> Result<Vec<JobId>, String> {
    let argv = vec![
        "squeue".to_string(),
        "--noheader".into(),
        format!(
            "--jobs={}",
            ids.iter().map(JobId::as_str).collect::<Vec<_>>().join(",")
        ),
        "--format=%i|%T".into(),
    ];
    // squeue refuses a list of ids it no longer knows at all: none of them is live.
    let Some(out) = crate::io::fetch::squeue_ids(remote, &argv, t).await? else {
        return Ok(Vec::new());
    };
    Ok(out
        .lines()
        .filter_map(|l| l.split_once('|'))
        .filter(|(_, st)| {
            !matches!(
                st.trim(),
                "COMPLETED"
                    | "COMPLETING"
                    | "FAILED"
                    | "CANCELLED"
                    | "TIMEOUT"
                    | "NODE_FAIL"
                    | "PREEMPTED"
                    | "BOOT_FAIL"
                    | "DEADLINE"
                    | "OUT_OF_MEMORY"
            )
        })
        .filter_map(|(id, _)| ids.iter().find(|j| j.as_str() == id.trim()).cloned())
        .collect())
}

/// A claimed attempt (job id 0) whose dashboard stopped before recording a job: submit it
/// now (the staging script adopts a job that was queued after all), or say so in a
/// read-only session. Claims younger than [`claim_stale_after`] are left alone.
async fn recover(c: &RetryCheck<'_>, e: &Entry) -> Vec<RetryEvent> {
    let n = e.attempts.len();
    let Some(claimed) = e.attempts.last().map(|a| a.submitted_at) else {
        return Vec::new();
    };
    if Utc::now() - claimed < claim_stale_after(c.timeout) {
        return Vec::new();
    }
    let previous = n
        .checked_sub(2)
        .and_then(|i| e.attempts.get(i))
        .map_or(0, |a| a.job_id);
    let Some(checksum) = recorded_checksum(e) else {
        let mut events = vec![RetryEvent::NotRetried {
            local_id: e.local_id.clone(),
            job_id: previous,
            reason: NO_CHECKSUM.into(),
        }];
        if c.allow_submit {
            // Drop the claim (if no other dashboard took it meanwhile): nothing submits it.
            let r = c.registry.update(&e.local_id, n, |x| {
                if x.attempts
                    .last()
                    .is_some_and(|a| a.job_id == 0 && a.submitted_at == claimed)
                {
                    x.attempts.pop();
                }
            });
            events.extend(record_failed(r, e, previous, || {
                format!("the claim of attempt {n} was dropped")
            }));
        }
        return events;
    };
    if !c.allow_submit {
        return vec![RetryEvent::NotRetried {
            local_id: e.local_id.clone(),
            job_id: previous,
            reason: format!(
                "attempt {n} was claimed at {} but never submitted (a dashboard stopped mid-retry); this session is read-only, a session that may change jobs will submit it",
                claimed.format("%Y-%m-%d %H:%M:%S UTC")
            ),
        }];
    }
    // Take the stale claim over (compare-and-set on its time): one dashboard wins.
    let mut won = false;
    let now = Utc::now();
    let taken = c.registry.update(&e.local_id, n, |x| {
        if let Some(a) = x.attempts.last_mut() {
            if a.job_id == 0 && a.submitted_at == claimed {
                a.submitted_at = now;
                won = true;
            }
        }
    });
    if !matches!(taken, Ok(true)) || !won {
        return Vec::new();
    }
    match resubmit(c, e, checksum, "").await {
        Ok(q) => {
            let r = c.registry.update(&e.local_id, n, |x| {
                if let Some(a) = x.attempts.last_mut() {
                    a.job_id = q.job_id;
                    a.submitted_at = Utc::now();
                }
            });
            let mut events = vec![RetryEvent::Recovered {
                local_id: e.local_id.clone(),
                job_id: q.job_id,
                attempt: n,
                existing: q.existing,
            }];
            events.extend(record_failed(r, e, q.job_id, || {
                format!("attempt {n} is job {}", q.job_id)
            }));
            events
        }
        Err(SubmitError::Refused(err)) => {
            let r = c.registry.update(&e.local_id, n, |x| {
                x.attempts.pop();
            });
            let mut events = vec![RetryEvent::NotRetried {
                local_id: e.local_id.clone(),
                job_id: previous,
                reason: err,
            }];
            events.extend(record_failed(r, e, previous, || {
                format!("attempt {n} was refused and its claim dropped")
            }));
            events
        }
        Err(SubmitError::Lost(err)) => vec![RetryEvent::NotRetried {
            local_id: e.local_id.clone(),
            job_id: previous,
            reason: lost(&err),
        }],
    }
}

/// Why a launch recorded without a checksum (by a slurmdash older than the checksums) is
/// never resubmitted: nothing could tell its staged script from one put in its place.
pub const NO_CHECKSUM: &str = "no checksum of the script was recorded at launch (made by an older slurmdash); relaunch it with L";

/// The sha256 the laptop recorded for the launch's script, if any.
/// A registry update's failure as an event for the user (a lost compare-and-set, `Ok(false)`,
/// is another dashboard's doing and no error).
fn record_failed(
    r: Result<bool, crate::registry::RegistryError>,
    e: &Entry,
    job_id: u64,
    what: impl FnOnce() -> String,
) -> Option<RetryEvent> {
    r.err().map(|err| RetryEvent::RecordFailed {
        local_id: e.local_id.clone(),
        job_id,
        what: what(),
        error: err.to_string(),
    })
}

fn recorded_checksum(e: &Entry) -> Option<&str> {
    e.checksum.as_deref().filter(|s| !s.is_empty())
}

/// What a lost answer means for the retry.
fn lost(err: &str) -> String {
    format!("{err}; the retry stays claimed: a later check adopts its job if it was queued, or submits it")
}

/// Submits the launch's staged script again with exactly the secrets the launch named,
/// refusing a script whose checksum differs from the one recorded at launch (`checksum`).
/// `exclude`: nodes to keep it off (a host list; empty: none).
async fn resubmit(
    c: &RetryCheck<'_>,
    e: &Entry,
    checksum: &str,
    exclude: &str,
) -> Result<Queued, SubmitError> {
    let l = layout(e);
    let secrets = crate::launch::submit::read_secrets(&e.secrets, |n| (c.secret)(n))
        .map_err(SubmitError::Refused)?;
    crate::io::stage::submit_held_excluding(
        c.remote, &l, &e.name, &secrets, checksum, exclude, c.timeout,
    )
    .await
}

/// The nodes a retry after an infrastructure failure is kept off: those the failed attempt
/// ran on (sacct's NodeList), unless it was preempted (no fault of the node).
fn failed_nodes(d: &JobDetail, state: &str) -> Option<String> {
    if state == "PREEMPTED" {
        return None;
    }
    d.node_list
        .as_deref()
        .map(str::trim)
        .filter(|n| crate::launch::stage::is_host_list(n))
        .map(str::to_string)
}

/// One launch whose latest attempt finished: record, classify, maybe re-submit.
async fn finished_attempt(c: &RetryCheck<'_>, e: &Entry, d: &JobDetail) -> Vec<RetryEvent> {
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
            reason: if recorded_checksum(e).is_none() {
                NO_CHECKSUM.into()
            } else {
                "this session is read-only (a session that may change jobs will resubmit it)".into()
            },
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
    let Some(checksum) = recorded_checksum(e) else {
        events.push(RetryEvent::NotRetried {
            local_id: e.local_id.clone(),
            job_id,
            reason: NO_CHECKSUM.into(),
        });
        return events;
    };
    // Claim attempt n+1 before submitting it: only one dashboard wins.
    let claimed = c.registry.update(&e.local_id, n, |x| {
        x.attempts.push(Attempt {
            job_id: 0,
            submitted_at: Utc::now(),
            state: None,
        });
    });
    if !matches!(claimed, Ok(true)) {
        events.extend(record_failed(claimed, e, job_id, || {
            format!("job {job_id} is to be resubmitted but attempt {} could not be claimed, so it was not", n + 1)
        }));
        return events;
    }
    let excluded = failed_nodes(d, &state);
    match resubmit(c, e, checksum, excluded.as_deref().unwrap_or("")).await {
        // The same job, live again: Slurm requeued it after all.
        Ok(q) if q.existing && q.job_id == job_id => {
            let r = c.registry.update(&e.local_id, n + 1, |x| {
                x.attempts.pop();
                if let Some(a) = x.attempts.last_mut() {
                    a.state = None;
                }
            });
            events.clear();
            events.push(RetryEvent::Requeued {
                local_id: e.local_id.clone(),
                job_id,
                state,
                times: 1,
            });
            events.extend(record_failed(r, e, job_id, || {
                format!("job {job_id} was requeued by Slurm")
            }));
        }
        Ok(q) => {
            let r = c.registry.update(&e.local_id, n + 1, |x| {
                if let Some(a) = x.attempts.last_mut() {
                    a.job_id = q.job_id;
                    a.submitted_at = Utc::now();
                }
            });
            events.push(RetryEvent::Resubmitted {
                local_id: e.local_id.clone(),
                failed: job_id,
                new: q.job_id,
                attempt: n + 1,
                max_attempts: c.policy.max_attempts(),
                resumed: None,
                excluded,
            });
            events.extend(record_failed(r, e, q.job_id, || {
                format!("job {job_id} was resubmitted as {}", q.job_id)
            }));
        }
        Err(SubmitError::Refused(err)) => {
            let r = c.registry.update(&e.local_id, n + 1, |x| {
                x.attempts.pop();
            });
            events.push(RetryEvent::NotRetried {
                local_id: e.local_id.clone(),
                job_id,
                reason: err,
            });
            events.extend(record_failed(r, e, job_id, || {
                format!("the resubmission of job {job_id} was refused and its claim dropped")
            }));
        }
        // The claim stays: the job may be queued, and a later check adopts it (or submits
        // it) once the claim is stale, instead of this attempt being lost or doubled.
        Err(SubmitError::Lost(err)) => events.push(RetryEvent::NotRetried {
            local_id: e.local_id.clone(),
            job_id,
            reason: lost(&err),
        }),
    }
    events
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::remote::fake::{FakeRemote, FakeReply};
    use crate::slurm::command::FIELD_SEP;

    /// One sacct row in `command::sacct_jobs`' format (the fixture's columns).
    fn sacct_row(id: u64, state: &str, name: &str) -> String {
        let fields = [
            &id.to_string(),
            &id.to_string(),
            "sduser",
            "1001",
            "research",
            "short",
            "normal",
            state,
            "None",
            "0:0",
            "0:0",
            "2026-11-23T09:19:52",
            "2026-11-23T09:19:52",
            "2026-11-23T09:19:55",
            "2026-11-23T09:19:55",
            "00:00:03",
            "00:05:00",
            "4031",
            "1",
            "1",
            "n1",
            "cpu=1",
            "cpu=1",
            "50M",
            "/r",
            name,
        ];
        format!("{}\n", fields.join(&FIELD_SEP.to_string()))
    }

    fn setup(requeue: bool) -> (tempfile::TempDir, Registry) {
        let d = tempfile::tempdir().unwrap();
        let r = Registry::open(d.path());
        let now = Utc::now();
        r.add(Entry {
            local_id: "L1".into(),
            cluster: "dev".into(),
            job_id: 7,
            job_dir: "/r/results/L1".into(),
            name: "train".into(),
            submitted_at: now,
            script: "/r/results/L1/sbatch/job_L1.sbatch".into(),
            attempts: vec![Attempt {
                job_id: 7,
                submitted_at: now,
                state: None,
            }],
            checksum: Some("ab".into()),
            requeue,
            ..Entry::default()
        })
        .unwrap();
        (d, r)
    }

    async fn run_check(remote: &FakeRemote, registry: &Registry) -> Vec<RetryEvent> {
        check_allowing(remote, registry, true).await
    }

    /// A retry check; `allow_submit`: false in a read-only session.
    async fn check_allowing(
        remote: &FakeRemote,
        registry: &Registry,
        allow_submit: bool,
    ) -> Vec<RetryEvent> {
        let patterns = Patterns::builtin();
        let secret = |_: &str| None;
        let c = RetryCheck {
            remote,
            registry,
            cluster: "dev",
            policy: RetryPolicy::default(),
            patterns: &patterns,
            timeout: Duration::from_secs(5),
            secret: &secret,
            allow_submit,
        };
        check(&c).await.unwrap().0
    }

    /// A cluster whose sacct says job 7 (`train`) ended in NODE_FAIL.
    fn node_failed() -> FakeRemote {
        let r = FakeRemote::new("login1");
        r.on(
            &["sacct"],
            vec![FakeReply::ok(sacct_row(7, "NODE_FAIL", "train"))],
        );
        r
    }

    /// The connection dropped while the submission ran, for `reason`.
    fn dropped(reason: &str) -> FakeReply {
        FakeReply::Error(crate::remote::RemoteError::Disconnected {
            command: "sh -c ...".into(),
            host: "login1".into(),
            reason: reason.into(),
        })
    }

    /// Attempt 2 claimed at `at` after attempt 1 failed on infrastructure; no job yet.
    fn claimed_at(registry: &Registry, at: chrono::DateTime<Utc>) {
        registry
            .update("L1", 1, |x| {
                x.attempts[0].state = Some("NODE_FAIL ERR_INFRA".into());
                x.attempts.push(Attempt {
                    job_id: 0,
                    submitted_at: at,
                    state: None,
                });
            })
            .unwrap();
    }

    /// The registry cannot be written once the retry is queued (a full disk, a broken
    /// state directory): the user is told what the record lacks, not left with a silent gap.
    #[tokio::test]
    async fn a_registry_update_that_fails_after_a_resubmission_is_reported() {
        let (d, registry) = setup(false);
        let r = node_failed();
        r.on(
            &["sh", "-c"],
            vec![FakeReply::Delay(
                Duration::from_secs(2),
                Box::new(FakeReply::ok("slurmdash-job 8 new ab\n")),
            )],
        );
        // While the resubmission is under way, the registry's temporary file is blocked
        // (a directory in its place): the next write fails, reads still work.
        let blocker = d
            .path()
            .join(format!(".registry.json.{}.tmp", std::process::id()));
        let block = async {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while !r.calls().iter().any(|c| c[0] == "sh") {
                assert!(std::time::Instant::now() < deadline, "never resubmitted");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            std::fs::create_dir(&blocker).unwrap();
        };
        let (events, ()) = tokio::join!(run_check(&r, &registry), block);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, RetryEvent::Resubmitted { new: 8, .. })),
            "{events:?}"
        );
        let told = events
            .iter()
            .find(|e| matches!(e, RetryEvent::RecordFailed { .. }))
            .unwrap_or_else(|| panic!("not told: {events:?}"))
            .line();
        assert!(
            told.starts_with("launch L1: job 7 was resubmitted as 8, but its record on this machine could not be updated ("),
            "{told}"
        );
    }

    #[tokio::test]
    async fn node_fail_while_squeue_has_the_job_pending_again_is_slurms_requeue() {
        let (_d, registry) = setup(true);
        let r = node_failed();
        r.on(&["squeue"], vec![FakeReply::ok("7|PENDING\n")]);
        let events = run_check(&r, &registry).await;
        assert!(
            matches!(events.as_slice(), [RetryEvent::Requeued { job_id: 7, state, times: 1, .. }] if state == "NODE_FAIL"),
            "{events:?}"
        );
        assert!(r.calls().iter().all(|c| c[0] != "sh"), "nothing submitted");
        let e = registry.load().unwrap().remove(0);
        assert_eq!((e.attempts.len(), e.attempts[0].state.clone()), (1, None));
    }

    #[tokio::test]
    async fn a_requeued_job_pending_again_and_an_old_job_with_the_same_id() {
        let (_d, registry) = setup(true);
        let r = FakeRemote::new("login1");
        // sacct --duplicates: an unrelated old job 7 (other name), the failed run, the
        // requeued one.
        let out = format!(
            "{}{}{}",
            sacct_row(7, "COMPLETED", "someone-else"),
            sacct_row(7, "NODE_FAIL", "train"),
            sacct_row(7, "PENDING", "train")
        );
        r.on(&["sacct"], vec![FakeReply::ok(out)]);
        let events = run_check(&r, &registry).await;
        assert!(
            matches!(
                events.as_slice(),
                [RetryEvent::Requeued {
                    job_id: 7,
                    times: 1,
                    ..
                }]
            ),
            "{events:?}"
        );
        assert!(r.calls().iter().all(|c| c[0] != "squeue" && c[0] != "sh"));
    }

    #[tokio::test]
    async fn without_requeue_a_node_failure_is_resubmitted_with_the_recorded_checksum() {
        let (_d, registry) = setup(false);
        let r = node_failed();
        r.on(
            &["sh", "-c"],
            vec![FakeReply::ok("slurmdash-job 8 new ab\n")],
        );
        let events = run_check(&r, &registry).await;
        assert!(
            events.iter().any(|e| matches!(
                e,
                RetryEvent::Resubmitted {
                    failed: 7,
                    new: 8,
                    ..
                }
            )),
            "{events:?}"
        );
        let submit = r
            .calls()
            .into_iter()
            .find(|c| c[0] == "sh" && c[2] == crate::launch::stage::submit_script())
            .unwrap();
        assert_eq!(submit.get(7).map(String::as_str), Some("ab"));
        assert_eq!(
            submit.get(8).map(String::as_str),
            Some(""),
            "no guard for a dashboard retry"
        );
        // Kept off the node it failed on, and the user is told.
        assert_eq!(submit.get(11).map(String::as_str), Some("n1"));
        let line = events
            .iter()
            .find(|e| matches!(e, RetryEvent::Resubmitted { .. }))
            .unwrap()
            .line();
        assert_eq!(
            line,
            "job 7 failed on infrastructure: resubmitted as 8 (attempt 2/11), not on n1 where it failed (--exclude)"
        );
    }

    #[tokio::test]
    async fn a_connection_dropped_during_the_resubmission_keeps_the_retry_claimed() {
        let (_d, registry) = setup(false);
        let r = node_failed();
        let submit = crate::launch::stage::submit_script();
        r.on(
            &["sh", "-c", &submit],
            vec![dropped("Connection reset by peer")],
        );
        let events = run_check(&r, &registry).await;
        let reason = events
            .iter()
            .find_map(|e| match e {
                RetryEvent::NotRetried {
                    job_id: 7, reason, ..
                } => Some(reason.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no NotRetried event: {events:?}"));
        assert!(
            reason.contains("the connection to login1 dropped")
                && reason.contains("the retry stays claimed"),
            "{reason}"
        );
        // The claim stays in the registry: attempt 2, no job id yet, so a later check adopts
        // the job if it was queued after all, or submits it once the claim is stale.
        let e = registry.load().unwrap().remove(0);
        let chain: Vec<(u64, Option<String>)> = e
            .attempts
            .iter()
            .map(|a| (a.job_id, a.state.clone()))
            .collect();
        assert_eq!(
            chain,
            vec![(7, Some("NODE_FAIL ERR_INFRA".to_string())), (0, None)],
            "the failed attempt and the claimed one"
        );
        // A check right after submits nothing: the fresh claim is not taken over.
        assert_eq!(submitted(&r), 1);
        run_check(&r, &registry).await;
        assert_eq!(
            submitted(&r),
            1,
            "the claimed attempt was not submitted twice"
        );
        assert_eq!(registry.load().unwrap()[0].attempts.len(), 2);
    }

    #[tokio::test]
    async fn a_stale_claim_whose_resubmission_loses_its_answer_stays_claimed_then_adopts_the_job() {
        let (_d, registry) = setup(false);
        // A dashboard claimed attempt 2 an hour ago and stopped before recording a job.
        let hour_ago = Utc::now() - chrono::Duration::hours(1);
        claimed_at(&registry, hour_ago);
        let r = FakeRemote::new("login1");
        let submit = crate::launch::stage::submit_script();
        r.on(
            &["sh", "-c", &submit],
            vec![
                dropped("Broken pipe"),
                FakeReply::ok("slurmdash-job 8 existing ab\n"),
            ],
        );
        let events = run_check(&r, &registry).await;
        assert!(
            matches!(events.as_slice(), [RetryEvent::NotRetried { job_id: 7, reason, .. }]
                if reason.contains("dropped") && reason.contains("the retry stays claimed")),
            "{events:?}"
        );
        let e = registry.load().unwrap().remove(0);
        let last = e.attempts.last().unwrap();
        assert_eq!((e.attempts.len(), last.job_id), (2, 0), "still claimed");
        assert!(last.submitted_at > hour_ago, "the claim was taken over");

        // Once stale again, the next check submits it; the staging script adopts the job
        // the lost submission had queued.
        registry
            .update("L1", 2, |x| x.attempts[1].submitted_at = hour_ago)
            .unwrap();
        let events = run_check(&r, &registry).await;
        assert!(
            matches!(
                events.as_slice(),
                [RetryEvent::Recovered {
                    job_id: 8,
                    attempt: 2,
                    existing: true,
                    ..
                }]
            ),
            "{events:?}"
        );
        let e = registry.load().unwrap().remove(0);
        assert_eq!((e.attempts.len(), e.job_id), (2, 8));
    }

    /// [`setup`] of a launch an older slurmdash recorded: no checksum.
    fn setup_without_checksum() -> (tempfile::TempDir, Registry) {
        let (d, r) = setup(false);
        assert!(r.update("L1", 1, |x| x.checksum = None).unwrap());
        (d, r)
    }

    fn submitted(r: &FakeRemote) -> usize {
        let submit = crate::launch::stage::submit_script();
        r.calls()
            .iter()
            .filter(|c| c[0] == "sh" && c[2] == submit)
            .count()
    }

    #[tokio::test]
    async fn a_launch_recorded_without_a_checksum_is_never_resubmitted() {
        let (_d, registry) = setup_without_checksum();
        let r = node_failed();
        r.on(
            &["sh", "-c", &crate::launch::stage::submit_script()],
            vec![FakeReply::ok("slurmdash-job 8 new ab\n")],
        );
        let events = run_check(&r, &registry).await;
        let not = events
            .iter()
            .find(|e| matches!(e, RetryEvent::NotRetried { job_id: 7, .. }))
            .unwrap_or_else(|| panic!("{events:?}"));
        assert_eq!(
            not.line(),
            "job 7 failed on infrastructure and was not resubmitted: no checksum of the script was recorded at launch (made by an older slurmdash); relaunch it with L"
        );
        assert_eq!(submitted(&r), 0, "nothing submitted");
        let e = registry.load().unwrap().remove(0);
        assert_eq!(e.attempts.len(), 1, "no attempt claimed");
        assert_eq!(e.checksum, None, "no hash learnt from the cluster");
        // Said once: the failure is recorded, the next check leaves the launch alone.
        assert!(run_check(&r, &registry).await.is_empty());
        assert_eq!(submitted(&r), 0);
    }

    #[tokio::test]
    async fn a_read_only_session_says_why_a_launch_without_a_checksum_will_not_be_resubmitted() {
        let (_d, registry) = setup_without_checksum();
        let r = node_failed();
        let events = check_allowing(&r, &registry, false).await;
        assert!(
            matches!(events.as_slice(), [RetryEvent::NotRetried { reason, .. }] if reason == NO_CHECKSUM),
            "{events:?}"
        );
    }

    #[tokio::test]
    async fn a_stale_claim_of_a_launch_without_a_checksum_is_dropped_not_submitted() {
        let (_d, registry) = setup_without_checksum();
        let hour_ago = Utc::now() - chrono::Duration::hours(1);
        claimed_at(&registry, hour_ago);
        let r = FakeRemote::new("login1");
        r.on(
            &["sh", "-c", &crate::launch::stage::submit_script()],
            vec![FakeReply::ok("slurmdash-job 8 new ab\n")],
        );
        let events = run_check(&r, &registry).await;
        assert!(
            matches!(events.as_slice(), [RetryEvent::NotRetried { job_id: 7, reason, .. }] if reason == NO_CHECKSUM),
            "{events:?}"
        );
        assert_eq!(submitted(&r), 0, "nothing submitted");
        let e = registry.load().unwrap().remove(0);
        assert_eq!((e.attempts.len(), e.job_id), (1, 7), "the claim is gone");
    }
}
