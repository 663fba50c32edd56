//! The refresh: one `squeue --local` (its `%S` is the start estimate of a pending job, so
//! no `squeue --start`) and, only when jobs left squeue, sacct for them, in ONE remote exec.
//! slurmctld sees two RPCs (job info and partition info); slurmdbd sees nothing unless a job
//! left the queue.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

pub use crate::payload::PollExtra;
use crate::remote::Remote;
use crate::slurm::batch::{self, Batch, FirstStreamed, SectionRef};
use crate::slurm::command::{self, SqueueQuery};
use crate::slurm::model::JobRecord;
use crate::slurm::model::{Job, JobId};
use crate::slurm::parse::read_sacct;
use crate::slurm::parse::read_squeue;
pub use crate::slurm::parse::squeue::Reuse;
use crate::slurm::parse::squeue::{Parsed, SqueueStream};
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

/// What sacct says of jobs that just left squeue, asked at once when a refresh sees them go
/// (slurmdbd alone: no slurmctld RPC), so an ended job shows its final state without
/// waiting for the next refresh. Failing only adds a problem: the next refresh asks again.
pub async fn finals(remote: &dyn Remote, gone: &[JobId], timeout: Duration) -> PollExtra {
    let ids = &gone[..gone.len().min(SACCT_MAX_IDS)];
    let mut extra = PollExtra {
        asked: ids.to_vec(),
        ..PollExtra::default()
    };
    let argv = command::sacct_jobs(ids, command::RECENT);
    match remote.run(&argv, None, timeout).await {
        Ok(out) if out.success() => {
            let p = read_sacct(&out.stdout_lossy());
            extra.finished = p.items;
            extra
                .problems
                .extend(p.problems.iter().map(|e| format!("sacct: {e}")));
        }
        Ok(out) => extra.problems.push(format!(
            "sacct failed: {}",
            out.stderr_lossy()
                .trim()
                .lines()
                .next()
                .unwrap_or("no message")
        )),
        Err(e) => extra.problems.push(format!("sacct: {e}")),
    }
    extra
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
    let Some(q) = sections.first() else {
        return Err("the refresh printed nothing".into());
    };
    if !q.success() {
        return Err(problem("squeue", q));
    }
    // A record that does not read spoils only its own row (marked, with what could be
    // read); the others refresh.
    Ok(with_sacct(read_squeue(q.stdout), sections, gone))
}

/// The refresh's answer: squeue's listing, and what sacct said of the jobs that left.
fn with_sacct(
    queue: Parsed<Job>,
    sections: &[SectionRef<'_>],
    gone: &[JobId],
) -> (Vec<Job>, PollExtra) {
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
    (queue.items, extra)
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
/// keeps `last` from one refresh to the next); `label` marks each record read anew with its
/// cluster. squeue's answer is read as it arrives, record by record: at 100,000 jobs it is
/// about 14 MB, never held whole.
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
    // Taken out while the answer arrives (no lock is held across the wait); a refresh
    // dropped half-way leaves an empty one, and the next reads every record anew.
    let mut reuse = std::mem::take(&mut *last.lock().unwrap_or_else(PoisonError::into_inner));
    let result = read_refresh(remote, &b, &argv, gone, timeout, &mut reuse, label).await;
    *last.lock().unwrap_or_else(PoisonError::into_inner) = reuse;
    result
}

async fn read_refresh(
    remote: &dyn Remote,
    b: &Batch,
    argv: &[String],
    gone: &[JobId],
    timeout: Duration,
    reuse: &mut Reuse,
    label: &(dyn Fn(&mut JobRecord) + Sync),
) -> Result<(Vec<Job>, PollExtra), String> {
    let mut cut = FirstStreamed::new(b);
    let mut queue = SqueueStream::new(reuse, label);
    let out = {
        let mut sink = |chunk: &[u8]| cut.push(chunk, &mut |bytes| queue.push(bytes));
        remote.run_into(argv, timeout, &mut sink).await
    }
    .map_err(|e| e.to_string())?;
    let rest = cut.finish(&mut |bytes| queue.push(bytes));
    let (_, stderr) = out.into_text();
    let sections = batch::split_ref(b, &rest, &stderr).map_err(|e| {
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
    let Some(q) = sections.first() else {
        return Err("the refresh printed nothing".into());
    };
    if !q.success() {
        queue.abandon();
        return Err(problem("squeue", q));
    }
    Ok(with_sacct(queue.finish(), &sections, gone))
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
