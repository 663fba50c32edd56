//! What the status bar says of each cluster that takes work to say (the budget, the counts
//! per state, the next maintenance window), worked out once a message is handled like the
//! detail pane's view (`detail_view.rs`): drawing only copies it. The clock's tick is a
//! message too, so the countdowns stay current.

use chrono::NaiveDateTime;

use super::budget::{Kind, Who, REFRESH_COST};
use super::cluster::{ClusterState, Clusters};
use crate::queue::QueueView;

/// One cluster's worked-out parts of the status bar.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusParts {
    /// When the next refresh comes and the RPC budget ([`budget_text`]).
    pub budget: String,
    /// The budget holds the next refresh.
    pub held: bool,
    /// slurmctld's rate limit pauses the reads.
    pub paused: bool,
    /// Jobs per state, "3 R · 1 PD" (with one cluster; "3 R 1 PD" with several); empty
    /// when there are none.
    pub counts: String,
    /// The next maintenance window within a day ([`maintenance_text`]).
    pub maintenance: Option<String>,
}

/// Cluster `ix`'s parts (none yet for a cluster added since the last message).
pub fn of(parts: &[StatusParts], ix: u16) -> &StatusParts {
    static NONE: StatusParts = StatusParts {
        budget: String::new(),
        held: false,
        paused: false,
        counts: String::new(),
        maintenance: None,
    };
    parts.get(usize::from(ix)).unwrap_or(&NONE)
}

/// Every cluster's parts, by number, from the queue's rows on screen.
pub fn derive(queue: &QueueView, clusters: &Clusters, now: NaiveDateTime) -> Vec<StatusParts> {
    let multi = clusters.multi();
    clusters
        .iter()
        .map(|c| {
            let (counts, sep) = match multi {
                true => (queue.state_counts_of(c.ix), " "),
                false => (queue.state_counts(), " · "),
            };
            let counts: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
            StatusParts {
                budget: budget_text(c, now),
                held: c.budget.holds(Kind::Refresh),
                paused: c.budget.paused_until.is_some_and(|p| now < p),
                counts: counts.join(sep),
                maintenance: maintenance_text(c, now),
            }
        })
        .collect()
}

/// When the next refresh comes and the RPC budget, when one is set or a read waits for
/// slurmctld's rate limit: " · next in 12s · budget 4/min".
pub fn budget_text(c: &ClusterState, now: NaiveDateTime) -> String {
    let b = &c.budget;
    let secs = |t: NaiveDateTime| (t - now).num_seconds().max(0);
    if let Some(p) = b.paused_until.filter(|p| now < *p) {
        return format!(" · slurmctld rate limit: reads paused {}s", secs(p));
    }
    if b.per_minute == 0 {
        return String::new();
    }
    if b.holds(Kind::Refresh) {
        return match b.fits_at(now, REFRESH_COST, Who::Refresh) {
            Some(t) => format!(
                " · next in {}s, held by the budget of {}/min",
                secs(t),
                b.per_minute
            ),
            None => format!(" · next held by the budget of {}/min", b.per_minute),
        };
    }
    let next = match c.status.next_refresh {
        Some(t) if !c.status.polling => format!(" · next in {}s", secs(t)),
        _ => String::new(),
    };
    format!("{next} · budget {}/min", b.per_minute)
}

/// The next maintenance window of cluster `c`, when it starts within a day or has begun:
/// `maintenance in 3h12m on gpu[01-08]`.
pub fn maintenance_text(c: &ClusterState, now: NaiveDateTime) -> Option<String> {
    use super::maintenance::{when_text, AHEAD_SECS};
    let (r, cnow) = c.maintenance.upcoming(now).into_iter().next()?;
    if (r.start - cnow).num_seconds() > AHEAD_SECS {
        return None;
    }
    let on = if r.node_list.is_empty() {
        String::new()
    } else {
        format!(" on {}", crate::queue::format::one_line(&r.node_list))
    };
    Some(format!("maintenance {}{on}", when_text(r, cnow)))
}
