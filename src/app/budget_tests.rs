use std::time::Duration;

use chrono::NaiveDateTime;

use super::*;
use crate::slurm::model::JobId;

fn t(s: i64) -> NaiveDateTime {
    super::super::tests::now() + chrono::Duration::seconds(s)
}

fn detail(n: u64) -> Cmd {
    Cmd::FetchDetail(JobId::new(n))
}

#[test]
fn the_reads_cost_what_sdiag_counts() {
    assert_eq!(read_cost(&Cmd::PollQueue), Some((Kind::Refresh, 2)));
    assert_eq!(
        read_cost(&Cmd::PollWith {
            sacct: vec![JobId::new(3)]
        }),
        Some((Kind::Refresh, 2)),
        "the sacct of jobs that left goes to slurmdbd"
    );
    // scontrol --local show job 1 (the batch script, kept once per running job, is
    // charged when the transport counts it).
    assert_eq!(read_cost(&detail(7)), Some((Kind::Detail, 1)));
    // For every pending job of the user: sprio 1, sshare 1, scontrol show assoc_mgr 1,
    // show partition 1 (static: not every time).
    let jobs = crate::slurm::parse::parse_squeue(include_str!(
        "../../tests/fixtures/slurm/26.05/squeue_me.out"
    ))
    .unwrap();
    let user = jobs
        .iter()
        .find(|j| j.state == crate::slurm::model::JobState::Pending)
        .unwrap()
        .user
        .to_string();
    let ask = crate::slurm::pending::Ask::of(&user, &jobs, true).unwrap();
    assert_eq!(
        read_cost(&Cmd::FetchPending(Box::new(ask.clone()))),
        Some((Kind::Pending, 4))
    );
    let kept = crate::slurm::pending::Ask {
        with_partitions: false,
        ..ask
    };
    assert_eq!(
        read_cost(&Cmd::FetchPending(Box::new(kept))),
        Some((Kind::Pending, 3))
    );
    let live = crate::slurm::live::LiveTarget {
        id: JobId::new(9),
        gpu_nodes: vec!["n1".into()],
        nodes_skipped: 0,
        timeout_secs: 5,
    };
    assert_eq!(
        read_cost(&Cmd::SampleLive(Box::new(live))),
        Some((Kind::Live, 5)),
        "sstat 3, one srun 2"
    );
    // sinfo --local 2, scontrol show partition 1, squeue --local --all 2.
    assert_eq!(
        read_cost(&Cmd::FetchPartitions),
        Some((Kind::Partitions, 5))
    );
    // Writes and what the user does are never held.
    for c in [
        Cmd::Op(crate::slurm::ops::JobOp::new(
            crate::slurm::ops::OpKind::Cancel,
            vec![JobId::new(1)],
        )),
        Cmd::History(crate::payload::Request {
            cluster: 0,
            generation: 1,
            windows: Vec::new(),
        }),
        Cmd::FetchUsage { days: 7 },
        Cmd::CheckRetries,
        Cmd::Tail(Vec::new()),
    ] {
        assert_eq!(read_cost(&c), None, "{c:?}");
    }
}

#[test]
fn the_refresh_floor_leaves_two_fifths_for_other_reads_and_never_exceeds_the_watch() {
    let floor = |b| Budget::new(b).refresh_floor().map(|d| d.as_secs());
    assert_eq!(floor(4), Some(50));
    assert_eq!(floor(8), Some(25));
    assert_eq!(floor(5), Some(40));
    assert_eq!(
        floor(3),
        Some(50),
        "never a minute stale, whatever the budget"
    );
    assert_eq!(floor(1), Some(50));
    assert_eq!(floor(6000), Some(1));
    assert_eq!(floor(0), None);
}

#[test]
fn refreshes_fit_two_a_minute_at_four() {
    let mut b = Budget::new(4);
    assert!(
        b.admit(t(0), Cmd::PollQueue, Who::Refresh).is_some(),
        "the first goes at once"
    );
    assert!(b.admit(t(30), Cmd::PollQueue, Who::Refresh).is_some());
    assert!(
        b.admit(t(40), Cmd::PollQueue, Who::Refresh).is_none(),
        "a third within a minute is held"
    );
    assert!(b.holds(Kind::Refresh));
    assert_eq!(b.fits_at(t(40), 2, Who::Refresh), Some(t(61)));
    let (go, dropped) = b.release(t(60), |_| true);
    assert!(go.is_empty() && dropped.is_empty());
    let (go, _) = b.release(t(61), |_| true);
    assert_eq!(go, vec![Cmd::PollQueue], "released when the minute frees");
    assert!(!b.holds(Kind::Refresh));
    assert_eq!(b.spent(t(61)), 6);
}

#[test]
fn the_users_reads_go_at_the_next_second_and_the_background_gives_them_back() {
    let mut b = Budget::new(4); // 20 in five minutes
                                // Twenty details of 1 RPC, one a second: every one the user asked for goes, at the
                                // next second.
    for i in 0..20 {
        assert!(b.admit(t(i), detail(i as u64), Who::User).is_none(), "{i}");
        assert!(
            b.release(t(i), |_| true).0.is_empty(),
            "not in the same second"
        );
        assert_eq!(b.release(t(i + 1), |_| true).0, vec![detail(i as u64)]);
    }
    assert_eq!(b.spent(t(20)), 20);
    assert!(b.held().is_empty());
    // Walking past rows: only the newest is read.
    for n in 20..23 {
        assert!(b.admit(t(20), detail(n), Who::User).is_none());
    }
    assert_eq!(b.held().len(), 1);
    assert_eq!(b.release(t(21), |_| true).0, vec![detail(22)]);
    // The background waits until they leave the five minutes.
    assert!(b
        .admit(t(21), Cmd::FetchPartitions, Who::Background)
        .is_none());
    assert_eq!(
        b.fits_at(t(21), 5, Who::Background),
        Some(t(301 + 21)),
        "once the last detail is five minutes old"
    );
    // The refresh still comes: never held past WATCH_SECS after the last one.
    assert!(b.admit(t(21), Cmd::PollQueue, Who::Refresh).is_some());
    assert!(b.admit(t(41), Cmd::PollQueue, Who::Refresh).is_none());
    assert_eq!(b.fits_at(t(41), 2, Who::Refresh), Some(t(21 + WATCH_SECS)));
    let (go, _) = b.release(t(21 + WATCH_SECS), |_| true);
    assert!(go.contains(&Cmd::PollQueue));
}

#[test]
fn background_reads_get_a_quarter_and_one_larger_read_goes_alone() {
    let mut b = Budget::new(4);
    let pending = Cmd::FetchPartitions; // 7: more than the quarter (5)
    assert!(
        b.admit(t(0), pending.clone(), Who::Background).is_some(),
        "alone in its five minutes"
    );
    assert!(
        b.admit(t(10), detail(1), Who::Background).is_none(),
        "the quarter is spent"
    );
    assert!(b.admit(t(11), detail(1), Who::User).is_none());
    assert_eq!(
        b.release(t(12), |_| true).0,
        vec![detail(1)],
        "a key's read goes at the next second, whatever was spent"
    );
    // A held read nobody wants any more is dropped, not sent.
    assert!(b.admit(t(12), pending, Who::Background).is_none());
    let (go, dropped) = b.release(t(400), |c| *c != Cmd::FetchPartitions);
    assert!(go.is_empty());
    assert_eq!(dropped, vec![Cmd::FetchPartitions]);
}

#[test]
fn background_reads_never_take_the_refreshs_room() {
    let mut b = Budget::new(4);
    // Eight refreshes, 40 s apart, and 4 RPCs of reads: 20 in five minutes.
    for i in 0..8 {
        b.spend(t(i * 40), 2, true);
    }
    b.spend(t(290), 3, false);
    assert!(!b.fits(t(295), 2, Who::Background), "over the allowance");
    assert!(
        b.fits(t(295), 7, Who::User),
        "the user's read goes all the same"
    );
    assert!(
        b.fits(t(295), 1, Who::Background),
        "within the quarter and the allowance"
    );
}

#[test]
fn the_refresh_is_never_held_past_the_watch_whatever_was_spent() {
    let mut b = Budget::new(4);
    // A burst of the user's reads: 30 RPCs, more than the five minutes allow.
    b.spend(t(0), 30, false);
    assert!(
        b.admit(t(1), Cmd::PollQueue, Who::Refresh).is_some(),
        "the first"
    );
    assert!(b.admit(t(41), Cmd::PollQueue, Who::Refresh).is_none());
    assert!(!b.fits(t(41 + 9), 2, Who::Refresh));
    assert!(b.fits(t(1 + WATCH_SECS), 2, Who::Refresh));
    // A full read a state check called for (a job changed state or left) is not held by
    // what the user's reads spent, only by the minute's cap.
    assert!(b.fits(t(41 + 9), 2, Who::Change));
    // A state check counts as a look at the queue too.
    b.spend(t(60), 1, true);
    assert!(!b.fits(t(100), 2, Who::Refresh));
    assert!(b.fits(t(60 + WATCH_SECS), 2, Who::Refresh));
}

#[test]
fn force_sends_and_charges_and_replaces_a_held_one() {
    let mut b = Budget::new(4);
    b.admit(t(0), Cmd::PollQueue, Who::Refresh);
    b.admit(t(1), Cmd::PollQueue, Who::Refresh);
    assert!(b.admit(t(2), Cmd::PollQueue, Who::Refresh).is_none());
    assert_eq!(b.force(t(3), Cmd::PollQueue), Cmd::PollQueue);
    assert!(!b.holds(Kind::Refresh));
    assert_eq!(b.spent(t(3)), 6, "charged");
}

#[test]
fn without_a_budget_everything_goes_but_a_throttled_answer_still_pauses() {
    let mut b = Budget::new(0);
    for s in 0..100 {
        assert!(b.admit(t(s), Cmd::PollQueue, Who::Refresh).is_some());
    }
    b.throttled(t(100));
    assert!(b.admit(t(101), Cmd::PollQueue, Who::Refresh).is_none());
    assert!(b.admit(t(101), detail(1), Who::User).is_none());
    assert_eq!(b.fits_at(t(101), 2, Who::Refresh), Some(t(160)));
    assert!(b.release(t(159), |_| true).0.is_empty());
    let (go, _) = b.release(t(160), |_| true);
    assert_eq!(go, vec![detail(1), Cmd::PollQueue], "the user's read first");
}

#[test]
fn the_transports_count_charges_what_no_plan_did() {
    let mut b = Budget::new(4);
    b.observe(t(0), 10); // before the dashboard's own reads: not charged
    assert_eq!(b.spent(t(0)), 0);
    b.admit(t(1), Cmd::PollQueue, Who::Refresh);
    b.observe(t(5), 12); // the refresh ran: nothing new
    assert_eq!(b.spent(t(5)), 2);
    b.observe(t(10), 13); // a scancel (1) nobody planned
    assert_eq!(b.spent(t(10)), 3);
    // A planned read not yet run is not charged twice when it runs.
    b.admit(t(10), detail(1), Who::User);
    b.release(t(11), |_| true);
    b.observe(t(12), 13);
    b.observe(t(15), 16);
    assert_eq!(b.spent(t(15)), 6);
    // Counted by neither the plan nor the transport for a minute: over-planned, forgotten.
    b.admit(t(19), detail(2), Who::User);
    b.release(t(20), |_| true);
    b.observe(t(90), 16);
    b.observe(t(95), 17);
    assert_eq!(b.spent(t(95)), 8, "the later write is charged");
}

#[test]
fn a_refresh_that_never_reached_the_cluster_is_taken_back() {
    let mut b = Budget::new(4);
    b.admit(t(0), Cmd::PollQueue, Who::Refresh);
    b.admit(t(0), detail(1), Who::User);
    b.release(t(1), |_| true);
    b.refund_refresh();
    assert_eq!(b.spent(t(2)), 1, "the detail's stays");
}

#[test]
fn throttled_answers_are_recognised() {
    assert!(is_throttled(
        "squeue failed (exit 1): slurm_load_jobs error: Rate limit exceeded, please retry momentarily"
    ));
    assert!(is_throttled("RPC rate limit exceeded by uid 1000"));
    assert!(!is_throttled(
        "squeue failed (exit 1): Invalid job id specified"
    ));
}

#[test]
fn the_sites_limit_caps_the_configured_budget_and_stands_in_for_none() {
    use crate::slurm::ratelimit::RateLimit;
    let site = |rate, period| {
        Ok(Some(RateLimit {
            bucket: 30,
            refill_rate: rate,
            refill_period_secs: period,
        }))
    };
    let mut b = Budget::new(4);
    b.set_site(site(2, 1));
    assert_eq!(
        b.per_minute, 4,
        "120/min at the site: the configured 4 stands"
    );
    let mut b = Budget::new(10);
    b.set_site(site(1, 20));
    assert_eq!(b.per_minute, 3, "the site's 3/min is lower");
    let mut b = Budget::new(0);
    assert_eq!(b.refresh_floor(), None);
    b.set_site(site(1, 30));
    assert_eq!(b.per_minute, 2, "no budget set: the site's");
    assert_eq!(
        b.refresh_floor(),
        Some(Duration::from_secs(60)),
        "all the site allows: slurmctld enforces it"
    );
    assert_eq!(b.watch_secs(), 60);
    let mut b = Budget::new(4);
    b.set_site(Err("scontrol show config failed".into()));
    assert_eq!(b.per_minute, 4);
    b.set_site(Ok(None));
    assert_eq!(b.per_minute, 4);
    // Asked once.
    let mut b = Budget::new(4);
    assert_eq!(b.site_due(), Some(Cmd::FetchSiteLimit));
    assert_eq!(b.site_due(), None);
}
