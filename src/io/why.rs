//! "Starts now if…": the scheduler's answer for each alternative (`sbatch --test-only`, all
//! of them in one remote exec, two slurmctld RPCs each), and applying one (`scontrol
//! update`, one RPC). What to offer and the checks before applying are in `slurm::why`.

use std::time::Duration;

use crate::launch::stage::parse_test_only;
use crate::remote::Remote;
use crate::slurm::batch;
use crate::slurm::model::JobId;
use crate::slurm::time::parse_time;
use crate::slurm::why::{refusal, Alternative, Change};

/// Asks the scheduler about every alternative at once and fills in each one's
/// `estimated_start`, or its `problem` when the scheduler refused that shape. `Err` only
/// when the exec itself failed (nothing is filled in then).
pub async fn check(
    remote: &dyn Remote,
    alternatives: &mut [Alternative],
    timeout: Duration,
) -> Result<(), String> {
    if alternatives.is_empty() {
        return Ok(());
    }
    let cmds: Vec<Vec<String>> = alternatives.iter().map(|a| a.check.clone()).collect();
    let b = batch::script(&cmds).map_err(|e| format!("building the test-only checks: {e}"))?;
    let out = remote
        .run(&batch::argv(&b), None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    let host = remote.host().unwrap_or_else(|| "the cluster".into());
    let sections = batch::split(&b, &out.stdout_lossy(), &out.stderr_lossy())
        .map_err(|e| format!("sbatch --test-only checks on {host}: {e}"))?;
    for (i, a) in alternatives.iter_mut().enumerate() {
        let Some(s) = sections.get(i) else {
            a.problem = Some("sbatch --test-only: no answer".into());
            continue;
        };
        let said = format!("{}{}", s.stderr, s.stdout);
        match parse_test_only(&said) {
            Some(e) if s.success() => match parse_time(&e.start) {
                Ok(Some(t)) => a.estimated_start = Some(t),
                _ => a.problem = Some(format!("the scheduler answered {:?}", e.text)),
            },
            _ => {
                let first = said
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("no message");
                a.problem = Some(format!("the scheduler refused it: {first}"));
            }
        }
    }
    Ok(())
}

/// Applies `change` to pending job `id` (`scontrol update`). `Err` is Slurm's refusal in
/// words (see `slurm::why::refusal`) or the transport's failure.
pub async fn apply(
    remote: &dyn Remote,
    id: &JobId,
    change: &Change,
    timeout: Duration,
) -> Result<(), String> {
    let argv = change.argv(id.as_str());
    let out = remote
        .run(&argv, None, timeout)
        .await
        .map_err(|e| format!("scontrol update {id}: {e}"))?;
    if out.success() {
        return Ok(());
    }
    Err(refusal(change, &out.stderr_lossy()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::remote::fake::{FakeRemote, FakeReply};
    use crate::slurm::command::{rpc_cost, RpcCost};
    use crate::slurm::model::SlurmDuration;
    use crate::slurm::why::Shape;

    fn alt(partition: &str) -> Alternative {
        let shape = Shape {
            partition: "spare".into(),
            nodes: 1,
            cpus: 1,
            time_limit: SlurmDuration::from_secs(600),
            ..Shape::default()
        };
        let change = Change::Partition {
            from: "spare".into(),
            to: partition.into(),
        };
        Alternative {
            argv: change.argv("7"),
            check: change.applied_to(&shape).test_only_argv(),
            words: change.words(),
            change,
            estimated_start: None,
            problem: None,
        }
    }

    /// Three alternatives: one exec, six slurmctld RPCs (sbatch --test-only costs 2 each, as
    /// sdiag counts them on 22.05, 24.11 and 26.05: tests/rpc_cost_cluster.rs).
    #[tokio::test]
    async fn all_checks_go_in_one_exec_of_one_rpc_each() {
        let fake = FakeRemote::new("login1");
        fake.on(&["sh", "-c"], vec![FakeReply::ok("")]);
        let mut alts = vec![alt("short"), alt("polar"), alt("long")];
        let _ = check(&fake, &mut alts, Duration::from_secs(5)).await;
        let calls = fake.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(rpc_cost(&calls[0]), RpcCost { ctld: 6, dbd: 0 });
        let mut names = Vec::new();
        crate::slurm::command::rpc_parts(&calls[0], &mut |n, _| names.push(n));
        assert_eq!(names, ["sbatch --test-only"; 3]);
        // None at all: nothing is run.
        check(&fake, &mut [], Duration::from_secs(5)).await.unwrap();
        assert_eq!(fake.calls().len(), 1);
    }

    #[tokio::test]
    async fn a_refused_update_is_explained() {
        let fake = FakeRemote::new("login1");
        let said = include_str!("../../tests/fixtures/slurm/24.11/scontrol_update_time_raise.err");
        fake.on(&["scontrol", "update"], vec![FakeReply::fail(1, said)]);
        let raise = Change::TimeLimit {
            from: SlurmDuration::from_secs(300),
            to: SlurmDuration::from_secs(2400),
        };
        let id: JobId = "2412787".parse().unwrap();
        let e = apply(&fake, &id, &raise, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(
            e.starts_with("Slurm refused to raise the time limit"),
            "{e}"
        );
        assert_eq!(
            fake.calls()[0],
            ["scontrol", "update", "JobId=2412787", "TimeLimit=40:00"]
        );
    }
}
