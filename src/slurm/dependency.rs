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

/// The user's jobs with their dependencies: `squeue --me` with id, name, state and `%E`,
/// each record closed by its id again (a name may hold anything).
pub fn squeue_argv() -> Vec<String> {
    use super::command::{FIELD_SEP, RECORD_END};
    let f = ["%i", "%j", "%T", "%E", "%i"].join(&FIELD_SEP.to_string());
    vec![
        "squeue".into(),
        "--noheader".into(),
        "--local".into(),
        "--me".into(),
        format!("--format={f}{RECORD_END}"),
    ]
}

/// One job of [`squeue_argv`]'s answer.
#[derive(Debug, Clone, PartialEq)]
pub struct DepJob {
    pub id: String,
    pub name: String,
    pub state: String,
    pub dependency: Option<Dependency>,
}

/// Reads [`squeue_argv`]'s answer; a record that does not read cleanly is an error that
/// quotes it.
pub fn parse_jobs(out: &str) -> Result<Vec<DepJob>, String> {
    use super::command::{FIELD_SEP, RECORD_END};
    let mut jobs = Vec::new();
    for rec in out.split(RECORD_END) {
        let rec = rec.trim_start_matches(['\n', '\r']);
        if rec.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = rec.split(FIELD_SEP).collect();
        if f.len() != 5 || f[0] != f[4] || f[0].is_empty() {
            return Err(format!(
                "squeue printed a record slurmdash cannot read: {:?}",
                rec.chars().take(120).collect::<String>()
            ));
        }
        jobs.push(DepJob {
            id: f[0].to_string(),
            name: f[1].to_string(),
            state: f[2].to_string(),
            dependency: Dependency::parse(f[3]),
        });
    }
    Ok(jobs)
}

/// An edge of the graph: from the job depended on to the job that waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub kind: String,
    pub met: Met,
}

/// Every dependency of these jobs as an edge. A `singleton` waits on the user's other jobs
/// of the same name that are listed (an edge from each).
pub fn edges(jobs: &[DepJob]) -> Vec<Edge> {
    let mut out = Vec::new();
    for j in jobs {
        let Some(d) = &j.dependency else { continue };
        for c in &d.conditions {
            match &c.job {
                Some(from) => out.push(Edge {
                    from: from.clone(),
                    to: j.id.clone(),
                    kind: c.kind.clone(),
                    met: c.met,
                }),
                None => out.extend(
                    jobs.iter()
                        .filter(|o| o.id != j.id && o.name == j.name)
                        .map(|o| Edge {
                            from: o.id.clone(),
                            to: j.id.clone(),
                            kind: c.kind.clone(),
                            met: c.met,
                        }),
                ),
            }
        }
    }
    out
}

/// The ids connected to `id` through edges, either way (`id` itself included).
pub fn chain_of(id: &str, edges: &[Edge]) -> Vec<String> {
    let mut seen = vec![id.to_string()];
    let mut i = 0;
    while i < seen.len() {
        let cur = seen[i].clone();
        for e in edges {
            for (a, b) in [(&e.from, &e.to), (&e.to, &e.from)] {
                if *a == cur && !seen.contains(b) {
                    seen.push(b.clone());
                }
            }
        }
        i += 1;
    }
    seen
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod graph_tests {
    use super::*;

    fn rec(id: &str, name: &str, state: &str, dep: &str) -> String {
        format!("{id}\x1f{name}\x1f{state}\x1f{dep}\x1f{id}\x1e\n")
    }

    #[test]
    fn edges_run_from_the_job_depended_on_to_the_one_that_waits() {
        let out = [
            rec("10", "prep", "PENDING", "(null)"),
            rec("11", "train", "PENDING", "afterok:10(unfulfilled)"),
            rec(
                "12",
                "eval",
                "PENDING",
                "afterok:11(unfulfilled)?afternotok:10(unfulfilled)",
            ),
            rec("13", "train", "PENDING", "singleton(unfulfilled)"),
            rec("20", "alone", "RUNNING", "(null)"),
        ]
        .concat();
        let jobs = parse_jobs(&out).unwrap();
        assert_eq!(jobs.len(), 5);
        let e = edges(&jobs);
        let pairs: Vec<(&str, &str, &str)> = e
            .iter()
            .map(|e| (e.from.as_str(), e.to.as_str(), e.kind.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("10", "11", "afterok"),
                ("11", "12", "afterok"),
                ("10", "12", "afternotok"),
                ("11", "13", "singleton"),
            ]
        );
        let mut c = chain_of("13", &e);
        c.sort();
        assert_eq!(c, ["10", "11", "12", "13"]);
        assert_eq!(chain_of("20", &e), ["20"]);
    }

    #[test]
    fn a_cut_record_is_an_error_that_quotes_it() {
        let e = parse_jobs("10\x1fprep\x1fPENDING\x1e").unwrap_err();
        assert!(e.contains("cannot read") && e.contains("prep"), "{e}");
        assert!(parse_jobs("").unwrap().is_empty());
    }
}
