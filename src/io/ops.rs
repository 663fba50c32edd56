//! Job actions as one remote command each: run, classify per id, report. Shared by the
//! dashboard's workers and the command line.

use std::time::Duration;

use super::fetch::{failure, stdout_of};
use crate::launch::guard;
use crate::remote::Remote;
use crate::slurm::command;
use crate::slurm::model::{CancelOutcome, JobId, Partition};
use crate::slurm::ops::{JobEdit, JobOp, OpKind, OpReport};
use crate::slurm::parse::parse_scontrol_partitions;

/// The command `op` runs: a cancel first cancels the jobs' retry guards, in the same
/// command (`launch::guard::cancel_argv`), so that a cancelled job is not retried.
fn argv(op: &JobOp) -> Vec<String> {
    match op.kind {
        OpKind::Cancel => guard::cancel_argv(&op.ids),
        _ => op.argv(),
    }
}

/// Runs `op` (one scancel or scontrol for all its ids). A refusal is part of the report;
/// `Err` only when the command could not run or said something no id explains.
pub async fn run(remote: &dyn Remote, op: &JobOp, timeout: Duration) -> Result<OpReport, String> {
    let argv = argv(op);
    let out = remote
        .run(&argv, None, timeout)
        .await
        .map_err(|e| format!("{}: {e}", op.describe()))?;
    let code = out.code.unwrap_or(-1);
    let outcomes = op.kind.outcomes(&op.ids, &out.stderr_lossy(), code);
    if out.code.is_none() {
        return Err(failure(remote, &argv, &out));
    }
    Ok(OpReport {
        op: op.clone(),
        outcomes,
    })
}

/// `scontrol update` of one pending job. The report's op is a hold-free "edit" of one id,
/// reported through the same outcome classes.
pub async fn edit(
    remote: &dyn Remote,
    id: &JobId,
    edit: &JobEdit,
    timeout: Duration,
) -> Result<Vec<(JobId, CancelOutcome)>, String> {
    let argv = edit.argv(id);
    let out = remote
        .run(&argv, None, timeout)
        .await
        .map_err(|e| format!("scontrol update {id}: {e}"))?;
    if out.code.is_none() {
        return Err(failure(remote, &argv, &out));
    }
    Ok(crate::slurm::parse::parse_scontrol_op(
        std::slice::from_ref(id),
        &out.stderr_lossy(),
        out.code.unwrap_or(-1),
    ))
}

/// Every partition with its limits (`scontrol show partition`).
pub async fn partitions(remote: &dyn Remote, timeout: Duration) -> Result<Vec<Partition>, String> {
    let out = stdout_of(remote, &command::scontrol_show_partition(), None, timeout).await?;
    parse_scontrol_partitions(&out)
        .map_err(|e| format!("scontrol show partition printed something unexpected: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<JobId> {
        v.iter().map(|s| s.parse().expect("job id")).collect()
    }

    #[test]
    fn a_cancel_takes_the_retry_guards_with_it() {
        let cancel = argv(&JobOp::new(OpKind::Cancel, ids(&["5", "5"])));
        assert_eq!(&cancel[cancel.len() - 2..], ["--verbose", "5"]);
        assert!(cancel[2].ends_with("exec scancel \"$@\""));
        let hold = JobOp::new(OpKind::Hold, ids(&["5"]));
        assert_eq!(argv(&hold), hold.argv());
    }
}
