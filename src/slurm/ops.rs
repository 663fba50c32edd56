//! Actions on jobs the user owns: cancel, hold, release, requeue, top, and
//! edits of a pending job. Argv builders, the outcome per id, and the checks an
//! edit must pass before it is sent. Pure.

use std::fmt;

use super::jobid::JobId;
use super::model::{CancelOutcome, Partition};
use super::time::SlurmDuration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    Cancel,
    Hold,
    Release,
    Requeue,
    Top,
}

impl OpKind {
    pub const ALL: [OpKind; 5] = [
        OpKind::Cancel,
        OpKind::Hold,
        OpKind::Release,
        OpKind::Requeue,
        OpKind::Top,
    ];

    /// The verb as the user types it after `:`.
    pub fn verb(self) -> &'static str {
        match self {
            OpKind::Cancel => "cancel",
            OpKind::Hold => "hold",
            OpKind::Release => "release",
            OpKind::Requeue => "requeue",
            OpKind::Top => "top",
        }
    }

    pub fn from_verb(s: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.verb() == s)
    }

    /// What the row shows while the command runs.
    pub fn doing(self) -> &'static str {
        match self {
            OpKind::Cancel => "cancelling…",
            OpKind::Hold => "holding…",
            OpKind::Release => "releasing…",
            OpKind::Requeue => "requeueing…",
            OpKind::Top => "moving to top…",
        }
    }

    pub fn done(self) -> &'static str {
        match self {
            OpKind::Cancel => "cancelled",
            OpKind::Hold => "held",
            OpKind::Release => "released",
            OpKind::Requeue => "requeued",
            OpKind::Top => "moved to the top of your pending jobs",
        }
    }

    /// The Slurm command: one exec for any number of ids.
    pub fn argv(self, ids: &[JobId]) -> Vec<String> {
        let mut a: Vec<String> = match self {
            // `io::ops::run` sends the guard-aware cancel of `launch::guard` instead.
            OpKind::Cancel => return super::command::scancel(ids),
            // `uhold`, not `hold`: a hold the user can release even when they
            // are a Slurm operator (for whom `hold` is an admin hold).
            OpKind::Hold => vec!["scontrol".into(), "uhold".into()],
            OpKind::Release => vec!["scontrol".into(), "release".into()],
            OpKind::Requeue => vec!["scontrol".into(), "requeue".into()],
            OpKind::Top => vec!["scontrol".into(), "top".into()],
        };
        a.extend(ids.iter().map(|i| i.as_str().to_string()));
        a
    }

    /// Outcomes per id from the command's stderr and exit status.
    pub fn outcomes(self, ids: &[JobId], stderr: &str, code: i32) -> Vec<(JobId, CancelOutcome)> {
        match self {
            OpKind::Cancel => super::parse::parse_scancel(ids, stderr, code),
            _ => super::parse::parse_scontrol_op(ids, stderr, code),
        }
    }

    /// Whether an id Slurm no longer knows, or a finished job, counts as done:
    /// only for cancel (the job is not running either way).
    pub fn gone_is_success(self) -> bool {
        self == OpKind::Cancel
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.verb())
    }
}

/// One action on a set of jobs, sent as one remote command.
#[derive(Debug, Clone, PartialEq)]
pub struct JobOp {
    pub kind: OpKind,
    pub ids: Vec<JobId>,
}

impl JobOp {
    /// Heterogeneous components become their whole job (Slurm refuses single
    /// components); duplicates are dropped, order kept.
    pub fn new(kind: OpKind, ids: impl IntoIterator<Item = JobId>) -> JobOp {
        let mut out: Vec<JobId> = Vec::new();
        for id in ids {
            let t = id.cancel_target();
            if !out.contains(&t) {
                out.push(t);
            }
        }
        JobOp { kind, ids: out }
    }

    pub fn argv(&self) -> Vec<String> {
        self.kind.argv(&self.ids)
    }

    /// "cancel 123", "cancel 3 jobs (123, 124, 125)".
    pub fn describe(&self) -> String {
        let list = ids_list(&self.ids, 4);
        match self.ids.len() {
            1 => format!("{} {list}", self.kind),
            n => format!("{} {n} jobs ({list})", self.kind),
        }
    }
}

/// "1, 2, 3 and 7 more".
pub fn ids_list(ids: &[JobId], max: usize) -> String {
    let shown: Vec<&str> = ids.iter().take(max).map(JobId::as_str).collect();
    let mut s = shown.join(", ");
    if ids.len() > max {
        s.push_str(&format!(" and {} more", ids.len() - max));
    }
    s
}

/// How one action went, for the status line.
#[derive(Debug, Clone, PartialEq)]
pub struct OpReport {
    pub op: JobOp,
    pub outcomes: Vec<(JobId, CancelOutcome)>,
}

impl OpReport {
    pub fn failed(&self) -> Vec<(&JobId, String)> {
        self.outcomes
            .iter()
            .filter_map(|(id, o)| match o {
                CancelOutcome::Failed(m) => Some((id, m.clone())),
                CancelOutcome::AlreadyGone if !self.op.kind.gone_is_success() => {
                    Some((id, "Slurm no longer knows this job".to_string()))
                }
                CancelOutcome::AlreadyFinished if !self.op.kind.gone_is_success() => {
                    Some((id, "the job has already finished".to_string()))
                }
                _ => None,
            })
            .collect()
    }

    /// One line: what worked, what was already done, what failed and why.
    pub fn summary(&self) -> String {
        let kind = self.op.kind;
        let failed = self.failed();
        let ok: Vec<JobId> = self
            .outcomes
            .iter()
            .filter(|(_, o)| *o == CancelOutcome::Cancelled)
            .map(|(id, _)| id.clone())
            .collect();
        let gone: Vec<JobId> = self
            .outcomes
            .iter()
            .filter(|(_, o)| {
                kind.gone_is_success()
                    && matches!(
                        o,
                        CancelOutcome::AlreadyGone | CancelOutcome::AlreadyFinished
                    )
            })
            .map(|(id, _)| id.clone())
            .collect();
        let mut parts = Vec::new();
        if !ok.is_empty() {
            parts.push(format!("{} {}", kind.done(), ids_list(&ok, 5)));
        }
        if !gone.is_empty() {
            parts.push(format!(
                "{} already finished or gone (counts as {})",
                ids_list(&gone, 5),
                kind.done()
            ));
        }
        if !failed.is_empty() {
            let first = &failed[0];
            let more = if failed.len() > 1 {
                format!(" (and {} more)", failed.len() - 1)
            } else {
                String::new()
            };
            parts.push(format!(
                "could not {kind} {}: {}{more}",
                first.0,
                explain(kind, &first.1)
            ));
        }
        parts.join("; ")
    }
}

/// Slurm's terse refusals with what the user can do about them.
fn explain(kind: OpKind, msg: &str) -> String {
    let m = msg.to_ascii_lowercase();
    let hint = if kind == OpKind::Top && m.contains("permission denied") {
        " — this cluster does not let users reorder their jobs (SchedulerParameters lacks enable_user_top)"
    } else if kind == OpKind::Requeue && m.contains("pending execution") {
        " — only running or finished batch jobs can be requeued"
    } else if m.contains("invalid user id") || m.contains("permission denied") {
        " — you can only change your own jobs"
    } else {
        ""
    };
    format!("{msg}{hint}")
}

/// Changes to a pending job (`scontrol update`). Empty fields are unchanged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobEdit {
    pub time_limit: Option<String>,
    pub partition: Option<String>,
    pub qos: Option<String>,
    pub name: Option<String>,
}

impl JobEdit {
    pub fn is_empty(&self) -> bool {
        self.time_limit.is_none()
            && self.partition.is_none()
            && self.qos.is_none()
            && self.name.is_none()
    }

    /// `scontrol update JobId=ID TimeLimit=.. Partition=.. QOS=.. JobName=..`,
    /// each `Key=value` one argv word (the transport quotes it).
    pub fn argv(&self, id: &JobId) -> Vec<String> {
        let mut a = vec![
            "scontrol".to_string(),
            "update".into(),
            format!("JobId={}", id.as_str()),
        ];
        let fields = [
            ("TimeLimit", &self.time_limit),
            ("Partition", &self.partition),
            ("QOS", &self.qos),
            ("JobName", &self.name),
        ];
        for (k, v) in fields {
            if let Some(v) = v {
                a.push(format!("{k}={v}"));
            }
        }
        a
    }

    /// Problems that would make Slurm refuse the change or leave the job
    /// pending forever, checked against the partitions (when known). Each
    /// message names the field and the limit.
    pub fn check(&self, current_partition: &str, partitions: &[Partition]) -> Vec<String> {
        let mut errs = Vec::new();
        let part_name = self.partition.as_deref().unwrap_or(current_partition);
        let part = partitions.iter().find(|p| p.name == part_name);
        if let Some(p) = &self.partition {
            if p.is_empty() || p.contains(char::is_whitespace) || p.contains(',') {
                errs.push(format!("partition “{p}” is not a partition name"));
            } else if !partitions.is_empty() && part.is_none() {
                let names: Vec<&str> = partitions.iter().map(|p| p.name.as_str()).collect();
                errs.push(format!(
                    "no partition “{p}” on this cluster (there are: {})",
                    names.join(", ")
                ));
            }
        }
        if let Some(t) = &self.time_limit {
            match SlurmDuration::parse(t) {
                Ok(SlurmDuration::Known(d)) if d > crate::slurm::time::MAX_TIME_LIMIT => {
                    errs.push(crate::slurm::time::limit_too_long(t));
                }
                Ok(SlurmDuration::Known(d)) if d.as_secs() > 0 => {
                    if let Some(max) = part.and_then(|p| p.max_time.known()) {
                        if d > max {
                            errs.push(format!(
                                "time limit {} exceeds {}'s MaxTime {}",
                                SlurmDuration::Known(d).to_slurm(),
                                part_name,
                                SlurmDuration::Known(max).to_slurm()
                            ));
                        }
                    }
                }
                Ok(SlurmDuration::Unlimited) => {
                    if let Some(max) = part.and_then(|p| p.max_time.known()) {
                        errs.push(format!(
                            "time limit UNLIMITED exceeds {}'s MaxTime {}",
                            part_name,
                            SlurmDuration::Known(max).to_slurm()
                        ));
                    }
                }
                _ => errs.push(format!(
                    "time limit “{t}” is not a duration (e.g. 90, 1:30:00, 2-00:00:00)"
                )),
            }
        }
        if let Some(q) = &self.qos {
            if q.is_empty() || q.contains(char::is_whitespace) {
                errs.push(format!("QOS “{q}” is not a QOS name"));
            }
        }
        if let Some(n) = &self.name {
            if n.is_empty() {
                errs.push("the job name cannot be empty".into());
            } else if n.chars().any(char::is_control) {
                errs.push("the job name cannot contain control characters".into());
            }
        }
        errs
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<JobId> {
        v.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn partitions() -> Vec<Partition> {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/slurm/scontrol_partition.out"
        ))
        .unwrap();
        crate::slurm::parse::parse_scontrol_partitions(&text).unwrap()
    }

    #[test]
    fn one_command_for_many_ids() {
        let op = JobOp::new(OpKind::Hold, ids(&["5", "6_2", "7+1", "7+0"]));
        assert_eq!(op.argv(), ["scontrol", "uhold", "5", "6_2", "7"]);
        let cancel = JobOp::new(OpKind::Cancel, ids(&["5", "5"])).argv();
        assert_eq!(cancel, ["scancel", "--verbose", "5"]);
        assert_eq!(op.describe(), "hold 3 jobs (5, 6_2, 7)");
    }

    #[test]
    fn summary_counts_gone_as_cancelled_only_for_cancel() {
        let op = JobOp::new(OpKind::Cancel, ids(&["5", "6"]));
        let r = OpReport {
            outcomes: vec![
                (op.ids[0].clone(), CancelOutcome::Cancelled),
                (op.ids[1].clone(), CancelOutcome::AlreadyFinished),
            ],
            op,
        };
        assert!(r.failed().is_empty());
        assert_eq!(
            r.summary(),
            "cancelled 5; 6 already finished or gone (counts as cancelled)"
        );
        let op = JobOp::new(OpKind::Hold, ids(&["6"]));
        let r = OpReport {
            outcomes: vec![(op.ids[0].clone(), CancelOutcome::AlreadyFinished)],
            op,
        };
        assert_eq!(
            r.summary(),
            "could not hold 6: the job has already finished"
        );
    }

    #[test]
    fn top_refusal_is_explained() {
        let op = JobOp::new(OpKind::Top, ids(&["6"]));
        let r = OpReport {
            outcomes: vec![(
                op.ids[0].clone(),
                CancelOutcome::Failed("Access/permission denied".into()),
            )],
            op,
        };
        assert!(r.summary().contains("enable_user_top"), "{}", r.summary());
    }

    #[test]
    fn edit_argv_keeps_odd_names_as_one_word() {
        let e = JobEdit {
            time_limit: Some("1:00:00".into()),
            name: Some("a b; rm -rf ~".into()),
            ..JobEdit::default()
        };
        assert_eq!(
            e.argv(&"9".parse().unwrap()),
            [
                "scontrol",
                "update",
                "JobId=9",
                "TimeLimit=1:00:00",
                "JobName=a b; rm -rf ~"
            ]
        );
    }

    #[test]
    fn edit_checked_against_partition_limits() {
        let parts = partitions();
        let polar = parts.iter().find(|p| p.name == "polar").unwrap();
        let max = polar.max_time.to_slurm();
        let e = JobEdit {
            time_limit: Some("10:00:00".into()),
            ..JobEdit::default()
        };
        assert_eq!(
            e.check("polar", &parts),
            [format!("time limit 10:00:00 exceeds polar's MaxTime {max}")]
        );
        assert!(e.check("long", &parts).is_empty());
        let e = JobEdit {
            partition: Some("nosuch".into()),
            time_limit: Some("ten".into()),
            name: Some(String::new()),
            ..JobEdit::default()
        };
        let errs = e.check("short", &parts);
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs[0].starts_with("no partition “nosuch”"));
        assert!(errs[1].contains("not a duration"));
    }
}
