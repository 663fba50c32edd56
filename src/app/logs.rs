//! The selected job's two log panes (stdout and stderr) and which files they tail.

use crate::logview::{LogPane, Stream, TailEvent};
use crate::payload::DetailSource;
use crate::slurm::logpath::log_paths;
use crate::slurm::model::{JobDetail, JobId, JobState};

pub struct LogState {
    pub stdout: LogPane,
    pub stderr: LogPane,
    pub shown: Stream,
    pub job: Option<JobId>,
    /// Paths being tailed, to restart a tail only when its target changes.
    pub paths: Option<(String, String)>,
    /// Set when the paths are Slurm's default names guessed after the job left slurmctld.
    pub guessed: bool,
    /// Log paths the last `:grep` found (stdout, stderr), used for a job whose detail
    /// came from sacct without them (Slurm before 23.02, and the dashboard's sacct read).
    pub found: std::collections::HashMap<JobId, (String, String)>,
}

impl Default for LogState {
    fn default() -> Self {
        Self::new()
    }
}

impl LogState {
    /// stdout and stderr go to one file (Slurm's default without `--error`): one pane.
    pub fn one_file(&self) -> bool {
        self.paths.as_ref().is_some_and(|(o, e)| o == e)
    }

    pub fn new() -> LogState {
        LogState {
            stdout: LogPane::new(Stream::Stdout),
            stderr: LogPane::new(Stream::Stderr),
            shown: Stream::Stdout,
            job: None,
            paths: None,
            guessed: false,
            found: Default::default(),
        }
    }

    pub fn reset(&mut self, job: Option<JobId>, state: Option<JobState>) {
        *self = LogState {
            shown: self.shown,
            found: std::mem::take(&mut self.found),
            ..LogState::new()
        };
        self.job = job;
        self.set_job_state(state);
    }

    pub fn set_job_state(&mut self, state: Option<JobState>) {
        let pending = state.as_ref() == Some(&JobState::Pending);
        self.stdout.set_job_pending(pending);
        self.stderr.set_job_pending(pending);
    }

    pub fn show(&mut self, s: Stream) {
        self.shown = s;
    }

    /// The stream drawn first: stdout when both streams go to one file (only it is tailed).
    pub fn shown_stream(&self) -> Stream {
        if self.one_file() {
            Stream::Stdout
        } else {
            self.shown
        }
    }

    pub fn current(&self) -> &LogPane {
        match self.shown_stream() {
            Stream::Stdout => &self.stdout,
            Stream::Stderr => &self.stderr,
        }
    }

    pub fn current_mut(&mut self) -> &mut LogPane {
        match self.shown_stream() {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        }
    }

    /// Events for a job that is no longer selected are dropped.
    pub fn apply(&mut self, ev: TailEvent) {
        if self.job.as_ref() != Some(&ev.job) {
            return;
        }
        match ev.stream {
            Stream::Stdout => self.stdout.apply(ev),
            Stream::Stderr => self.stderr.apply(ev),
        }
    }

    /// The files to tail for `detail`, or None when they are already being tailed. One file
    /// for both streams is tailed once, for the stdout pane.
    pub fn targets(
        &mut self,
        id: &JobId,
        detail: &JobDetail,
        source: DetailSource,
    ) -> Option<Vec<(JobId, Stream, String)>> {
        let (mut out, mut err, mut guessed) = log_paths(detail, source == DetailSource::Sacct)?;
        if let Some((o, e)) = self.found.get(id).filter(|_| guessed) {
            (out, err, guessed) = (o.clone(), e.clone(), false);
        }
        self.set_job_state(detail.state.clone());
        if self.paths.as_ref() == Some(&(out.clone(), err.clone())) {
            return None;
        }
        self.paths = Some((out.clone(), err.clone()));
        self.guessed = guessed;
        self.stdout.set_path(&out);
        self.stderr.set_path(&err);
        if out == err {
            return Some(vec![(id.clone(), Stream::Stdout, out)]);
        }
        Some(vec![
            (id.clone(), Stream::Stdout, out),
            (id.clone(), Stream::Stderr, err),
        ])
    }
}
