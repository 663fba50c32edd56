//! The dashboard's side of cluster retry guards (`launch::guard`): at start and at each
//! retry check it reads `meta/chain.jsonl` of every guarded launch whose latest attempt is
//! open (one remote command for all), records in the registry what the guards decided
//! (final states, the attempts they submitted, the chain's last line), and tells the retry
//! check which launches to leave alone: a guarded launch is never resubmitted by the
//! dashboard, unless every guard of its latest attempt left without a decision (then the
//! dashboard's own retry takes over).
//!
//! The chain is a file in the job directory, which the job itself (and so whatever it runs)
//! can write. A line is taken only about an attempt the registry already has, and a job it
//! names as the next attempt is added only when Slurm says that job is the user's, has the
//! launch's name and was submitted from the launch's directory (as the guard submits it);
//! any other is ignored and reported. Guards count only when they are the user's
//! `sdguard-<name>` jobs.

use std::time::Duration;

use chrono::Utc;

use crate::launch::guard::{self, ChainLine};
use crate::payload::RetryEvent;
use crate::registry::{Attempt, Entry, GuardRecord, Registry};
use crate::remote::Remote;
use crate::retry::RetryPolicy;
use crate::triage::Class;

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

/// What Slurm says of a job a chain names (sacct or squeue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFacts {
    pub id: u64,
    pub user: String,
    pub name: String,
    pub work_dir: String,
    /// sacct's SubmitLine, or squeue's command (the script).
    pub submit: String,
}

/// `sh -c OWNERS_SCRIPT sh IDS SEP`: the user's name, then what sacct and squeue know of
/// each job (`id SEP user SEP name SEP workdir SEP submit line or command`). sacct may not
/// have a job submitted a moment ago; squeue no longer has one that ended long ago.
pub const OWNERS_SCRIPT: &str = r#"id -un
sacct -X --noheader --parsable2 --delimiter="$2" --jobs="$1" --format=JobID,User,JobName,WorkDir,SubmitLine 2>/dev/null
squeue --noheader --jobs="$1" --format="%i$2%u$2%j$2%Z$2%o" 2>/dev/null
exit 0
"#;

pub fn owners_argv(ids: &[u64]) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        OWNERS_SCRIPT.into(),
        "sh".into(),
        ids.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
        crate::slurm::command::FIELD_SEP.to_string(),
    ]
}

/// The output of [`OWNERS_SCRIPT`]: the user, and each record (lines of another shape,
/// e.g. a submit line broken over lines, are skipped).
pub fn parse_owners(out: &str) -> (String, Vec<JobFacts>) {
    let mut lines = out.lines();
    let me = lines.next().unwrap_or("").trim().to_string();
    let facts = lines
        .filter_map(|l| {
            let f: Vec<&str> = l.splitn(5, crate::slurm::command::FIELD_SEP).collect();
            let [id, user, name, work_dir, submit] = f[..] else {
                return None;
            };
            Some(JobFacts {
                id: id.trim().parse().ok()?,
                user: user.trim().to_string(),
                name: name.to_string(),
                work_dir: work_dir.trim().to_string(),
                submit: submit.to_string(),
            })
        })
        .collect();
    (me, facts)
}

/// Whether a job a chain names as the next attempt belongs to the launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    Launch,
    /// Not the user's, or not this launch's: why.
    Foreign(String),
    /// Slurm has no record of it that says (yet: accounting can lag a moment behind). The
    /// launch is left alone until it has one.
    Unknown,
}

/// Judges job `id` for launch `e` from what Slurm said (`me` is the cluster user). The guard
/// resubmits the launch's staged script from the job directory, so a job of the launch is
/// the user's, carries the launch's name, and ran from or names its job directory.
pub fn owner_of(e: &Entry, me: &str, facts: &[JobFacts], id: u64) -> Owner {
    let records: Vec<&JobFacts> = facts.iter().filter(|f| f.id == id).collect();
    if let Some(f) = records.iter().find(|f| me.is_empty() || f.user != me) {
        return Owner::Foreign(format!("job {id} belongs to {}, not to you ({me})", f.user));
    }
    // For a moment after a job ends, sacct can hold a record of it without its submission
    // (named `allocation`, no work directory, no submit line): it says nothing yet.
    let complete: Vec<&&JobFacts> = records
        .iter()
        .filter(|f| !f.work_dir.is_empty() || !f.submit.is_empty())
        .collect();
    if complete.is_empty() {
        return Owner::Unknown;
    }
    let dir = e.job_dir.trim_end_matches('/');
    let below = format!("{dir}/");
    for f in complete {
        if f.name != e.name {
            return Owner::Foreign(format!(
                "job {id} is named `{}`, not `{}` like the launch",
                f.name, e.name
            ));
        }
        if f.work_dir != dir && !f.work_dir.starts_with(&below) && !f.submit.contains(&below) {
            return Owner::Foreign(format!(
                "job {id} was not submitted from the launch's directory {dir}"
            ));
        }
    }
    Owner::Launch
}

/// The jobs `lines` name as next attempts of `e` that it does not have yet, following the
/// chain (the next attempt of a claimed one too: a guard may have resubmitted several
/// times while no dashboard was open): the ones to ask Slurm about.
pub fn claimed(e: &Entry, lines: &[ChainLine]) -> Vec<u64> {
    let mut known: Vec<u64> = e.attempts.iter().map(|a| a.job_id).collect();
    let mut out = Vec::new();
    loop {
        let found: Vec<u64> = lines
            .iter()
            .filter(|l| l.is_decision())
            .filter(|l| l.job_id().is_some_and(|j| known.contains(&j)))
            .filter_map(ChainLine::next_id)
            .filter(|n| !known.contains(n))
            .collect();
        if found.is_empty() {
            return out;
        }
        for n in found {
            if !known.contains(&n) {
                known.push(n);
                out.push(n);
            }
        }
    }
}

/// Applies the chain's decisions to `e`; returns what changed, for the user. A decision
/// about a job that is not an attempt of `e` is skipped; one naming a next attempt counts
/// only when `owner` says that job is the launch's (a foreign one is ignored and reported;
/// one Slurm does not know yet waits for a later check).
pub fn apply(
    e: &mut Entry,
    lines: &[ChainLine],
    max_attempts: usize,
    owner: &dyn Fn(u64) -> Owner,
) -> Vec<RetryEvent> {
    let mut events = Vec::new();
    let mut last = None;
    for l in lines.iter().filter(|l| l.is_decision()) {
        let Some(job) = l.job_id() else { continue };
        if !e.attempts.iter().any(|a| a.job_id == job) {
            continue;
        }
        let next = l
            .next_id()
            .filter(|n| !e.attempts.iter().any(|a| a.job_id == *n));
        if let Some(n) = next {
            match owner(n) {
                Owner::Launch => {}
                Owner::Foreign(reason) => {
                    events.push(RetryEvent::Ignored {
                        local_id: e.local_id.clone(),
                        job_id: n,
                        reason,
                    });
                    continue;
                }
                Owner::Unknown => continue,
            }
        }
        last = Some(l.describe());
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
        if let Some(next) = next {
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
                resumed: l
                    .decision
                    .as_deref()
                    .filter(|d| d.starts_with("resumed after "))
                    .map(str::to_string),
                // `retried as 813, not on gpu07 where it failed (--exclude=gpu07)`
                excluded: l
                    .decision
                    .as_deref()
                    .and_then(|d| d.split_once(", not on "))
                    .and_then(|(_, r)| r.split_once(" where it failed"))
                    .map(|(n, _)| n.to_string()),
            });
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
    remote: &dyn Remote,
    registry: &Registry,
    policy: &RetryPolicy,
    timeout: Duration,
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
    let out = crate::io::fetch::stdout_of(remote, &argv, None, timeout)
        .await
        .map_err(|e| format!("reading the retry guards' chain.jsonl: {e}"))?;
    let chains = guard::split_chains(&out);
    let lines_of = |e: &Entry| -> &[ChainLine] {
        let path = guard::chain_path(&e.job_dir);
        chains
            .iter()
            .find(|(p, _)| *p == path)
            .map_or(&[], |(_, l)| l.as_slice())
    };
    // What Slurm says of every job a chain claims as a new attempt, in one command.
    let mut ask: Vec<u64> = guarded
        .iter()
        .flat_map(|e| claimed(e, lines_of(e)))
        .collect();
    ask.sort_unstable();
    ask.dedup();
    let (me, facts) = if ask.is_empty() {
        (String::new(), Vec::new())
    } else {
        let argv = owners_argv(&ask);
        let out = crate::io::fetch::stdout_of(remote, &argv, None, timeout)
            .await
            .map_err(|e| format!("asking Slurm whose jobs the retry guards' chains name: {e}"))?;
        parse_owners(&out)
    };
    let mut events = Vec::new();
    // (local id, the name its guards carry, guards armed for its open latest attempt)
    let mut waiting: Vec<(String, String, Vec<u64>)> = Vec::new();
    // Launches whose guard names a new attempt Slurm cannot vouch for yet: neither recorded
    // nor retried by the dashboard this time.
    let mut pending: Vec<String> = Vec::new();
    for e in guarded {
        let lines = lines_of(e);
        let owner = |id: u64| owner_of(e, &me, &facts, id);
        if claimed(e, lines)
            .into_iter()
            .any(|n| owner(n) == Owner::Unknown)
        {
            pending.push(e.local_id.clone());
        }
        let mut x = e.clone();
        let seen = apply(&mut x, lines, policy.max_attempts(), &owner);
        if x != *e {
            let mut applied = Vec::new();
            let ok = registry.update(&e.local_id, e.attempts.len(), |y| {
                applied = apply(y, lines, policy.max_attempts(), &owner);
            });
            if matches!(ok, Ok(true)) {
                events.extend(applied);
            }
        } else {
            // Only ignored lines: nothing to record, but the user hears of them.
            events.extend(seen);
        }
        if let Some(open) = x.attempts.last().filter(|a| a.state.is_none()) {
            let guards: Vec<u64> = lines
                .iter()
                .filter(|l| l.event == "armed" && l.job_id() == Some(open.job_id))
                .filter_map(|l| l.guard.as_deref().and_then(|g| g.parse().ok()))
                .collect();
            if !guards.is_empty() {
                waiting.push((e.local_id.clone(), format!("sdguard-{}", e.name), guards));
            }
        }
    }
    let all: Vec<u64> = waiting.iter().flat_map(|(_, _, g)| g.clone()).collect();
    let live = if all.is_empty() {
        Vec::new()
    } else {
        live(remote, timeout, &all).await?
    };
    let leave = waiting
        .into_iter()
        .filter(|(_, name, g)| {
            g.iter()
                .any(|id| live.iter().any(|(l, n)| l == id && n == name))
        })
        .map(|(l, _, _)| l)
        .chain(pending)
        .collect();
    Ok((events, leave))
}

/// The guard ids among `ids` that slurmctld still has queued or running as the user's
/// jobs, with their names.
async fn live(
    remote: &dyn Remote,
    timeout: Duration,
    ids: &[u64],
) -> Result<Vec<(u64, String)>, String> {
    let sep = crate::slurm::command::FIELD_SEP;
    let argv = vec![
        "squeue".to_string(),
        "--me".into(),
        "--noheader".into(),
        format!(
            "--jobs={}",
            ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
        ),
        format!("--format=%i{sep}%T{sep}%j"),
    ];
    let Some(out) = crate::io::fetch::squeue_ids(remote, &argv, timeout).await? else {
        return Ok(Vec::new());
    };
    Ok(out
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, sep);
            Some((f.next()?, f.next()?, f.next()?))
        })
        .filter(|(_, st, _)| {
            matches!(
                st.trim(),
                "PENDING" | "RUNNING" | "CONFIGURING" | "SUSPENDED" | "REQUEUED" | "RESIZING"
            )
        })
        .filter_map(|(id, _, name)| Some((id.trim().parse().ok()?, name.to_string())))
        .collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::io::retry::RetryCheck;
    use crate::remote::fake::{FakeRemote, FakeReply};
    use crate::triage::Patterns;

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
        let ev = apply(&mut e, &lines, 11, &|_| Owner::Launch);
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
        assert!(apply(&mut again, &lines, 11, &|_| Owner::Launch).is_empty());
        assert_eq!(again, before);
    }

    #[test]
    fn a_chain_of_several_resubmissions_made_while_no_dashboard_ran_is_followed_to_its_end() {
        let mut e = entry();
        let lines = guard::parse_chain(concat!(
            "{\"time\":\"2026-11-24T02:00:00Z\",\"event\":\"decision\",\"job\":\"5\",\"attempt\":1,\"state\":\"TIMEOUT\",\"class\":\"ERR_TIMEOUT\",\"evidence\":\"state TIMEOUT\",\"decision\":\"resumed after TIMEOUT as 7 (resume 1 of 5)\",\"next\":\"7\"}\n",
            "{\"time\":\"2026-11-24T03:00:00Z\",\"event\":\"decision\",\"job\":\"7\",\"attempt\":2,\"state\":\"TIMEOUT\",\"class\":\"ERR_TIMEOUT\",\"evidence\":\"state TIMEOUT\",\"decision\":\"resumed after TIMEOUT as 9 (resume 2 of 5)\",\"next\":\"9\"}\n",
        ));
        // Both new attempts are asked about in the one command, so both can be recorded.
        assert_eq!(claimed(&e, &lines), [7, 9]);
        let ev = apply(&mut e, &lines, 11, &|_| Owner::Launch);
        let said: Vec<String> = ev
            .iter()
            .filter(|x| matches!(x, RetryEvent::Resubmitted { .. }))
            .map(RetryEvent::line)
            .collect();
        assert_eq!(
            said,
            [
                "job 5 resumed after TIMEOUT as 7 (resume 1 of 5)",
                "job 7 resumed after TIMEOUT as 9 (resume 2 of 5)"
            ]
        );
        let ids = job_ids(&e);
        assert_eq!(ids, [5, 7, 9]);
        assert_eq!(e.attempts[2].state, None);
    }

    /// The job ids of `e`'s attempts, in order.
    fn job_ids(e: &Entry) -> Vec<u64> {
        e.attempts.iter().map(|a| a.job_id).collect()
    }

    fn e_after(lines: &[ChainLine]) -> Entry {
        let mut e = entry();
        apply(&mut e, lines, 11, &|_| Owner::Launch);
        e
    }

    /// A decision of the guard on the launch's job 5, retried as `next`.
    fn retried_as(next: &str) -> String {
        format!("{{\"time\":\"2026-11-24T02:00:00Z\",\"event\":\"decision\",\"job\":\"5\",\"attempt\":1,\"state\":\"FAILED\",\"class\":\"ERR_INFRA\",\"evidence\":\"x\",\"decision\":\"retried as {next}\",\"next\":\"{next}\"}}\n")
    }

    #[test]
    fn a_planted_line_naming_a_job_that_is_not_the_launchs_is_ignored_and_reported() {
        let mut e = entry();
        // Planted before the guard's own line (retried as 7, which is the launch's).
        let text = retried_as("900") + &retried_as("7");
        let lines = guard::parse_chain(&text);
        assert_eq!(claimed(&e, &lines), [900, 7]);
        let owner = |id: u64| match id {
            7 => Owner::Launch,
            _ => Owner::Foreign(format!("job {id} belongs to alice, not to you (sduser)")),
        };
        let ev = apply(&mut e, &lines, 11, &owner);
        let ids = job_ids(&e);
        assert_eq!(ids, [5, 7]);
        assert!(
            matches!(
                &ev[0],
                RetryEvent::Ignored { job_id: 900, reason, .. } if reason.contains("alice")
            ),
            "{ev:?}"
        );
        assert!(ev[0]
            .line()
            .contains("chain.jsonl names job 900 as a retry, ignored"));
        // Alone, it changes nothing: the attempt stays open, no state is taken from it.
        let mut e = entry();
        let lines = guard::parse_chain(&retried_as("900"));
        let ev = apply(&mut e, &lines, 11, &owner);
        assert_eq!(e, entry());
        assert_eq!(ev.len(), 1);
        // A job Slurm does not know (yet) waits; a line about a job that is not an attempt
        // of the launch is skipped.
        let ev = apply(&mut e, &lines, 11, &|_| Owner::Unknown);
        assert!(ev.is_empty() && e == entry());
        let foreign_job = text.replace("\"job\":\"5\"", "\"job\":\"6\"");
        let lines = guard::parse_chain(&foreign_job);
        assert!(claimed(&e, &lines).is_empty());
        assert!(apply(&mut e, &lines, 11, &|_| Owner::Launch).is_empty());
        assert_eq!(e, entry());
    }

    #[test]
    fn a_job_is_the_launchs_when_it_is_the_users_with_its_name_from_its_directory() {
        let e = entry();
        let sep = crate::slurm::command::FIELD_SEP;
        let row = |id: u64, user: &str, name: &str, wd: &str, submit: &str| {
            format!("{id}{sep}{user}{sep}{name}{sep}{wd}{sep}{submit}\n")
        };
        let out = String::from("sduser\n")
            // The guard's resubmission: from the job directory.
            + &row(7, "sduser", "train", "/lustre/r/L1", "sbatch --parsable --hold --export=ALL /lustre/r/L1/sbatch/job_L1.sbatch")
            // squeue's view of a dashboard's: the script is in the job directory.
            + &row(8, "sduser", "train", "/home/sduser", "/lustre/r/L1/sbatch/job_L1.sbatch")
            + &row(9, "alice", "train", "/lustre/r/L1", "sbatch /lustre/r/L1/sbatch/job_L1.sbatch")
            + &row(10, "sduser", "other", "/lustre/r/L1", "sbatch x")
            + &row(11, "sduser", "train", "/lustre/r/L10", "sbatch /lustre/r/L10/x.sbatch")
            // sacct a moment after a job ended, before its submission is recorded.
            + &row(13, "sduser", "allocation", "", "")
            + &row(14, "alice", "allocation", "", "")
            + "12|torn line\n";
        let (me, facts) = parse_owners(&out);
        assert_eq!((me.as_str(), facts.len()), ("sduser", 7));
        let o = |id| owner_of(&e, &me, &facts, id);
        assert_eq!(o(7), Owner::Launch);
        assert_eq!(o(8), Owner::Launch);
        assert!(matches!(o(9), Owner::Foreign(r) if r.contains("belongs to alice")));
        assert!(matches!(o(10), Owner::Foreign(r) if r.contains("named `other`")));
        assert!(
            matches!(o(11), Owner::Foreign(r) if r.contains("not submitted from the launch's directory /lustre/r/L1"))
        );
        assert_eq!(o(12), Owner::Unknown);
        assert_eq!(o(13), Owner::Unknown);
        assert!(matches!(o(14), Owner::Foreign(r) if r.contains("belongs to alice")));
        // Without the user's name nothing is the launch's.
        assert!(matches!(owner_of(&e, "", &facts, 7), Owner::Foreign(_)));
    }

    async fn check_with(remote: &FakeRemote) -> (Vec<RetryEvent>, Vec<Entry>) {
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
        crate::io::retry::check(&c).await.unwrap()
    }

    /// The line [`guard::READ_CHAINS`] prints before the launch's chain.
    const CHAIN: &str = "==> /lustre/r/L1/meta/chain.jsonl\n";
    const ARMED: &str = "==> /lustre/r/L1/meta/chain.jsonl\n{\"time\":\"t\",\"event\":\"armed\",\"job\":\"5\",\"attempt\":1,\"guard\":\"6\"}\n";

    /// A cluster whose guards' chains read `chains`.
    fn reading(chains: &str) -> FakeRemote {
        let r = FakeRemote::new("login1");
        r.on(
            &["sh", "-c", guard::READ_CHAINS],
            vec![FakeReply::ok(chains)],
        );
        r
    }

    #[tokio::test]
    async fn a_launch_whose_guard_still_waits_is_left_to_the_cluster() {
        let r = reading(ARMED);
        r.on(
            &["squeue"],
            vec![FakeReply::ok("6\u{1f}PENDING\u{1f}sdguard-train\n")],
        );
        let (events, _) = check_with(&r).await;
        assert!(events.is_empty(), "{events:?}");
        assert!(r.calls().iter().all(|c| c[0] != "sacct"), "{:?}", r.calls());
    }

    #[tokio::test]
    async fn when_every_guard_left_without_a_decision_the_dashboard_takes_over() {
        let r = reading(ARMED);
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

    #[tokio::test]
    async fn a_guard_that_is_not_the_users_sdguard_job_does_not_hold_the_launch() {
        let r = reading(ARMED);
        // Job 6 is queued, but under another name: not this launch's guard.
        r.on(
            &["squeue"],
            vec![FakeReply::ok("6\u{1f}PENDING\u{1f}something-else\n")],
        );
        r.on(&["sacct"], vec![FakeReply::ok("")]);
        check_with(&r).await;
        let calls = r.calls();
        assert!(calls.iter().any(|c| c[0] == "sacct"), "{calls:?}");
        let squeue = calls.iter().find(|c| c[0] == "squeue").unwrap();
        assert!(squeue.contains(&"--me".to_string()), "{squeue:?}");
    }

    #[tokio::test]
    async fn a_planted_line_is_checked_with_slurm_and_reported_not_recorded() {
        let r = reading(&format!("{CHAIN}{}", retried_as("900")));
        r.on(
            &["sh", "-c", OWNERS_SCRIPT],
            vec![FakeReply::ok(
                "sduser\n900\u{1f}alice\u{1f}train\u{1f}/home/alice\u{1f}sbatch x\n",
            )],
        );
        r.on(&["sacct"], vec![FakeReply::ok("")]);
        let (events, entries) = check_with(&r).await;
        let ids = job_ids(&entries[0]);
        assert_eq!(ids, [5], "the planted job was recorded");
        assert!(
            events.iter().any(|e| matches!(e, RetryEvent::Ignored { job_id: 900, reason, .. } if reason.contains("belongs to alice"))),
            "{events:?}"
        );
        let owners = r
            .calls()
            .into_iter()
            .find(|c| c.get(2).map(String::as_str) == Some(OWNERS_SCRIPT))
            .unwrap();
        assert_eq!(owners[4], "900");
    }

    #[tokio::test]
    async fn a_retry_slurm_cannot_vouch_for_yet_holds_the_launch() {
        let r = reading(&format!("{CHAIN}{}", retried_as("7")));
        // sacct's record of job 7 a moment after it ended, before its submission is in.
        r.on(
            &["sh", "-c", OWNERS_SCRIPT],
            vec![FakeReply::ok(
                "sduser\n7\u{1f}sduser\u{1f}allocation\u{1f}\u{1f}\n",
            )],
        );
        r.on(&["sacct"], vec![FakeReply::ok("")]);
        let (events, entries) = check_with(&r).await;
        assert!(events.is_empty(), "{events:?}");
        let ids = job_ids(&entries[0]);
        assert_eq!(ids, [5]);
        // Neither recorded nor looked at by the dashboard's own retry this time.
        assert!(r.calls().iter().all(|c| c[0] != "sacct"), "{:?}", r.calls());
    }
}
