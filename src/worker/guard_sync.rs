//! The dashboard's side of cluster retry guards (`launch::guard`): at start and at each
//! retry check it reads `meta/chain.jsonl` of every guarded launch whose latest attempt is
//! open (one remote command for all), records in the registry what the guards decided
//! (final states, the attempts they submitted, the chain's last line), and tells the retry
//! check which launches to leave alone: a guarded launch is never resubmitted by the
//! dashboard, unless every guard of its latest attempt left without a decision (then the
//! dashboard's own retry takes over).

use chrono::Utc;

use crate::action::Cmd;
use crate::launch::guard::{self, ChainLine};
use crate::payload::RetryEvent;
use crate::registry::{Attempt, Entry, GuardRecord};
use crate::retry::RetryPolicy;
use crate::triage::{Class, Patterns};
use crate::worker::retry::RetryCheck;

/// A form submission gets the cluster guard that `[retry]` asks for.
pub fn with_guard(cmd: Cmd, policy: &RetryPolicy, patterns: &Patterns) -> Cmd {
    match cmd {
        Cmd::Submit {
            cluster,
            mut prepared,
        } => {
            if prepared.guard.is_err() {
                prepared.guard = guard::plan_for(&prepared, policy, patterns, None);
            }
            Cmd::Submit { cluster, prepared }
        }
        other => other,
    }
}

fn class_of(code: &str) -> Option<Class> {
    [
        Class::Complete,
        Class::Error,
        Class::Infra,
        Class::Oom,
        Class::Timeout,
        Class::Program,
        Class::Cancelled,
    ]
    .into_iter()
    .find(|c| c.code() == code)
}

/// Applies the chain's decisions to `e`; returns what changed, for the user.
pub fn apply(e: &mut Entry, lines: &[ChainLine], max_attempts: usize) -> Vec<RetryEvent> {
    let mut events = Vec::new();
    let mut last = None;
    for l in lines.iter().filter(|l| l.is_decision()) {
        last = Some(l.describe());
        let Some(job) = l.job_id() else { continue };
        let class = l.class.as_deref().and_then(class_of);
        if let Some(a) = e
            .attempts
            .iter_mut()
            .find(|a| a.job_id == job && a.state.is_none())
        {
            let state = l.state.clone().unwrap_or_else(|| "UNKNOWN".into());
            a.state = Some(
                format!("{state} {}", l.class.as_deref().unwrap_or(""))
                    .trim()
                    .to_string(),
            );
            events.push(RetryEvent::Finished {
                local_id: e.local_id.clone(),
                job_id: job,
                state,
                class,
            });
            if class == Some(Class::Infra) && l.next_id().is_none() {
                events.push(RetryEvent::NotRetried {
                    local_id: e.local_id.clone(),
                    job_id: job,
                    reason: format!(
                        "the cluster's guard: {}",
                        l.decision.as_deref().unwrap_or("")
                    ),
                });
            }
        }
        if let Some(next) = l.next_id() {
            if !e.attempts.iter().any(|a| a.job_id == next) {
                e.attempts.push(Attempt {
                    job_id: next,
                    submitted_at: chrono::DateTime::parse_from_rfc3339(&l.time)
                        .map(|t| t.with_timezone(&Utc))
                        .unwrap_or_else(|_| Utc::now()),
                    state: None,
                });
                events.push(RetryEvent::Resubmitted {
                    local_id: e.local_id.clone(),
                    failed: job,
                    new: next,
                    attempt: e.attempts.len(),
                    max_attempts,
                });
            }
        }
    }
    if let Some(last) = last {
        e.guard.get_or_insert_with(GuardRecord::default).last = Some(last);
    }
    events
}

/// Reads the chains, records them, and returns the events and the local ids the retry check
/// must leave to the cluster (a guard of the latest attempt is still queued or running).
pub async fn sync(
    c: &RetryCheck<'_>,
    entries: &[Entry],
) -> Result<(Vec<RetryEvent>, Vec<String>), String> {
    let guarded: Vec<&Entry> = entries
        .iter()
        .filter(|e| {
            e.guard.is_some()
                && e.attempts
                    .last()
                    .is_some_and(|a| a.state.is_none() && a.job_id != 0)
        })
        .collect();
    if guarded.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let dirs: Vec<String> = guarded.iter().map(|e| e.job_dir.clone()).collect();
    let argv = guard::read_chains_argv(&dirs);
    let out = crate::worker::fetch::stdout_of(c.remote, &argv, None, c.timeout)
        .await
        .map_err(|e| format!("reading the retry guards' chain.jsonl: {e}"))?;
    let chains = guard::split_chains(&out);
    let mut events = Vec::new();
    // (local id, guards armed for its open latest attempt)
    let mut waiting: Vec<(String, Vec<u64>)> = Vec::new();
    for e in guarded {
        let path = guard::chain_path(&e.job_dir);
        let lines: &[ChainLine] = chains
            .iter()
            .find(|(p, _)| *p == path)
            .map_or(&[], |(_, l)| l.as_slice());
        let mut x = e.clone();
        apply(&mut x, lines, c.policy.max_attempts());
        if x != *e {
            let mut applied = Vec::new();
            let ok = c.registry.update(&e.local_id, e.attempts.len(), |y| {
                applied = apply(y, lines, c.policy.max_attempts());
            });
            if matches!(ok, Ok(true)) {
                events.extend(applied);
            }
        }
        if let Some(open) = x.attempts.last().filter(|a| a.state.is_none()) {
            let guards: Vec<u64> = lines
                .iter()
                .filter(|l| l.event == "armed" && l.job_id() == Some(open.job_id))
                .filter_map(|l| l.guard.as_deref().and_then(|g| g.parse().ok()))
                .collect();
            if !guards.is_empty() {
                waiting.push((e.local_id.clone(), guards));
            }
        }
    }
    let all: Vec<u64> = waiting.iter().flat_map(|(_, g)| g.clone()).collect();
    let live = if all.is_empty() {
        Vec::new()
    } else {
        live(c, &all).await?
    };
    let leave = waiting
        .into_iter()
        .filter(|(_, g)| g.iter().any(|id| live.contains(id)))
        .map(|(l, _)| l)
        .collect();
    Ok((events, leave))
}

/// The guard ids among `ids` that slurmctld still has queued or running.
async fn live(c: &RetryCheck<'_>, ids: &[u64]) -> Result<Vec<u64>, String> {
    let argv = vec![
        "squeue".to_string(),
        "--noheader".into(),
        format!(
            "--jobs={}",
            ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
        ),
        "--format=%i|%T".into(),
    ];
    let out = c
        .remote
        .run(&argv, None, c.timeout)
        .await
        .map_err(|e| e.to_string())?;
    if !out.success() {
        if out.stderr_lossy().contains("Invalid job id") {
            return Ok(Vec::new());
        }
        return Err(crate::worker::fetch::failure(c.remote, &argv, &out));
    }
    Ok(out
        .stdout_lossy()
        .lines()
        .filter_map(|l| l.split_once('|'))
        .filter(|(_, st)| {
            matches!(
                st.trim(),
                "PENDING" | "RUNNING" | "CONFIGURING" | "SUSPENDED" | "REQUEUED" | "RESIZING"
            )
        })
        .filter_map(|(id, _)| id.trim().parse().ok())
        .collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        let mut e = crate::registry::tests::entry("L1", 5);
        e.guard = Some(GuardRecord::default());
        e
    }

    #[test]
    fn a_retry_by_the_guard_adds_the_attempt_and_a_program_error_ends_the_chain() {
        let mut e = entry();
        let lines = guard::parse_chain(concat!(
            "{\"time\":\"2026-11-24T01:00:00Z\",\"event\":\"armed\",\"job\":\"5\",\"attempt\":1,\"guard\":\"6\"}\n",
            "{\"time\":\"2026-11-24T02:00:00Z\",\"event\":\"decision\",\"job\":\"5\",\"attempt\":1,\"state\":\"FAILED\",\"class\":\"ERR_INFRA\",\"evidence\":\"main.err: NCCL WARN NET/IB : x\",\"decision\":\"retried as 7\",\"next\":\"7\"}\n",
            "{\"time\":\"2026-11-24T03:00:00Z\",\"event\":\"decision\",\"job\":\"7\",\"attempt\":2,\"state\":\"FAILED\",\"class\":\"ERR_PROGRAM\",\"evidence\":\"exit code 1\",\"decision\":\"not retried: ERR_PROGRAM (exit code 1)\"}\n",
        ));
        let ev = apply(&mut e, &lines, 11);
        assert_eq!(e.attempts.len(), 2);
        assert_eq!(e.attempts[0].state.as_deref(), Some("FAILED ERR_INFRA"));
        assert_eq!(e.attempts[1].job_id, 7);
        assert_eq!(e.attempts[1].state.as_deref(), Some("FAILED ERR_PROGRAM"));
        assert!(ev.iter().any(|x| matches!(
            x,
            RetryEvent::Resubmitted {
                failed: 5,
                new: 7,
                ..
            }
        )));
        assert_eq!(
            e.guard.unwrap().last.as_deref(),
            Some("attempt 2 (job 7): not retried: ERR_PROGRAM (exit code 1)")
        );
        // Applying the same chain again changes nothing.
        let mut again = e_after(&lines);
        let before = again.clone();
        assert!(apply(&mut again, &lines, 11).is_empty());
        assert_eq!(again, before);
    }

    fn e_after(lines: &[ChainLine]) -> Entry {
        let mut e = entry();
        apply(&mut e, lines, 11);
        e
    }

    async fn check_with(remote: &crate::remote::fake::FakeRemote) -> Vec<RetryEvent> {
        let d = tempfile::tempdir().unwrap();
        let registry = crate::registry::Registry::open(d.path());
        let mut e = entry();
        e.attempts[0].state = None;
        registry.add(e).unwrap();
        let patterns = Patterns::builtin();
        let secret = |_: &str| None;
        let c = RetryCheck {
            remote,
            registry: &registry,
            cluster: "dev",
            policy: RetryPolicy::default(),
            patterns: &patterns,
            timeout: std::time::Duration::from_secs(5),
            secret: &secret,
            allow_submit: true,
        };
        crate::worker::retry::check(&c).await.unwrap().0
    }

    const ARMED: &str = "==> /lustre/r/L1/meta/chain.jsonl\n{\"time\":\"t\",\"event\":\"armed\",\"job\":\"5\",\"attempt\":1,\"guard\":\"6\"}\n";

    #[tokio::test]
    async fn a_launch_whose_guard_still_waits_is_left_to_the_cluster() {
        use crate::remote::fake::{FakeRemote, FakeReply};
        let r = FakeRemote::new("login1");
        r.on(
            &["sh", "-c", guard::READ_CHAINS],
            vec![FakeReply::ok(ARMED)],
        );
        r.on(&["squeue"], vec![FakeReply::ok("6|PENDING\n")]);
        let events = check_with(&r).await;
        assert!(events.is_empty(), "{events:?}");
        assert!(r.calls().iter().all(|c| c[0] != "sacct"), "{:?}", r.calls());
    }

    #[tokio::test]
    async fn when_every_guard_left_without_a_decision_the_dashboard_takes_over() {
        use crate::remote::fake::{FakeRemote, FakeReply};
        let r = FakeRemote::new("login1");
        r.on(
            &["sh", "-c", guard::READ_CHAINS],
            vec![FakeReply::ok(ARMED)],
        );
        r.on(
            &["squeue"],
            vec![FakeReply::fail(
                1,
                "slurm_load_jobs error: Invalid job id specified",
            )],
        );
        r.on(&["sacct"], vec![FakeReply::ok("")]);
        check_with(&r).await;
        assert!(r.calls().iter().any(|c| c[0] == "sacct"), "{:?}", r.calls());
    }
}
