//! Short human texts for times and cells. `now` is always passed in: the
//! cluster's local time, like every Slurm timestamp.

use std::borrow::Cow;

use chrono::NaiveDateTime;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::slurm::model::{Job, JobState, SlurmDuration};

fn secs_between(from: NaiveDateTime, to: NaiveDateTime) -> i64 {
    (to - from).num_seconds()
}

fn human_secs(secs: u64) -> String {
    SlurmDuration::from_secs(secs).human()
}

/// `in 2h13m` for a time still ahead; `now` within a minute; `5m late`
/// when the estimate has passed without the job starting.
pub fn human_until(t: NaiveDateTime, now: NaiveDateTime) -> String {
    let s = secs_between(now, t);
    if s >= 60 {
        format!("in {}", human_secs(s as u64))
    } else if s > -60 {
        "now".to_string()
    } else {
        format!("{} late", human_secs(s.unsigned_abs()))
    }
}

/// `3h ago`; `just now` for anything under a second or in the future
/// (clock skew between laptop and cluster).
pub fn human_ago(t: NaiveDateTime, now: NaiveDateTime) -> String {
    let s = secs_between(t, now);
    if s < 1 {
        "just now".to_string()
    } else {
        format!("{} ago", human_secs(s as u64))
    }
}

/// How long the job waited in the queue: until now while pending, until its
/// start once started. None without a submit time.
pub fn waited(job: &Job, now: NaiveDateTime) -> Option<String> {
    let submit = job.submit_time?;
    let end = if job.state.status() == crate::slurm::model::Status::Pending {
        now
    } else {
        job.start_time?
    };
    Some(human_secs(secs_between(submit, end).max(0) as u64))
}

/// `12s/20m`; a pending job has used nothing yet: `-/20m`.
pub fn time_used_limit(job: &Job) -> String {
    time_used_limit_after(job, 0)
}

/// As [`time_used_limit`], with the `ran` seconds since the record was read added to the
/// time used of a running job, never past its limit: the column counts on between reads.
pub fn time_used_limit_after(job: &Job, ran: u64) -> String {
    let used = if job.state == JobState::Pending {
        "-".to_string()
    } else if ran > 0 && job.state == JobState::Running {
        match job.time_used.known() {
            Some(u) => {
                let mut secs = u.as_secs().saturating_add(ran);
                if let Some(limit) = job.time_limit.known() {
                    secs = secs.min(limit.as_secs());
                }
                SlurmDuration::from_secs(secs).human()
            }
            None => job.time_used.human(),
        }
    } else {
        job.time_used.human()
    };
    format!("{used}/{}", job.time_limit.human())
}

/// Control characters (a newline in a job name) would break a table row.
pub fn one_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| match c {
                '\n' => '↵',
                '\t' => ' ',
                c if c.is_control() => '�',
                c => c,
            })
            .collect(),
    )
}

/// Cuts `s` to `width` terminal cells, marking the cut with `…`.
pub fn fit(s: &str, width: usize) -> Cow<'_, str> {
    if s.width() <= width {
        return Cow::Borrowed(s);
    }
    if width == 0 {
        return Cow::Borrowed("");
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw > width - 1 {
            break;
        }
        w += cw;
        out.push(c);
    }
    out.push('…');
    Cow::Owned(out)
}

/// Reasons for which the job will not start unless someone changes it.
pub fn never_starts(reason: &str) -> bool {
    use crate::slurm::reason::{explain, Context, Outlook};
    explain(reason, &Context::default()).outlook == Outlook::Never
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn t(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap()
    }

    #[test]
    fn until_and_ago() {
        let now = t("2026-11-23T10:00:00");
        assert_eq!(human_until(t("2026-11-23T12:13:00"), now), "in 2h13m");
        assert_eq!(human_until(t("2026-11-23T10:00:30"), now), "now");
        assert_eq!(human_until(t("2026-11-23T09:55:00"), now), "5m late");
        assert_eq!(human_until(t("2026-11-25T14:00:00"), now), "in 2d4h");
        assert_eq!(human_ago(t("2026-11-23T07:00:00"), now), "3h ago");
        assert_eq!(human_ago(t("2026-11-23T09:59:15"), now), "45s ago");
        assert_eq!(human_ago(t("2026-11-23T10:00:05"), now), "just now");
    }

    #[test]
    fn fit_marks_the_cut_and_counts_wide_chars() {
        assert_eq!(fit("abcdef", 6), "abcdef");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("名前名前", 5), "名前…");
        assert_eq!(fit("abc", 0), "");
        assert_eq!(one_line("line\nbreak"), "line↵break");
    }
}
