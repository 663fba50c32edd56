//! The refresh: one `squeue --local` (its `%S` is the start estimate of a pending job, so
//! no `squeue --start`) and, only when jobs left squeue, sacct for them, in ONE remote exec.
//! slurmctld sees two RPCs (job info and partition info); slurmdbd sees nothing unless a job
//! left the queue.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

pub use crate::payload::PollExtra;
use crate::remote::Remote;
use crate::slurm::batch::{self, SectionRef};
use crate::slurm::command::{self, SqueueQuery};
use crate::slurm::model::JobRecord;
use crate::slurm::model::{Job, JobId};
use crate::slurm::parse::read_sacct;
use crate::slurm::parse::squeue::read_squeue_reusing;
pub use crate::slurm::parse::squeue::Reuse;
use crate::slurm::statecheck;

/// At most this many ids per sacct call; the rest wait for the next refresh.
pub const SACCT_MAX_IDS: usize = 200;

/// squeue, then sacct when `gone` is not empty.
pub fn commands(query: &SqueueQuery, gone: &[JobId]) -> Vec<Vec<String>> {
    let mut v = vec![command::squeue(query)];
    if !gone.is_empty() {
        v.push(command::sacct_jobs(
            &gone[..gone.len().min(SACCT_MAX_IDS)],
            command::RECENT,
        ));
    }
    v
}

fn problem(name: &str, s: &SectionRef<'_>) -> String {
    let said = s.stderr.trim();
    let code = s
        .code
        .map_or_else(|| "no exit status".to_string(), |c| format!("exit {c}"));
    if said.is_empty() {
        format!("{name} failed ({code})")
    } else {
        format!("{name} failed ({code}): {said}")
    }
}

/// Interprets the sections of [`commands`]. squeue failing fails the refresh; the others only
/// add a problem.
pub fn parse(sections: &[SectionRef<'_>], gone: &[JobId]) -> Result<(Vec<Job>, PollExtra), String> {
    parse_reusing(sections, gone, &mut Reuse::default(), &|_| {})
}

/// [`parse`], reusing the unchanged records of the last answer (see [`Reuse`]); `label`
/// marks each record read anew with its cluster.
pub fn parse_reusing(
    sections: &[SectionRef<'_>],
    gone: &[JobId],
    last: &mut Reuse,
    label: &(dyn Fn(&mut JobRecord) + Sync),
) -> Result<(Vec<Job>, PollExtra), String> {
    let Some(q) = sections.first() else {
        return Err("the refresh printed nothing".into());
    };
    if !q.success() {
        return Err(problem("squeue", q));
    }
    // A record that does not read spoils only its own row (marked, with what could be
    // read); the others refresh.
    let queue = read_squeue_reusing(q.stdout, last, label);
    let jobs = queue.items;
    let mut extra = PollExtra::default();
    extra
        .problems
        .extend(queue.problems.iter().map(|e| format!("squeue: {e}")));
    if let Some(s) = sections.get(1) {
        extra.asked = gone[..gone.len().min(SACCT_MAX_IDS)].to_vec();
        if !s.success() {
            extra.problems.push(problem("sacct", s));
        } else {
            let p = read_sacct(s.stdout);
            extra.finished = p.items;
            extra
                .problems
                .extend(p.problems.iter().map(|e| format!("sacct: {e}")));
        }
    }
    Ok((jobs, extra))
}

/// One refresh, one remote exec.
pub async fn poll(
    remote: &dyn Remote,
    query: &SqueueQuery,
    gone: &[JobId],
    timeout: Duration,
) -> Result<(Vec<Job>, PollExtra), String> {
    let last = Mutex::new(Reuse::default());
    poll_reusing(remote, query, gone, timeout, &last, &|_| {}).await
}

/// [`poll`], reusing the unchanged records of the refresh before (the dashboard's worker
/// keeps `last` from one refresh to the next; it is locked only while the answer is read).
pub async fn poll_reusing(
    remote: &dyn Remote,
    query: &SqueueQuery,
    gone: &[JobId],
    timeout: Duration,
    last: &Mutex<Reuse>,
    label: &(dyn Fn(&mut JobRecord) + Sync),
) -> Result<(Vec<Job>, PollExtra), String> {
    let cmds = commands(query, gone);
    let b = batch::script(&cmds).map_err(|e| format!("building the refresh command: {e}"))?;
    let argv = batch::argv(&b);
    let out = remote
        .run(&argv, None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    // squeue's answer is read where it lies: at 100,000 jobs each copy is about 20 MB.
    let (stdout, stderr) = out.into_text();
    let sections = batch::split_ref(&b, &stdout, &stderr).map_err(|e| {
        let said = &stderr;
        format!(
            "refresh (squeue{}) on {}: {e}{}",
            if gone.is_empty() { "" } else { ", sacct" },
            remote.host().unwrap_or_else(|| "the cluster".into()),
            if said.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", said.trim())
            }
        )
    })?;
    let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
    parse_reusing(&sections, gone, &mut last, label)
}

/// The cheap state check of the jobs with these ids (`squeue --only-job-state`, 1 slurmctld
/// RPC): the records still in the queue. Its own remote exec, no sacct.
pub async fn check(
    remote: &dyn Remote,
    ids: &[u64],
    timeout: Duration,
) -> Result<Vec<statecheck::Seen>, String> {
    let argv = statecheck::argv(ids);
    let out = remote
        .run(&argv, None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    if !out.success() {
        let said = out.stderr_lossy();
        return Err(format!(
            "squeue --only-job-state failed: {}",
            said.trim().lines().next().unwrap_or("no message")
        ));
    }
    statecheck::parse(&out.stdout_lossy()).map_err(|e| e.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::remote::fake::{FakeRemote, FakeReply};

    #[tokio::test]
    async fn one_exec_and_sacct_only_for_departed_ids() {
        let r = FakeRemote::new("login1");
        // The fake cannot run sh: it answers with empty output, which split rejects.
        r.on(&["sh", "-c"], vec![FakeReply::ok("")]);
        let gone: Vec<JobId> = vec!["5".parse().unwrap()];
        let e = poll(&r, &SqueueQuery::default(), &gone, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(e.contains("refresh (squeue, sacct)"), "{e}");
        assert_eq!(r.stats().execs, 1);
        let script = &r.calls()[0][2];
        assert!(script.contains("--jobs=5"), "{script}");
        assert_eq!(script.matches("squeue").count(), 1, "one squeue: {script}");
        // No `squeue --start` (sacct's `--starttime` is another option).
        assert!(
            !script.split_whitespace().any(|w| w == "--start"),
            "{script}"
        );
        assert!(
            script.contains("--starttime=now-5184000seconds"),
            "{script}"
        );
        assert_eq!(commands(&SqueueQuery::default(), &[]).len(), 1);
        assert_eq!(commands(&SqueueQuery::default(), &gone).len(), 2);
    }

    #[test]
    fn failing_sections() {
        let ok = |s| SectionRef {
            stdout: s,
            stderr: "",
            code: Some(0),
        };
        let bad = SectionRef {
            stdout: "",
            stderr: "sacct: error: Problem talking to the database\n",
            code: Some(1),
        };
        let (jobs, extra) = parse(&[ok(""), bad], &["7".parse().unwrap()]).unwrap();
        assert!(jobs.is_empty());
        assert_eq!(extra.asked.len(), 1);
        assert!(extra.problems[0].starts_with("sacct failed (exit 1): sacct: error"));
        let (_, quiet) = parse(&[ok("")], &[]).unwrap();
        assert!(quiet.asked.is_empty() && quiet.problems.is_empty());
        let e = parse(&[bad], &[]).unwrap_err();
        assert!(e.starts_with("squeue failed (exit 1)"), "{e}");
    }
}
