//! A maintenance reservation on the dev cluster, made by the Slurm admin for one test and
//! deleted when dropped. Tests that make one take [`ONE_WINDOW`] (two windows on the spare
//! nodes would overlap in one process) and belong to nextest's `spare-nodes` group (across
//! processes).

use slurmdash::slurm::reservation::{parse_reservations, Reservation};
use tokio::sync::Mutex;

use super::{slurm_admin, text};

/// One window at a time on the spare nodes.
pub static ONE_WINDOW: Mutex<()> = Mutex::const_new(());

/// A MAINT reservation on `nodes` from 20 minutes on, for 10 minutes, deleted when dropped.
pub struct Maintenance(pub String);

impl Maintenance {
    /// Named `slurmdash-<tag>-<pid>`.
    pub fn create(nodes: &[String], tag: &str) -> Maintenance {
        let name = format!("slurmdash-{tag}-{}", std::process::id());
        let out = slurm_admin(&[
            "scontrol",
            "create",
            "reservation",
            &format!("reservationname={name}"),
            "starttime=now+20minutes",
            "duration=10",
            &format!("nodes={}", nodes.join(",")),
            "users=root",
            "flags=maint,ignore_jobs",
        ]);
        assert!(
            out.status.success(),
            "scontrol create reservation: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        Maintenance(name)
    }

    /// The reservation as scontrol shows it.
    pub fn read(&self) -> Reservation {
        let out = slurm_admin(&["scontrol", "show", "reservation", &self.0]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        parse_reservations(&text(&out.stdout))
            .expect("the reservation reads")
            .remove(0)
    }
}

impl Drop for Maintenance {
    fn drop(&mut self) {
        let _ = slurm_admin(&["scontrol", "delete", &format!("reservationname={}", self.0)]);
    }
}
