//! A job's `Dependency=` as `scontrol show job` prints it: what the job waits on, each with
//! whether it can still be met. `afterok:12(unfulfilled),afterany:12(unfulfilled)` (all of
//! them, `,`), `afterok:12(failed)?afternotok:13(unfulfilled)` (any of them, `?`),
//! `singleton(unfulfilled)`. Slurm drops a condition from the list once it is met. Pure.

/// How the conditions combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Join {
    /// Every condition must be met (`,`).
    All,
    /// One is enough (`?`).
    Any,
}

/// What Slurm says of one condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Met {
    /// Not yet: the job it names has not reached the state asked for.
    Waiting,
    /// Never: the job it names ended the other way (`afterok` on a failed job).
    Never,
    /// Any other word Slurm may print.
    Unknown,
}

/// One condition: `afterok:12` (kind `afterok`, job `12`), `singleton` (no job).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub kind: String,
    /// The job it waits on as printed (`12`, `12_*`, `12+30` for `after:12+30`); None for
    /// `singleton`.
    pub job: Option<String>,
    pub met: Met,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    pub join: Join,
    pub conditions: Vec<Condition>,
}

impl Dependency {
    /// None for `(null)` or nothing.
    pub fn parse(s: &str) -> Option<Dependency> {
        let s = s.trim();
        if s.is_empty() || s == "(null)" {
            return None;
        }
        let join = if s.contains('?') {
            Join::Any
        } else {
            Join::All
        };
        let conditions: Vec<Condition> = s
            .split([',', '?'])
            .filter(|c| !c.is_empty())
            .flat_map(parse_one)
            .collect();
        (!conditions.is_empty()).then_some(Dependency { join, conditions })
    }

    /// Whether the job can still start on these conditions: with `,` no condition may have
    /// failed; with `?` one must still be open.
    pub fn can_be_met(&self) -> bool {
        match self.join {
            Join::All => self.conditions.iter().all(|c| c.met != Met::Never),
            Join::Any => self.conditions.iter().any(|c| c.met != Met::Never),
        }
    }
}

/// `afterok:12:13(unfulfilled)` holds two jobs of one kind: one condition each.
fn parse_one(text: &str) -> Vec<Condition> {
    let (body, met) = match text.rsplit_once('(') {
        Some((b, rest)) => {
            let word = rest.trim_end_matches(')');
            let met = match word {
                "unfulfilled" => Met::Waiting,
                "failed" => Met::Never,
                _ => Met::Unknown,
            };
            (b, met)
        }
        None => (text, Met::Unknown),
    };
    let mut parts = body.split(':');
    let kind = parts.next().unwrap_or("").to_string();
    let jobs: Vec<&str> = parts.filter(|p| !p.is_empty()).collect();
    if jobs.is_empty() {
        return vec![Condition {
            kind,
            job: None,
            met,
        }];
    }
    jobs.into_iter()
        .map(|j| Condition {
            kind: kind.clone(),
            job: Some(j.to_string()),
            met,
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::slurm::parse::parse_scontrol_jobs;

    /// The Dependency of a job as the 26.05 dev cluster printed it.
    fn of(fixture: &str) -> Option<Dependency> {
        let d = parse_scontrol_jobs(fixture).unwrap();
        Dependency::parse(d[0].dependency.as_deref().unwrap_or(""))
    }

    #[test]
    fn all_of_them_waiting() {
        let d = of(include_str!(
            "../../tests/fixtures/slurm/26.05/scontrol_job_dependency_and.out"
        ))
        .unwrap();
        assert_eq!(d.join, Join::All);
        assert_eq!(d.conditions.len(), 2);
        assert_eq!(d.conditions[0].kind, "afterok");
        assert_eq!(d.conditions[1].kind, "afterany");
        assert!(d.conditions.iter().all(|c| c.met == Met::Waiting));
        assert_eq!(d.conditions[0].job, d.conditions[1].job);
        assert!(d.can_be_met());
    }

    #[test]
    fn one_failed_of_all_is_never() {
        let d = of(include_str!(
            "../../tests/fixtures/slurm/26.05/scontrol_job_dependency_never.out"
        ))
        .unwrap();
        // The afterany Slurm dropped once it was met; the afterok failed.
        assert_eq!(d.conditions.len(), 1);
        assert_eq!(d.conditions[0].met, Met::Never);
        assert!(!d.can_be_met());
    }

    #[test]
    fn one_failed_of_any_can_still_be_met() {
        let d = of(include_str!(
            "../../tests/fixtures/slurm/26.05/scontrol_job_dependency_or.out"
        ))
        .unwrap();
        assert_eq!(d.join, Join::Any);
        assert_eq!(
            d.conditions.iter().map(|c| c.met).collect::<Vec<_>>(),
            [Met::Never, Met::Waiting]
        );
        assert!(d.can_be_met());
    }

    #[test]
    fn singleton_names_no_job() {
        let d = of(include_str!(
            "../../tests/fixtures/slurm/26.05/scontrol_job_dependency_singleton.out"
        ))
        .unwrap();
        assert_eq!(d.conditions[0].kind, "singleton");
        assert_eq!(d.conditions[0].job, None);
    }

    #[test]
    fn several_jobs_of_one_kind_and_odd_text() {
        let d = Dependency::parse("afterok:12:13_*(unfulfilled)").unwrap();
        let jobs: Vec<_> = d
            .conditions
            .iter()
            .map(|c| c.job.clone().unwrap())
            .collect();
        assert_eq!(jobs, ["12", "13_*"]);
        assert_eq!(Dependency::parse("(null)"), None);
        assert_eq!(Dependency::parse(""), None);
        // Whatever else Slurm may print is kept, never a panic.
        let d = Dependency::parse("after:5+30(weird),,?").unwrap();
        assert_eq!(d.conditions[0].met, Met::Unknown);
        assert_eq!(d.conditions[0].job.as_deref(), Some("5+30"));
        for s in ["(", ")", ":", "a(b(c", "?(,", "x:(y)"] {
            let _ = Dependency::parse(s);
        }
    }
}
