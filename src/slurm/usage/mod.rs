//! Budget: what the user's jobs used, hold and will hold, per account, against the
//! account's limits and fair share (`slurmdash usage`, `:usage`).
//!
//! Pure: the argv of the one read ([`commands`], then [`assoc_mgr`] once the user's name is
//! known), the parser of its sacct part ([`parse_acct_jobs`], shared with the waits of
//! similar jobs in [`waits`]) and [`report`], which puts the figures together:
//! - **used**: jobs that ended in the last N days, CPUs (GPUs) × elapsed, clipped to the
//!   window by sacct's `--truncate` (a job that started before the window counts only the
//!   part inside it);
//! - **in flight**: running jobs × their elapsed time (squeue);
//! - **committed**: running and pending jobs × their time limit, what they hold if they
//!   run to the end (the in-flight part included);
//! - **pending**: the pending jobs alone × their limit (the "will cost" line).
//!
//! Limits are `GrpTRESMins` of the account's and the user's association, read from
//! slurmctld's cache (`scontrol show assoc_mgr`, with slurmctld's decayed usage beside each
//! limit) and fair share from `sshare` (RawUsage, EffectvUsage, FairShare).

mod parse;
pub mod waits;

use std::collections::BTreeMap;

use serde::Serialize;

use super::command::{self, Scope, SqueueQuery};
use super::limits::{tres_tallies, AssocMgr};
use super::model::{Job, SshareRow, Status};

pub use parse::{parse_acct_jobs, AcctJob};

/// sacct fields of [`parse_acct_jobs`], in order. No free text (no job name, no path): a
/// line is a record, and the field count is checked.
pub const ACCT_FIELDS: &[&str] = &[
    "JobIDRaw",
    "Account",
    "Partition",
    "State",
    "Submit",
    "Eligible",
    "Start",
    "ElapsedRaw",
    "NCPUS",
    "AllocTRES",
    "ReqTRES",
];

/// The default window of `slurmdash usage` and `:usage`.
pub const DEFAULT_DAYS: u32 = 7;

fn sacct_base() -> Vec<String> {
    command::sacct_fields(ACCT_FIELDS)
}

/// Own jobs that ended (or ran) in the last `days` days, each one's times cut to the window
/// (`--truncate`): ElapsedRaw is then the part inside it. Always with an explicit start time
/// (without one sacct reads only since midnight). The end is a minute ahead: 22.05's sacct
/// leaves out jobs that ended seconds before `--endtime=now`.
pub fn sacct_used(days: u32) -> Vec<String> {
    let mut a = sacct_base();
    a.push(format!("--starttime=now-{}days", days.max(1)));
    a.push(format!("--endtime={}", super::eff::NEWEST_END.arg()));
    a.push("--truncate".into());
    a
}

/// Own jobs of the last `days` days with their real submit, eligible and start times (no
/// `--truncate`), for how long similar jobs waited.
pub fn sacct_waits(days: u32) -> Vec<String> {
    let mut a = sacct_base();
    a.push(format!("--starttime=now-{}days", days.max(1)));
    a.push(format!("--endtime={}", super::eff::NEWEST_END.arg()));
    a
}

/// Section names of [`commands`], for messages.
pub const SECTIONS: &[&str] = &["id -un", "sshare", "sacct (used)", "squeue --me"];

/// The first exec, in section order: who the user is, their associations' fair share, the
/// jobs of the window, and their running and pending jobs. sshare and squeue ask slurmctld
/// (one RPC each, squeue --local two), sacct slurmdbd.
pub fn commands(days: u32) -> Vec<Vec<String>> {
    vec![
        vec!["id".into(), "-un".into()],
        command::sshare(&Scope::Me),
        sacct_used(days),
        command::squeue(&SqueueQuery {
            states: vec![
                super::state::JobState::Pending,
                super::state::JobState::Running,
            ],
            ..SqueueQuery::default()
        }),
    ]
}

/// The second exec: the user's associations and their accounts' (parents included), with
/// each limit and slurmctld's usage against it (one slurmctld RPC).
pub fn assoc_mgr(user: &str) -> Vec<String> {
    vec![
        "scontrol".into(),
        "show".into(),
        "assoc_mgr".into(),
        format!("users={user}"),
        "flags=assoc".into(),
    ]
}

/// CPU and GPU seconds of some jobs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub cpu_seconds: u64,
    pub gpu_seconds: u64,
    pub jobs: u32,
}

impl Tally {
    fn add(&mut self, cpus: u32, gpus: u32, secs: u64) {
        self.add_n(cpus, gpus, secs, 1);
    }

    /// `n` jobs of `cpus` CPUs and `gpus` GPUs for `secs` seconds each.
    fn add_n(&mut self, cpus: u32, gpus: u32, secs: u64, n: u32) {
        let each = |x: u32| {
            u64::from(x)
                .saturating_mul(secs)
                .saturating_mul(u64::from(n))
        };
        self.cpu_seconds = self.cpu_seconds.saturating_add(each(cpus));
        self.gpu_seconds = self.gpu_seconds.saturating_add(each(gpus));
        self.jobs = self.jobs.saturating_add(n);
    }

    pub fn cpu_hours(&self) -> f64 {
        self.cpu_seconds as f64 / 3600.0
    }

    pub fn gpu_hours(&self) -> f64 {
        self.gpu_seconds as f64 / 3600.0
    }

    /// `12.5 CPU-h, 2.0 GPU-h` (GPU only when there is some).
    pub fn text(&self) -> String {
        match self.gpu_seconds {
            0 => format!("{} CPU-h", hours(self.cpu_seconds)),
            g => format!("{} CPU-h, {} GPU-h", hours(self.cpu_seconds), hours(g)),
        }
    }
}

/// Hours with one decimal, two below one hour (`0.03`), none from a thousand on.
pub fn hours(secs: u64) -> String {
    let h = secs as f64 / 3600.0;
    match h {
        h if h >= 1000.0 => format!("{h:.0}"),
        h if h >= 1.0 || secs == 0 => format!("{h:.1}"),
        h => format!("{h:.2}"),
    }
}

/// One `GrpTRESMins` limit that is set, with slurmctld's (decayed) usage against it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MinutesLimit {
    /// `account research` or `user sduser in research`.
    pub on: String,
    /// `cpu`, `gres/gpu`, `billing`, ...
    pub tres: String,
    pub limit_minutes: u64,
    pub used_minutes: Option<u64>,
}

/// The user's fair share in one account (sshare's user row; the account's usage beside).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FairShare {
    pub raw_usage: Option<u64>,
    pub effective_usage: Option<f64>,
    pub fairshare: Option<f64>,
    pub norm_shares: Option<f64>,
    /// The account's own EffectvUsage (its share of its parent's usage).
    pub account_effective_usage: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccountUsage {
    pub account: String,
    pub used: Tally,
    pub by_partition: BTreeMap<String, Tally>,
    pub in_flight: Tally,
    pub committed: Tally,
    pub pending: Tally,
    /// `GrpTRESMins` set on the account or the user's association in it.
    pub limits: Vec<MinutesLimit>,
    pub fair_share: Option<FairShare>,
}

impl AccountUsage {
    fn new(account: &str) -> AccountUsage {
        AccountUsage {
            account: account.to_string(),
            used: Tally::default(),
            by_partition: BTreeMap::new(),
            in_flight: Tally::default(),
            committed: Tally::default(),
            pending: Tally::default(),
            limits: Vec::new(),
            fair_share: None,
        }
    }

    /// The limit that leaves the least, as (used + committed minutes, limit minutes) for
    /// the bar: slurmctld's count where it keeps one, else the window's own figure.
    pub fn tightest(&self) -> Option<(&MinutesLimit, f64)> {
        self.limits
            .iter()
            .filter(|l| l.limit_minutes > 0)
            .map(|l| {
                let mine = match l.tres.as_str() {
                    "cpu" => self.used.cpu_seconds,
                    t if t.ends_with("gpu") => self.used.gpu_seconds,
                    _ => 0,
                } as f64
                    / 60.0;
                let used = l.used_minutes.map(|u| u as f64).unwrap_or(mine);
                (l, used / l.limit_minutes as f64)
            })
            // The fullest; on a tie the smallest limit.
            .max_by(|a, b| {
                a.1.total_cmp(&b.1)
                    .then(b.0.limit_minutes.cmp(&a.0.limit_minutes))
            })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageReport {
    pub days: u32,
    pub user: Option<String>,
    pub accounts: Vec<AccountUsage>,
    /// Sections that failed or read badly, each naming its command and what to do.
    pub problems: Vec<String>,
}

impl UsageReport {
    /// All pending jobs' cost to their limit, over every account.
    pub fn pending_total(&self) -> Tally {
        let mut t = Tally::default();
        for a in &self.accounts {
            t.cpu_seconds += a.pending.cpu_seconds;
            t.gpu_seconds += a.pending.gpu_seconds;
            t.jobs += a.pending.jobs;
        }
        t
    }
}

/// What sacct, squeue, sshare and assoc_mgr said, read.
#[derive(Debug, Clone, Default)]
pub struct Read<'a> {
    pub days: u32,
    pub user: Option<&'a str>,
    pub sacct: &'a [AcctJob],
    pub queue: &'a [Job],
    pub sshare: &'a [SshareRow],
    pub assoc: Option<&'a AssocMgr>,
}

/// Seconds a squeue duration holds (None for UNLIMITED, partition limit, unknown).
fn secs(d: &super::time::SlurmDuration) -> Option<u64> {
    d.known().map(|d| d.as_secs())
}

/// How many jobs a squeue row stands for: a folded pending array counts each task.
fn tasks(j: &Job) -> u32 {
    j.id.array_pending()
        .map(|s| u32::try_from(s.task_count()).unwrap_or(u32::MAX))
        .unwrap_or(1)
        .max(1)
}

/// Puts the figures together, one entry per account the user has jobs or an association
/// in, by name.
pub fn report(r: &Read<'_>, problems: Vec<String>) -> UsageReport {
    let mut by: BTreeMap<String, AccountUsage> = BTreeMap::new();
    fn entry<'m>(by: &'m mut BTreeMap<String, AccountUsage>, a: &str) -> &'m mut AccountUsage {
        by.entry(a.to_string())
            .or_insert_with(|| AccountUsage::new(a))
    }
    for j in r.sacct.iter().filter(|j| j.ended()) {
        let e = entry(&mut by, &j.account);
        e.used.add(j.cpus, j.gpus, j.elapsed_s);
        e.by_partition
            .entry(j.partition.clone())
            .or_default()
            .add(j.cpus, j.gpus, j.elapsed_s);
    }
    for j in r.queue {
        let e = entry(&mut by, j.account.as_str());
        let limit = secs(&j.time_limit);
        match j.status() {
            Status::Running => {
                let used = secs(&j.time_used).unwrap_or(0);
                e.in_flight.add(j.cpus, j.gpus(), used);
                e.committed
                    .add(j.cpus, j.gpus(), limit.unwrap_or(used).max(used));
            }
            // A pending job without a known limit (UNLIMITED) counts as a job of 0 s.
            Status::Pending => {
                let (n, l) = (tasks(j), limit.unwrap_or(0));
                e.committed.add_n(j.cpus, j.gpus(), l, n);
                e.pending.add_n(j.cpus, j.gpus(), l, n);
            }
            _ => {}
        }
    }
    let me = r.user;
    for s in r.sshare {
        if s.user.is_some() && s.user.as_deref() == me {
            let acct_eff = r
                .sshare
                .iter()
                .find(|a| a.user.is_none() && a.account.trim() == s.account.trim())
                .and_then(|a| a.effective_usage);
            entry(&mut by, s.account.trim()).fair_share = Some(FairShare {
                raw_usage: s.raw_usage,
                effective_usage: s.effective_usage,
                fairshare: s.fairshare,
                norm_shares: s.norm_shares,
                account_effective_usage: acct_eff,
            });
        }
    }
    if let Some(m) = r.assoc {
        for a in m.assocs.iter().filter(|a| a.partition.is_none()) {
            let on = match (&a.user, me) {
                (None, _) => format!("account {}", a.account),
                (Some(u), Some(me)) if u == me => format!("user {u} in {}", a.account),
                _ => continue,
            };
            let Some(v) = a.fields.get("GrpTRESMins") else {
                continue;
            };
            let Some(e) = by.get_mut(&a.account) else {
                continue;
            };
            for (tres, t) in tres_tallies(v) {
                if let Some(max) = t.max {
                    e.limits.push(MinutesLimit {
                        on: on.clone(),
                        tres,
                        limit_minutes: max,
                        used_minutes: t.used,
                    });
                }
            }
        }
    }
    UsageReport {
        days: r.days,
        user: me.map(str::to_string),
        accounts: by.into_values().collect(),
        problems,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod props;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
