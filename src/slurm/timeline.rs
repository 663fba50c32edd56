//! A job's wait as a small chart (issue 39): submit → eligible → start (sacct's or
//! scontrol's Submit, Eligible and Start), and for a pending job how long the user's
//! similar recent jobs waited (median and 90th percentile, counted from eligible) beside
//! the scheduler's estimate. Pure: the times in, one bar of characters and its legend out.
//!
//! ```text
//! ░░██████████████████▶                      submit → eligible (held), → start
//! ░░████████████│·····┊·········◆            pending: now, median, p90, estimate
//! ```
//!
//! The similar jobs' line (`Waited::text`) names the median's and the 90th percentile's
//! marks:
//! ```text
//! similar jobs waited 30m │ median, 1h ┊ p90 (12 jobs)
//! ```

use chrono::NaiveDateTime;

use super::time::SlurmDuration;
use super::usage::waits::Waited;

/// Held: submitted, not yet eligible (a hold, a dependency, `--begin`).
pub const HELD: char = '░';
/// Eligible and waiting for resources.
pub const WAITING: char = '█';
/// The start.
pub const START: char = '▶';
/// Ahead of now (a pending job's time still to come).
pub const AHEAD: char = '·';
/// The similar jobs' median wait, from eligible.
pub const MEDIAN: char = '│';
/// Their 90th percentile.
pub const P90: char = '┊';
/// The scheduler's estimated start.
pub const ESTIMATE: char = '◆';

/// The shortest time the bar spans.
pub const MIN_SPAN_SECS: u64 = 3600;

/// What the chart is drawn from. `start`: when it started (a job that ran); None while
/// pending.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wait<'a> {
    pub submit: NaiveDateTime,
    pub eligible: Option<NaiveDateTime>,
    pub start: Option<NaiveDateTime>,
    /// The cluster's clock now (the end of a pending job's bar so far).
    pub now: NaiveDateTime,
    /// The scheduler's estimated start of a pending job.
    pub estimate: Option<NaiveDateTime>,
    /// How long similar jobs waited.
    pub similar: Option<&'a Waited>,
}

/// The bar (`width` cells) and the line saying what it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    pub bar: String,
    pub legend: String,
}

fn secs(a: NaiveDateTime, b: NaiveDateTime) -> u64 {
    u64::try_from((b - a).num_seconds()).unwrap_or(0)
}

fn human(s: u64) -> String {
    SlurmDuration::from_secs(s).human()
}

/// The chart of `w`, `width` cells wide (at least 10). Time runs left to right from the
/// submit time to the last thing shown (the start, or for a pending job the latest of now,
/// the estimate and the similar jobs' 90th percentile).
pub fn chart(w: &Wait<'_>, width: usize) -> Chart {
    let width = width.max(10);
    let pending = w.start.is_none();
    // A pending job eligible only later (`--begin`) has been held all along so far.
    let eligible = w
        .eligible
        .filter(|e| *e >= w.submit)
        .map(|e| if pending { e.min(w.now) } else { e })
        .unwrap_or(w.submit);
    let end_of_wait = w.start.unwrap_or(w.now).max(eligible);
    let p = |s: u64| eligible + chrono::Duration::seconds(i64::try_from(s).unwrap_or(0));
    let median = w.similar.filter(|_| pending).map(|x| p(x.median_s));
    let p90 = w.similar.filter(|_| pending).map(|x| p(x.p90_s));
    let estimate = w.estimate.filter(|_| pending);
    let last = [Some(end_of_wait), median, p90, estimate]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(end_of_wait);
    // At least an hour across: a wait of seconds is a cell or two, not a full bar.
    let span = secs(w.submit, last).max(MIN_SPAN_SECS);
    // The last cell is the start's or the estimate's mark: the time fills the others.
    let cells = width - 1;
    let at = |t: NaiveDateTime| -> usize {
        let x = secs(w.submit, t) as u128 * cells as u128 / span as u128;
        usize::try_from(x).unwrap_or(cells).min(cells)
    };
    let mut bar: Vec<char> = vec![' '; width];
    // Any wait at all shows as a cell.
    let e = at(eligible).max(usize::from(eligible > w.submit));
    let now = at(end_of_wait).max(e + usize::from(end_of_wait > eligible));
    for (i, c) in bar.iter_mut().enumerate() {
        *c = if i < e {
            HELD
        } else if i < now {
            WAITING
        } else if pending && i <= cells {
            AHEAD
        } else {
            ' '
        };
    }
    if pending {
        // The marks, the estimate last (it wins a shared cell).
        for (t, mark) in [(median, MEDIAN), (p90, P90), (estimate, ESTIMATE)] {
            if let Some(t) = t {
                bar[at(t)] = mark;
            }
        }
        let tail = bar.iter().rposition(|c| *c != AHEAD).map_or(0, |i| i + 1);
        bar.truncate(tail.max(now));
    } else {
        bar[now.min(cells)] = START;
        bar.truncate(now.min(cells) + 1);
    }
    let bar: String = bar.into_iter().collect();

    let held = secs(w.submit, eligible);
    let mut legend = Vec::new();
    if held > 0 {
        legend.push(format!("{HELD} held {}", human(held)));
    }
    let waited = secs(eligible, end_of_wait);
    if pending {
        // The similar jobs' marks are named on their own line (`Waited::text`).
        legend.push(format!("{WAITING} waiting {} so far", human(waited)));
        match estimate {
            Some(t) if t > w.now => legend.push(format!(
                "{ESTIMATE} estimate {} (in {})",
                t.format("%H:%M"),
                human(secs(w.now, t))
            )),
            Some(t) => legend.push(format!("{ESTIMATE} estimate {} (past)", t.format("%H:%M"))),
            None => {}
        }
    } else {
        legend.push(format!(
            "{WAITING} waited {} for resources {START} started {}",
            human(waited),
            end_of_wait.format("%H:%M:%S")
        ));
    }
    Chart {
        bar,
        legend: legend.join(" · "),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use chrono::NaiveDate;

    /// `h:m` on 28 November 2026.
    pub(crate) fn at(h: u32, m: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2026, 11, 28)
            .unwrap()
            .and_hms_opt(h, m, 0)
            .unwrap()
    }

    #[test]
    fn a_job_that_ran_shows_held_then_waiting_then_its_start() {
        let c = chart(
            &Wait {
                submit: at(10, 0),
                eligible: Some(at(10, 10)),
                start: Some(at(10, 40)),
                now: at(11, 0),
                estimate: Some(at(12, 0)),
                similar: None,
            },
            13,
        );
        // An hour over 12 cells at the least: 10 minutes held (2 cells), 30 waiting (6),
        // then the start.
        assert_eq!(c.bar, "░░██████▶");
        assert_eq!(
            c.legend,
            "░ held 10m · █ waited 30m for resources ▶ started 10:40:00"
        );
        // Started at once: one cell of start, no held part.
        let c = chart(
            &Wait {
                submit: at(10, 0),
                eligible: Some(at(10, 0)),
                start: Some(at(10, 0)),
                now: at(11, 0),
                estimate: None,
                similar: None,
            },
            20,
        );
        assert_eq!(c.bar, "▶");
        assert_eq!(c.legend, "█ waited 0s for resources ▶ started 10:00:00");
    }

    #[test]
    fn a_pending_job_shows_its_wait_so_far_beside_similar_jobs_and_the_estimate() {
        let similar = Waited {
            median_s: 30 * 60,
            p90_s: 60 * 60,
            min_s: 60,
            max_s: 90 * 60,
            jobs: 12,
        };
        let c = chart(
            &Wait {
                submit: at(10, 0),
                eligible: Some(at(10, 0)),
                start: None,
                now: at(10, 20),
                estimate: Some(at(11, 20)),
                similar: Some(&similar),
            },
            17,
        );
        // 80 minutes over 16 cells (5 min a cell): 4 waiting, the median at 6, the p90
        // at 12, the estimate at 16.
        assert_eq!(c.bar, "████··│·····┊···◆");
        assert_eq!(c.legend, "█ waiting 20m so far · ◆ estimate 11:20 (in 1h)");
        // Without an estimate or similar jobs: the wait so far only.
        let c = chart(
            &Wait {
                submit: at(10, 0),
                eligible: Some(at(10, 5)),
                start: None,
                now: at(10, 20),
                estimate: None,
                similar: None,
            },
            10,
        );
        // Five minutes held is less than a cell of the hour: a cell all the same.
        assert_eq!(c.bar, "░██");
        assert_eq!(c.legend, "░ held 5m · █ waiting 15m so far");
    }

    #[test]
    fn odd_times_never_panic() {
        // Eligible before submit (clock skew), start before eligible, zero width.
        let c = chart(
            &Wait {
                submit: at(10, 0),
                eligible: Some(at(9, 0)),
                start: Some(at(9, 30)),
                now: at(9, 0),
                estimate: Some(at(8, 0)),
                similar: None,
            },
            0,
        );
        assert_eq!(c.bar.chars().count(), 1);
    }
}
