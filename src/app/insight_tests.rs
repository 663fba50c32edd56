//! The insight state machine driven through messages: departed jobs and sacct, the pending
//! fetch for the selected job only, the cached partitions view, the adaptive interval.

use crate::action::{InsightMsg, PollMsg};
use std::time::Duration;

use chrono::NaiveDate;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::action::Msg;
use crate::slurm::model::JobDetail;
use crate::slurm::parse::parse_squeue;

const SQUEUE: &str = include_str!("../../tests/fixtures/slurm/squeue_me.out");

fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 23)
        .and_then(|d| d.and_hms_opt(9, 20, 10))
        .expect("valid time")
}

fn app() -> App {
    let mut a = App::fixture(now());
    a.clusters[0].insight.bounds = PollBounds::new(
        Duration::from_secs(5),
        Duration::from_secs(2),
        Duration::from_secs(30),
    );
    a
}

fn jobs() -> Vec<Job> {
    parse_squeue(SQUEUE).expect("fixture parses")
}

fn loaded(jobs: Vec<Job>) -> Msg {
    Msg::queue(Ok(jobs), now(), Duration::from_millis(20))
}

fn id(s: &str) -> JobId {
    s.parse().expect("job id")
}

fn select(a: &mut App, want: &str) -> Vec<Cmd> {
    let i = a
        .queue
        .shown()
        .rows()
        .position(|r| r.job.id.as_str() == want)
        .expect("row");
    a.queue.shown_mut().select_index(i);
    a.selection_changed()
}

#[test]
fn a_job_that_leaves_squeue_stays_and_gets_its_final_state_from_sacct() {
    let mut a = app();
    a.update(loaded(jobs()));
    assert_eq!(a.update(Msg::Poll(PollMsg::PollDue)), vec![Cmd::PollQueue]);
    let without: Vec<Job> = jobs()
        .into_iter()
        .filter(|j| j.id.as_str() != "237")
        .collect();
    a.update(loaded(without.clone()));
    let kept = a
        .queue
        .shown()
        .jobs()
        .iter()
        .find(|j| j.id.as_str() == "237");
    assert_eq!(
        kept.map(|j| j.state.clone()),
        Some(JobState::Running),
        "still shown"
    );
    assert_eq!(
        a.update(Msg::Poll(PollMsg::PollDue)),
        vec![Cmd::PollWith {
            sacct: vec![id("237")]
        }]
    );
    a.on_poll_extra(
        0,
        PollExtra {
            finished: vec![JobDetail {
                id: Some(id("237")),
                state: Some(JobState::Completed),
                ..JobDetail::default()
            }],
            asked: vec![id("237")],
            ..PollExtra::default()
        },
    );
    a.update(loaded(without));
    let done = a
        .queue
        .shown()
        .jobs()
        .iter()
        .find(|j| j.id.as_str() == "237");
    assert_eq!(done.map(|j| j.state.clone()), Some(JobState::Completed));
    assert_eq!(
        a.update(Msg::Poll(PollMsg::PollDue)),
        vec![Cmd::PollQueue],
        "asked once only"
    );
}

#[test]
fn sacct_gives_up_on_an_unknown_id_after_three_tries() {
    let mut a = app();
    a.update(loaded(jobs()));
    let without: Vec<Job> = jobs()
        .into_iter()
        .filter(|j| j.id.as_str() != "237")
        .collect();
    a.update(loaded(without.clone()));
    for _ in 0..3 {
        assert_eq!(
            a.clusters[0].departures.poll_cmd(),
            Cmd::PollWith {
                sacct: vec![id("237")]
            }
        );
        a.on_poll_extra(
            0,
            PollExtra {
                asked: vec![id("237")],
                ..PollExtra::default()
            },
        );
    }
    assert_eq!(a.clusters[0].departures.poll_cmd(), Cmd::PollQueue);
}

/// The read a command list asks for, if any.
fn asked(cmds: &[Cmd]) -> Option<crate::slurm::pending::Ask> {
    cmds.iter().find_map(|c| match c {
        Cmd::FetchPending(a) => Some((**a).clone()),
        _ => None,
    })
}

/// An answer whose sprio lists `ids` (everyone's pending jobs in the partitions).
fn batch(ids: &[(&str, u64)]) -> crate::slurm::pending::Batch {
    crate::slurm::pending::Batch {
        user: "sduser".into(),
        sprio: ids
            .iter()
            .map(|(i, p)| crate::slurm::model::SprioRow {
                id: id(i),
                partition: "short".into(),
                user: "sduser".into(),
                priority: *p,
                age: 0.0,
                fairshare: 0.0,
                job_size: 0.0,
                partition_factor: 0.0,
                qos: 0.0,
                nice: 0,
                tres: String::new(),
            })
            .collect(),
        ..Default::default()
    }
}

fn at(secs: i64) -> NaiveDateTime {
    now() + chrono::Duration::seconds(secs)
}

/// One read answers for every pending job of the user: selecting another one shows its
/// rank at once and reads nothing, until the answer is two minutes old.
#[test]
fn one_read_answers_for_every_pending_job_and_is_kept() {
    let mut a = app();
    a.update(loaded(jobs()));
    let running = select(&mut a, "237");
    assert!(asked(&running).is_none(), "a running job asks nothing");
    let ask = asked(&select(&mut a, "248")).expect("a pending job asks");
    let all_pending: Vec<Job> = jobs()
        .into_iter()
        .filter(|j| j.status() == Status::Pending)
        .collect();
    assert!(all_pending.len() >= 2);
    assert!(
        all_pending.iter().all(|j| ask.covers(j)),
        "the read covers every pending job of the user"
    );
    assert!(a.clusters[0].insight.pending.loading);
    // Refreshes do not ask again.
    let cmds = a.update(loaded(jobs()));
    assert!(asked(&cmds).is_none());
    a.update(Msg::Insight(InsightMsg::Pending {
        ask: Box::new(ask.clone()),
        result: Box::new(Ok(batch(&[("247", 900), ("248", 500), ("249", 100)]))),
        at: now(),
    }));
    let p = &a.clusters[0].insight.pending;
    assert!(!p.loading);
    assert_eq!(
        p.info.as_ref().unwrap().rank.as_ref().unwrap().text(),
        "2nd of 3 in short"
    );
    // Another pending job: its rank at once, nothing read.
    let cmds = select(&mut a, "247");
    assert!(asked(&cmds).is_none(), "{cmds:?}");
    let p = &a.clusters[0].insight.pending;
    assert!(!p.loading);
    assert_eq!(p.id, Some(id("247")));
    assert_eq!(p.info.as_ref().unwrap().rank.as_ref().unwrap().position, 1);
    // Two minutes on: the kept answer shows while a new read goes out.
    a.update(Msg::Tick(at(PENDING_KEEP_SECS)));
    select(&mut a, "237");
    let again = asked(&select(&mut a, "248")).expect("an old answer is read again");
    let p = &a.clusters[0].insight.pending;
    assert!(p.loading && p.info.is_some(), "shown meanwhile");
    assert_eq!(p.as_of, Some(now()));
    // A failed read says so for the job shown.
    a.update(Msg::Insight(InsightMsg::Pending {
        ask: Box::new(again),
        result: Box::new(Err("sprio failed".into())),
        at: at(PENDING_KEEP_SECS),
    }));
    assert_eq!(
        a.clusters[0].insight.pending.error.as_deref(),
        Some("sprio failed")
    );
}

/// On a site whose slurmctld works priorities out every 5 minutes (PriorityCalcPeriod, read
/// with the site's config), the answer is kept 5 minutes: sprio's figures do not move
/// sooner. A period past 10 minutes keeps it 10; one under 2 minutes, 2.
#[test]
fn the_answer_is_kept_as_long_as_the_sites_priority_calc_period() {
    let mut a = app();
    a.update(loaded(jobs()));
    a.update(Msg::Poll(PollMsg::PriorityCalcPeriod(
        std::time::Duration::from_secs(300),
    )));
    let ask = asked(&select(&mut a, "248")).expect("a pending job asks");
    a.update(Msg::Insight(InsightMsg::Pending {
        ask: Box::new(ask),
        result: Box::new(Ok(batch(&[("247", 900), ("248", 500)]))),
        at: now(),
    }));
    a.update(Msg::Tick(at(299)));
    select(&mut a, "237");
    let cmds = select(&mut a, "248");
    assert!(asked(&cmds).is_none(), "kept for the 5 minutes: {cmds:?}");
    assert!(!a.clusters[0].insight.pending.loading);
    a.update(Msg::Tick(at(300)));
    select(&mut a, "237");
    assert!(
        asked(&select(&mut a, "248")).is_some(),
        "read again once the period is over"
    );
    let p = &mut a.clusters[0].insight.pending;
    p.set_calc_period(std::time::Duration::from_secs(3600));
    assert_eq!(p.keep_secs(), 600);
    p.set_calc_period(std::time::Duration::from_secs(30));
    assert_eq!(p.keep_secs(), PENDING_KEEP_SECS);
}

/// A selected job that starts waiting for a limit after its info was fetched: asked again
/// once, for slurmctld's current counts; other reason changes ask nothing.
#[test]
fn pending_info_is_asked_again_when_the_job_starts_waiting_for_a_limit() {
    let mut a = app();
    a.update(loaded(jobs()));
    let ask = asked(&select(&mut a, "248")).unwrap();
    a.update(Msg::Insight(InsightMsg::Pending {
        ask: Box::new(ask),
        result: Box::new(Ok(batch(&[("248", 1)]))),
        at: now(),
    }));
    let with_reason = |r: &str| -> Vec<Job> {
        jobs()
            .into_iter()
            .map(|mut j| {
                if j.id.as_str() == "248" {
                    j.reason = Some(r.into());
                }
                j
            })
            .collect()
    };
    assert!(asked(&a.update(loaded(with_reason("Resources")))).is_none());
    let again = asked(&a.update(loaded(with_reason("QOSMaxGRESPerUser"))));
    assert!(again.is_some());
    a.update(Msg::Insight(InsightMsg::Pending {
        ask: Box::new(again.unwrap()),
        result: Box::new(Ok(batch(&[("248", 1)]))),
        at: now(),
    }));
    assert!(asked(&a.update(loaded(with_reason("QOSMaxGRESPerUser")))).is_none());
    assert!(asked(&a.update(loaded(with_reason("AssocGrpGRES")))).is_some());
}

#[test]
fn partitions_view_fetches_once_per_minute_while_open() {
    let mut a = app();
    assert_eq!(
        a.run_command("partitions"),
        vec![Cmd::FetchPartitions, Cmd::FetchReservations],
        "the partitions and the maintenance windows they show"
    );
    assert_eq!(a.overlays.view, Some(View::Partitions));
    a.update(Msg::Insight(InsightMsg::Partitions {
        result: Ok(Vec::new()),
        at: now(),
    }));
    // (The retry check also runs on the clock; it is not what this test is about.)
    let tick = |a: &mut App, s: i64| -> Vec<Cmd> {
        a.update(Msg::Tick(now() + chrono::Duration::seconds(s)))
            .into_iter()
            .filter(|c| *c != Cmd::CheckRetries)
            .collect()
    };
    assert!(tick(&mut a, 30).is_empty());
    assert_eq!(tick(&mut a, 61), vec![Cmd::FetchPartitions]);
    a.update(Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
    assert_eq!(a.overlays.view, None);
    assert!(a
        .update(Msg::Tick(now() + chrono::Duration::seconds(200)))
        .is_empty());
    a.run_command("stats");
    assert_eq!(a.overlays.view, Some(View::Stats));
}

#[test]
fn interval_grows_while_the_queue_stays_the_same_and_snaps_back_on_a_change_or_a_key() {
    let mut a = app();
    let quiet: Vec<Job> = jobs()
        .into_iter()
        .filter(|j| !matches!(j.state, JobState::Configuring | JobState::Completing))
        .map(|mut j| {
            // Started long ago or no estimate: nothing is about to happen.
            j.start_time = None;
            j
        })
        .collect();
    a.update(loaded(quiet.clone()));
    assert_eq!(
        a.clusters[0].status.poll_interval,
        Duration::from_secs(5),
        "just opened"
    );
    let mut seen = Vec::new();
    for _ in 0..6 {
        a.update(Msg::Poll(PollMsg::PollDue));
        a.update(loaded(quiet.clone()));
        seen.push(a.clusters[0].status.poll_interval.as_secs());
    }
    assert_eq!(
        seen,
        [7, 11, 16, 25, 30, 30],
        "same queue: slower each time"
    );
    // Following a log that writes steadily does not speed the queue up.
    a.update(Msg::Tick(now() + chrono::Duration::seconds(1)));
    assert_eq!(a.clusters[0].status.poll_interval, Duration::from_secs(30));
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('j'),
        KeyModifiers::NONE,
    )));
    a.update(Msg::Tick(now() + chrono::Duration::seconds(2)));
    assert_eq!(
        a.clusters[0].status.poll_interval,
        Duration::from_secs(5),
        "a key brings back the usual pace"
    );
    let fewer: Vec<Job> = quiet[1..].to_vec();
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(loaded(fewer));
    assert_eq!(
        a.clusters[0].status.poll_interval,
        Duration::from_secs(2),
        "a job left: fastest"
    );
    // A job that just started: fastest while it is new.
    let mut started = quiet.clone();
    for j in &mut started {
        if j.status() == Status::Running {
            j.start_time = Some(a.now - chrono::Duration::seconds(10));
        }
    }
    for _ in 0..3 {
        a.update(Msg::Poll(PollMsg::PollDue));
        a.update(loaded(started.clone()));
    }
    assert_eq!(a.clusters[0].status.poll_interval, Duration::from_secs(2));
}

#[test]
fn a_collapsed_array_row_changing_its_id_is_not_a_departure() {
    let mut a = app();
    a.update(loaded(jobs()));
    let renamed: Vec<Job> = jobs()
        .into_iter()
        .map(|mut j| {
            if j.id.array_pending().is_some() {
                j.id = id(&j.id.as_str().replace("[4-", "[5-"));
            }
            j
        })
        .collect();
    assert_ne!(
        renamed.iter().map(|j| j.id.clone()).collect::<Vec<_>>(),
        jobs().iter().map(|j| j.id.clone()).collect::<Vec<_>>()
    );
    a.update(loaded(renamed));
    assert_eq!(a.clusters[0].departures.poll_cmd(), Cmd::PollQueue);
    assert!(a.clusters[0].departures.rows.is_empty());
}

#[test]
fn a_held_job_whose_start_time_is_near_does_not_keep_the_fastest_pace() {
    // `scontrol requeuehold` leaves the job pending with %S two minutes ahead (when it would
    // be eligible) and reason "job requeued in held state": it starts only after a release.
    let pending_at = |reason: &str| -> Vec<Job> {
        jobs()
            .into_iter()
            .filter(|j| j.status() == Status::Pending)
            .map(|mut j| {
                j.reason = Some(reason.into());
                j.start_time = None;
                j
            })
            .enumerate()
            .map(|(i, mut j)| {
                if i == 0 {
                    j.start_time = Some(now() + chrono::Duration::seconds(40));
                }
                j
            })
            .collect()
    };
    for (reason, expect) in [
        ("job requeued in held state", 30),
        ("JobHeldUser", 30),
        // Not held: an estimate within a minute is a start about to happen.
        ("Resources", 2),
    ] {
        let mut a = app();
        let q = pending_at(reason);
        a.update(loaded(q.clone()));
        for _ in 0..8 {
            a.update(Msg::Poll(PollMsg::PollDue));
            a.update(loaded(q.clone()));
        }
        assert_eq!(
            a.clusters[0].status.poll_interval.as_secs(),
            expect,
            "reason {reason}"
        );
    }
}

/// The rows' start times are worked out once per list, yet the interval still follows the
/// clock: an estimated start that comes within a minute as time passes (the same list,
/// refreshed unchanged) brings the fastest pace, and one a minute past lets it go.
#[test]
fn a_start_estimate_coming_near_speeds_up_with_the_list_unchanged() {
    let mut a = app();
    let q: Vec<Job> = jobs()
        .into_iter()
        .filter(|j| j.status() == Status::Pending)
        .enumerate()
        .map(|(i, mut j)| {
            j.reason = Some("Resources".into());
            j.start_time = (i == 0).then(|| now() + chrono::Duration::seconds(300));
            j
        })
        .collect();
    a.update(loaded(q.clone()));
    for _ in 0..8 {
        a.update(Msg::Poll(PollMsg::PollDue));
        a.update(loaded(q.clone()));
    }
    a.update(Msg::Tick(now() + chrono::Duration::seconds(200)));
    assert_eq!(a.clusters[0].status.poll_interval, Duration::from_secs(30));
    let generation = a.queue.jobs.generation();
    a.update(Msg::Tick(now() + chrono::Duration::seconds(250)));
    assert_eq!(
        a.clusters[0].status.poll_interval,
        Duration::from_secs(2),
        "the start is 50 s away"
    );
    a.update(Msg::Tick(now() + chrono::Duration::seconds(370)));
    assert_eq!(
        a.clusters[0].status.poll_interval,
        Duration::from_secs(30),
        "the start was 70 s ago and nothing changed"
    );
    assert_eq!(
        a.queue.jobs.generation(),
        generation,
        "the list did not change"
    );
}

/// A job that left squeue: sacct is asked at once (slurmdbd alone, no slurmctld RPC), and
/// its final state shows on its kept row without waiting for the next refresh.
#[test]
fn a_job_that_left_asks_sacct_at_once_and_its_end_shows_before_the_next_refresh() {
    use crate::payload::PollExtra;
    let mut a = app();
    a.update(loaded(jobs()));
    let mut fewer = jobs();
    let at = fewer
        .iter()
        .position(|j| j.status() == Status::Running)
        .expect("a running job");
    let left = fewer.remove(at);
    let cmds = a.update(loaded(fewer));
    let asked = cmds
        .iter()
        .find_map(|c| match c {
            Cmd::FinalStates(ids) => Some(ids.clone()),
            _ => None,
        })
        .expect("sacct asked at once");
    assert_eq!(asked, vec![left.id.clone()]);
    assert_eq!(
        crate::app::budget::read_cost(&Cmd::FinalStates(asked.clone())),
        None
    );
    a.update(Msg::Poll(PollMsg::FinalStates(PollExtra {
        finished: vec![JobDetail {
            id: Some(left.id.clone()),
            state: Some(JobState::Completed),
            ..JobDetail::default()
        }],
        asked,
        problems: Vec::new(),
    })));
    let row = a
        .queue
        .shown()
        .jobs()
        .iter()
        .find(|j| j.id == left.id)
        .expect("kept");
    assert_eq!(row.state, JobState::Completed);
    // Settled: the next refresh asks sacct nothing more.
    assert_eq!(a.clusters[0].departures.poll_cmd(), Cmd::PollQueue);
}
