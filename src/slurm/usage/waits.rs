//! "Similar jobs waited": how long the user's own recent jobs of the same partition and a
//! similar size waited to start, since Slurm's estimate is often absent or wrong. Pure.
//!
//! Similar: the same partition, CPUs within half to twice the job's, and GPUs likewise
//! (a CPU-only job is compared only with CPU-only jobs). The wait is start minus eligible
//! time (a hold or a dependency does not count), else minus submit.

use super::AcctJob;
use crate::slurm::time::SlurmDuration;

/// Days of history the waits are read over.
pub const DAYS: u32 = 14;

/// How long a read of the waits is kept before a pending job's selection reads again.
pub const TTL_SECS: i64 = 600;

/// The size of the pending job being compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size<'a> {
    pub partition: &'a str,
    pub cpus: u32,
    pub gpus: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waited {
    pub median_s: u64,
    /// The 90th percentile (nearest rank: the wait 9 in 10 of them did not pass).
    pub p90_s: u64,
    pub min_s: u64,
    pub max_s: u64,
    pub jobs: usize,
}

impl Waited {
    /// `similar jobs waited 4m │ median, 20m ┊ p90 (9 jobs)`: the median and the 90th
    /// percentile, named by their marks on the wait's chart (`slurm::timeline`).
    pub fn text(&self) -> String {
        let h = |s: u64| SlurmDuration::from_secs(s).human();
        let n = match self.jobs {
            1 => "1 job".to_string(),
            n => format!("{n} jobs"),
        };
        if self.jobs == 1 {
            return format!("similar jobs waited {} ({n})", h(self.median_s));
        }
        // The marks are the wait chart's (`slurm::timeline`).
        format!(
            "similar jobs waited {} │ median, {} ┊ p90 ({n})",
            h(self.median_s),
            h(self.p90_s),
        )
    }
}

fn near(a: u32, b: u32) -> bool {
    match (a, b) {
        (0, 0) => true,
        (0, _) | (_, 0) => false,
        (a, b) => {
            let (a, b) = (u64::from(a), u64::from(b));
            a * 2 >= b && b * 2 >= a
        }
    }
}

/// The median and range of the waits of `history`'s jobs like `size` that started; None
/// when there is none. `except` leaves out the job itself.
pub fn similar(history: &[AcctJob], size: Size<'_>, except: Option<&str>) -> Option<Waited> {
    let mut w: Vec<u64> = history
        .iter()
        .filter(|j| j.partition == size.partition)
        .filter(|j| near(j.cpus, size.cpus) && near(j.gpus, size.gpus))
        .filter(|j| except != Some(j.id.as_str()))
        .filter_map(AcctJob::waited_s)
        .collect();
    if w.is_empty() {
        return None;
    }
    w.sort_unstable();
    let n = w.len();
    let median_s = match n % 2 {
        1 => w[n / 2],
        _ => (w[n / 2 - 1] + w[n / 2]) / 2,
    };
    // Nearest rank: the smallest wait at or above 90% of them.
    let p90_s = w[(n * 9).div_ceil(10).saturating_sub(1)];
    Some(Waited {
        median_s,
        p90_s,
        min_s: w[0],
        max_s: w[n - 1],
        jobs: n,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::slurm::model::JobState;
    use chrono::NaiveDateTime;

    fn t(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap()
    }

    fn job(id: &str, part: &str, cpus: u32, gpus: u32, wait: Option<i64>) -> AcctJob {
        let sub = t("2026-11-20T10:00:00");
        AcctJob {
            id: id.into(),
            account: "research".into(),
            partition: part.into(),
            state: JobState::Completed,
            submit: Some(sub),
            eligible: Some(sub),
            start: wait.map(|w| sub + chrono::Duration::seconds(w)),
            elapsed_s: 10,
            cpus,
            gpus,
            allocated: wait.is_some(),
        }
    }

    const SIZE: Size<'static> = Size {
        partition: "polar",
        cpus: 4,
        gpus: 1,
    };

    #[test]
    fn median_and_range_of_same_partition_and_size() {
        let h = vec![
            job("1", "polar", 4, 1, Some(60)),
            job("2", "polar", 8, 2, Some(240)),
            job("3", "polar", 2, 1, Some(1320)),
            // Other partition, too big, CPU-only, never started: left out.
            job("4", "short", 4, 1, Some(5)),
            job("5", "polar", 32, 1, Some(5)),
            job("6", "polar", 4, 0, Some(5)),
            job("7", "polar", 4, 1, None),
        ];
        let w = similar(&h, SIZE, None).unwrap();
        assert_eq!(
            w,
            Waited {
                median_s: 240,
                p90_s: 1320,
                min_s: 60,
                max_s: 1320,
                jobs: 3
            }
        );
        assert_eq!(
            w.text(),
            "similar jobs waited 4m │ median, 22m ┊ p90 (3 jobs)"
        );
    }

    #[test]
    fn the_90th_percentile_is_the_nearest_rank() {
        let h: Vec<AcctJob> = (1..=20)
            .map(|i| job(&i.to_string(), "polar", 4, 1, Some(i * 60)))
            .collect();
        let w = similar(&h, SIZE, None).unwrap();
        assert_eq!((w.median_s, w.p90_s, w.jobs), (630, 18 * 60, 20));
        let one = similar(&h[..1], SIZE, None).unwrap();
        assert_eq!(one.p90_s, 60);
    }

    #[test]
    fn even_count_takes_the_middle_two() {
        let h = vec![
            job("1", "polar", 4, 1, Some(60)),
            job("2", "polar", 4, 1, Some(180)),
        ];
        assert_eq!(similar(&h, SIZE, None).unwrap().median_s, 120);
    }

    #[test]
    fn none_without_similar_jobs_and_never_the_job_itself() {
        assert_eq!(similar(&[], SIZE, None), None);
        let h = vec![job("9", "polar", 4, 1, Some(60))];
        assert_eq!(similar(&h, SIZE, Some("9")), None);
        let one = similar(&h, SIZE, None).unwrap();
        assert_eq!(one.text(), "similar jobs waited 1m (1 job)");
    }

    #[test]
    fn a_hold_does_not_count_as_waiting() {
        let mut j = job("1", "polar", 4, 1, Some(3600));
        j.eligible = j.start.map(|s| s - chrono::Duration::seconds(30));
        assert_eq!(similar(&[j], SIZE, None).unwrap().median_s, 30);
    }
}
