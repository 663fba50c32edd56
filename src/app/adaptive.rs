//! The refresh interval as a pure function of what the user is looking at.

use std::time::Duration;

/// Bounds from the cluster's config: the usual interval and how far it may move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollBounds {
    pub base: Duration,
    pub min: Duration,
    pub max: Duration,
}

impl PollBounds {
    /// No adapting: always `d`.
    pub fn fixed(d: Duration) -> PollBounds {
        PollBounds {
            base: d,
            min: d,
            max: d,
        }
    }

    /// The bounds widen to include `base`, so a configured interval is always honoured.
    pub fn new(base: Duration, min: Duration, max: Duration) -> PollBounds {
        let min = min.min(base);
        PollBounds {
            base,
            min,
            max: max.max(base).max(min),
        }
    }
}

/// What the interval depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PollFacts {
    /// The log pane has focus and a log is being followed.
    pub log_open: bool,
    /// A job is starting (configuring, estimated to start within a minute, or started less
    /// than a minute ago) or completing.
    pub active: bool,
    /// There are jobs and every one is pending.
    pub all_pending: bool,
    /// Seconds since the last key press (`u64::MAX` when none yet).
    pub idle_secs: u64,
}

/// After this long without a key press, an all-pending queue is polled at the slowest rate.
pub const IDLE_AFTER_SECS: u64 = 120;

pub fn choose_interval(f: &PollFacts, b: &PollBounds) -> Duration {
    if f.log_open || f.active {
        b.min
    } else if f.all_pending && f.idle_secs >= IDLE_AFTER_SECS {
        b.max
    } else {
        b.base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b() -> PollBounds {
        PollBounds::new(
            Duration::from_secs(5),
            Duration::from_secs(2),
            Duration::from_secs(30),
        )
    }

    #[test]
    fn faster_while_watching_slower_when_idle_and_all_pending() {
        let idle = PollFacts {
            all_pending: true,
            idle_secs: 600,
            ..PollFacts::default()
        };
        assert_eq!(choose_interval(&idle, &b()), Duration::from_secs(30));
        let typing = PollFacts {
            idle_secs: 10,
            ..idle
        };
        assert_eq!(choose_interval(&typing, &b()), Duration::from_secs(5));
        let starting = PollFacts {
            active: true,
            ..idle
        };
        assert_eq!(choose_interval(&starting, &b()), Duration::from_secs(2));
        let log = PollFacts {
            log_open: true,
            all_pending: false,
            ..idle
        };
        assert_eq!(choose_interval(&log, &b()), Duration::from_secs(2));
        let mixed = PollFacts {
            all_pending: false,
            ..idle
        };
        assert_eq!(choose_interval(&mixed, &b()), Duration::from_secs(5));
    }

    #[test]
    fn bounds_are_ordered() {
        let p = PollBounds::new(
            Duration::from_secs(60),
            Duration::from_secs(2),
            Duration::from_secs(1),
        );
        assert_eq!(p.max, Duration::from_secs(60));
        assert_eq!(p.base, Duration::from_secs(60));
        assert_eq!(p.min, Duration::from_secs(2));
        let f = PollBounds::fixed(Duration::from_secs(5));
        assert_eq!(
            choose_interval(&PollFacts::default(), &f),
            Duration::from_secs(5)
        );
    }
}
