//! Job states as Slurm prints them (long names and short codes) and the
//! coarse status the dashboard shows.

use std::fmt;

macro_rules! job_states {
    ($($variant:ident => $long:literal, $short:literal;)*) => {
        /// Every job state Slurm 22.05 prints. `Unknown` keeps anything newer
        /// so that a state added in a later release never fails a parse.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum JobState {
            $($variant,)*
            Unknown(Box<str>),
        }

        impl JobState {
            pub const ALL: &'static [JobState] = &[$(JobState::$variant,)*];

            pub fn long_name(&self) -> &str {
                match self {
                    $(JobState::$variant => $long,)*
                    JobState::Unknown(s) => s,
                }
            }

            pub fn short_code(&self) -> &str {
                match self {
                    $(JobState::$variant => $short,)*
                    JobState::Unknown(s) => s,
                }
            }

            fn from_word(word: &str) -> Option<JobState> {
                match word {
                    $($long | $short => Some(JobState::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

job_states! {
    Pending => "PENDING", "PD";
    Running => "RUNNING", "R";
    Suspended => "SUSPENDED", "S";
    Completing => "COMPLETING", "CG";
    Completed => "COMPLETED", "CD";
    Configuring => "CONFIGURING", "CF";
    Cancelled => "CANCELLED", "CA";
    Failed => "FAILED", "F";
    Timeout => "TIMEOUT", "TO";
    Preempted => "PREEMPTED", "PR";
    NodeFail => "NODE_FAIL", "NF";
    BootFail => "BOOT_FAIL", "BF";
    Deadline => "DEADLINE", "DL";
    OutOfMemory => "OUT_OF_MEMORY", "OOM";
    Requeued => "REQUEUED", "RQ";
    RequeueHold => "REQUEUE_HOLD", "RH";
    RequeueFed => "REQUEUE_FED", "RF";
    Resizing => "RESIZING", "RS";
    Revoked => "REVOKED", "RV";
    Signaling => "SIGNALING", "SI";
    SpecialExit => "SPECIAL_EXIT", "SE";
    StageOut => "STAGE_OUT", "SO";
    Stopped => "STOPPED", "ST";
    ResvDelHold => "RESV_DEL_HOLD", "RD";
    // 25.11+: a job requeued with `--requeue=expedite` after a node failure, scheduled
    // ahead of others. Slurm prints it only as a flag (`PENDING,EXPEDITING`) and has no
    // short code for it: EX is slurmdash's own, for its narrow columns.
    Expediting => "EXPEDITING", "EX";
}

/// A state field as printed, with the decorations some commands add:
/// sacct's `CANCELLED by 1001` and the `+` that marks a truncated column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateField {
    pub state: JobState,
    /// uid after `CANCELLED by` (sacct).
    pub cancelled_by: Option<u32>,
    /// A trailing `+` was present (sacct truncation, or flags on some outputs).
    pub plus: bool,
}

impl JobState {
    /// Never fails: accepts long names, short codes, `CANCELLED by N`,
    /// a trailing `+`, surrounding space; anything else is `Unknown`.
    pub fn parse(s: &str) -> JobState {
        // Fast path: a bare word (what squeue prints) needs no decoration
        // handling; no state word contains " by " or ends with '+'.
        match JobState::from_word(super::trim(s)) {
            Some(st) => st,
            None => StateField::parse(s).state,
        }
    }

    pub fn status(&self) -> Status {
        use JobState::*;
        match self {
            Pending | Configuring | Requeued | RequeueHold | RequeueFed | SpecialExit
            | ResvDelHold | Expediting => Status::Pending,
            Running | Completing | Resizing | Signaling | StageOut => Status::Running,
            Completed => Status::Complete,
            Failed | BootFail | Deadline | OutOfMemory | NodeFail | Timeout => Status::Error,
            Cancelled | Preempted | Revoked => Status::Canceled,
            Suspended | Stopped => Status::Paused,
            Unknown(_) => Status::Unknown,
        }
    }

    /// The job will not change state again on its own.
    pub fn is_finished(&self) -> bool {
        matches!(
            self.status(),
            Status::Complete | Status::Error | Status::Canceled
        )
    }
}

impl StateField {
    pub fn parse(s: &str) -> StateField {
        let mut t = s.trim();
        // The complete form (REST, newer sacct) adds flags after commas: `PENDING,EXPEDITING`,
        // `RUNNING,COMPLETING`. The base state comes first and decides; a flag alone that
        // is a state of its own (EXPEDITING) is read as that state.
        if let Some((base, _flags)) = t.split_once(',') {
            t = base.trim();
        }
        let mut cancelled_by = None;
        if let Some((head, by)) = t.split_once(" by ") {
            cancelled_by = by.trim().parse().ok();
            t = head.trim();
        }
        let plus = t.ends_with('+');
        let word = t.trim_end_matches('+');
        let state = JobState::from_word(word).unwrap_or_else(|| JobState::Unknown(word.into()));
        StateField {
            state,
            cancelled_by,
            plus,
        }
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.long_name())
    }
}

/// What the user sees.
///
/// Choices beyond the issue's table: CONFIGURING (nodes booting), REQUEUED,
/// REQUEUE_HOLD, REQUEUE_FED, SPECIAL_EXIT and RESV_DEL_HOLD are `Pending`
/// because the job's code is not running and the job may still run;
/// RESIZING, SIGNALING and STAGE_OUT are `Running` because the allocation
/// is live. A state this build does not know is `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Pending,
    Running,
    Complete,
    Error,
    Canceled,
    Paused,
    Unknown,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn long_and_short_names_round_trip() {
        assert_eq!(JobState::ALL.len(), 25);
        for st in JobState::ALL {
            assert_eq!(&JobState::parse(st.long_name()), st);
            assert_eq!(&JobState::parse(st.short_code()), st);
        }
        assert_eq!(JobState::OutOfMemory.short_code(), "OOM");
        assert_eq!(JobState::parse("PD"), JobState::Pending);
    }

    #[test]
    fn every_state_the_26_05_man_page_lists_is_known() {
        let page = include_str!("../../tests/fixtures/slurm/26.05/squeue_state_codes.txt");
        let mut n = 0;
        for line in page.lines().filter(|l| !l.starts_with('#')) {
            let (code, name) = line.split_once(' ').unwrap();
            let st = JobState::parse(name);
            assert!(!matches!(st, JobState::Unknown(_)), "{name}");
            assert_eq!(st.long_name(), name);
            assert_eq!(st.short_code(), code, "{name}");
            assert_eq!(JobState::parse(code), st);
            n += 1;
        }
        assert_eq!(n, 24, "the page lists 24 states");
    }

    #[test]
    fn decorations() {
        let f = StateField::parse("CANCELLED by 1001");
        assert_eq!(f.state, JobState::Cancelled);
        assert_eq!(f.cancelled_by, Some(1001));
        // The complete form with flags: the base state decides.
        assert_eq!(JobState::parse("PENDING,EXPEDITING"), JobState::Pending);
        assert_eq!(JobState::parse("EXPEDITING").status(), Status::Pending);
        assert_eq!(JobState::parse("RUNNING,COMPLETING"), JobState::Running);
        let f = StateField::parse("CANCELLED+");
        assert!(f.plus);
        assert_eq!(f.state, JobState::Cancelled);
        assert_eq!(
            JobState::parse("WIBBLE"),
            JobState::Unknown("WIBBLE".into())
        );
    }

    #[test]
    fn status_mapping_follows_the_issue() {
        use JobState::*;
        let cases = [
            (Pending, Status::Pending),
            (Running, Status::Running),
            (Completing, Status::Running),
            (Completed, Status::Complete),
            (Failed, Status::Error),
            (BootFail, Status::Error),
            (Deadline, Status::Error),
            (OutOfMemory, Status::Error),
            (NodeFail, Status::Error),
            (Timeout, Status::Error),
            (Cancelled, Status::Canceled),
            (Preempted, Status::Canceled),
            (Revoked, Status::Canceled),
            (Suspended, Status::Paused),
            (Stopped, Status::Paused),
            (Configuring, Status::Pending),
            (RequeueHold, Status::Pending),
            (Requeued, Status::Pending),
            (Signaling, Status::Running),
            (StageOut, Status::Running),
            (Expediting, Status::Pending),
            (Unknown("X".into()), Status::Unknown),
        ];
        for (st, status) in cases {
            assert_eq!(st.status(), status, "{st}");
        }
        assert!(Timeout.is_finished());
        assert!(!Completing.is_finished());
    }
}
