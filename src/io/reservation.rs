//! The cluster's reservations (maintenance windows) with its clock, in one remote exec of
//! one slurmctld RPC (`slurm::reservation`). Read once a session and again now and then,
//! never per poll.

use std::time::Duration;

use crate::remote::Remote;
use crate::slurm::batch;
use crate::slurm::reservation::{self, Reservations};

/// `date` and `scontrol show reservation` in one exec.
pub async fn read(remote: &dyn Remote, timeout: Duration) -> Result<Reservations, String> {
    let b = batch::script(&reservation::commands())
        .map_err(|e| format!("building the reservations query: {e}"))?;
    let out = remote
        .run(&batch::argv(&b), None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    let host = remote.host().unwrap_or_else(|| "the cluster".into());
    let sections = batch::split(&b, &out.stdout_lossy(), &out.stderr_lossy()).map_err(|e| {
        format!("reservations query (date, scontrol show reservation) on {host}: {e}")
    })?;
    reservation::parse_read(&sections).map_err(|e| format!("{e} (on {host})"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::remote::fake::{FakeRemote, FakeReply};
    use crate::slurm::command::{rpc_cost, RpcCost};

    /// One exec, one slurmctld RPC: `date` costs nothing.
    #[tokio::test]
    async fn one_read_is_one_exec_of_one_slurmctld_rpc() {
        let fake = FakeRemote::new("login1");
        fake.on(&["sh", "-c"], vec![FakeReply::ok("")]);
        let e = read(&fake, Duration::from_secs(5)).await.unwrap_err();
        assert!(e.contains("on login1"), "{e}");
        let calls = fake.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(rpc_cost(&calls[0]), RpcCost { ctld: 1, dbd: 0 });
        let mut names = Vec::new();
        crate::slurm::command::rpc_parts(&calls[0], &mut |n, _| names.push(n));
        assert_eq!(names, ["scontrol show reservation"]);
    }
}
