//! A search across logs as the dashboard asks for it and as the worker answers: which jobs,
//! which pattern, the files their logs are and what grep found in them.

use chrono::NaiveDateTime;

use super::grep::{GrepOutput, Limits, Skipped, Syntax};
use super::Stream;
use crate::slurm::model::JobId;

/// What to search and for what.
#[derive(Debug, Clone, PartialEq)]
pub struct GrepRequest {
    pub pattern: String,
    pub syntax: Syntax,
    /// The first-error preset (`:errors`): results sorted by when each job ended.
    pub first_error: bool,
    /// The jobs: job or task ids, or an array's job id for all of its tasks.
    pub ids: Vec<JobId>,
    /// Ids in `ids` that stand for a whole array.
    pub arrays: Vec<u64>,
    /// What was searched, in words (`sweep 123`, `3 marked jobs`).
    pub what: String,
    pub limits: Limits,
    /// The jobs slurmdash launched among them, by job id: where their logs are in the job
    /// directory layout, `(job_dir, name)` (read where sacct keeps no log paths).
    pub launches: Vec<(u64, String, String)>,
}

/// One log file searched (or not).
#[derive(Debug, Clone, PartialEq)]
pub struct GrepFile {
    pub job: JobId,
    pub stream: Stream,
    pub path: String,
    /// When the job ended (scontrol or sacct), for the first-error order.
    pub end: Option<NaiveDateTime>,
    pub skipped: Option<Skipped>,
}

/// The worker's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct GrepReport {
    pub req: GrepRequest,
    /// The files searched, indexed by the hits.
    pub files: Vec<GrepFile>,
    pub found: GrepOutput,
    /// Tasks that have not started (no log yet).
    pub not_started: usize,
    /// Some paths are Slurm's default names, guessed: sacct here does not keep them.
    pub guessed: bool,
    /// What grep said on stderr when it failed (a bad regular expression).
    pub complaint: Option<String>,
    /// The search could not run.
    pub error: Option<String>,
}

impl GrepReport {
    /// A search that could not run.
    pub fn failed(req: GrepRequest, error: String) -> GrepReport {
        GrepReport {
            req,
            files: Vec::new(),
            found: GrepOutput::default(),
            not_started: 0,
            guessed: false,
            complaint: None,
            error: Some(error),
        }
    }

    /// Jobs whose logs were looked at.
    pub fn jobs(&self) -> usize {
        let mut ids: Vec<&JobId> = self.files.iter().map(|f| &f.job).collect();
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        ids.dedup();
        ids.len()
    }

    /// Each job's stdout and stderr paths (one file: the same path twice).
    pub fn log_paths(&self) -> std::collections::HashMap<JobId, (String, String)> {
        let mut out: std::collections::HashMap<JobId, (String, String)> = Default::default();
        for f in &self.files {
            let e = out
                .entry(f.job.clone())
                .or_insert_with(|| (f.path.clone(), f.path.clone()));
            match f.stream {
                Stream::Stdout => e.0 = f.path.clone(),
                Stream::Stderr => e.1 = f.path.clone(),
            }
        }
        out
    }

    /// Files not there yet.
    pub fn missing(&self) -> usize {
        self.files
            .iter()
            .filter(|f| f.skipped == Some(Skipped::Missing))
            .count()
    }
}
