//! A cluster's maintenance windows (`scontrol show reservation`): read once a session (five
//! minutes in, after the opening reads), again every ten minutes, and at once when asked:
//! `:partitions` opens, or the selected pending job waits for nodes that are not available
//! (`ReqNodeNotAvail`: often a maintenance reservation). Never per refresh. What a pending
//! job's time limit runs into is worked out against the cluster's own clock (the read
//! carries it), moved on by the time passed here since.

use chrono::NaiveDateTime;

use crate::action::Cmd;
use crate::slurm::model::{Job, Partition};
use crate::slurm::reservation::{Reservation, Reservations, WindowHit};

/// How long a read is kept before the next one.
pub const EVERY_SECS: i64 = 600;
/// The first read on the schedule, from the session's first tick: the opening reads (the
/// queue, the selected job's answers) go first.
pub const FIRST_SECS: i64 = 300;
/// A read asked for (`:partitions`) is skipped when the last is this recent.
pub const FRESH_SECS: i64 = 60;
/// How far ahead the status bar names an upcoming window.
pub const AHEAD_SECS: i64 = 24 * 3600;

#[derive(Debug, Clone, Default)]
pub struct MaintenanceState {
    /// The last answer that came, and when (this machine's clock: the cluster's clock in
    /// it is moved on from there).
    pub read: Option<(Result<Reservations, String>, NaiveDateTime)>,
    /// When the last read was tried (answered or failed): the schedule counts from it.
    tried: Option<NaiveDateTime>,
    /// The session's first tick: the schedule's first read is `FIRST_SECS` after it.
    began: Option<NaiveDateTime>,
    pub loading: bool,
}

impl MaintenanceState {
    /// The read on the schedule: `FIRST_SECS` into the session, then when the last is
    /// `EVERY_SECS` old.
    pub fn due(&mut self, now: NaiveDateTime) -> Vec<Cmd> {
        let began = *self.began.get_or_insert(now);
        if self.tried.is_none() && (now - began).num_seconds() < FIRST_SECS {
            return Vec::new();
        }
        self.read_if_older(now, EVERY_SECS)
    }

    /// The read the selected pending `job` asks for: at once when it waits for nodes that
    /// are not available (a maintenance reservation, often), unless read a minute ago.
    pub fn for_selected(&mut self, job: Option<&Job>, now: NaiveDateTime) -> Vec<Cmd> {
        let waits_for_nodes = job.is_some_and(|j| {
            j.state == crate::slurm::model::JobState::Pending
                && j.reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with("ReqNodeNotAvail") || r.contains("aintenance"))
        });
        if waits_for_nodes {
            self.asked(now)
        } else {
            Vec::new()
        }
    }

    /// The read a launch form asks for when it opens: only when none was ever tried (the
    /// schedule keeps them current after that).
    pub fn if_never_read(&mut self, now: NaiveDateTime) -> Vec<Cmd> {
        if self.tried.is_some() {
            return Vec::new();
        }
        self.read_if_older(now, FRESH_SECS)
    }

    /// The read asked for (`:partitions`), unless the last is a minute old or less.
    pub fn asked(&mut self, now: NaiveDateTime) -> Vec<Cmd> {
        self.read_if_older(now, FRESH_SECS)
    }

    fn read_if_older(&mut self, now: NaiveDateTime, secs: i64) -> Vec<Cmd> {
        let old = self.tried.is_none_or(|at| (now - at).num_seconds() >= secs);
        if self.loading || !old {
            return Vec::new();
        }
        self.loading = true;
        vec![Cmd::FetchReservations]
    }

    pub fn on_read(&mut self, result: Result<Reservations, String>, at: NaiveDateTime) {
        self.loading = false;
        self.tried = Some(at);
        // A failed read keeps the windows known before (they do not move often).
        if result.is_err() && matches!(self.read, Some((Ok(_), _))) {
            return;
        }
        self.read = Some((result, at));
    }

    /// The reservations known, if read.
    pub fn items(&self) -> &[Reservation] {
        match &self.read {
            Some((Ok(r), _)) => &r.items,
            _ => &[],
        }
    }

    /// The cluster's clock now: the read's, moved on by the time passed here (`now`).
    pub fn cluster_now(&self, now: NaiveDateTime) -> Option<NaiveDateTime> {
        match &self.read {
            Some((Ok(r), at)) => Some(r.now + (now - *at)),
            _ => None,
        }
    }

    /// The maintenance windows not yet over, soonest first, with the cluster's clock now.
    pub fn upcoming(&self, now: NaiveDateTime) -> Vec<(&Reservation, NaiveDateTime)> {
        let Some(cnow) = self.cluster_now(now) else {
            return Vec::new();
        };
        let mut all: Vec<(&Reservation, NaiveDateTime)> = self
            .items()
            .iter()
            .filter(|r| r.is_maintenance() && r.end > cnow)
            .map(|r| (r, cnow))
            .collect();
        all.sort_by_key(|(r, _)| r.start);
        all
    }

    /// The window a pending `job`'s time limit runs into, on the nodes of `partitions` it
    /// could use, with the longest limit that ends before it.
    pub fn hit(
        &self,
        job: &Job,
        partitions: &[Partition],
        now: NaiveDateTime,
    ) -> Option<WindowHit> {
        let cnow = self.cluster_now(now)?;
        let cluster = crate::slurm::why::Cluster {
            partitions,
            reservations: self.items(),
            now: cnow,
        };
        crate::slurm::why::window(job, &cluster)
    }
}

/// What the detail pane says of the window a pending job's limit runs into: the window,
/// when it is, and the longest limit that starts the job before it (`edit_key`: the key
/// that edits the limit, named when there is one).
pub fn explain(hit: &WindowHit, job: &Job, cnow: NaiveDateTime, edit_key: Option<&str>) -> String {
    let r = &hit.reservation;
    let window = crate::slurm::reservation::window_text(r);
    let window = crate::queue::format::one_line(&window);
    let when = when_text(r, cnow);
    let limit = job.time_limit.human();
    match &hit.longest {
        Some(l) => {
            let how = match edit_key {
                Some(k) => format!("{k} edits it; `slurmdash why {}` checks it", job.id),
                None => format!("`slurmdash why {} --alternatives` checks it", job.id),
            };
            format!(
                "{window} ({when}): its {limit} limit runs into it; a limit of {} or less starts before it ({how})",
                l.human()
            )
        }
        None => format!(
            "{window} ({when}): its {limit} limit runs into it; the nodes it could use are held until {}",
            r.end.format("%H:%M")
        ),
    }
}

pub use crate::slurm::reservation::when_text;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::slurm::timeline::tests::at;

    fn maint(start: NaiveDateTime, end: NaiveDateTime) -> Reservation {
        let text = format!(
            "ReservationName=maint StartTime={} EndTime={} Duration=02:00:00\n   Nodes=gpu[01-02] NodeCnt=2 CoreCnt=8 Features=(null) PartitionName=(null) Flags=MAINT,SPEC_NODES\n   TRES=cpu=8\n   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a\n   MaxStartDelay=(null)\n",
            start.format("%Y-%m-%dT%H:%M:%S"),
            end.format("%Y-%m-%dT%H:%M:%S")
        );
        crate::slurm::reservation::parse_reservations(&text)
            .unwrap()
            .remove(0)
    }

    #[test]
    fn read_five_minutes_in_then_every_ten_and_on_request_after_a_minute() {
        let mut m = MaintenanceState::default();
        assert!(m.due(at(9, 55)).is_empty(), "the opening reads go first");
        assert!(m.due(at(9, 59)).is_empty());
        assert_eq!(m.due(at(10, 0)), vec![Cmd::FetchReservations]);
        assert!(m.due(at(10, 0)).is_empty(), "one read at a time");
        let r = Reservations {
            now: at(10, 0),
            items: vec![],
        };
        m.on_read(Ok(r), at(10, 0));
        assert!(m.due(at(10, 9)).is_empty());
        assert!(
            m.asked(at(10, 0)).is_empty(),
            "a read a minute old is fresh"
        );
        assert_eq!(m.asked(at(10, 2)), vec![Cmd::FetchReservations]);
        m.on_read(Err("ssh: timed out".into()), at(10, 2));
        assert!(
            m.due(at(10, 11)).is_empty(),
            "a failed read waits its turn too"
        );
        assert_eq!(m.due(at(10, 12)), vec![Cmd::FetchReservations]);
    }

    #[test]
    fn a_pending_job_waiting_for_nodes_asks_at_once() {
        use crate::slurm::model::{JobDetail, JobState};
        let job = |reason: &str| {
            JobDetail {
                id: Some("5".parse().unwrap()),
                state: Some(JobState::Pending),
                reason: Some(reason.into()),
                ..Default::default()
            }
            .to_job()
            .unwrap()
        };
        let mut m = MaintenanceState::default();
        assert!(m.for_selected(Some(&job("Priority")), at(10, 0)).is_empty());
        assert_eq!(
            m.for_selected(
                Some(&job("ReqNodeNotAvail, Reserved for maintenance")),
                at(10, 0)
            ),
            vec![Cmd::FetchReservations]
        );
    }

    #[test]
    fn windows_are_placed_on_the_cluster_s_clock_and_a_failed_read_keeps_them() {
        let mut m = MaintenanceState::default();
        // The cluster's clock is an hour behind this machine's.
        let r = Reservations {
            now: at(9, 0),
            items: vec![maint(at(12, 0), at(14, 0))],
        };
        m.on_read(Ok(r), at(10, 0));
        let up = m.upcoming(at(10, 30));
        assert_eq!(up.len(), 1);
        assert_eq!(up[0].1, at(9, 30));
        assert_eq!(when_text(up[0].0, up[0].1), "in 2h30m");
        m.on_read(Err("no answer".into()), at(10, 40));
        assert_eq!(m.upcoming(at(10, 40)).len(), 1, "the windows known stay");
        // Over on the cluster's clock at 14:00, which is 15:00 here.
        assert!(m.upcoming(at(15, 1)).is_empty());
        assert_eq!(
            when_text(&maint(at(12, 0), at(14, 0)), at(13, 0)),
            "now, until 14:00"
        );
    }

    #[test]
    fn the_detail_names_the_window_and_the_longest_limit_before_it() {
        use crate::slurm::model::{JobDetail, JobState, SlurmDuration};
        let job = JobDetail {
            id: Some("5".parse().unwrap()),
            state: Some(JobState::Pending),
            time_limit: Some(SlurmDuration::from_secs(4 * 3600)),
            ..Default::default()
        }
        .to_job()
        .unwrap();
        let hit = WindowHit {
            reservation: maint(at(12, 0), at(14, 0)),
            longest: Some(SlurmDuration::from_secs(110 * 60)),
        };
        let text = explain(&hit, &job, at(10, 10), Some("E"));
        assert_eq!(
            text,
            "maintenance 2026-11-28 12:00–14:00 on gpu[01-02] (in 1h50m): its 4h limit runs into it; a limit of 1h50m or less starts before it (E edits it; `slurmdash why 5` checks it)"
        );
        let begun = WindowHit {
            reservation: maint(at(12, 0), at(14, 0)),
            longest: None,
        };
        assert!(explain(&begun, &job, at(12, 30), None)
            .ends_with("the nodes it could use are held until 14:00"));
    }
}
