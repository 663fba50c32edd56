//! Why a finished job ended the way it did: a class (ERR_INFRA, ERR_OOM, ERR_TIMEOUT,
//! ERR_PROGRAM, ERR_CANCELLED, or Complete/Error for COMPLETED jobs refined by status.json),
//! the evidence (the state, exit code, log line or status record that decided it) and a
//! one-line suggestion. Pure: the caller reads the log tails and status.json.

mod patterns;
pub(crate) mod status;

use std::fmt;

pub use patterns::{LineMatch, PatternError, PatternList, Patterns, TriageConfig};
pub use status::{parse_status_json, Reported, StatusFile};

use crate::logview::Stream;
use crate::slurm::model::{JobDetail, JobState};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// COMPLETED, and status.json (if any) agrees.
    Complete,
    /// COMPLETED, but status.json reports a failure (or never reached a final status).
    Error,
    Infra,
    Oom,
    Timeout,
    Program,
    Cancelled,
}

impl Class {
    pub fn code(self) -> &'static str {
        match self {
            Class::Complete => "COMPLETE",
            Class::Error => "ERROR",
            Class::Infra => "ERR_INFRA",
            Class::Oom => "ERR_OOM",
            Class::Timeout => "ERR_TIMEOUT",
            Class::Program => "ERR_PROGRAM",
            Class::Cancelled => "ERR_CANCELLED",
        }
    }

    /// Only infrastructure failures are worth re-submitting unchanged.
    pub fn is_retriable(self) -> bool {
        self == Class::Infra
    }

    pub fn is_success(self) -> bool {
        self == Class::Complete
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// What decided the class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// The final state Slurm recorded (with `CANCELLED by UID` when known).
    State {
        state: JobState,
        cancelled_by: Option<u32>,
    },
    /// Slurm's reason for the end (`Reason=Prolog`, `NodeDown`, ...).
    Reason(String),
    /// A non-zero exit code `code:signal` and no log line that says more.
    ExitCode { code: i32, signal: i32 },
    /// A log line matched a pattern.
    LogLine {
        stream: Stream,
        pattern: String,
        line: String,
    },
    /// status.json's last record.
    StatusJson {
        status: String,
        message: Option<String>,
    },
    /// status.json exists but could not be read; the state stands.
    StatusUnreadable { reason: String },
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evidence::State {
                state,
                cancelled_by: Some(uid),
            } => write!(f, "state {} by uid {uid}", state.long_name()),
            Evidence::State { state, .. } => write!(f, "state {}", state.long_name()),
            Evidence::Reason(r) => write!(f, "reason {r}"),
            Evidence::ExitCode { code, signal: 0 } => write!(f, "exit code {code}"),
            Evidence::ExitCode { code, signal } => {
                write!(f, "exit code {code}, signal {signal}")
            }
            Evidence::LogLine { stream, line, .. } => write!(f, "{stream}: {line}"),
            Evidence::StatusJson {
                status,
                message: Some(m),
            } => write!(f, "status.json: {status} ({m})"),
            Evidence::StatusJson { status, .. } => write!(f, "status.json: {status}"),
            Evidence::StatusUnreadable { reason } => write!(f, "{reason}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triage {
    pub class: Class,
    pub evidence: Evidence,
    pub suggestion: String,
}

/// Everything the classifier looks at. Logs are tails (the end is what matters); an empty
/// string stands for a log that could not be read.
#[derive(Debug, Clone, Copy)]
pub struct TriageInput<'a> {
    pub state: &'a JobState,
    /// (exit code, signal) as Slurm reports `ExitCode=`.
    pub exit_code: Option<(i32, i32)>,
    pub cancelled_by: Option<u32>,
    /// Slurm's `Reason=` for the job, if any.
    pub reason: Option<&'a str>,
    pub stdout: &'a str,
    pub stderr: &'a str,
    /// The text of status.json, when the job has one.
    pub status_json: Option<&'a str>,
}

impl<'a> TriageInput<'a> {
    /// The state and exit code from a job's detail (scontrol or sacct); `None` without a
    /// state.
    pub fn from_detail(
        d: &'a JobDetail,
        stdout: &'a str,
        stderr: &'a str,
        status_json: Option<&'a str>,
    ) -> Option<TriageInput<'a>> {
        Some(TriageInput {
            state: d.state.as_ref()?,
            exit_code: d.exit_code,
            cancelled_by: d.cancelled_by,
            reason: d.reason.as_deref(),
            stdout,
            stderr,
            status_json,
        })
    }
}

/// Classifies a finished job; `None` while it can still change state on its own.
pub fn classify(input: &TriageInput<'_>, patterns: &Patterns) -> Option<Triage> {
    use JobState::*;
    let state = input.state;
    let by_state = |class: Class, suggestion: String| Triage {
        class,
        evidence: Evidence::State {
            state: state.clone(),
            cancelled_by: input.cancelled_by,
        },
        suggestion,
    };
    let t = match state {
        Completed => return Some(completed(input)),
        NodeFail => by_state(
            Class::Infra,
            "A node failed under the job: resubmit; if it repeats, exclude the node (--exclude=NODE) and tell the admins".into(),
        ),
        BootFail => by_state(
            Class::Infra,
            "The node could not boot for the job: resubmit; tell the admins if it repeats".into(),
        ),
        Preempted => by_state(
            Class::Infra,
            "Preempted by the scheduler for a higher-priority job: resubmit (or use a partition/QOS that is not preemptible)".into(),
        ),
        OutOfMemory => by_state(Class::Oom, OOM_HINT.into()),
        Timeout | Deadline => by_state(
            Class::Timeout,
            "Hit its time limit: ask for more with --time (within the partition's limit) or checkpoint and resume".into(),
        ),
        Cancelled | Revoked => by_state(
            Class::Cancelled,
            "Cancelled by a user or an admin: resubmit if that was not intended".into(),
        ),
        Failed => failed(input, patterns),
        _ => return None,
    };
    Some(t)
}

const OOM_HINT: &str =
    "Ran out of memory: ask for more (--mem, --mem-per-cpu) or use less (smaller batches)";
const INFRA_HINT: &str = "Infrastructure failure, not your code: resubmit; if it repeats on the same node, exclude it (--exclude=NODE) and tell the admins";

fn log_match(list: &PatternList, input: &TriageInput<'_>) -> Option<(Stream, LineMatch)> {
    // stderr first: that is where Slurm, NCCL and Python tracebacks write.
    list.last_match(input.stderr)
        .map(|m| (Stream::Stderr, m))
        .or_else(|| list.last_match(input.stdout).map(|m| (Stream::Stdout, m)))
}

/// `Reason=` values with which Slurm says the system, not the program, ended a FAILED job.
const INFRA_REASONS: &[&str] = &["NodeDown", "Prolog", "SystemFailure", "JobLaunchFailure"];

fn failed(input: &TriageInput<'_>, patterns: &Patterns) -> Triage {
    if let Some(r) = input
        .reason
        .map(str::trim)
        .filter(|r| INFRA_REASONS.contains(r))
    {
        return Triage {
            class: Class::Infra,
            evidence: Evidence::Reason(r.to_string()),
            suggestion: INFRA_HINT.to_string(),
        };
    }
    // OOM before infra: a rank killed for memory makes its peers print NCCL network errors.
    let lists = [
        (&patterns.oom, Class::Oom, OOM_HINT),
        (&patterns.infra, Class::Infra, INFRA_HINT),
    ];
    for (list, class, hint) in lists {
        if let Some((stream, m)) = log_match(list, input) {
            return Triage {
                class,
                suggestion: m.hint.clone().unwrap_or_else(|| hint.to_string()),
                evidence: Evidence::LogLine {
                    stream,
                    pattern: m.pattern,
                    line: m.line,
                },
            };
        }
    }
    let (code, signal) = input.exit_code.unwrap_or((0, 0));
    let suggestion = if signal != 0 && code == 0 {
        format!("The program was killed by signal {signal}: read the end of its log; resubmitting unchanged will not help")
    } else {
        format!("The program exited with code {code}: read the end of its stderr; resubmitting unchanged will not help")
    };
    Triage {
        class: Class::Program,
        evidence: match input.exit_code {
            Some((code, signal)) => Evidence::ExitCode { code, signal },
            None => Evidence::State {
                state: input.state.clone(),
                cancelled_by: None,
            },
        },
        suggestion,
    }
}

fn completed(input: &TriageInput<'_>) -> Triage {
    let done = |evidence| Triage {
        class: Class::Complete,
        evidence,
        suggestion: "Finished successfully".into(),
    };
    let Some(text) = input.status_json else {
        return done(Evidence::State {
            state: JobState::Completed,
            cancelled_by: None,
        });
    };
    match parse_status_json(text) {
        Err(reason) => done(Evidence::StatusUnreadable { reason }),
        Ok(s) => {
            let evidence = Evidence::StatusJson {
                status: s.status.clone(),
                message: s.message.clone(),
            };
            match s.reported {
                Reported::Success => done(evidence),
                Reported::Failure => Triage {
                    class: Class::Error,
                    evidence,
                    suggestion: "Slurm saw exit 0 but the program reports a failure in status.json: read its message and log".into(),
                },
                Reported::NotFinal => Triage {
                    class: Class::Error,
                    evidence,
                    suggestion: "The program exited without writing a final status to status.json: check the end of its log".into(),
                },
            }
        }
    }
}

#[cfg(test)]
mod status_props;
#[cfg(test)]
mod tests;
