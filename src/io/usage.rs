//! The budget read (`slurmdash usage`, `:usage`) and the waits of similar jobs: run only
//! when asked (the overlay's open or `r`, a pending job's selection with the waits older
//! than their TTL), never per refresh.

use std::time::Duration;

use crate::io::fetch::stdout_of;
use crate::remote::Remote;
use crate::slurm::batch::{self, Section};
use crate::slurm::limits::parse_assoc_mgr;
use crate::slurm::parse::{parse_sshare, read_squeue};
use crate::slurm::usage::{self, AcctJob, UsageReport};

fn first_line(s: &Section) -> String {
    let e = s.stderr.trim();
    match e.lines().next() {
        Some(l) => l.to_string(),
        None => match s.code {
            Some(c) => format!("exit {c}, no message"),
            None => "killed by a signal".into(),
        },
    }
}

/// The user's use of the last `days` days, in flight and committed, per account, with the
/// limits and fair share the cluster has. Two execs: the reads of [`usage::commands`], then
/// `scontrol show assoc_mgr` for the user they named. Only sacct's failure fails it; the
/// others leave a problem that says what is missing and why.
pub async fn read(
    remote: &dyn Remote,
    days: u32,
    timeout: Duration,
) -> Result<UsageReport, String> {
    let host = remote.host().unwrap_or_else(|| "the cluster".into());
    let b = batch::script(&usage::commands(days))
        .map_err(|e| format!("building the usage query: {e}"))?;
    let out = remote
        .run(&batch::argv(&b), None, timeout)
        .await
        .map_err(|e| format!("usage query (id, sshare, sacct, squeue) on {host}: {e}"))?;
    let s = batch::split(&b, &out.stdout_lossy(), &out.stderr_lossy())
        .map_err(|e| format!("usage query (id, sshare, sacct, squeue) on {host}: {e}"))?;
    let mut problems = Vec::new();
    let sacct = &s[2];
    if !sacct.success() {
        return Err(format!(
            "`sacct --starttime=now-{days}days` on {host} failed: {}. The figures need job \
             accounting (slurmdbd): check that `sacct` works on the login node",
            first_line(sacct)
        ));
    }
    let jobs = usage::parse_acct_jobs(&sacct.stdout).map_err(|e| {
        format!("`sacct` on {host} printed something unexpected: {e} (please report it)")
    })?;
    let user = s[0]
        .success()
        .then(|| s[0].stdout.trim().to_string())
        .filter(|u| !u.is_empty());
    if user.is_none() {
        problems.push(format!(
            "`id -un` on {host} failed ({}): limits not read",
            first_line(&s[0])
        ));
    }
    let sshare = match s[1].success() {
        true => parse_sshare(&s[1].stdout).unwrap_or_else(|e| {
            problems.push(format!("`sshare` printed something unexpected: {e}"));
            Vec::new()
        }),
        false => {
            problems.push(format!(
                "`sshare` on {host} failed ({}): no fair share shown (the cluster may not use \
                 the multifactor priority plugin)",
                first_line(&s[1])
            ));
            Vec::new()
        }
    };
    let queue = match s[3].success() {
        true => {
            let p = read_squeue(&s[3].stdout);
            problems.extend(p.problems.iter().map(|e| format!("`squeue`: {e}")));
            p.items
        }
        false => {
            problems.push(format!(
                "`squeue --me` on {host} failed ({}): in flight and committed not counted; \
                 press r to read again",
                first_line(&s[3])
            ));
            Vec::new()
        }
    };
    let assoc = match &user {
        Some(u) => match stdout_of(remote, &usage::assoc_mgr(u), None, timeout).await {
            Ok(o) => match parse_assoc_mgr(&o) {
                Ok(m) => Some(m),
                Err(e) => {
                    problems.push(format!("`scontrol show assoc_mgr`: {e}"));
                    None
                }
            },
            Err(e) => {
                problems.push(format!("{e}: limits not shown"));
                None
            }
        },
        None => None,
    };
    Ok(usage::report(
        &usage::Read {
            days,
            user: user.as_deref(),
            sacct: &jobs,
            queue: &queue,
            sshare: &sshare,
            assoc: assoc.as_ref(),
        },
        problems,
    ))
}

/// Own jobs of the last [`usage::waits::DAYS`] days with their wait (one sacct).
pub async fn waits(remote: &dyn Remote, timeout: Duration) -> Result<Vec<AcctJob>, String> {
    let out = stdout_of(
        remote,
        &usage::sacct_waits(usage::waits::DAYS),
        None,
        timeout,
    )
    .await?;
    usage::parse_acct_jobs(&out).map_err(|e| format!("`sacct` printed something unexpected: {e}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::remote::fake::{FakeRemote, FakeReply};
    use crate::slurm::command::{rpc_cost, RpcCost};

    /// A read is two execs: the batch (sshare 1 + squeue --local 2 slurmctld RPCs, sacct 4
    /// of slurmdbd) and scontrol show assoc_mgr (1).
    #[tokio::test]
    async fn one_read_costs_two_execs() {
        let fake = FakeRemote::new("login1");
        fake.on(&["sh", "-c"], vec![FakeReply::ok("")]);
        let e = read(&fake, 7, Duration::from_secs(5)).await.unwrap_err();
        assert!(e.contains("usage query"), "{e}");
        let calls = fake.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(rpc_cost(&calls[0]), RpcCost { ctld: 3, dbd: 4 });
        assert!(calls[0][2].contains("--starttime=now-7days"));
    }
}
