//! Limits of a test's own on the dev cluster (a QOS and an account that nothing else uses),
//! set with sacctmgr as root on this machine and removed when the guard drops.

use std::process::Output;
use std::time::{Duration, Instant};

use super::{slurm_admin, text};

/// sacctmgr as root on this machine (the dev cluster's host; in the version's chroot for
/// 24.11/26.05).
pub fn sacctmgr(args: &[&str]) -> Output {
    let mut argv = vec!["sacctmgr"];
    argv.extend_from_slice(args);
    slurm_admin(&argv)
}

/// Whether slurmctld counts usage against limits (`AccountingStorageEnforce` has `limits`).
pub fn enforced() -> bool {
    let o = slurm_admin(&["scontrol", "show", "config"]);
    text(&o.stdout)
        .lines()
        .find(|l| l.starts_with("AccountingStorageEnforce"))
        .is_some_and(|l| l.contains("limits"))
}

/// QOS NAME (2 GPUs per user) and account NAME (4 GPUs; the user's association in it may
/// use only that QOS). Removed again when dropped, however the test ends: other tests share
/// the cluster. Each test file uses its own NAME.
pub struct OwnLimits {
    pub name: String,
    pub user: String,
}

impl OwnLimits {
    /// The limits for sduser.
    pub fn add(name: &str) -> OwnLimits {
        OwnLimits::add_for(name, "sduser")
    }

    pub fn add_for(name: &str, user: &str) -> OwnLimits {
        let guard = OwnLimits {
            name: name.to_string(),
            user: user.to_string(),
        };
        guard.remove(); // a run that was killed may have left them
        let acct = format!("account={name}");
        for args in [
            &["-i", "add", "qos", name, "MaxTRESPerUser=gres/gpu=2"][..],
            &[
                "-i",
                "add",
                "account",
                name,
                "parent=root",
                "description=slurmdash-limits-test",
                "organization=slurmdash",
                "GrpTRES=gres/gpu=4",
            ],
            &[
                "-i",
                "add",
                "user",
                user,
                &acct,
                &format!("qos={name}"),
                &format!("defaultqos={name}"),
            ],
        ] {
            let o = sacctmgr(args);
            assert!(
                o.status.success(),
                "sacctmgr {args:?}: {}{}",
                text(&o.stdout),
                text(&o.stderr)
            );
        }
        guard
    }

    fn remove(&self) {
        remove_all(&self.user, &self.name, &[self.name.as_str()]);
    }
}

impl Drop for OwnLimits {
    fn drop(&mut self) {
        self.remove();
    }
}

/// An account NAME whose user may run at QOS `NAME-low` (the default; priority 0) and
/// `NAME-high` (priority 1000), which preempts `NAME-low`'s jobs (slurm.conf
/// `PreemptType=preempt/qos`, `PreemptMode=CANCEL`: they end PREEMPTED). Removed when
/// dropped.
pub struct OwnPreemption {
    pub name: String,
    pub user: String,
}

impl OwnPreemption {
    pub fn add(name: &str, user: &str) -> OwnPreemption {
        let guard = OwnPreemption {
            name: name.to_string(),
            user: user.to_string(),
        };
        guard.remove();
        let (low, high) = (format!("{name}-low"), format!("{name}-high"));
        let preempt = format!("Preempt={low}");
        let acct = format!("account={name}");
        let qos = format!("qos={low},{high}");
        let default = format!("defaultqos={low}");
        for args in [
            &["-i", "add", "qos", &low, "Priority=0"][..],
            &["-i", "add", "qos", &high, "Priority=1000", &preempt],
            &[
                "-i",
                "add",
                "account",
                name,
                "parent=root",
                "description=slurmdash-preemption-test",
                "organization=slurmdash",
            ],
            &["-i", "add", "user", user, &acct, &qos, &default],
        ] {
            let o = sacctmgr(args);
            assert!(
                o.status.success(),
                "sacctmgr {args:?}: {}{}",
                text(&o.stdout),
                text(&o.stderr)
            );
        }
        guard
    }

    fn remove(&self) {
        let n = self.name.as_str();
        remove_all(&self.user, n, &[&format!("{n}-high"), &format!("{n}-low")]);
    }
}

impl Drop for OwnPreemption {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Deletes `user`'s association with `account`, the account and the QOS `qos` (in that
/// order), retrying for a while: jobs still completing keep the association.
fn remove_all(user: &str, account: &str, qos: &[&str]) {
    let acct = format!("account={account}");
    let user = format!("name={user}");
    let names = format!("name={}", qos.join(","));
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let _ = sacctmgr(&["-i", "delete", "user", &user, &acct]);
        let _ = sacctmgr(&["-i", "delete", "account", account]);
        for q in qos {
            let _ = sacctmgr(&["-i", "delete", "qos", q]);
        }
        let q = sacctmgr(&["-nP", "show", "qos", &names, "format=Name"]);
        let a = sacctmgr(&["-nP", "show", "account", account, "format=Account"]);
        if text(&q.stdout).trim().is_empty() && text(&a.stdout).trim().is_empty() {
            return;
        }
        if Instant::now() > deadline {
            eprintln!("could not remove QOS {qos:?} or account {account}: remove them by hand");
            return;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}
