//! The RPC budget driven through the whole App with a stand-in clock and a stand-in hub:
//! every command `App::handle` lets out is what would reach slurmctld, charged at what
//! `read_cost` says it costs (the figures sdiag counted).

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
}

impl Sim {
    fn new(budget: u32) -> Sim {
        let mut app = app();
        app.cluster.budget = Budget::new(budget);
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
        };
        // The hub at connect: a refresh at once.
        s.send(from_hub(Msg::PollDue));
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
                Msg::queue(Ok(jobs()), at(t), Duration::from_millis(20))
            }
            Cmd::FetchDetail(id) => {
                self.details.push((t, id.clone()));
                Msg::Detail {
                    id,
                    result: Box::new(no("scontrol")),
                }
            }
            Cmd::FetchPending(job) => Msg::Pending {
                id: job.id.clone(),
                result: Box::new(no("pending")),
            },
            Cmd::SampleLive(target) => Msg::Live {
                id: target.id.clone(),
                result: Box::new(no("sstat")),
                at: at(t),
            },
            Cmd::FetchSiteLimit => {
                self.site_reads.push(t);
                Msg::SiteLimit(Ok(self.site))
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
            self.send(from_hub(Msg::PollDue));
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
            self.send(from_hub(Msg::RemoteStats { stats, at: at(t) }));
        }
        self.send(Msg::Tick(at(t)));
    }

    fn run_until(&mut self, end: i64, mut each: impl FnMut(&mut Sim)) {
        while self.t < end {
            self.second();
            each(self);
        }
    }

    /// The most any five minutes (300 s, ending at a send) saw.
    fn worst_window(&self) -> u64 {
        self.sent
            .iter()
            .map(|(end, _)| {
                self.sent
                    .iter()
                    .filter(|(s, _)| *s <= *end && end - s < 300)
                    .map(|(_, n)| n)
                    .sum()
            })
            .max()
            .unwrap_or(0)
    }

    fn selected_state(&self) -> Option<crate::slurm::model::Status> {
        self.app.queue.selected_job().map(|j| j.status())
    }
}

#[test]
fn twenty_minutes_of_use_stay_within_the_budget_and_the_refresh_keeps_its_pace() {
    let mut s = Sim::new(4);
    assert_eq!(s.refreshes, vec![0], "the first refresh goes out at once");
    // Two minutes with the first row (a running job) selected: its detail, live samples.
    s.run_until(120, |_| {});
    assert_eq!(
        s.selected_state(),
        Some(crate::slurm::model::Status::Running)
    );
    assert_eq!(
        s.app.cluster.status.poll_interval,
        Duration::from_secs(40),
        "never faster than the budget allows"
    );
    // Five minutes of a user walking the queue: a key every 3 s, down then up.
    let mut down = true;
    s.run_until(420, |s| {
        if s.t % 3 == 0 {
            if s.t % 60 == 0 {
                down = !down;
            }
            s.send(key(if down { 'j' } else { 'k' }));
        }
    });
    // Three minutes on a pending job: why it pends.
    for _ in 0..40 {
        if s.selected_state() == Some(crate::slurm::model::Status::Pending) {
            break;
        }
        s.send(key('k'));
    }
    assert_eq!(
        s.selected_state(),
        Some(crate::slurm::model::Status::Pending)
    );
    s.run_until(600, |_| {});
    // Ten minutes idle.
    s.run_until(1200, |_| {});

    let worst = s.worst_window();
    assert!(
        worst <= 20,
        "a five-minute window saw {worst} RPCs: {:?}",
        s.sent
    );
    // Idle, the refresh runs at its planned pace (every 40 s: 15 in ten minutes; the
    // budget may hold one a few seconds while other reads use their share).
    let idle = s.refreshes.iter().filter(|t| **t > 600).count();
    assert!(
        (14..=15).contains(&idle),
        "{idle} refreshes in the idle ten minutes: {:?}",
        s.refreshes
    );
    // While the user walked the queue, the refresh went on.
    let walking = s
        .refreshes
        .iter()
        .filter(|t| (120..420).contains(*t))
        .count();
    assert!(
        walking >= 5,
        "{walking} refreshes while the user walked: {:?}",
        s.refreshes
    );
    // The pending job's reasons were read.
    assert!(
        s.app.cluster.insight.pending.error.is_some(),
        "the pending lookup went out and was answered"
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
    // The timer's refresh at 41 s finds the minute spent (0, 2, 4): held until it frees.
    s.run_until(45, |_| {});
    assert_eq!(s.refreshes, vec![0, 2, 4]);
    assert!(s.app.cluster.budget.holds(Kind::Refresh));
    let bar = crate::ui::status::budget_text(&s.app.cluster, s.app.now);
    assert_eq!(bar, " · next in 18s, held by the budget of 4/min");
    s.run_until(64, |_| {});
    assert_eq!(
        s.refreshes,
        vec![0, 2, 4, 63],
        "released when the minute freed"
    );
    assert!(!s.app.cluster.budget.holds(Kind::Refresh));
    s.send(key('r'));
    // The timer's next (81 s) is held again; `r` sends the held one at once.
    s.run_until(84, |_| {});
    assert_eq!(s.refreshes, vec![0, 2, 4, 63, 64]);
    assert!(s.app.cluster.budget.holds(Kind::Refresh));
    s.send(key('r'));
    assert_eq!(s.refreshes.last(), Some(&84));
    assert!(!s.app.cluster.budget.holds(Kind::Refresh));
}

#[test]
fn a_detail_the_user_no_longer_looks_at_is_never_read() {
    let mut s = Sim::new(4);
    s.run_until(3, |_| {});
    // Walk fast: the user's half of the allowance is soon spent, then details are held and
    // each newer one replaces the last.
    for _ in 0..8 {
        s.send(key('j'));
    }
    let walked = s.details.len();
    assert!(walked < 8, "{:?}", s.details);
    let selected = s.app.detail.id.clone().unwrap();
    let held: Vec<_> = s.app.cluster.budget.held().iter().map(|h| h.kind).collect();
    assert_eq!(
        held.iter().filter(|k| **k == Kind::Detail).count(),
        1,
        "{held:?}"
    );
    assert!(s
        .app
        .cluster
        .budget
        .held()
        .iter()
        .any(|h| h.cmd == Cmd::FetchDetail(selected.clone())));
    s.run_until(400, |_| {});
    assert!(
        s.app.cluster.budget.held().is_empty(),
        "{:?} at {:?}",
        s.app.cluster.budget.held(),
        s.sent
    );
    let later: Vec<_> = s.details[walked..]
        .iter()
        .map(|(_, id)| id.clone())
        .collect();
    assert_eq!(
        later,
        vec![selected],
        "only the last selected job's detail was read"
    );
    assert!(s.worst_window() <= 20);
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
    let err = s.app.cluster.status.last_error.clone().unwrap();
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
    assert!(crate::ui::status::budget_text(&s.app.cluster, s.app.now)
        .starts_with(" · slurmctld rate limit: reads paused"));
    s.throttling = false;
    s.run_until(refused_at + THROTTLE_PAUSE_SECS + 6, |_| {});
    assert!(s.refreshes.last() > Some(&refused_at), "resumed");
    assert!(s.app.cluster.status.last_error.is_none());
}

#[test]
fn a_held_live_sample_of_a_job_left_is_dropped_and_frees_the_next() {
    let mut s = Sim::new(4);
    s.run_until(3, |_| {});
    let first = s.app.queue.selected_id().cloned().unwrap();
    assert_eq!(
        s.selected_state(),
        Some(crate::slurm::model::Status::Running)
    );
    // Its detail (3) took the background's quarter: its live sample (5) waits.
    let held: Vec<Kind> = s.app.cluster.budget.held().iter().map(|h| h.kind).collect();
    assert_eq!(held, vec![Kind::Live]);
    assert!(s.app.live.sampling(&first));
    s.send(key('j'));
    assert_ne!(s.app.queue.selected_id(), Some(&first));
    s.run_until(4, |_| {});
    assert!(
        !s.app.cluster.budget.holds(Kind::Live),
        "the sample of the job left is dropped, never sent"
    );
    assert!(!s.app.live.sampling(&first), "and no longer counted as out");
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
    assert_eq!(s.app.cluster.budget.per_minute, 6);
    // From the read on, every five minutes stay within the site's refill (the first
    // seconds, before it was known, went at the configured pace).
    let from = s.site_reads[0] + 60;
    let after: Vec<(i64, u64)> = s.sent.iter().copied().filter(|(t, _)| *t >= from).collect();
    let worst = after
        .iter()
        .map(|(end, _)| {
            after
                .iter()
                .filter(|(b, _)| b <= end && end - b < 300)
                .map(|(_, n)| n)
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0);
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
    assert_eq!(s.app.cluster.budget.per_minute, 4);
}
