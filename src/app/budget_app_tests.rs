//! The RPC budget driven through the whole App with a stand-in clock and a stand-in hub:
//! every command `App::handle` lets out is what would reach slurmctld, charged at what
//! `read_cost` says it costs (the figures sdiag counted).

use crate::action::{InsightMsg, JobMsg, PollMsg};
use std::time::Duration;

use super::{read_cost, Budget, Kind, THROTTLE_PAUSE_SECS};
use crate::action::{Cmd, Msg};
use crate::app::tests::{app, jobs, key, now};
use crate::app::App;
use crate::slurm::model::JobId;
use chrono::NaiveDateTime;

fn at(s: i64) -> NaiveDateTime {
    now() + chrono::Duration::seconds(s)
}

fn no<T>(what: &str) -> Result<T, String> {
    Err(format!("{what}: no answer in this test"))
}

fn from_hub(m: Msg) -> Msg {
    Msg::Cluster(0, Box::new(m))
}

/// The dashboard's loop without a terminal or a cluster: one tick a second, the hub's
/// refresh timer, and an answer to every read one second after it went out.
struct Sim {
    app: App,
    t: i64,
    /// (second, RPCs) of every read that went out.
    sent: Vec<(i64, u64)>,
    /// (second, job) of every detail read that went out.
    details: Vec<(i64, JobId)>,
    refreshes: Vec<i64>,
    /// The hub's refresh timer: when it asks next, and its interval.
    due: i64,
    every: i64,
    answers: Vec<(i64, Msg)>,
    /// slurmctld refuses every read for its rate limit.
    throttling: bool,
    /// What `scontrol show config` says of the site's rate limit.
    site: Option<crate::slurm::ratelimit::RateLimit>,
    /// When the site's limit was read.
    site_reads: Vec<i64>,
    /// The cluster's queue: what a full read lists and a state check sees.
    queue: Vec<crate::slurm::model::Job>,
    /// The Slurm release `scontrol show config` names (none: not printed).
    version: Option<crate::slurm::statecheck::Version>,
    /// When a state check went out.
    checks: Vec<i64>,
    /// When a pending read went out.
    pendings: Vec<i64>,
    /// (second, job) of every live sample that went out.
    samples: Vec<(i64, JobId)>,
}

impl Sim {
    fn new(budget: u32) -> Sim {
        let mut app = app();
        app.clusters[0].budget = Budget::new(budget);
        let mut s = Sim {
            app,
            t: 0,
            sent: Vec::new(),
            details: Vec::new(),
            refreshes: Vec::new(),
            due: 0,
            every: 5,
            answers: Vec::new(),
            throttling: false,
            site: None,
            site_reads: Vec::new(),
            queue: jobs(),
            version: None,
            checks: Vec::new(),
            pendings: Vec::new(),
            samples: Vec::new(),
        };
        // The hub at connect: a refresh at once, then its timer.
        s.send(from_hub(Msg::Poll(PollMsg::PollDue)));
        s.due = s.every;
        s
    }

    fn send(&mut self, m: Msg) {
        let cmds = self.app.handle(m);
        for (_, c) in cmds {
            self.out(c);
        }
    }

    /// What the hub does with one command.
    fn out(&mut self, c: Cmd) {
        let t = self.t;
        if let Some((kind, cost)) = read_cost(&c) {
            self.sent.push((t, cost));
            if kind == Kind::Refresh {
                self.refreshes.push(t);
            }
        }
        let refused = "slurm_load_jobs error: Rate limit exceeded, please retry momentarily";
        let answer = match c {
            Cmd::PollQueue | Cmd::PollWith { .. } if self.throttling => Msg::queue(
                Err(format!("squeue failed (exit 1): {refused}")),
                at(t),
                Duration::ZERO,
            ),
            Cmd::PollQueue | Cmd::PollWith { .. } => {
                Msg::queue(Ok(self.queue.clone()), at(t), Duration::from_millis(20))
            }
            Cmd::CheckStates(ids) => {
                self.checks.push(t);
                let seen = self
                    .queue
                    .iter()
                    .filter(|j| ids.contains(&j.id.base()))
                    .map(|j| crate::slurm::statecheck::Seen {
                        id: crate::slurm::statecheck::key(j.id.as_str()),
                        state: j.state.clone(),
                    })
                    .collect();
                Msg::Poll(PollMsg::StateCheck {
                    result: Ok(seen),
                    at: at(t),
                })
            }
            Cmd::FetchDetail(id) => {
                self.details.push((t, id.clone()));
                let state = self
                    .queue
                    .iter()
                    .find(|j| j.id == id)
                    .map(|j| j.state.clone());
                let result = match state {
                    Some(state) => Ok((
                        crate::slurm::model::JobDetail {
                            id: Some(id.clone()),
                            state: Some(state),
                            ..Default::default()
                        },
                        crate::payload::DetailSource::Scontrol,
                    )),
                    None => no("scontrol"),
                };
                Msg::Job(JobMsg::Detail {
                    id,
                    result: Box::new(result),
                })
            }
            Cmd::FetchPending(ask) => {
                self.pendings.push(t);
                Msg::Insight(InsightMsg::Pending {
                    result: Box::new(Ok(crate::slurm::pending::Batch {
                        user: ask.user.clone(),
                        ..Default::default()
                    })),
                    ask,
                    at: at(t),
                })
            }
            Cmd::SampleLive(target) => {
                self.samples.push((t, target.id.clone()));
                Msg::Job(JobMsg::Live {
                    id: target.id.clone(),
                    result: Box::new(Ok(crate::slurm::live::LiveSample {
                        clock: None,
                        steps: Ok(Vec::new()),
                        gpus: Vec::new(),
                    })),
                    at: at(t),
                })
            }
            Cmd::FetchSiteLimit => {
                self.site_reads.push(t);
                if let Some(v) = self.version {
                    self.answers
                        .push((t + 1, from_hub(Msg::Poll(PollMsg::SlurmVersion(v)))));
                }
                Msg::Poll(PollMsg::SiteLimit(Ok(self.site)))
            }
            Cmd::SetPollInterval(d) => {
                // "The next refresh comes one new interval from now."
                self.every = d.as_secs() as i64;
                self.due = t + self.every;
                return;
            }
            _ => return,
        };
        self.answers.push((t + 1, from_hub(answer)));
    }

    /// One second of the dashboard: the hub's messages due, its timer, the clock.
    fn second(&mut self) {
        self.t += 1;
        let t = self.t;
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.answers)
            .into_iter()
            .partition(|(when, _)| *when <= t);
        self.answers = later;
        for (_, m) in due {
            self.send(m);
        }
        if t >= self.due {
            self.due = t + self.every;
            self.send(from_hub(Msg::Poll(PollMsg::PollDue)));
        }
        if t % 5 == 0 {
            // The transport's count is what went out: nothing unplanned to charge.
            let stats = crate::payload::RemoteStats {
                rpcs: crate::slurm::command::RpcCost {
                    ctld: self.sent.iter().map(|(_, n)| n).sum(),
                    dbd: 0,
                },
                ..Default::default()
            };
            self.send(from_hub(Msg::Poll(PollMsg::RemoteStats {
                stats,
                at: at(t),
            })));
        }
        self.send(Msg::Tick(at(t)));
    }

    fn run_until(&mut self, end: i64, mut each: impl FnMut(&mut Sim)) {
        while self.t < end {
            self.second();
            each(self);
        }
    }

    /// The most any five minutes saw from `from` on.
    fn worst_window_from(&self, from: i64) -> u64 {
        let after: Vec<(i64, u64)> = self
            .sent
            .iter()
            .copied()
            .filter(|(t, _)| *t >= from)
            .collect();
        after
            .iter()
            .map(|(end, _)| {
                after
                    .iter()
                    .filter(|(b, _)| b <= end && end - b < 300)
                    .map(|(_, n)| n)
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0)
    }

    /// The first full read sent at or after `t`.
    fn full_read_from(&self, t: i64) -> Option<i64> {
        self.refreshes.iter().copied().find(|r| *r >= t)
    }

    fn selected_state(&self) -> Option<crate::slurm::model::Status> {
        self.app.queue.shown().selected_job().map(|j| j.status())
    }
}

impl Sim {
    /// Moves the selection to the next row (down, wrapping to the top) in `status`, other
    /// than the one selected; returns its id.
    fn select_next(&mut self, status: crate::slurm::model::Status) -> JobId {
        let from = self.app.queue.shown().selected_id().cloned();
        for _ in 0..200 {
            let before = self.app.queue.shown().selected_id().cloned();
            self.send(key('j'));
            if self.app.queue.shown().selected_id() == before.as_ref() {
                self.send(key('g')); // the last row: back to the top
            }
            if self.selected_state() == Some(status)
                && self.app.queue.shown().selected_id() != from.as_ref()
            {
                return self.app.queue.shown().selected_id().cloned().unwrap();
            }
        }
        panic!("no other {status:?} row");
    }

    fn sent_between(&self, from: i64, to: i64) -> u64 {
        self.sent
            .iter()
            .filter(|(t, _)| (from..to).contains(t))
            .map(|(_, n)| n)
            .sum()
    }

    /// The longest time between two full reads or checks, from `from` on.
    fn longest_gap_from(&self, from: i64) -> i64 {
        let mut looks: Vec<i64> = self
            .refreshes
            .iter()
            .chain(self.checks.iter())
            .copied()
            .filter(|t| *t >= from)
            .collect();
        looks.sort();
        looks.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0)
    }
}

/// Issue 36's targets on the state machine, with the default budget (4 a minute): every
/// answer a key asks for goes out in the second of the key; the queue is never older than
/// a minute; a fresh dashboard that looks at one pending and one running job spends at
/// most 25 RPCs in its first five minutes; a 15-minute session with a new selection every
/// 20 s (pending and running in turn, `:partitions` once) at most 8 a minute; and any five
/// minutes without a key at most 4 a minute.
#[test]
fn the_answers_come_at_once_and_the_dashboard_stays_gentle() {
    use crate::slurm::model::Status;
    let mut s = Sim::new(4);
    s.version = Some(crate::slurm::statecheck::Version(22, 5, 8));
    s.run_until(5, |_| {});
    // The first five minutes: the first row (a running job) selected as the dashboard
    // opens, its live use read at once; the user moves to a pending job and back.
    let r = s.app.queue.shown().selected_id().cloned().unwrap();
    assert_eq!(s.selected_state(), Some(Status::Running));
    assert!(
        s.samples.iter().any(|(t, id)| *t <= 2 && *id == r),
        "its live use at once: {:?}",
        s.samples
    );
    s.send(key('j'));
    let p = s.app.queue.shown().selected_id().cloned().unwrap();
    assert_eq!(s.selected_state(), Some(Status::Pending));
    s.second();
    assert_eq!(
        s.pendings.last(),
        Some(&6),
        "why it pends: asked at the next second"
    );
    assert!(s.details.iter().any(|(t, id)| *t == 6 && *id == p));
    s.run_until(30, |_| {});
    s.send(key('k'));
    assert_eq!(s.app.queue.shown().selected_id(), Some(&r));
    assert!(s.app.detail.detail.is_some(), "its detail, kept");
    s.run_until(300, |_| {});
    let first = s.sent_between(0, 300);
    assert!(
        first <= 25,
        "{first} RPCs in the first five minutes: {:?}",
        s.sent
    );

    // Fifteen minutes of use: a new selection every 20 s, pending and running in turn.
    let mut pending_turn = true;
    let mut answered = 0;
    let mut walked_to: Option<(JobId, Status)> = None;
    s.run_until(1200, |s| {
        if s.t % 20 == 0 {
            let status = if pending_turn { Status::Pending } else { Status::Running };
            pending_turn = !pending_turn;
            walked_to = Some((s.select_next(status), status));
        }
        // A second after the key (the sim answers every read a second after it went out):
        // every answer is on screen, kept or read just now.
        if let (2, Some((id, status))) = (s.t % 20, walked_to.clone()) {
            assert_eq!(s.app.queue.shown().selected_id(), Some(&id));
            assert!(s.app.detail.detail.is_some(), "the detail of {id} at {}", s.t);
            match status {
                Status::Pending => {
                    let p = &s.app.clusters[0].insight.pending;
                    assert!(
                        p.info.is_some() && !p.loading,
                        "why {id} pends at {}: info {} loading {} error {:?} pendings {:?} held {:?}",
                        s.t,
                        p.info.is_some(),
                        p.loading,
                        p.error,
                        s.pendings,
                        s.sent.iter().filter(|(t, _)| *t > 470).collect::<Vec<_>>()
                    );
                }
                _ => assert!(
                    s.app.live.job(&id).is_some_and(|j| j.latest.is_some()),
                    "the live use of {id} at {}",
                    s.t
                ),
            }
            answered += 1;
        }
        if s.t == 610 {
            s.send(Msg::Key(crossterm::event::KeyEvent::from(
                crossterm::event::KeyCode::Char(':'),
            )));
            for c in "partitions".chars() {
                s.send(key(c));
            }
            s.send(Msg::Key(crossterm::event::KeyEvent::from(
                crossterm::event::KeyCode::Enter,
            )));
        }
        if s.t == 640 {
            s.send(Msg::Key(crossterm::event::KeyEvent::from(
                crossterm::event::KeyCode::Esc,
            )));
        }
    });
    assert!(answered >= 44);
    let active = s.sent_between(300, 1200);
    assert!(
        active <= 8 * 15,
        "{active} RPCs in the 15 minutes of use ({:.1} a minute): {:?}",
        active as f64 / 15.0,
        s.sent
    );
    // Ten minutes without a key, a running job selected.
    s.run_until(1800, |_| {});
    for from in (1200..=1500).step_by(10) {
        let idle = s.sent_between(from, from + 300);
        assert!(
            idle <= 20,
            "{idle} RPCs in the idle five minutes from {from}"
        );
    }
    assert!(
        s.longest_gap_from(0) <= crate::app::budget::WATCH_SECS + 1,
        "the queue went {} s unread: {:?}",
        s.longest_gap_from(0),
        s.refreshes
    );
    println!(
        "first five minutes {first} RPCs; 15 minutes of use {active} ({:.1}/min); idle {:.1}/min",
        active as f64 / 15.0,
        s.sent_between(1500, 1800) as f64 / 5.0
    );
}

#[test]
fn a_held_refresh_is_released_and_r_goes_at_once() {
    let mut s = Sim::new(4);
    s.run_until(2, |_| {});
    // `r` twice: both go at once (the user asked), and both are counted.
    s.send(key('r'));
    s.run_until(4, |_| {});
    s.send(key('r'));
    assert_eq!(s.refreshes, vec![0, 2, 4], "r refreshes at once");
    // The timer's refresh at 50 s finds the minute spent (0, 2, 4): held, but never
    // past 50 s after the last one.
    s.run_until(51, |_| {});
    assert_eq!(s.refreshes, vec![0, 2, 4]);
    assert!(s.app.clusters[0].budget.holds(Kind::Refresh));
    let bar = crate::ui::status::budget_text(&s.app.clusters[0], s.app.now);
    assert_eq!(bar, " · next in 3s, held by the budget of 4/min");
    s.run_until(55, |_| {});
    assert_eq!(
        s.refreshes,
        vec![0, 2, 4, 54],
        "released 50 s after the last: the queue is never a minute old"
    );
    assert!(!s.app.clusters[0].budget.holds(Kind::Refresh));
    s.send(key('r'));
    // The timer's next (100 s) is held again; `r` sends the held one at once.
    s.run_until(101, |_| {});
    assert_eq!(s.refreshes, vec![0, 2, 4, 54, 55]);
    assert!(s.app.clusters[0].budget.holds(Kind::Refresh));
    s.send(key('r'));
    assert_eq!(s.refreshes.last(), Some(&101));
    assert!(!s.app.clusters[0].budget.holds(Kind::Refresh));
}

#[test]
fn walking_the_queue_reads_each_detail_once_and_walking_back_reads_nothing() {
    let mut s = Sim::new(4);
    s.run_until(3, |_| {});
    for _ in 0..6 {
        s.send(key('j'));
        s.second();
    }
    for _ in 0..6 {
        s.send(key('k'));
        s.second();
    }
    let walked = s.details.len();
    assert!(walked >= 6, "each job's detail at once: {:?}", s.details);
    let samples = s.samples.len();
    for k in ['j', 'k'] {
        for _ in 0..6 {
            s.send(key(k));
            s.second();
        }
    }
    assert_eq!(s.details.len(), walked, "kept: {:?}", s.details);
    assert_eq!(s.samples.len(), samples, "live use kept: {:?}", s.samples);
}

#[test]
fn a_throttled_answer_says_so_and_pauses_every_planned_read() {
    let mut s = Sim::new(0); // no budget: the pause alone holds reads
    s.run_until(10, |_| {});
    let before = s.refreshes.len();
    s.throttling = true;
    // The next refresh is refused.
    s.run_until(20, |_| {});
    assert_eq!(s.refreshes.len(), before + 1, "{:?}", s.refreshes);
    let err = s.app.clusters[0].status.last_error.clone().unwrap();
    assert!(
        err.starts_with(
            "slurmctld refused for its rate limit: slurmdash pauses its reads for 60 s"
        ),
        "{err}"
    );
    let refused_at = *s.refreshes.last().unwrap();
    // Nothing goes for a minute: no tight loop of retries.
    s.run_until(refused_at + THROTTLE_PAUSE_SECS - 1, |_| {});
    assert!(
        s.sent.iter().all(|(t, _)| *t <= refused_at),
        "reads during the pause: {:?}",
        s.sent
    );
    assert!(
        crate::ui::status::budget_text(&s.app.clusters[0], s.app.now)
            .starts_with(" · slurmctld rate limit: reads paused")
    );
    s.throttling = false;
    s.run_until(refused_at + THROTTLE_PAUSE_SECS + 6, |_| {});
    assert!(s.refreshes.last() > Some(&refused_at), "resumed");
    assert!(s.app.clusters[0].status.last_error.is_none());
}

#[test]
fn a_background_sample_waits_and_is_dropped_when_the_user_moves_on() {
    let mut s = Sim::new(4);
    s.run_until(3, |_| {});
    let first = s.app.queue.shown().selected_id().cloned().unwrap();
    assert_eq!(
        s.selected_state(),
        Some(crate::slurm::model::Status::Running)
    );
    // The first row's detail and live use went at once, with the first refresh.
    assert!(s.samples.iter().any(|(_, id)| *id == first));
    // Later samples come with the refresh, in the background, after the five minutes
    // gave back what the user spent.
    s.run_until(200, |_| {});
    let bg: Vec<_> = s.samples.iter().filter(|(t, _)| *t > 3).collect();
    assert!(bg.is_empty(), "{bg:?}");
    if s.app.clusters[0].budget.holds(Kind::Live) {
        s.send(key('j'));
        s.run_until(201, |_| {});
        assert!(
            !s.app.clusters[0].budget.holds(Kind::Live),
            "the sample of the job left is dropped, never sent"
        );
        assert!(!s.app.live.sampling(&first));
    }
}

#[test]
fn a_sites_rate_limit_is_read_once_and_caps_the_budget() {
    use crate::slurm::ratelimit::RateLimit;
    // No budget configured; the site refills one token every 10 s: 6 RPCs a minute.
    let strict = RateLimit {
        bucket: 5,
        refill_rate: 1,
        refill_period_secs: 10,
    };
    let mut s = Sim::new(0);
    s.site = Some(strict);
    s.run_until(20 * 60, |_| {});
    assert_eq!(s.site_reads.len(), 1, "read once: {:?}", s.site_reads);
    assert!(
        s.site_reads[0] <= 3,
        "read after the first refresh: {:?}",
        s.site_reads
    );
    assert_eq!(s.app.clusters[0].budget.per_minute, 6);
    // From the read on, every five minutes stay within the site's refill (the first
    // seconds, before it was known, went at the configured pace).
    let from = s.site_reads[0] + 60;
    let worst = s.worst_window_from(from);
    assert!(
        worst <= 30,
        "{worst} RPCs in five minutes at a site limit of 6/min"
    );
    // Still refreshing, at the pace the limit allows (every 160/6 = 27 s at best).
    let late = s.refreshes.iter().filter(|t| **t >= from).count();
    assert!(late >= 20, "{late} refreshes in 18 min: {:?}", s.refreshes);
    println!("site limit 6/min: worst five minutes {worst} RPCs, {late} refreshes in 18 min");

    // A generous site (the default 2 tokens a second) leaves the configured budget alone.
    let mut s = Sim::new(4);
    s.site = Some(RateLimit {
        bucket: 30,
        refill_rate: 2,
        refill_period_secs: 1,
    });
    s.run_until(120, |_| {});
    assert_eq!(s.site_reads.len(), 1);
    assert_eq!(s.app.clusters[0].budget.per_minute, 4);
}

#[test]
fn state_checks_between_full_reads_see_an_end_within_a_check_and_a_new_job_within_a_full_read() {
    use crate::slurm::model::{JobState, Status};
    use crate::slurm::statecheck::Version;
    let mut s = Sim::new(4);
    s.version = Some(Version(24, 11, 5));
    // Two minutes on a pending job (why it pends, read once; a running job's live samples
    // would take the background's quarter, and a full read a check calls for would then
    // wait for room in the five minutes).
    s.run_until(2, |_| {});
    for _ in 0..40 {
        if s.selected_state() == Some(Status::Pending) {
            break;
        }
        s.send(key('j'));
    }
    assert_eq!(s.selected_state(), Some(Status::Pending));
    s.run_until(120, |_| {});
    assert_eq!(
        s.app.clusters[0].status.poll_interval,
        Duration::from_secs(29),
        "checks and full reads take turns: a poll every 29 s on 4/min"
    );
    assert!(!s.checks.is_empty(), "state checks went out");
    // Idle, once the first reads (the pending job's lookup waited for its share until
    // 301 s) left the five minutes: a check between two full reads.
    s.run_until(700, |_| {});
    let (c0, r0) = (s.checks.len(), s.refreshes.len());
    s.run_until(932, |_| {});
    let (checks, fulls) = (s.checks.len() - c0, s.refreshes.len() - r0);
    assert!(
        checks == 4 && fulls == 4,
        "{checks} checks and {fulls} full reads in 232 s: {:?} {:?} {:?}",
        s.sent,
        s.checks,
        s.refreshes
    );

    // A running job ends (it leaves the queue) just after a full read answered: the next
    // poll is a check.
    let from = s.t;
    while s
        .refreshes
        .last()
        .is_none_or(|r| *r < from || *r + 1 != s.t)
    {
        assert!(s.t < from + 120, "no full read: {:?}", s.refreshes);
        s.second();
    }
    let ended = s
        .queue
        .iter()
        .position(|j| j.status() == Status::Running)
        .unwrap();
    let gone = s.queue.remove(ended).id.clone();
    let t0 = s.t;
    s.run_until(t0 + 70, |_| {});
    let check = *s.checks.iter().find(|c| **c > t0).unwrap();
    assert!(
        check - t0 <= 29,
        "the next check came {} s after",
        check - t0
    );
    // The check saw it; its full read followed at once, before the one the schedule had
    // planned.
    let full = s.full_read_from(check).unwrap();
    let last_before = s
        .refreshes
        .iter()
        .copied()
        .filter(|r| *r < check)
        .max()
        .unwrap();
    assert!(
        full - check <= 1 && full < last_before + 58,
        "the full read right after the check: {last_before}, check {check}, then {full}"
    );
    println!(
        "job ended at {t0}: check at {check}, full read at {full} (the schedule's at {})",
        last_before + 58
    );
    assert!(s.app.clusters[0].checks.changes >= 1);
    // The row is the kept one of a job that left (its final state from sacct).
    assert!(
        s.app.clusters[0].departures.is_kept(&gone),
        "the end was seen by the full read"
    );

    // A job submitted from another terminal: only a full read can see it.
    let mut new = s.queue[0].clone();
    new.id = "99999".parse().unwrap();
    new.state = JobState::Pending;
    s.queue.push(new);
    let t1 = s.t;
    s.run_until(t1 + 70, |_| {});
    let seen = s.full_read_from(t1 + 1).unwrap();
    assert!(
        seen - t1 <= 59,
        "a full read {} s after the new job",
        seen - t1
    );
    assert!(s
        .app
        .queue
        .shown()
        .jobs()
        .iter()
        .any(|j| j.id.as_str() == "99999"));

    s.run_until(25 * 60, |_| {});
    // Past the pending job's read (the user's, at the start), any five minutes stay
    // within 4 a minute.
    let worst = s.worst_window_from(10);
    assert!(
        worst <= 20,
        "a five-minute window saw {worst} RPCs: {:?}",
        s.sent
    );
    let idle = s.worst_window_from(t1 + 120);
    println!(
        "checks: {} sent, {} changes; worst five minutes {worst} RPCs, idle {idle}",
        s.checks.len(),
        s.app.clusters[0].checks.changes
    );
}

#[test]
fn a_cluster_without_state_checks_refreshes_as_before() {
    let mut s = Sim::new(4);
    s.version = Some(crate::slurm::statecheck::Version(22, 5, 8));
    s.run_until(600, |_| {});
    assert!(
        s.checks.is_empty(),
        "22.05 never gets a check: {:?}",
        s.checks
    );
    assert_eq!(
        s.app.clusters[0].status.poll_interval,
        Duration::from_secs(50)
    );
    let idle = s.refreshes.iter().filter(|t| **t > 120).count();
    assert!((9..=10).contains(&idle), "{idle}: {:?}", s.refreshes);
}

#[test]
fn without_a_budget_every_other_poll_is_a_check() {
    let mut s = Sim::new(0);
    s.version = Some(crate::slurm::statecheck::Version(26, 5, 5));
    s.run_until(600, |_| {});
    let late_checks = s.checks.iter().filter(|t| **t > 300).count();
    let late_fulls = s.refreshes.iter().filter(|t| **t > 300).count();
    assert!(late_checks > 0, "{:?}", s.checks);
    assert!(
        late_checks.abs_diff(late_fulls) <= 1,
        "{late_checks} checks, {late_fulls} full reads: {:?} {:?}",
        s.checks,
        s.refreshes
    );
}

/// Walking back and forth within a second: a job's sample that another one replaced before
/// it went is asked again when the job is selected again (it was never out).
#[test]
fn a_sample_replaced_before_it_went_is_asked_again_when_its_job_is_selected_again() {
    use crate::slurm::model::Status;
    let mut s = Sim::new(4);
    s.run_until(3, |_| {});
    let first = s.select_next(Status::Running);
    let second = s.select_next(Status::Running);
    assert_ne!(first, second);
    for _ in 0..200 {
        if s.app.queue.shown().selected_id() == Some(&first) {
            break;
        }
        s.send(key('k'));
    }
    assert_eq!(s.app.queue.shown().selected_id(), Some(&first));
    s.second();
    assert!(
        s.samples.iter().any(|(t, id)| *t == s.t && *id == first),
        "{:?}",
        s.samples
    );
    s.second();
    let job = s.app.live.job(&first);
    assert!(
        job.is_some_and(|j| j.latest.is_some()),
        "its live use on screen"
    );
}
