//! Reservations (`scontrol show reservation`): maintenance windows and the nodes they hold,
//! and whether a pending job's time limit runs into one. Pure: the argv, the parser and the
//! window arithmetic; `io::reservation` reads them.
//!
//! A job whose time limit would run into a maintenance reservation that holds the nodes it
//! could use waits (`ReqNodeNotAvail, Reserved for maintenance`, or `Resources`) until the
//! window ends; with a time limit that ends before the window starts it may start now.

use std::collections::HashSet;
use std::time::Duration;

use chrono::NaiveDateTime;

use super::error::ParseError;
use super::hostlist;
use super::model::{Partition, SlurmDuration};
use super::parse::keyvalue::parse_block;
use super::parse::scontrol::blocks;
use super::time::parse_time;

const CMD: &str = "scontrol show reservation";

/// `scontrol show reservation`: every reservation, one slurmctld RPC.
pub fn scontrol_show_reservation() -> Vec<String> {
    vec!["scontrol".into(), "show".into(), "reservation".into()]
}

/// One read: the cluster's clock when it was read, and its reservations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservations {
    /// The login node's clock (`date`), the clock Slurm's times are in: windows are
    /// worked out against it, never against this machine's.
    pub now: NaiveDateTime,
    pub items: Vec<Reservation>,
}

const DATE_FORMAT: &str = "%Y-%m-%dT%H:%M:%S";

/// The commands of one read, in one exec: the login node's clock, then the reservations
/// (one slurmctld RPC in all).
pub fn commands() -> Vec<Vec<String>> {
    vec![
        vec!["date".into(), format!("+{DATE_FORMAT}")],
        scontrol_show_reservation(),
    ]
}

/// Puts the two sections of [`commands`] together; an error names the command.
pub fn parse_read(sections: &[super::batch::Section]) -> Result<Reservations, String> {
    let out = |i: usize, name: &str| match sections.get(i) {
        Some(s) if s.success() => Ok(s.stdout.as_str()),
        Some(s) => Err(format!(
            "{name} failed: {}",
            s.stderr.trim().lines().next().unwrap_or("no message")
        )),
        None => Err(format!("{name}: no answer")),
    };
    let clock = out(0, "date")?;
    let now = NaiveDateTime::parse_from_str(clock.trim(), DATE_FORMAT)
        .map_err(|_| format!("date printed {:?}, not a time", clock.trim()))?;
    let items = parse_reservations(out(1, CMD)?).map_err(|e| e.to_string())?;
    Ok(Reservations { now, items })
}

/// One reservation as scontrol prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub name: String,
    /// Cluster time, as every Slurm timestamp.
    pub start: NaiveDateTime,
    pub end: NaiveDateTime,
    /// The host list as printed (`spare[01-02]`); empty for a reservation of no nodes (a
    /// licence or burst-buffer reservation).
    pub node_list: String,
    /// [`Reservation::node_list`] expanded, one name each.
    pub nodes: Vec<String>,
    /// `MAINT`, `IGNORE_JOBS`, `SPEC_NODES`, ... in the order printed.
    pub flags: Vec<String>,
    /// `PartitionName=`, when the reservation was made in one.
    pub partition: Option<String>,
    /// Who may use it (`Users=`, `Accounts=`; a leading `-` excludes); empty when unset.
    pub users: Vec<String>,
    pub accounts: Vec<String>,
    /// `ACTIVE` or `INACTIVE`.
    pub state: String,
}

impl Reservation {
    /// A maintenance window (`Flags=MAINT`).
    pub fn is_maintenance(&self) -> bool {
        self.flags.iter().any(|f| f.eq_ignore_ascii_case("MAINT"))
    }

    /// Whether `user` in `account` may run jobs in it (listed, and not excluded by `-name`).
    /// A reservation names users, accounts or both; a maintenance window is usually root's.
    pub fn admits(&self, user: &str, account: &str) -> bool {
        let listed = |list: &[String], who: &str| {
            let excluded = list.iter().any(|x| x.strip_prefix('-') == Some(who));
            let only_exclusions = list.iter().all(|x| x.starts_with('-'));
            !excluded && (only_exclusions || list.iter().any(|x| x == who))
        };
        let by_user = !self.users.is_empty() && listed(&self.users, user);
        let by_account = !self.accounts.is_empty() && listed(&self.accounts, account);
        by_user || by_account
    }
}

fn list(v: Option<&str>) -> Vec<String> {
    match v.map(str::trim) {
        None | Some("" | "(null)") => Vec::new(),
        Some(v) => v
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect(),
    }
}

/// `scontrol show reservation`: "No reservations in the system" is an empty list. A record
/// without a name, a start or an end, or with a time that does not read, is an error naming
/// its line.
pub fn parse_reservations(out: &str) -> Result<Vec<Reservation>, ParseError> {
    if out.trim() == "No reservations in the system" {
        return Ok(Vec::new());
    }
    let mut v = Vec::new();
    for (line, text) in blocks(out) {
        let kv = parse_block(&text);
        let first = text.lines().next().unwrap_or("");
        let err = |what: String| ParseError::new(CMD, line, what, first);
        let get = |k: &str| kv.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.as_str());
        let name = match kv.first() {
            Some((k, name)) if k == "ReservationName" && !name.trim().is_empty() => name.trim(),
            _ => return Err(err("record does not start with ReservationName=".into())),
        };
        let time = |k: &str| -> Result<NaiveDateTime, ParseError> {
            let raw = get(k).ok_or_else(|| err(format!("no {k}=")))?;
            parse_time(raw)
                .map_err(|e| err(format!("{k}: {} {:?}", e.kind, e.value)))?
                .ok_or_else(|| err(format!("{k}={raw} is not a time")))
        };
        let (start, end) = (time("StartTime")?, time("EndTime")?);
        let node_list = get("Nodes")
            .map(str::trim)
            .filter(|n| !n.is_empty() && *n != "(null)")
            .unwrap_or("")
            .to_string();
        v.push(Reservation {
            name: name.to_string(),
            start,
            end,
            nodes: hostlist::expand(&node_list),
            node_list,
            flags: list(get("Flags")),
            partition: list(get("PartitionName")).into_iter().next(),
            users: list(get("Users")),
            accounts: list(get("Accounts")),
            state: get("State").unwrap_or("").trim().to_string(),
        });
    }
    Ok(v)
}

/// The nodes a job pending in `partition` (`p1,p2` for several) could use: the union of
/// those partitions' nodes, expanded, each once. Empty when none of them is known.
pub fn usable_nodes(partition: &str, partitions: &[Partition]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for name in partition.split(',').map(str::trim) {
        for p in partitions.iter().filter(|p| p.name == name) {
            for n in hostlist::expand(&p.nodes) {
                if seen.insert(n.clone()) {
                    out.push(n);
                }
            }
        }
    }
    out
}

/// What a pending job asks for, as far as windows go.
#[derive(Debug, Clone, PartialEq)]
pub struct Need<'a> {
    /// The nodes it could use ([`usable_nodes`]).
    pub usable: &'a [String],
    /// How many of them it needs at once.
    pub nodes: u32,
    pub time_limit: SlurmDuration,
    /// The earliest it could start: the cluster's now.
    pub from: NaiveDateTime,
}

/// A reservation a pending job's time limit runs into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowHit {
    pub reservation: Reservation,
    /// The longest time limit that ends before the window starts, counted from
    /// [`Need::from`], in whole minutes (rounded down); None when that is under a minute
    /// or the window has already begun.
    pub longest: Option<SlurmDuration>,
}

/// Whether a job that starts at `need.from` and runs its whole time limit would run into
/// `r` on nodes it needs: the window overlaps that run, and fewer than `need.nodes` of the
/// nodes it could use lie outside the window. An unlimited or unknown limit runs into every
/// later window. Nothing is said without the usable nodes (the partitions unread).
fn runs_into(r: &Reservation, need: &Need) -> bool {
    if need.usable.is_empty() || r.nodes.is_empty() || r.end <= need.from {
        return false;
    }
    let overlaps = match need.time_limit.known() {
        Some(d) => {
            let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            r.start < need.from + chrono::Duration::seconds(secs.min(100 * 365 * 86_400))
        }
        None => true,
    };
    if !overlaps {
        return false;
    }
    let held: HashSet<&str> = r.nodes.iter().map(String::as_str).collect();
    let outside = need
        .usable
        .iter()
        .filter(|n| !held.contains(n.as_str()))
        .count();
    (outside as u64) < u64::from(need.nodes.max(1))
}

/// The longest time limit from `from` that ends before `start` (strictly: a limit that
/// ends as the window starts is a second too long), in whole minutes, at least one.
pub fn longest_before(from: NaiveDateTime, start: NaiveDateTime) -> Option<SlurmDuration> {
    let minutes = ((start - from).num_seconds() - 1).div_euclid(60);
    (minutes >= 1).then(|| {
        SlurmDuration::Known(Duration::from_secs(
            u64::try_from(minutes).unwrap_or(0) * 60,
        ))
    })
}

/// The first window (by start) among `reservations` that `keep` selects and that the job's
/// time limit runs into.
pub fn first_hit(
    reservations: &[Reservation],
    need: &Need,
    keep: impl Fn(&Reservation) -> bool,
) -> Option<WindowHit> {
    let mut hits: Vec<&Reservation> = reservations
        .iter()
        .filter(|r| keep(r) && runs_into(r, need))
        .collect();
    hits.sort_by_key(|r| r.start);
    let r = hits.first()?;
    Some(WindowHit {
        longest: (r.start > need.from)
            .then(|| longest_before(need.from, r.start))
            .flatten(),
        reservation: (*r).clone(),
    })
}

/// The maintenance window (`Flags=MAINT`) the job's time limit runs into, if any, with the
/// longest limit that starts it before the window.
pub fn maintenance_hit(reservations: &[Reservation], need: &Need) -> Option<WindowHit> {
    first_hit(reservations, need, Reservation::is_maintenance)
}

/// Any reservation that does not admit `user`/`account` and that the job's time limit runs
/// into (maintenance or not): its nodes are as closed to the job as a maintenance window's.
pub fn closed_hit(
    reservations: &[Reservation],
    need: &Need,
    user: &str,
    account: &str,
) -> Option<WindowHit> {
    first_hit(reservations, need, |r| !r.admits(user, account))
}

/// "maintenance 2026-12-28 21:36–23:36 on spare[01-02]" (a window over midnight names both
/// days).
pub fn window_text(r: &Reservation) -> String {
    let what = if r.is_maintenance() {
        "maintenance".to_string()
    } else {
        format!("reservation {}", r.name)
    };
    let end = if r.end.date() == r.start.date() {
        r.end.format("%H:%M").to_string()
    } else {
        r.end.format("%Y-%m-%d %H:%M").to_string()
    };
    let on = if r.node_list.is_empty() {
        String::new()
    } else {
        format!(" on {}", r.node_list)
    };
    format!("{what} {}–{end}{on}", r.start.format("%Y-%m-%d %H:%M"))
}

/// "in 3h12m" / "now, until 18:00": when a window is, from the cluster's clock `cnow`.
pub fn when_text(r: &Reservation, cnow: NaiveDateTime) -> String {
    if r.start <= cnow {
        return format!("now, until {}", r.end.format("%H:%M"));
    }
    let mins = (r.start - cnow).num_minutes().max(0);
    if mins < 60 {
        format!("in {mins}m")
    } else if mins < 48 * 60 {
        format!("in {}h{:02}m", mins / 60, mins % 60)
    } else {
        format!("in {} days", mins / (24 * 60))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "reservation_tests.rs"]
mod tests;
