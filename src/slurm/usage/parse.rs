//! The sacct read of [`super::ACCT_FIELDS`]: one line per job (`--allocations`), fields
//! between `␟`, no free text, so a line with the wrong field count is an error naming it.

use chrono::NaiveDateTime;

use super::ACCT_FIELDS;
use crate::slurm::command::FIELD_SEP;
use crate::slurm::error::ParseError;
use crate::slurm::model::{gpus_in_tres, JobState};
use crate::slurm::parse::{lines, non_empty, Row};

const CMD: &str = "sacct";

/// One job as the budget and the waits read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcctJob {
    pub id: String,
    pub account: String,
    pub partition: String,
    pub state: JobState,
    pub submit: Option<NaiveDateTime>,
    pub eligible: Option<NaiveDateTime>,
    pub start: Option<NaiveDateTime>,
    /// Seconds it ran (inside the window, under `--truncate`).
    pub elapsed_s: u64,
    pub cpus: u32,
    /// From AllocTRES, else (a job that never ran) ReqTRES.
    pub gpus: u32,
    /// Resources were allocated (AllocTRES is set). sacct gives a job cancelled while
    /// pending a start time (its end), so a start alone does not say it ran.
    pub allocated: bool,
}

impl AcctJob {
    /// Ended: neither pending nor running (those are counted from squeue).
    pub fn ended(&self) -> bool {
        self.state.is_finished()
    }

    /// Seconds between becoming eligible (else submitted) and starting; None for a job that
    /// never started.
    pub fn waited_s(&self) -> Option<u64> {
        let start = self.start.filter(|_| self.allocated)?;
        let from = self.eligible.or(self.submit)?;
        u64::try_from((start - from).num_seconds()).ok()
    }
}

/// Reads the output of [`super::sacct_used`] or [`super::sacct_waits`].
pub fn parse_acct_jobs(out: &str) -> Result<Vec<AcctJob>, ParseError> {
    let mut v = Vec::new();
    for rec in lines(out) {
        let r = Row::split(CMD, &rec, FIELD_SEP, ACCT_FIELDS.len(), false)?;
        let tres = |i: usize| non_empty(r.str(i)).map(|t| gpus_in_tres(&t));
        v.push(AcctJob {
            id: r.str(0).trim().to_string(),
            account: r.str(1).trim().to_string(),
            partition: r.str(2).trim().to_string(),
            state: JobState::parse(r.str(3)),
            submit: r.time(4, "Submit")?,
            eligible: r.time(5, "Eligible")?,
            start: r.time(6, "Start")?,
            elapsed_s: r.opt_num(7, "ElapsedRaw")?.unwrap_or(0),
            cpus: r.opt_num(8, "NCPUS")?.unwrap_or(0),
            gpus: tres(9).or_else(|| tres(10)).unwrap_or(0),
            allocated: non_empty(r.str(9)).is_some(),
        });
        if v.last().is_some_and(|j| j.id.is_empty()) {
            return Err(r.err("no job id (JobIDRaw)"));
        }
    }
    Ok(v)
}
