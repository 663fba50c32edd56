//! Slurm timestamps and durations as printed by squeue, sacct, scontrol, sinfo.
//! Timestamps carry no zone: they are the cluster's local time.

use std::fmt;
use std::time::Duration;

use chrono::{NaiveDate, NaiveDateTime};

use super::error::ValueError;

/// `2026-11-23T08:12:44` → Some; `N/A`, `Unknown`, `None`, `INVALID`, `(null)`, empty → None.
pub fn parse_time(s: &str) -> Result<Option<NaiveDateTime>, ValueError> {
    let s = super::trim(s);
    match s {
        "" | "N/A" | "Unknown" | "None" | "INVALID" | "(null)" | "NONE" => Ok(None),
        _ => match parse_iso_fast(s) {
            Some(t) => Ok(Some(t)),
            None => NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S")
                .map(Some)
                .map_err(|_| ValueError::new("time", s)),
        },
    }
}

/// The exact 19-byte `YYYY-MM-DDTHH:MM:SS` form Slurm prints, without
/// chrono's format-string machinery. None for anything else (including
/// invalid dates and leap seconds), which then takes chrono's path so the
/// result is unchanged.
fn parse_iso_fast(s: &str) -> Option<NaiveDateTime> {
    let b: &[u8; 19] = s.as_bytes().try_into().ok()?;
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let digit = |i: usize| -> Option<u32> {
        let d = b[i].wrapping_sub(b'0');
        (d < 10).then_some(u32::from(d))
    };
    let two = |i: usize| -> Option<u32> { Some(digit(i)? * 10 + digit(i + 1)?) };
    let year = two(0)? * 100 + two(2)?;
    let (month, day) = (two(5)?, two(8)?);
    let (hour, min, sec) = (two(11)?, two(14)?, two(17)?);
    if sec >= 60 {
        return None;
    }
    let year = i32::try_from(year).ok()?;
    NaiveDate::from_ymd_opt(year, month, day)?.and_hms_opt(hour, min, sec)
}

pub fn format_time(t: &Option<NaiveDateTime>) -> String {
    match t {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S").to_string(),
        None => "N/A".to_string(),
    }
}

/// The longest time limit Slurm can hold: it keeps limits in minutes in 32 bits, with the
/// top two values meaning "infinite" and "not set" (about 8,166 years).
pub const MAX_TIME_LIMIT: Duration = Duration::from_secs((u32::MAX as u64 - 2) * 60);

/// Refuses a time limit Slurm cannot hold, with a message naming it.
pub fn check_time_limit(d: Duration) -> Result<Duration, String> {
    if d > MAX_TIME_LIMIT {
        Err(limit_too_long(&human_form(d.as_secs())))
    } else {
        Ok(d)
    }
}

/// The message for a time limit (as the user wrote it) over [`MAX_TIME_LIMIT`].
pub fn limit_too_long(written: &str) -> String {
    format!(
        "a time limit of `{written}` is longer than Slurm can hold (at most {} days); give a shorter one, e.g. 7d",
        MAX_TIME_LIMIT.as_secs() / 86400
    )
}

/// A time limit or elapsed time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SlurmDuration {
    Known(Duration),
    Unlimited,
    /// `Partition_Limit`: the job takes its partition's MaxTime.
    PartitionLimit,
    /// `N/A`, `INVALID`, `NOT_SET`, empty.
    #[default]
    Unknown,
}

impl SlurmDuration {
    pub fn from_secs(secs: u64) -> Self {
        SlurmDuration::Known(Duration::from_secs(secs))
    }

    pub fn known(&self) -> Option<Duration> {
        match self {
            SlurmDuration::Known(d) => Some(*d),
            _ => None,
        }
    }

    /// Accepts Slurm's forms: `D-HH:MM:SS`, `D-HH:MM`, `D-HH`, `HH:MM:SS`,
    /// `MM:SS`, `M:SS.mmm` (sacct CPU times), and bare minutes (`30`, as in
    /// `TimelimitRaw` and in `--time` input).
    pub fn parse(s: &str) -> Result<Self, ValueError> {
        let s = super::trim(s);
        match s {
            "UNLIMITED" | "infinite" | "INFINITE" => return Ok(SlurmDuration::Unlimited),
            "Partition_Limit" => return Ok(SlurmDuration::PartitionLimit),
            "" | "N/A" | "INVALID" | "NOT_SET" | "None" | "NONE" | "(null)" => {
                return Ok(SlurmDuration::Unknown)
            }
            _ => {}
        }
        let err = || ValueError::new("duration", s);
        let num = |p: &str| -> Result<u64, ValueError> {
            if p.is_empty() || p.len() > 12 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err());
            }
            p.parse::<u64>().map_err(|_| err())
        };
        let (days, rest) = match s.split_once('-') {
            Some((d, rest)) => (Some(num(d)?), rest),
            None => (None, s),
        };
        // Drop fractional seconds (sacct prints `00:01.234`).
        let (rest, millis) = match rest.split_once('.') {
            Some((r, frac)) => {
                let f = num(frac)?;
                let ms = match frac.len() {
                    1 => f * 100,
                    2 => f * 10,
                    3 => f,
                    _ => return Err(err()),
                };
                (r, ms)
            }
            None => (rest, 0),
        };
        let mut parts = rest.split(':');
        let p = [parts.next(), parts.next(), parts.next()];
        if parts.next().is_some() {
            return Err(err());
        }
        let secs = match (days, p) {
            (Some(d), [Some(h), None, None]) => d * 86400 + num(h)? * 3600,
            (Some(d), [Some(h), Some(m), None]) => d * 86400 + num(h)? * 3600 + num(m)? * 60,
            (Some(d), [Some(h), Some(m), Some(sec)]) => {
                d * 86400 + num(h)? * 3600 + num(m)? * 60 + num(sec)?
            }
            (None, [Some(m), None, None]) => num(m)? * 60,
            (None, [Some(m), Some(sec), None]) => num(m)? * 60 + num(sec)?,
            (None, [Some(h), Some(m), Some(sec)]) => num(h)? * 3600 + num(m)? * 60 + num(sec)?,
            _ => return Err(err()),
        };
        Ok(SlurmDuration::Known(
            Duration::from_secs(secs) + Duration::from_millis(millis),
        ))
    }

    /// Slurm's own form: `1-02:03:04`, `4:00:00`, `5:07`, `UNLIMITED`.
    pub fn to_slurm(&self) -> String {
        match self {
            SlurmDuration::Known(d) => slurm_form(d.as_secs()),
            SlurmDuration::Unlimited => "UNLIMITED".to_string(),
            SlurmDuration::PartitionLimit => "Partition_Limit".to_string(),
            SlurmDuration::Unknown => "N/A".to_string(),
        }
    }

    /// Compact form for narrow columns: `45s`, `12m5s`, `2h13m`, `3d4h`, `∞`, `-`.
    pub fn human(&self) -> String {
        match self {
            SlurmDuration::Known(d) => human_form(d.as_secs()),
            SlurmDuration::Unlimited => "∞".to_string(),
            SlurmDuration::PartitionLimit => "part".to_string(),
            SlurmDuration::Unknown => "-".to_string(),
        }
    }
}

impl fmt::Display for SlurmDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_slurm())
    }
}

fn slurm_form(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

fn human_form(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) if s == 0 => format!("{m}m"),
        (0, 0, _) => format!("{m}m{s}s"),
        (0, _, _) if m == 0 => format!("{h}h"),
        (0, _, _) => format!("{h}h{m}m"),
        _ if h == 0 => format!("{d}d"),
        _ => format!("{d}d{h}h"),
    }
}

/// One end of a time window, in the cluster's own clock: relative to its `now`, so the
/// laptop's clock and time zone never matter, or a time sacct printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// `now-Nseconds` (negative: in the future, `now+Nseconds`).
    Ago(i64),
    At(NaiveDateTime),
}

impl Edge {
    pub fn arg(&self) -> String {
        match self {
            Edge::Ago(s) if *s < 0 => format!("now+{}seconds", -s),
            Edge::Ago(s) => format!("now-{s}seconds"),
            Edge::At(t) => t.format("%Y-%m-%dT%H:%M:%S").to_string(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn secs(s: &str) -> u64 {
        SlurmDuration::parse(s).unwrap().known().unwrap().as_secs()
    }

    #[test]
    fn parses_every_slurm_form() {
        assert_eq!(secs("1-02:03:04"), 93784);
        assert_eq!(secs("2-00:00:00"), 172800);
        assert_eq!(secs("1-02:03"), 93780);
        assert_eq!(secs("1-02"), 93600);
        assert_eq!(secs("04:00:00"), 14400);
        assert_eq!(secs("4:00:00"), 14400);
        assert_eq!(secs("30:00"), 1800);
        assert_eq!(secs("0:05"), 5);
        assert_eq!(secs("30"), 1800);
        assert_eq!(secs("00:01.234"), 1);
        assert_eq!(
            SlurmDuration::parse("00:01.5").unwrap().known().unwrap(),
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn parses_special_words() {
        assert_eq!(
            SlurmDuration::parse("UNLIMITED").unwrap(),
            SlurmDuration::Unlimited
        );
        assert_eq!(
            SlurmDuration::parse("Partition_Limit").unwrap(),
            SlurmDuration::PartitionLimit
        );
        for s in ["INVALID", "N/A", "NOT_SET", ""] {
            assert_eq!(
                SlurmDuration::parse(s).unwrap(),
                SlurmDuration::Unknown,
                "{s}"
            );
        }
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "abc",
            "1:2:3:4",
            "-1",
            "1-",
            ":",
            "1:-2",
            "1-2-3",
            "99999999999999999:00",
        ] {
            assert!(SlurmDuration::parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn formats_like_slurm_and_round_trips() {
        for s in [
            "1-02:03:04",
            "4:00:00",
            "5:07",
            "0:00",
            "10-00:00:00",
            "UNLIMITED",
        ] {
            assert_eq!(SlurmDuration::parse(s).unwrap().to_slurm(), s);
        }
        assert_eq!(
            SlurmDuration::parse("04:00:00").unwrap().to_slurm(),
            "4:00:00"
        );
    }

    #[test]
    fn human_form_is_compact() {
        let h = |s: u64| SlurmDuration::from_secs(s).human();
        assert_eq!(h(45), "45s");
        assert_eq!(h(300), "5m");
        assert_eq!(h(725), "12m5s");
        assert_eq!(h(2 * 3600 + 13 * 60 + 59), "2h13m");
        assert_eq!(h(3600), "1h");
        assert_eq!(h(3 * 86400 + 4 * 3600 + 5), "3d4h");
        assert_eq!(h(86400), "1d");
        assert_eq!(SlurmDuration::Unlimited.human(), "∞");
    }

    #[test]
    fn time_limits_slurm_cannot_hold_are_refused() {
        assert!(check_time_limit(Duration::from_secs(7 * 86400)).is_ok());
        assert!(check_time_limit(MAX_TIME_LIMIT).is_ok());
        let e = check_time_limit(MAX_TIME_LIMIT + Duration::from_secs(60)).unwrap_err();
        assert!(e.contains("longer than Slurm can hold"), "{e}");
        // The longest forms the parser takes do not overflow.
        let d = SlurmDuration::parse("999999999999-999999999999:999999999999:999999999999")
            .unwrap()
            .known()
            .unwrap();
        assert!(check_time_limit(d).is_err());
    }

    #[test]
    fn parses_times() {
        let t = parse_time("2026-11-23T08:12:44").unwrap().unwrap();
        assert_eq!(format_time(&Some(t)), "2026-11-23T08:12:44");
        for s in ["N/A", "Unknown", "None", "INVALID", "(null)", ""] {
            assert_eq!(parse_time(s).unwrap(), None, "{s}");
        }
        assert!(parse_time("2026-13-01T00:00:00").is_err());
        assert!(parse_time("yesterday").is_err());
    }
}
