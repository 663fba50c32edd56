//! Job ids as Slurm prints them: `123`, `123_7`, `123_[0-99]`,
//! `123_[1,3,5-7%2]`, `123+0`, and sacct steps `123.batch`, `123_4.0`.

use std::fmt;
use std::str::FromStr;

use super::error::ValueError;

/// (cluster, leader id): an array as the queue groups, folds and expands it.
pub type ArrayKey = (u16, u64);

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId {
    raw: Box<str>,
    base: u64,
    array: Option<ArrayPart>,
    het_offset: Option<u32>,
    step: Option<Box<str>>,
    /// Which of the dashboard's clusters the job is on (0 when there is one): the same
    /// number on two clusters is two jobs. Never part of the text handed to Slurm.
    cluster: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArrayPart {
    Task(u32),
    /// Pending tasks still collapsed in one row.
    Pending(Box<ArraySpec>),
}

/// `0-99`, `1,3,5-7%2`, `0-15:4`: the text inside `[...]` of a collapsed
/// array row (or after `--array=`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArraySpec {
    /// (first, last, step)
    pub ranges: Vec<(u32, u32, u32)>,
    /// The `%N` throttle.
    pub max_running: Option<u32>,
    /// squeue cut the expression (it keeps 64 bytes unless
    /// SLURM_BITSTR_LEN says otherwise): `ranges` holds the complete
    /// elements before the cut.
    pub truncated: bool,
}

impl ArraySpec {
    pub fn parse(s: &str) -> Result<ArraySpec, ValueError> {
        let mut spec = ArraySpec::parse_complete(s)?;
        spec.truncated = false;
        Ok(spec)
    }

    /// Like `parse`, for an expression squeue may have cut anywhere
    /// (`2,9,22,` or `2,9,23...`): the last, possibly partial, element is dropped.
    pub fn parse_truncated(s: &str) -> Result<ArraySpec, ValueError> {
        let body = s.strip_suffix("...").unwrap_or(s);
        let cut = body.rfind(',').map(|i| &body[..i]).unwrap_or("");
        let mut spec = if cut.is_empty() {
            ArraySpec {
                ranges: Vec::new(),
                max_running: None,
                truncated: true,
            }
        } else {
            ArraySpec::parse_complete(cut)?
        };
        spec.truncated = true;
        Ok(spec)
    }

    fn parse_complete(s: &str) -> Result<ArraySpec, ValueError> {
        let err = || ValueError::new("array spec", s);
        let (list, max_running) = match s.split_once('%') {
            Some((l, m)) => (l, Some(m.parse::<u32>().map_err(|_| err())?)),
            None => (s, None),
        };
        let mut ranges = Vec::new();
        for part in list.split(',') {
            let (range, step) = match part.split_once(':') {
                Some((r, st)) => (r, st.parse::<u32>().map_err(|_| err())?),
                None => (part, 1),
            };
            let (a, b) = match range.split_once('-') {
                Some((a, b)) => (
                    a.parse::<u32>().map_err(|_| err())?,
                    b.parse::<u32>().map_err(|_| err())?,
                ),
                None => {
                    let a = range.parse::<u32>().map_err(|_| err())?;
                    (a, a)
                }
            };
            if b < a || step == 0 {
                return Err(err());
            }
            ranges.push((a, b, step));
        }
        Ok(ArraySpec {
            ranges,
            max_running,
            truncated: false,
        })
    }

    pub fn task_count(&self) -> u64 {
        self.ranges
            .iter()
            .map(|&(a, b, s)| u64::from(b - a) / u64::from(s) + 1)
            .sum()
    }
}

impl fmt::Display for ArraySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, &(a, b, s)) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if a == b {
                write!(f, "{a}")?;
            } else {
                write!(f, "{a}-{b}")?;
            }
            if s != 1 {
                write!(f, ":{s}")?;
            }
        }
        if let Some(m) = self.max_running {
            write!(f, "%{m}")?;
        }
        if self.truncated {
            f.write_str(",...")?;
        }
        Ok(())
    }
}

impl JobId {
    pub fn new(base: u64) -> JobId {
        JobId {
            raw: base.to_string().into(),
            base,
            array: None,
            het_offset: None,
            step: None,
            cluster: 0,
        }
    }

    /// An array (or job) as the queue groups and expands it: its cluster and leader id.
    pub fn array_key(&self) -> ArrayKey {
        (self.cluster, self.base)
    }

    /// The dashboard's number for the job's cluster (0 when there is one).
    pub fn cluster(&self) -> u16 {
        self.cluster
    }

    /// The same id on cluster `k`.
    pub fn on(mut self, k: u16) -> JobId {
        self.cluster = k;
        self
    }

    pub fn set_cluster(&mut self, k: u16) {
        self.cluster = k;
    }

    /// The text Slurm printed; what to hand back to scancel/scontrol.
    pub fn as_str(&self) -> &str {
        &self.raw
    }
    /// The number before any `_`, `+` or `.`: the array or het leader.
    pub fn base(&self) -> u64 {
        self.base
    }
    pub fn array(&self) -> Option<&ArrayPart> {
        self.array.as_ref()
    }
    pub fn array_task(&self) -> Option<u32> {
        match self.array {
            Some(ArrayPart::Task(t)) => Some(t),
            _ => None,
        }
    }
    pub fn array_pending(&self) -> Option<&ArraySpec> {
        match &self.array {
            Some(ArrayPart::Pending(s)) => Some(s),
            _ => None,
        }
    }
    pub fn het_offset(&self) -> Option<u32> {
        self.het_offset
    }
    pub fn step(&self) -> Option<&str> {
        self.step.as_deref()
    }
    /// What to hand scancel. A het component other than `+0` cannot be
    /// cancelled alone (22.05: "Operation not permitted on individual
    /// component of heterogeneous job", exit 60); the leader id cancels
    /// every component.
    pub fn cancel_target(&self) -> JobId {
        match self.het_offset {
            Some(_) => JobId::new(self.base).on(self.cluster),
            None => self.without_step().without_throttle(),
        }
    }

    /// What to hand a per-job command that refuses a folded array id (sprio: "Invalid job
    /// id: 3_[2-20]"): a folded array's pending tasks share the array's own job id; any
    /// other id is used as is (without a step).
    pub fn per_job_target(&self) -> JobId {
        match self.array {
            Some(ArrayPart::Pending(_)) => JobId::new(self.base).on(self.cluster),
            _ => self.without_step(),
        }
    }

    /// A collapsed array without squeue's `%N` (max running tasks), which scancel and
    /// scontrol refuse as an invalid range: `123_[4-99%4]` → `123_[4-99]`.
    fn without_throttle(self) -> JobId {
        let Some((head, rest)) = self.raw.split_once('%') else {
            return self;
        };
        let tail = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        let cluster = self.cluster;
        format!("{head}{tail}")
            .parse::<JobId>()
            .map(|id| id.on(cluster))
            .unwrap_or(self)
    }

    /// The job without its step (`123_4.batch` → `123_4`).
    pub fn without_step(&self) -> JobId {
        match self.raw.split_once('.') {
            Some((head, _)) => JobId {
                raw: head.into(),
                step: None,
                ..self.clone()
            },
            None => self.clone(),
        }
    }
}

impl FromStr for JobId {
    type Err = ValueError;

    fn from_str(s: &str) -> Result<JobId, ValueError> {
        let err = || ValueError::new("job id", s);
        let digits_end = s
            .bytes()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(s.len());
        if digits_end == 0 || digits_end > 19 {
            return Err(err());
        }
        let base: u64 = s[..digits_end].parse().map_err(|_| err())?;
        let mut rest = &s[digits_end..];
        let mut array = None;
        let mut het_offset = None;
        if let Some(r) = rest.strip_prefix('_') {
            if let Some(inner) = r.strip_prefix('[') {
                match inner.find(']') {
                    Some(close) => {
                        let body = &inner[..close];
                        let spec = if body.ends_with("...") {
                            ArraySpec::parse_truncated(body)
                        } else {
                            ArraySpec::parse(body)
                        };
                        array = Some(ArrayPart::Pending(Box::new(spec.map_err(|_| err())?)));
                        rest = &inner[close + 1..];
                    }
                    // squeue's %i cut inside the brackets: nothing follows.
                    None => {
                        array = Some(ArrayPart::Pending(Box::new(
                            ArraySpec::parse_truncated(inner).map_err(|_| err())?,
                        )));
                        rest = "";
                    }
                }
            } else {
                let end = r
                    .bytes()
                    .position(|b| !b.is_ascii_digit())
                    .unwrap_or(r.len());
                let t = r[..end].parse::<u32>().map_err(|_| err())?;
                array = Some(ArrayPart::Task(t));
                rest = &r[end..];
            }
        } else if let Some(r) = rest.strip_prefix('+') {
            let end = r
                .bytes()
                .position(|b| !b.is_ascii_digit())
                .unwrap_or(r.len());
            het_offset = Some(r[..end].parse::<u32>().map_err(|_| err())?);
            rest = &r[end..];
        }
        let step = match rest {
            "" => None,
            _ => {
                let st = rest.strip_prefix('.').ok_or_else(err)?;
                let ok = !st.is_empty()
                    && st
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'+');
                if !ok {
                    return Err(err());
                }
                Some(st.into())
            }
        };
        Ok(JobId {
            raw: s.into(),
            base,
            array,
            het_offset,
            step,
            cluster: 0,
        })
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn id(s: &str) -> JobId {
        s.parse().unwrap()
    }

    #[test]
    fn plain_task_het_step() {
        assert_eq!(id("123").base(), 123);
        assert_eq!(id("123_7").array_task(), Some(7));
        assert_eq!(id("123_7").base(), 123);
        assert_eq!(id("123+1").het_offset(), Some(1));
        assert_eq!(id("123.batch").step(), Some("batch"));
        assert_eq!(id("123_4.0").array_task(), Some(4));
        assert_eq!(id("123_4.0").without_step().to_string(), "123_4");
        assert_eq!(id("123+0.extern").het_offset(), Some(0));
        assert_eq!(id("123+1").cancel_target().to_string(), "123");
        assert_eq!(id("123_4.batch").cancel_target().to_string(), "123_4");
        assert_eq!(id("123_[4-99%4]").cancel_target().to_string(), "123_[4-99]");
        assert_eq!(
            id("123_[1,3,5-7%2]").cancel_target().to_string(),
            "123_[1,3,5-7]"
        );
    }

    #[test]
    fn per_job_commands_get_the_arrays_own_id_for_a_folded_array() {
        assert_eq!(id("3_[2-20]").per_job_target().to_string(), "3");
        assert_eq!(id("3_[2-20%4]").per_job_target().to_string(), "3");
        assert_eq!(id("3_7").per_job_target().to_string(), "3_7");
        assert_eq!(id("9").per_job_target().to_string(), "9");
        assert_eq!(id("9.batch").per_job_target().to_string(), "9");
    }

    #[test]
    fn collapsed_arrays() {
        let j = id("123_[4-99]");
        let spec = j.array_pending().unwrap();
        assert_eq!(spec.task_count(), 96);
        let j = id("123_[1,3,5-7%2]");
        let spec = j.array_pending().unwrap();
        assert_eq!(spec.ranges, vec![(1, 1, 1), (3, 3, 1), (5, 7, 1)]);
        assert_eq!(spec.max_running, Some(2));
        assert_eq!(spec.task_count(), 5);
        assert_eq!(spec.to_string(), "1,3,5-7%2");
        assert_eq!(ArraySpec::parse("0-15:4").unwrap().task_count(), 4);
    }

    #[test]
    fn truncated_collapsed_arrays_from_real_squeue() {
        // Real 22.05 output for a 60-element array: %i cut at 64 bytes with
        // no closing bracket, %K cut with "...".
        let j = id("170_[2,9,22,26,29,31,64,96,104,");
        let spec = j.array_pending().unwrap();
        assert!(spec.truncated);
        assert_eq!(spec.ranges.len(), 9);
        assert_eq!(j.base(), 170);
        assert_eq!(j.to_string(), "170_[2,9,22,26,29,31,64,96,104,");
        let k = ArraySpec::parse_truncated("2,9,22,226,23...").unwrap();
        assert_eq!(k.ranges.len(), 4);
        let j = id("170_[2,9,23...]");
        assert_eq!(j.array_pending().unwrap().ranges.len(), 2);
        assert!(id("170_[").array_pending().unwrap().ranges.is_empty());
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "123",
            "123_7",
            "123_[0-99]",
            "123_[1,3,5-7%2]",
            "123+0",
            "9.batch",
        ] {
            assert_eq!(id(s).to_string(), s);
        }
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "",
            "abc",
            "12a",
            "123_",
            "123_[5-1]",
            "123+",
            "123.",
            "_1",
            "1_[1]x",
        ] {
            assert!(s.parse::<JobId>().is_err(), "{s}");
        }
    }
}
