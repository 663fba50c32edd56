//! The slurmctld RPC budget (`[poll] max_rpcs_per_minute`): a ledger of what the dashboard
//! spent, the rules that say whether a read fits now, and the reads held until they do.
//! Pure: no I/O, the time is passed in.
//!
//! The user's question first; gentleness comes from reading less (answers kept and read in
//! batches for all of the user's jobs), never from making the user wait. With a budget of B
//! RPCs a minute the allowance is 5·B over any five minutes:
//! - a read a key asked for (the selected job's detail, why it pends, its live use) always
//!   goes, at the next second (the dashboard's tick: a user walking the queue has only
//!   the row they stop on read), and is charged; what it spends, the background gives
//!   back by waiting;
//! - the refresh (2 RPCs) comes no faster than [`Budget::refresh_floor`] (200/B s: three
//!   fifths of the allowance) and fits when the refreshes of the last minute plus it stay
//!   within B and everything of the last five minutes plus it within 5·B; but it is never
//!   held past [`WATCH_SECS`] after the last one: the queue on screen is never older than a
//!   minute, whatever else was spent;
//! - where the cluster answers the cheap state check (1 RPC, `slurm::statecheck`), checks
//!   and full reads take turns within the same three quarters and count as refreshes: a
//!   poll at least every [`Budget::check_floor`], every other one a full read; a full read
//!   a check called for (it saw a state change) may come before the refresh's pace allows,
//!   one full read more in the minute ([`Who::Change`]);
//! - background reads (live samples while a job stays selected, partitions, reads no key
//!   asked for) take only a quarter, counted with the user's reads, so that over any five
//!   minutes without a key the dashboard stays within B a minute. A read larger than its
//!   share goes alone: when no other read was spent in the five minutes.
//!
//! Writes and what the user does (cancel, submit, edit, :history, copies, shells) are never
//! held; the transport's own count ([`Budget::observe`]) charges them when they ran. Only
//! slurmctld's own refusal (its rate limit) pauses every planned read, the user's too.

use std::collections::VecDeque;
use std::time::Duration;

use chrono::NaiveDateTime;

use crate::action::Cmd;
use crate::slurm::ratelimit::RateLimit;

/// slurmctld RPCs of one refresh (`squeue --local`: jobs and partitions).
pub const REFRESH_COST: u64 = 2;
/// slurmctld RPCs of one state check (`squeue --only-job-state`: REQUEST_JOB_STATE).
pub const CHECK_COST: u64 = 1;
/// The window the budget is averaged over, seconds.
pub const WINDOW_SECS: i64 = 300;
const MINUTE_SECS: i64 = 60;
/// After slurmctld refused for its rate limit, planned reads wait this long.
pub const THROTTLE_PAUSE_SECS: i64 = 60;
/// The dashboard's clock moves once a second, so a spend may be charged up to a second
/// before it happens: the windows are this much longer, to hold in real time.
const CLOCK_SLACK_SECS: i64 = 1;
/// A planned spend the transport has not counted after this long was over-planned.
const UNSEEN_SECS: i64 = 60;
/// The longest a refresh is held after the last one (full read or state check): with the
/// read's own time the queue on screen is never a minute old while the dashboard is open.
pub const WATCH_SECS: i64 = 50;
/// The longest interval between polls where state checks and full reads take turns: two of
/// them, a full read's age, stay under a minute.
pub const CHECK_MAX_SECS: u64 = 29;

/// Who asks for a read: the rules differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// The scheduled full read or state check.
    Refresh,
    /// The full read a state check called for: it saw a job change state or leave.
    Change,
    /// Work the dashboard does by itself (live samples, partitions, reads after a refresh).
    Background,
    /// A read a key asked for: the selected job's detail, why it pends.
    User,
}

/// The reads the budget plans; at most one of each is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Refresh,
    /// The cheap state check between full reads.
    Check,
    Detail,
    Pending,
    Live,
    /// Job top's repeats while its pane is open (`t`).
    Top,
    Partitions,
    /// `scontrol show reservation`: maintenance windows, every ten minutes.
    Reservations,
    /// `:sooner`'s `sbatch --test-only` checks, only when asked.
    Sooner,
    /// `scontrol show config`, once: the site's own rate limit.
    SiteLimit,
}

impl Kind {
    /// Spent on the refresh's share: the full read and the state check.
    pub fn is_refresh(self) -> bool {
        matches!(self, Kind::Refresh | Kind::Check)
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Refresh => "refresh",
            Kind::Check => "state check",
            Kind::Detail => "job detail",
            Kind::Pending => "why it pends",
            Kind::Live => "live sample",
            Kind::Top => "job top",
            Kind::Partitions => "partitions",
            Kind::Reservations => "maintenance windows",
            Kind::Sooner => "start-sooner checks",
            Kind::SiteLimit => "the site's rate limit",
        }
    }
}

/// What a command costs slurmctld, for the reads the budget plans; `None` for everything
/// else (never held). Figures from `slurm::command::rpc_cost`, counted with sdiag.
pub fn read_cost(cmd: &Cmd) -> Option<(Kind, u64)> {
    use crate::slurm::command::{self, rpc_cost};
    let batch = |cmds: &[Vec<String>]| cmds.iter().map(|c| rpc_cost(c).ctld).sum::<u64>();
    Some(match cmd {
        // squeue --local; the sacct of jobs that left goes to slurmdbd.
        Cmd::PollQueue | Cmd::PollWith { .. } => (Kind::Refresh, REFRESH_COST),
        Cmd::CheckStates(ids) => (
            Kind::Check,
            rpc_cost(&crate::slurm::statecheck::argv(ids)).ctld,
        ),
        // scontrol --local show job; a finished job's sacct costs slurmctld nothing. The
        // batch script kept once per running job for `L` (`scontrol write batch_script`)
        // is charged when the transport counts it.
        Cmd::FetchDetail(id) => (
            Kind::Detail,
            rpc_cost(&command::scontrol_show_job(id, false)).ctld,
        ),
        Cmd::FetchPending(job) => (Kind::Pending, batch(&crate::slurm::pending::commands(job))),
        Cmd::SampleLive(t) => (Kind::Live, crate::slurm::live::rpc_cost(t)),
        Cmd::Top(t) => (Kind::Top, crate::slurm::top::rpc_cost(t)),
        Cmd::FetchPartitions => (Kind::Partitions, batch(&crate::slurm::partview::commands())),
        Cmd::CheckSooner { alternatives, .. } => (
            Kind::Sooner,
            alternatives.iter().map(|a| rpc_cost(&a.check).ctld).sum(),
        ),
        Cmd::FetchReservations => (
            Kind::Reservations,
            batch(&crate::slurm::reservation::commands()),
        ),
        Cmd::FetchSiteLimit => (
            Kind::SiteLimit,
            rpc_cost(&crate::slurm::ratelimit::show_config_argv()).ctld,
        ),
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Spend {
    at: NaiveDateTime,
    rpcs: u64,
    refresh: bool,
}

/// A read waiting for room.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub cmd: Cmd,
    pub kind: Kind,
    pub who: Who,
    pub cost: u64,
    pub since: NaiveDateTime,
}

/// One cluster's budget: its ledger and its held reads.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// RPCs a minute; 0: no budget (only a throttled answer holds reads).
    pub per_minute: u32,
    spends: VecDeque<Spend>,
    /// Planned spends the transport has not counted yet.
    unseen: VecDeque<(NaiveDateTime, u64)>,
    /// The transport's count at the last look.
    seen: Option<u64>,
    held: Vec<Held>,
    /// slurmctld refused for its rate limit: planned reads wait until then.
    pub paused_until: Option<NaiveDateTime>,
    /// What the config set (`per_minute` is this, capped by the site's own limit).
    pub configured: u32,
    /// The site's RPC rate limit (`rl_enable`), once read: none, or why it is not known.
    pub site: Option<Result<Option<RateLimit>, String>>,
    /// `scontrol show config` was asked for.
    pub site_asked: bool,
}

impl Budget {
    pub fn new(per_minute: u32) -> Budget {
        Budget {
            per_minute,
            configured: per_minute,
            ..Budget::default()
        }
    }

    /// The command that reads the site's own limit, the first time a refresh succeeded.
    pub fn site_due(&mut self) -> Option<Cmd> {
        (!self.site_asked).then(|| {
            self.site_asked = true;
            Cmd::FetchSiteLimit
        })
    }

    /// The site's limit is known: the budget is the configured one or the site's
    /// sustained rate, whichever is lower (the site's alone when no budget is configured),
    /// so slurmctld never has to tell slurmdash to back off. A failed read changes nothing.
    pub fn set_site(&mut self, site: Result<Option<RateLimit>, String>) {
        let rate = match &site {
            Ok(Some(l)) => Some(l.per_minute()),
            _ => None,
        };
        self.per_minute = match (self.configured, rate) {
            (0, Some(r)) => r,
            (c, Some(r)) => c.min(r),
            (c, None) => c,
        };
        self.site = Some(site);
    }

    /// The allowance over [`WINDOW_SECS`]; `None` without a budget.
    fn allowance(&self) -> Option<u64> {
        (self.per_minute > 0)
            .then(|| u64::from(self.per_minute) * (WINDOW_SECS / MINUTE_SECS) as u64)
    }

    /// The refresh interval the budget plans: refreshes take three fifths of it (200/B
    /// seconds, rounded up; 50 s at 4 a minute), the rest is for the user's reads and the
    /// background; never longer than [`WATCH_SECS`], which a budget under 4 a minute
    /// cannot pay for and gets all the same. `None` without a budget.
    pub fn refresh_floor(&self) -> Option<Duration> {
        let b = u64::from(self.per_minute);
        (b > 0).then(|| {
            // 60 s × REFRESH_COST / (⅗ B)
            let secs = (60 * REFRESH_COST * 5).div_ceil(3 * b);
            Duration::from_secs(secs.clamp(1, self.watch_secs() as u64))
        })
    }

    /// The longest a refresh is held: [`WATCH_SECS`], unless the site's own rate limit
    /// (which slurmctld enforces) allows fewer refreshes; then as often as it allows.
    pub fn watch_secs(&self) -> i64 {
        match &self.site {
            Some(Ok(Some(l))) if l.per_minute() > 0 => {
                let site = (60 * REFRESH_COST).div_ceil(u64::from(l.per_minute())) as i64;
                site.max(WATCH_SECS)
            }
            _ => WATCH_SECS,
        }
    }

    /// The shortest interval between polls when state checks and full reads take turns:
    /// a full read and a check every two intervals take the refresh's three quarters
    /// (120/B s, rounded up, plus a second), but never more than [`CHECK_MAX_SECS`], so
    /// that full reads stay under a minute apart (29 s at 4 a minute: a check, then a full
    /// read, 3 RPCs every 58 s). `None` without a budget.
    pub fn check_floor(&self) -> Option<Duration> {
        let b = u64::from(self.per_minute);
        (b > 0).then(|| {
            // 60 s × (REFRESH_COST + CHECK_COST) / (¾ B) over two intervals.
            let secs = (60 * (REFRESH_COST + CHECK_COST) * 4).div_ceil(3 * b * 2);
            Duration::from_secs((secs + CLOCK_SLACK_SECS as u64).min(CHECK_MAX_SECS))
        })
    }

    fn sum(&self, now: NaiveDateTime, secs: i64, keep: impl Fn(&Spend) -> bool) -> u64 {
        self.spends
            .iter()
            .filter(|s| {
                (now - s.at).num_seconds() < secs + CLOCK_SLACK_SECS && s.at <= now && keep(s)
            })
            .map(|s| s.rpcs)
            .sum()
    }

    /// RPCs spent in the five minutes before `now` (all, or only reads other than the
    /// refresh).
    pub fn spent(&self, now: NaiveDateTime) -> u64 {
        self.sum(now, WINDOW_SECS, |_| true)
    }

    /// When the last refresh (full read or state check) was charged, within the ledger.
    pub fn last_refresh(&self) -> Option<NaiveDateTime> {
        self.spends.iter().rev().find(|s| s.refresh).map(|s| s.at)
    }

    /// Whether a read of `cost` RPCs for `who` fits the budget at `now`.
    pub fn fits(&self, now: NaiveDateTime, cost: u64, who: Who) -> bool {
        if self.paused_until.is_some_and(|t| now < t) {
            return false;
        }
        let Some(a) = self.allowance() else {
            return true;
        };
        let b = u64::from(self.per_minute);
        let total = self.spent(now);
        let reads = self.sum(now, WINDOW_SECS, |s| !s.refresh);
        match who {
            // The user's question first: what it costs, the background gives back.
            Who::User => true,
            Who::Refresh | Who::Change => {
                // Never stale while watched.
                if self
                    .last_refresh()
                    .is_none_or(|t| (now - t).num_seconds() >= self.watch_secs())
                {
                    return true;
                }
                let minute = self.sum(now, MINUTE_SECS, |s| s.refresh);
                // A full read a state check called for may be one more in the minute.
                let cap = match who {
                    Who::Change => b.max(cost) + REFRESH_COST,
                    _ => b.max(cost),
                };
                // A job of the user's changed state or left: its full read is an answer,
                // held only by the minute's cap, not by what the user's reads spent.
                minute + cost <= cap && (who == Who::Change || total + cost <= a)
            }
            // A full read a state check called for goes before the background's reads.
            Who::Background => {
                (reads + cost <= a / 4 || reads == 0)
                    && total + cost <= a
                    && !self.held.iter().any(|h| h.who == Who::Change)
            }
        }
    }

    /// The first second from `now` on at which a read would fit, as far as the ledger
    /// knows (`None`: never, it is larger than the budget allows).
    pub fn fits_at(&self, now: NaiveDateTime, cost: u64, who: Who) -> Option<NaiveDateTime> {
        if self.fits(now, cost, who) {
            return Some(now);
        }
        let mut at: Vec<NaiveDateTime> = self
            .spends
            .iter()
            .flat_map(|s| {
                [MINUTE_SECS, WINDOW_SECS]
                    .map(|w| s.at + chrono::Duration::seconds(w + CLOCK_SLACK_SECS))
            })
            .chain(self.paused_until)
            .chain(
                self.last_refresh()
                    .map(|t| t + chrono::Duration::seconds(self.watch_secs())),
            )
            .filter(|t| *t > now)
            .collect();
        at.sort();
        at.into_iter().find(|t| self.fits(*t, cost, who))
    }

    /// Charges `rpcs` spent at `at`.
    pub fn spend(&mut self, at: NaiveDateTime, rpcs: u64, refresh: bool) {
        if rpcs == 0 {
            return;
        }
        self.spends.push_back(Spend { at, rpcs, refresh });
        self.unseen.push_back((at, rpcs));
        self.forget(at);
    }

    fn forget(&mut self, now: NaiveDateTime) {
        while self
            .spends
            .front()
            .is_some_and(|s| (now - s.at).num_seconds() >= WINDOW_SECS + CLOCK_SLACK_SECS)
        {
            self.spends.pop_front();
        }
        while self
            .unseen
            .front()
            .is_some_and(|(at, _)| (now - *at).num_seconds() >= UNSEEN_SECS)
        {
            self.unseen.pop_front();
        }
    }

    /// The last refresh charged never reached the cluster (the connection was down): it is
    /// taken back.
    pub fn refund_refresh(&mut self) {
        if let Some(i) = self.spends.iter().rposition(|s| s.refresh) {
            let s = self.spends.remove(i);
            if let Some(s) = s {
                if let Some(j) = self
                    .unseen
                    .iter()
                    .rposition(|(at, n)| *at == s.at && *n == s.rpcs)
                {
                    self.unseen.remove(j);
                }
            }
        }
    }

    /// The transport's own count of slurmctld RPCs so far (`total`), at `now`: what it ran
    /// beyond the planned reads (writes, launches, anything missed) is charged now.
    pub fn observe(&mut self, now: NaiveDateTime, total: u64) {
        self.forget(now);
        let Some(seen) = self.seen.replace(total) else {
            // The first look: what ran before it is already in the ledger, or older.
            self.unseen.clear();
            return;
        };
        let mut new = total.saturating_sub(seen);
        while new > 0 {
            let Some((_, n)) = self.unseen.front_mut() else {
                break;
            };
            let take = new.min(*n);
            *n -= take;
            new -= take;
            if *n == 0 {
                self.unseen.pop_front();
            }
        }
        if new > 0 {
            self.spends.push_back(Spend {
                at: now,
                rpcs: new,
                refresh: false,
            });
        }
    }

    /// A read the dashboard plans: it goes now (charged) or is held (replacing a held one of
    /// its kind). Anything that is not a planned read goes.
    pub fn admit(&mut self, now: NaiveDateTime, cmd: Cmd, who: Who) -> Option<Cmd> {
        let Some((kind, cost)) = read_cost(&cmd) else {
            return Some(cmd);
        };
        self.held.retain(|h| h.kind != kind);
        // The user's reads go at the next second (the next tick): a user walking the queue
        // has only the row they stop on read, never the rows passed over.
        if who != Who::User && self.fits(now, cost, who) {
            self.spend(now, cost, kind.is_refresh());
            return Some(cmd);
        }
        self.held.push(Held {
            cmd,
            kind,
            who,
            cost,
            since: now,
        });
        None
    }

    /// A read the user asked for at once (`r`): it goes, is charged, and replaces a held
    /// one of its kind.
    pub fn force(&mut self, now: NaiveDateTime, cmd: Cmd) -> Cmd {
        if let Some((kind, cost)) = read_cost(&cmd) {
            self.held.retain(|h| h.kind != kind);
            self.spend(now, cost, kind.is_refresh());
        }
        cmd
    }

    /// The held reads that fit now (the refresh first), charged; those `wanted` no longer
    /// wants are dropped and returned apart.
    pub fn release(
        &mut self,
        now: NaiveDateTime,
        wanted: impl Fn(&Cmd) -> bool,
    ) -> (Vec<Cmd>, Vec<Cmd>) {
        let (mut go, mut dropped) = (Vec::new(), Vec::new());
        let mut held = std::mem::take(&mut self.held);
        // The user's reads first, then the refresh, then the background.
        held.sort_by_key(|h| match h.who {
            Who::Change | Who::User => 0,
            Who::Refresh => 1,
            Who::Background => 2,
        });
        for h in held {
            if !wanted(&h.cmd) {
                dropped.push(h.cmd);
            } else if self.fits(now, h.cost, h.who) && !(h.who == Who::User && h.since == now) {
                self.spend(now, h.cost, h.kind.is_refresh());
                go.push(h.cmd);
            } else {
                self.held.push(h);
            }
        }
        (go, dropped)
    }

    /// Takes a held read of `kind` out (to send it at once).
    pub fn take(&mut self, kind: Kind) -> Option<Cmd> {
        let i = self.held.iter().position(|h| h.kind == kind)?;
        Some(self.held.remove(i).cmd)
    }

    pub fn held(&self) -> &[Held] {
        &self.held
    }

    pub fn holds(&self, kind: Kind) -> bool {
        self.held.iter().any(|h| h.kind == kind)
    }

    /// slurmctld refused for its rate limit: planned reads pause.
    pub fn throttled(&mut self, now: NaiveDateTime) {
        self.paused_until = Some(now + chrono::Duration::seconds(THROTTLE_PAUSE_SECS));
    }
}

/// Whether an error says slurmctld refused for its rate limit (`rl_enable`, Slurm 23.02+:
/// SLURMCTLD_COMMUNICATIONS_BACKOFF, "Rate limit exceeded, please retry momentarily";
/// the client retries by itself and says so only when it gives up).
pub fn is_throttled(error: &str) -> bool {
    let e = error.to_ascii_lowercase();
    e.contains("rate limit exceeded") || e.contains("rpc rate limit")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "budget_tests.rs"]
mod tests;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "budget_app_tests.rs"]
mod app_tests;
