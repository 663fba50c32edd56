//! `:history`: own jobs that ended in the last N days, in place of the queue. The history's
//! rows live in a `QueueView` of their own that is swapped with the queue while open, so
//! filter, sort, marks, the detail and the log panes work on them as on the queue. The
//! list is read first (one line per job), then the same windows with every step, which
//! fill in the use figures. Efficiency reports of finished jobs selected in the queue (from
//! the detail fetch's sacct read) are kept here too, for the detail pane.

use std::collections::HashMap;

use chrono::NaiveDateTime;

use super::App;
use crate::action::{Cmd, Msg};
use crate::payload::DetailSource;
use crate::payload::{Page, Request};
use crate::queue::facts::RowFacts;
use crate::queue::{Column, QueueView};
use crate::slurm::eff::{self, Edge, Efficiency, JobUse};
use crate::slurm::model::{JobDetail, JobId, JobState, Partition};

pub const DEFAULT_DAYS: u32 = 7;
/// Days per sacct read.
pub const WINDOW_DAYS: u32 = 7;
/// How far before the newest end seen an incremental read starts (slurmdbd records a
/// job's end a little after it happened).
const OVERLAP_SECS: i64 = 300;

pub fn columns() -> Vec<Column> {
    vec![
        Column::Id,
        Column::Name,
        Column::Partition,
        Column::State,
        Column::Exit,
        Column::Time,
        Column::Cpus,
        Column::CpuEff,
        Column::MemEff,
        Column::Gpus,
        Column::Triage,
    ]
}

pub struct HistoryState {
    pub open: bool,
    pub days: u32,
    /// The history's rows while closed, the queue while open (swapped with `App::queue`).
    other: QueueView,
    generation: u64,
    /// Reads under way.
    reading: u32,
    filling: bool,
    pub error: Option<String>,
    jobs: HashMap<JobId, JobUse>,
    /// Use read with the detail of finished jobs selected in the queue.
    fetched: HashMap<JobId, JobUse>,
    /// Reports of finished jobs: the history's and those of jobs selected in the queue.
    reports: HashMap<JobId, Efficiency>,
    /// The newest end time read (the cluster's clock), where incremental reads start.
    newest_end: Option<NaiveDateTime>,
    /// Days the rows cover.
    read_days: u32,
    /// Queue refreshes that came while the history was shown, applied when it closes.
    deferred: Vec<Msg>,
}

impl Default for HistoryState {
    fn default() -> Self {
        HistoryState {
            open: false,
            days: DEFAULT_DAYS,
            other: QueueView::new(columns()),
            generation: 0,
            reading: 0,
            filling: false,
            error: None,
            jobs: HashMap::new(),
            fetched: HashMap::new(),
            reports: HashMap::new(),
            newest_end: None,
            read_days: 0,
            deferred: Vec::new(),
        }
    }
}

impl HistoryState {
    /// The efficiency report of a finished job, when read.
    pub fn report(&self, id: &JobId) -> Option<&Efficiency> {
        self.reports.get(id)
    }

    /// Keeps queue refreshes for later while the history is shown (they would replace its
    /// rows); returns the message when it is not one of those.
    pub fn defer(&mut self, msg: Msg) -> Option<Msg> {
        fn is_queue(m: &Msg) -> bool {
            match m {
                Msg::Queue(_) | Msg::RegistryJobs(_) => true,
                Msg::Cluster(_, m) => is_queue(m),
                _ => false,
            }
        }
        if self.open && is_queue(&msg) {
            self.deferred.push(msg);
            return None;
        }
        Some(msg)
    }

    fn caption(&self) -> (String, String) {
        let what = if self.reading > 0 && !self.filling {
            "reading"
        } else if self.reading > 0 {
            "filling in use"
        } else {
            ""
        };
        let days = if self.days == 1 {
            "1 day".to_string()
        } else {
            format!("{} days", self.days)
        };
        let title = if what.is_empty() {
            format!("history, {days}:")
        } else {
            format!("history, {days}, {what}…:")
        };
        let empty = match (&self.error, self.reading) {
            (Some(e), _) => format!("history: {e}"),
            (None, 0) => format!("none of your jobs ended in the last {days}"),
            _ => "reading your finished jobs from sacct…".to_string(),
        };
        (title, empty)
    }

    fn request(&mut self, windows: Vec<(Edge, Edge)>) -> Cmd {
        self.reading += 1;
        self.filling = false;
        self.error = None;
        Cmd::History(Request {
            generation: self.generation,
            windows,
        })
    }

    /// Everything again, `days` back.
    fn full(&mut self, days: u32) -> Cmd {
        self.generation += 1;
        self.reading = 0;
        self.jobs.clear();
        self.newest_end = None;
        self.days = days;
        self.read_days = days;
        self.request(eff::windows(0, days, WINDOW_DAYS))
    }

    fn facts(&self) -> HashMap<JobId, RowFacts> {
        self.jobs
            .iter()
            .map(|(id, u)| {
                let r = self.reports.get(id);
                let f = RowFacts {
                    exit: u.detail.exit_code,
                    cpu: r.and_then(|r| r.cpu_efficiency),
                    mem: r.and_then(|r| r.mem_efficiency),
                    triage: r
                        .and_then(|r| r.triage.clone())
                        .or_else(|| eff::report::triage_class(&u.detail)),
                    filled: r.is_some(),
                };
                (id.clone(), f)
            })
            .collect()
    }
}

fn partitions(app: &App) -> &[Partition] {
    match &app.cluster.partitions {
        Some(Ok(p)) => p,
        _ => &[],
    }
}

impl App {
    fn history_view(&mut self) -> &mut QueueView {
        if self.history.open {
            &mut self.queue
        } else {
            &mut self.history.other
        }
    }

    /// Rebuilds the history's rows (newest end first) and figures.
    fn history_rows(&mut self) {
        let mut jobs: Vec<&JobUse> = self.history.jobs.values().collect();
        jobs.sort_by(|a, b| {
            b.detail.end_time.cmp(&a.detail.end_time).then_with(|| {
                b.detail
                    .id
                    .as_ref()
                    .map(JobId::base)
                    .cmp(&a.detail.id.as_ref().map(JobId::base))
            })
        });
        let rows = jobs.iter().filter_map(|u| u.detail.to_job()).collect();
        let facts = self.history.facts();
        let caption = self.history.caption();
        let v = self.history_view();
        v.set_jobs(rows);
        v.set_facts(facts);
        v.set_caption(Some(caption));
    }

    fn history_caption(&mut self) {
        let c = self.history.caption();
        self.history_view().set_caption(Some(c));
    }

    /// `:history [DAYS]`: shows the history in place of the queue, reading what ended since
    /// the last read (or everything, the first time or for another number of days).
    pub(super) fn open_history(&mut self, days: Option<u32>) -> Vec<Cmd> {
        let days = days.unwrap_or(self.history.days).max(1);
        let mut cmds = Vec::new();
        if !self.history.open {
            std::mem::swap(&mut self.queue, &mut self.history.other);
            self.history.open = true;
            self.queue
                .set_viewport(crate::layout::queue_body_height(self.areas().queue.height));
        }
        if self.history.reading == 0 {
            if days != self.history.read_days || self.history.generation == 0 {
                cmds.push(self.history.full(days));
            } else {
                let start = self
                    .history
                    .newest_end
                    .map(|t| Edge::At(t - chrono::Duration::seconds(OVERLAP_SECS)))
                    .unwrap_or(Edge::Ago(i64::from(days) * 86_400));
                cmds.push(self.history.request(vec![(start, eff::NEWEST_END)]));
            }
        }
        if self.cluster.partitions.is_none() {
            cmds.push(Cmd::FetchLimits);
        }
        self.history_rows();
        cmds.extend(self.selection_changed());
        cmds
    }

    /// `[` a week further back, `]` a week less.
    pub(super) fn history_days(&mut self, older: bool) -> Vec<Cmd> {
        if !self.history.open {
            self.note = Some("[ and ] page :history (open it with :history)".into());
            return Vec::new();
        }
        let mut cmds = Vec::new();
        if older {
            let from = self.history.read_days;
            self.history.days = from + WINDOW_DAYS;
            self.history.read_days = self.history.days;
            cmds.push(
                self.history
                    .request(eff::windows(from, WINDOW_DAYS, WINDOW_DAYS)),
            );
        } else {
            let days = self.history.days.saturating_sub(WINDOW_DAYS).max(1);
            if days == self.history.days {
                self.note = Some(format!("history: already the last {days} day"));
                return cmds;
            }
            cmds.push(self.history.full(days));
        }
        self.history_rows();
        cmds.extend(self.selection_changed());
        cmds
    }

    /// esc with nothing else to clear: back to the queue, with the refreshes that came
    /// meanwhile.
    pub(super) fn close_history(&mut self) -> Vec<Cmd> {
        std::mem::swap(&mut self.queue, &mut self.history.other);
        self.history.open = false;
        let mut cmds = Vec::new();
        for m in std::mem::take(&mut self.history.deferred) {
            cmds.extend(self.update(m));
        }
        cmds.extend(self.selection_changed());
        cmds
    }

    pub(super) fn on_history(&mut self, generation: u64, result: Result<Page, String>) -> Vec<Cmd> {
        if generation != self.history.generation {
            return Vec::new();
        }
        match result {
            Ok(page) => {
                let parts = partitions(self).to_vec();
                for u in page.jobs {
                    let Some(id) = u.detail.id.clone() else {
                        continue;
                    };
                    if let Some(end) = u.detail.end_time {
                        if self.history.newest_end.is_none_or(|n| end > n) {
                            self.history.newest_end = Some(end);
                        }
                    }
                    if page.steps {
                        self.history
                            .reports
                            .insert(id.clone(), Efficiency::compute(&u, &parts));
                        self.history.jobs.insert(id, u);
                    } else {
                        self.history.jobs.entry(id).or_insert(u);
                    }
                }
                if page.steps {
                    self.history.filling = true;
                }
                if page.last {
                    self.history.reading = self.history.reading.saturating_sub(1);
                }
                if let Some(p) = page.problems.first() {
                    self.note = Some(format!(
                        "history: {} record(s) did not read: {p}",
                        page.problems.len()
                    ));
                }
                self.history_rows();
                if self.history.open {
                    return self.selection_changed();
                }
            }
            Err(e) => {
                self.history.reading = self.history.reading.saturating_sub(1);
                self.history.error = Some(e.clone());
                self.note = Some(format!("history: {e}"));
                self.history_caption();
            }
        }
        Vec::new()
    }

    /// The use figures that came with a finished job's detail (its sacct read).
    pub(super) fn on_job_use(&mut self, id: JobId, u: JobUse) -> Vec<Cmd> {
        let parts = partitions(self).to_vec();
        let timeout = matches!(u.detail.state, Some(JobState::Timeout | JobState::Deadline));
        self.history
            .reports
            .insert(id.clone(), Efficiency::compute(&u, &parts));
        self.history.fetched.insert(id, u);
        // A timeout's verdict names the partition a longer run needs.
        if timeout && self.cluster.partitions.is_none() {
            return vec![Cmd::FetchLimits];
        }
        Vec::new()
    }

    /// Partitions arrived: verdicts that name partitions are made again.
    pub(super) fn history_partitions(&mut self) {
        let parts = partitions(self).to_vec();
        if parts.is_empty() {
            return;
        }
        let h = &mut self.history;
        for (id, u) in h.jobs.iter().chain(h.fetched.iter()) {
            if h.reports.contains_key(id) {
                h.reports.insert(id.clone(), Efficiency::compute(u, &parts));
            }
        }
    }

    /// The detail of a history row is already known: no remote command to show it.
    pub(super) fn history_detail(&self, id: &JobId) -> Option<(JobDetail, DetailSource)> {
        if !self.history.open {
            return None;
        }
        self.history
            .jobs
            .get(id)
            .map(|u| (u.detail.clone(), DetailSource::Sacct))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "history_tests.rs"]
mod tests;
