//! `:grep PATTERN` and `:errors` (`!`): one search across the logs of an array, a sweep or
//! the marked jobs, listed by job and line; enter opens that job's log at that line.
//!
//! What is searched: the marked rows if any; else the selected row's whole array (a folded
//! sweep or array row, or a task of an array); else the selected job. `:grep TEXT` looks for
//! a fixed string, `:grep /REGEX/` for a POSIX extended regular expression. `:errors` looks
//! for where things broke (tracebacks, `error:` lines, Slurm's cancellations, and the triage
//! patterns, built-in and `[triage]`'s) and lists the jobs in the order they ended, so the
//! first to break is on top.

use std::collections::HashMap;

use crossterm::event::{KeyCode, KeyEvent};

use super::component::{Out, View};
use crate::action::Cmd;
use crate::keymap::{Action, Pane};
use crate::logview::found::{GrepReport, GrepRequest};
use crate::logview::grep::{Limits, Syntax};
use crate::logview::Stream;
use crate::queue::RowKind;
use crate::slurm::model::JobId;

/// Generic signs of a failure, as POSIX EREs matched ignoring case (`grep -E -i`): a
/// Python traceback and its exception line, `error:`/`fatal:` lines (slurmstepd's, srun's,
/// most tools'), crashes, Rust panics and Slurm's own cancellations.
pub const ERROR_ERES: &[&str] = &[
    r"Traceback \(most recent call last\)",
    r"^[[:alnum:]_.]*(Error|Exception):",
    r"(^|[^[:alnum:]_])(error|fatal):",
    r"Segmentation fault|core dumped|Bus error",
    r"thread '.*' panicked at",
    r"CANCELLED AT .* DUE TO",
];

/// The first-error preset as one ERE: [`ERROR_ERES`] and every triage pattern that has a
/// POSIX form (a pattern that has none is left out, as the retry guard does).
pub fn first_error_pattern(patterns: &crate::triage::Patterns) -> String {
    let mut parts: Vec<String> = ERROR_ERES.iter().map(|s| (*s).to_string()).collect();
    for p in patterns.oom.texts().iter().chain(patterns.infra.texts()) {
        if let Ok(e) = crate::launch::guard::to_ere(p) {
            parts.push(e);
        }
    }
    parts
        .iter()
        .map(|p| format!("({p})"))
        .collect::<Vec<_>>()
        .join("|")
}

/// One row of the results: a job's header, or one of its matching lines.
#[derive(Debug, Clone, PartialEq)]
pub enum Row {
    Job {
        job: JobId,
        /// The sweep's values of this task, when it is one.
        sweep: Option<String>,
        end: Option<chrono::NaiveDateTime>,
        hits: usize,
    },
    Hit {
        job: JobId,
        stream: Stream,
        line: u64,
        text: String,
    },
}

/// Where enter goes: a job's log, at a line.
pub use super::out::Jump;

/// The search pane's state.
#[derive(Debug, Clone)]
pub struct GrepState {
    pub open: bool,
    /// A search was sent and has not answered: what it searches.
    pub waiting: Option<String>,
    /// What the search looks for, in words (the pane's title).
    pub looking_for: String,
    pub report: Option<GrepReport>,
    pub rows: Vec<Row>,
    /// The selected row (always a `Row::Hit` when there is one).
    pub selected: usize,
    /// The first-error preset's ERE.
    pub preset: String,
    /// Set by enter; App takes it once it has selected the job.
    pub jump: Option<Jump>,
}

impl Default for GrepState {
    fn default() -> GrepState {
        GrepState {
            open: false,
            waiting: None,
            looking_for: String::new(),
            report: None,
            rows: Vec::new(),
            selected: 0,
            preset: first_error_pattern(&crate::triage::Patterns::builtin()),
            jump: None,
        }
    }
}

/// What a search covers: the marks, the selected row's array, or the selected job.
pub fn scope(v: &View) -> Result<(Vec<JobId>, Vec<u64>, String), String> {
    let q = v.queue;
    let mut marked = q.marked_ids();
    // One search runs on one cluster: the first mark's.
    let elsewhere = match marked.first().map(JobId::cluster) {
        Some(c) => {
            let before = marked.len();
            marked.retain(|id| id.cluster() == c);
            before - marked.len()
        }
        None => 0,
    };
    if !marked.is_empty() {
        let mut ids = Vec::new();
        let mut arrays = Vec::new();
        for id in &marked {
            if id.array_pending().is_some() {
                arrays.push(id.base());
                ids.push(JobId::new(id.base()).on(id.cluster()));
            } else {
                ids.push(id.clone());
            }
        }
        let n = marked.len();
        let mut what = if n == 1 {
            "1 marked job".to_string()
        } else {
            format!("{n} marked jobs")
        };
        if elsewhere > 0 {
            what.push_str(&format!(" ({elsewhere} marked on other clusters left out)"));
        }
        return Ok((ids, arrays, what));
    }
    let Some(row) = q.selected_row() else {
        return Err(
            "no job selected: select a job, an array or a sweep, or mark jobs (space)".into(),
        );
    };
    let id = &row.job.id;
    let base = JobId::new(id.base()).on(id.cluster());
    match row.kind {
        RowKind::Sweep { .. } => Ok((vec![base], vec![id.base()], format!("sweep {}", id.base()))),
        _ if row.array_id().is_some() => {
            Ok((vec![base], vec![id.base()], format!("array {}", id.base())))
        }
        _ => Ok((vec![id.clone()], Vec::new(), format!("job {id}"))),
    }
}

/// The launches among `ids` (by their job id, a task by its array's): where their logs are
/// in the job directory layout.
fn launches(v: &View, ids: &[JobId]) -> Vec<(u64, String, String)> {
    let mut out: Vec<(u64, String, String)> = Vec::new();
    for id in ids {
        let base = JobId::new(id.base()).on(id.cluster());
        if let Some(c) = v.launch_of(&base) {
            if !out.iter().any(|(b, _, _)| *b == id.base()) {
                out.push((id.base(), c.job_dir.clone(), c.name.clone()));
            }
        }
    }
    out
}

/// `:grep TEXT`, `:grep /REGEX/`: the pattern and how it is matched.
pub fn read_pattern(arg: &str) -> Result<(String, Syntax), String> {
    let arg = arg.trim();
    if arg.is_empty() {
        return Err(
            "usage: :grep TEXT (a fixed string) or :grep /REGEX/ (an extended regular expression); :errors finds the first error"
                .into(),
        );
    }
    if arg.len() >= 2 && arg.starts_with('/') && arg.ends_with('/') {
        let re = &arg[1..arg.len() - 1];
        if re.is_empty() {
            return Err("an empty regular expression would match every line".into());
        }
        return Ok((re.to_string(), Syntax::Regex));
    }
    Ok((arg.to_string(), Syntax::Fixed))
}

impl GrepState {
    /// Starts a search for `pattern` over what [`scope`] finds.
    pub fn start(&mut self, v: &View, pattern: String, syntax: Syntax, first_error: bool) -> Out {
        let (ids, arrays, what) = match scope(v) {
            Ok(s) => s,
            Err(e) => return Out::note(e),
        };
        let launches = launches(v, &ids);
        let req = GrepRequest {
            launches,
            pattern,
            syntax,
            first_error,
            ids,
            arrays,
            what: what.clone(),
            limits: Limits::default(),
        };
        self.looking_for = if first_error {
            "first error".into()
        } else if syntax == Syntax::Fixed {
            format!("\"{}\"", req.pattern)
        } else {
            format!("/{}/", req.pattern)
        };
        self.open = true;
        self.waiting = Some(what.clone());
        self.report = None;
        self.rows.clear();
        self.selected = 0;
        let verb = if first_error {
            "looking for the first error in"
        } else {
            "searching"
        };
        Out::note(format!("{verb} the logs of {what}…")).with_cmd(Cmd::Grep(Box::new(req)))
    }

    /// `:errors`, `!`.
    pub fn start_errors(&mut self, v: &View) -> Out {
        let p = self.preset.clone();
        self.start(v, p, Syntax::RegexNoCase, true)
    }

    /// The worker's answer; `sweep`: a task's sweep values, when it is one.
    pub fn land(&mut self, report: GrepReport, sweep: &dyn Fn(&JobId) -> Option<String>) -> Out {
        if self.waiting.is_none() {
            // Not asked for (any more): a search already landed.
            return Out::none();
        }
        self.waiting = None;
        self.rows = rows(&report, sweep);
        self.selected = self
            .rows
            .iter()
            .position(|r| matches!(r, Row::Hit { .. }))
            .unwrap_or(0);
        let note = match &report.error {
            Some(e) => format!("search failed: {e}"),
            None => {
                let hits = report.found.hits.len();
                let jobs = self
                    .rows
                    .iter()
                    .filter(|r| matches!(r, Row::Job { .. }))
                    .count();
                format!(
                    "{hits} matching line{} in {jobs} job{}",
                    if hits == 1 { "" } else { "s" },
                    if jobs == 1 { "" } else { "s" }
                )
            }
        };
        self.report = Some(report);
        Out::note(note)
    }

    /// The hit rows, in order.
    fn hit_rows(&self) -> impl Iterator<Item = usize> + '_ {
        self.rows
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r, Row::Hit { .. }))
            .map(|(i, _)| i)
    }

    fn step(&mut self, by: isize) {
        let hits: Vec<usize> = self.hit_rows().collect();
        let Some(at) = hits.iter().position(|&i| i == self.selected) else {
            return;
        };
        let to = (at as isize + by).clamp(0, hits.len() as isize - 1) as usize;
        self.selected = hits[to];
    }

    /// A key while the pane is open; `page`: rows on a page.
    pub fn on_key(&mut self, k: &KeyEvent, page: usize) -> Out {
        let page = page.max(1) as isize;
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') => return Out::close(),
            KeyCode::Down | KeyCode::Char('j') => self.step(1),
            KeyCode::Up | KeyCode::Char('k') => self.step(-1),
            KeyCode::PageDown => self.step(page),
            KeyCode::PageUp => self.step(-page),
            KeyCode::Char('g') | KeyCode::Home => self.step(isize::MIN / 2),
            KeyCode::Char('G') | KeyCode::End => self.step(isize::MAX / 2),
            KeyCode::Enter => return self.open_selected(),
            _ => {}
        }
        Out::none()
    }

    /// Enter: the selected line's job selected, its log shown at that line.
    fn open_selected(&mut self) -> Out {
        let Some(Row::Hit {
            job,
            stream,
            line,
            text,
        }) = self.rows.get(self.selected)
        else {
            return Out::note("no matching line selected");
        };
        self.jump = Some(Jump {
            job: job.clone(),
            stream: *stream,
            line: *line,
            text: text.clone(),
        });
        let show = match stream {
            Stream::Stdout => Action::ShowStdout,
            Stream::Stderr => Action::ShowStderr,
        };
        Out {
            select: Some(job.clone()),
            close: true,
            then: Some(show),
            focus: Some(Pane::Log),
            note: Some(format!("{job}: {stream} at line {line}")),
            ..Out::default()
        }
    }
}

impl super::component::Overlaid for GrepState {
    fn is_open(&self) -> bool {
        self.open
    }

    fn close(&mut self) {
        self.open = false;
    }
}

/// Enter selects the line's job; App then shows its log at that line (`Out::jump`).
impl super::component::OverlayKeys for GrepState {
    fn overlay_key(&mut self, k: &KeyEvent, cx: &super::component::Keys) -> Out {
        let mut out = self.on_key(k, cx.page(6));
        out.jump = self.jump.take();
        out
    }
}

/// The report as rows: jobs with matches, each followed by its lines. The first-error
/// preset orders the jobs by when they ended (earliest first; those still running last),
/// a plain search by the order the logs were found in.
pub fn rows(report: &GrepReport, sweep: &dyn Fn(&JobId) -> Option<String>) -> Vec<Row> {
    let mut by_job: Vec<(JobId, Vec<usize>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (i, h) in report.found.hits.iter().enumerate() {
        let Some(f) = report.files.get(h.file) else {
            continue;
        };
        let k = f.job.as_str().to_string();
        let slot = *at.entry(k).or_insert_with(|| {
            by_job.push((f.job.clone(), Vec::new()));
            by_job.len() - 1
        });
        by_job[slot].1.push(i);
    }
    let end_of = |job: &JobId| {
        report
            .files
            .iter()
            .find(|f| &f.job == job)
            .and_then(|f| f.end)
    };
    if report.req.first_error {
        by_job.sort_by_key(|(job, _)| {
            let end = end_of(job);
            (end.is_none(), end)
        });
    }
    let mut out = Vec::new();
    for (job, hits) in by_job {
        out.push(Row::Job {
            sweep: sweep(&job),
            end: end_of(&job),
            hits: hits.len(),
            job: job.clone(),
        });
        for i in hits {
            let h = &report.found.hits[i];
            let stream = report
                .files
                .get(h.file)
                .map_or(Stream::Stdout, |f| f.stream);
            out.push(Row::Hit {
                job: job.clone(),
                stream,
                line: h.line,
                text: h.text.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "grep_tests.rs"]
pub(crate) mod tests;
