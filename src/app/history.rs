//! `:history`: own jobs that ended in the last N days, in place of the queue. The history's
//! rows live in a `QueueView` of their own that is swapped with the queue while open, so
//! filter, sort, marks, the detail and the log panes work on them as on the queue. The
//! list is read first (one line per job), then the same windows with every step, which
//! fill in the use figures. Efficiency reports of finished jobs selected in the queue (from
//! the detail fetch's sacct read) are kept here too, for the detail pane.

use std::collections::{BTreeMap, HashMap};

use chrono::NaiveDateTime;

use super::App;
use crate::action::{Cmd, Msg};
use crate::efficiency::Efficiency;
use crate::payload::DetailSource;
use crate::payload::{Page, Request};
use crate::queue::facts::RowFacts;
use crate::queue::{Column, QueueView};
use crate::slurm::eff::{self, Edge, JobUse};
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

/// One cluster's reads: each cluster is read through its own connection, and its pages
/// are taken only while their generation is the cluster's latest.
#[derive(Debug, Default)]
struct Reads {
    name: String,
    generation: u64,
    /// Reads under way.
    reading: u32,
    filling: bool,
    error: Option<String>,
    /// The newest end time read (the cluster's clock), where incremental reads start.
    newest_end: Option<NaiveDateTime>,
    /// Days the rows cover.
    read_days: u32,
}

pub struct HistoryState {
    pub open: bool,
    pub days: u32,
    /// The history's rows while closed, the queue while open (swapped with `App::queue`).
    other: QueueView,
    /// The last generation handed out (to any cluster: a page is never taken for another's).
    generations: u64,
    /// Per cluster (by number).
    reads: BTreeMap<u16, Reads>,
    /// Every cluster's rows (job ids carry their cluster).
    jobs: HashMap<JobId, JobUse>,
    /// Use read with the detail of finished jobs selected in the queue.
    fetched: HashMap<JobId, JobUse>,
    /// Reports of finished jobs: the history's and those of jobs selected in the queue.
    reports: HashMap<JobId, Efficiency>,
    /// Queue refreshes that came while the history was shown, applied when it closes.
    deferred: Vec<Msg>,
    /// The view has the CLUSTER column (several clusters).
    cluster_column: bool,
}

impl Default for HistoryState {
    fn default() -> Self {
        HistoryState {
            open: false,
            days: DEFAULT_DAYS,
            other: QueueView::new(columns()),
            generations: 0,
            reads: BTreeMap::new(),
            jobs: HashMap::new(),
            fetched: HashMap::new(),
            reports: HashMap::new(),
            deferred: Vec::new(),
            cluster_column: false,
        }
    }
}

fn days_text(days: u32) -> String {
    if days == 1 {
        "1 day".to_string()
    } else {
        format!("{days} days")
    }
}

impl HistoryState {
    /// The detail of a finished job as the history read it, when it did.
    pub fn known(&self, id: &JobId) -> Option<&JobDetail> {
        self.jobs.get(id).map(|u| &u.detail)
    }

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

    /// The clusters whose last read failed.
    pub fn failed(&self) -> impl Iterator<Item = u16> + '_ {
        self.reads
            .iter()
            .filter(|(_, r)| r.error.is_some())
            .map(|(ix, _)| *ix)
    }

    /// A read of cluster `ix` is under way.
    pub fn reading(&self, ix: u16) -> bool {
        self.reads.get(&ix).is_some_and(|r| r.reading > 0)
    }

    /// The view's title and what it says without rows. With several clusters the title
    /// names the ones still being read and each one whose read failed, with why.
    fn caption(&self, multi: bool) -> (String, String) {
        let under_way: Vec<&Reads> = self.reads.values().filter(|r| r.reading > 0).collect();
        let what = if under_way.iter().any(|r| !r.filling) {
            "reading"
        } else if !under_way.is_empty() {
            "filling in use"
        } else {
            ""
        };
        let days = days_text(self.days);
        let mut title = format!("history, {days}");
        if !what.is_empty() {
            title.push_str(", ");
            title.push_str(what);
            if multi {
                let names: Vec<&str> = under_way.iter().map(|r| r.name.as_str()).collect();
                title.push_str(&format!(" {}", names.join(", ")));
            }
            title.push('…');
        }
        let failed: Vec<String> = self
            .reads
            .values()
            .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.name)))
            .collect();
        if multi {
            for f in &failed {
                title.push_str(&format!(" [{f}]"));
            }
        }
        title.push(':');
        let empty = if !failed.is_empty() {
            match multi {
                true => format!("history: {}", failed.join("; ")),
                false => {
                    let e = self.reads.values().find_map(|r| r.error.as_deref());
                    format!("history: {}", e.unwrap_or_default())
                }
            }
        } else if under_way.is_empty() {
            format!("none of your jobs ended in the last {days}")
        } else {
            "reading your finished jobs from sacct…".to_string()
        };
        (title, empty)
    }

    fn request(&mut self, ix: u16, windows: Vec<(Edge, Edge)>) -> Cmd {
        let r = self.reads.entry(ix).or_default();
        r.reading += 1;
        r.filling = false;
        r.error = None;
        Cmd::History(Request {
            generation: r.generation,
            windows,
        })
    }

    /// Cluster `ix`'s rows again, `days` back (its pages of earlier reads are dropped).
    fn full(&mut self, ix: u16, days: u32) -> Cmd {
        self.generations += 1;
        let generation = self.generations;
        self.jobs.retain(|id, _| id.cluster() != ix);
        let r = self.reads.entry(ix).or_default();
        r.generation = generation;
        r.reading = 0;
        r.newest_end = None;
        r.read_days = days;
        self.request(ix, eff::windows(0, days, WINDOW_DAYS))
    }

    /// Opening: what ended on cluster `ix` since its last read (or everything, the first
    /// time or for another number of days); nothing while a read of it is under way.
    fn open_read(&mut self, ix: u16, name: &str, days: u32) -> Option<Cmd> {
        let r = self.reads.entry(ix).or_default();
        r.name = name.to_string();
        if r.reading > 0 {
            return None;
        }
        if days != r.read_days || r.generation == 0 {
            return Some(self.full(ix, days));
        }
        let start = r
            .newest_end
            .map(|t| Edge::At(t - chrono::Duration::seconds(OVERLAP_SECS)))
            .unwrap_or(Edge::Ago(i64::from(days) * 86_400));
        Some(self.request(ix, vec![(start, eff::NEWEST_END)]))
    }

    /// `[`: one more week of cluster `ix` (all of it again when its rows cover other days).
    fn older(&mut self, ix: u16, name: &str, days: u32) -> Cmd {
        let r = self.reads.entry(ix).or_default();
        r.name = name.to_string();
        if r.generation == 0 || r.read_days + WINDOW_DAYS != days {
            return self.full(ix, days);
        }
        let from = r.read_days;
        r.read_days = days;
        self.request(ix, eff::windows(from, WINDOW_DAYS, WINDOW_DAYS))
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
                        .or_else(|| crate::efficiency::triage_class(&u.detail)),
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

    /// `cmd` for cluster `ix`'s workers (as is when there is one cluster).
    fn for_cluster(&self, ix: u16, cmd: Cmd) -> Cmd {
        match self.multi() {
            true => Cmd::ToCluster(ix, Box::new(cmd)),
            false => cmd,
        }
    }

    /// Every cluster's number and name.
    fn named_clusters(&self) -> Vec<(u16, String)> {
        self.clusters().map(|c| (c.ix, c.name.clone())).collect()
    }

    /// Swaps the queue and the history's rows (the queue is kept there while the history
    /// is shown).
    pub(super) fn swap_history(&mut self) {
        std::mem::swap(&mut self.queue, &mut self.history.other);
    }

    /// Rebuilds the history's rows (newest end first, every cluster's together) and figures.
    pub(super) fn history_rows(&mut self) {
        let mut jobs: Vec<&JobUse> = self.history.jobs.values().collect();
        jobs.sort_by(|a, b| {
            let (ia, ib) = (a.detail.id.as_ref(), b.detail.id.as_ref());
            b.detail
                .end_time
                .cmp(&a.detail.end_time)
                .then_with(|| ib.map(JobId::base).cmp(&ia.map(JobId::base)))
                .then_with(|| ia.map(JobId::cluster).cmp(&ib.map(JobId::cluster)))
        });
        let multi = self.multi();
        let mut names = Vec::new();
        for (ix, name) in self.named_clusters() {
            let i = usize::from(ix);
            if names.len() <= i {
                names.resize(i + 1, String::new());
            }
            names[i] = name;
        }
        let rows = jobs
            .iter()
            .filter_map(|u| {
                let mut j = u.detail.to_job()?;
                if multi {
                    if let Some(n) = names.get(usize::from(j.id.cluster())) {
                        j.cluster = crate::slurm::shared::SharedStr::from(n);
                    }
                }
                Some(j)
            })
            .collect();
        let facts = self.history.facts();
        let caption = self.history.caption(multi);
        // CLUSTER is one of the columns (to sort by with `s`) only with several clusters.
        let with_cluster = multi != self.history.cluster_column;
        self.history.cluster_column = multi;
        let v = self.history_view();
        if with_cluster {
            let mut cols = columns();
            if multi {
                cols.insert(1, Column::Cluster);
            }
            v.set_columns(cols);
        }
        v.set_cluster_names(if multi { names } else { Vec::new() });
        v.set_jobs(rows);
        v.set_facts(facts);
        v.set_caption(Some(caption));
    }

    fn history_caption(&mut self) {
        let c = self.history.caption(self.multi());
        self.history_view().set_caption(Some(c));
    }

    /// `:history [DAYS]`: shows the history in place of the queue, reading from every
    /// cluster (each through its own connection) what ended since its last read (or
    /// everything, the first time or for another number of days).
    pub(super) fn open_history(&mut self, days: Option<u32>) -> Vec<Cmd> {
        let days = days.unwrap_or(self.history.days).max(1);
        let mut cmds = Vec::new();
        if !self.history.open {
            std::mem::swap(&mut self.queue, &mut self.history.other);
            self.history.open = true;
            self.queue
                .set_viewport(crate::layout::queue_body_height(self.areas().queue.height));
        }
        self.history.days = days;
        for (ix, name) in self.named_clusters() {
            if let Some(cmd) = self.history.open_read(ix, &name, days) {
                cmds.push(self.for_cluster(ix, cmd));
            }
        }
        // Partitions, for the verdicts that name one.
        let wanting: Vec<u16> = self
            .clusters()
            .filter(|c| c.partitions.is_none())
            .map(|c| c.ix)
            .collect();
        for ix in wanting {
            cmds.push(self.for_cluster(ix, Cmd::FetchLimits));
        }
        self.history_rows();
        cmds.extend(self.selection_changed());
        cmds
    }

    /// `[` a week further back, `]` a week less: on every cluster.
    pub(super) fn history_days(&mut self, older: bool) -> Vec<Cmd> {
        if !self.history.open {
            self.note = Some("[ and ] page :history (open it with :history)".into());
            return Vec::new();
        }
        let mut cmds = Vec::new();
        if older {
            self.history.days += WINDOW_DAYS;
            let days = self.history.days;
            for (ix, name) in self.named_clusters() {
                let cmd = self.history.older(ix, &name, days);
                cmds.push(self.for_cluster(ix, cmd));
            }
        } else {
            let days = self.history.days.saturating_sub(WINDOW_DAYS).max(1);
            if days == self.history.days {
                self.note = Some(format!("history: already the last {days} day"));
                return cmds;
            }
            self.history.days = days;
            for (ix, name) in self.named_clusters() {
                self.history.reads.entry(ix).or_default().name = name;
                let cmd = self.history.full(ix, days);
                cmds.push(self.for_cluster(ix, cmd));
            }
        }
        self.history_rows();
        cmds.extend(self.selection_changed());
        cmds
    }

    /// esc with nothing else to clear: back to the queue, with the refreshes that came
    /// meanwhile (each one's work for its own cluster).
    pub(super) fn close_history(&mut self) -> Vec<Cmd> {
        std::mem::swap(&mut self.queue, &mut self.history.other);
        self.history.open = false;
        let mut cmds = Vec::new();
        for m in std::mem::take(&mut self.history.deferred) {
            let about = match &m {
                Msg::Cluster(ix, _) => Some(*ix),
                _ => None,
            };
            let done = self.update(m);
            match about {
                Some(ix) => cmds.extend(done.into_iter().map(|c| self.for_cluster(ix, c))),
                None => cmds.extend(done),
            }
        }
        cmds.extend(self.selection_changed());
        cmds
    }

    /// A page of the active cluster's read (dropped unless of its latest read).
    pub(super) fn on_history(&mut self, generation: u64, result: Result<Page, String>) -> Vec<Cmd> {
        let ix = self.cluster.ix;
        let multi = self.multi();
        let Some(r) = self.history.reads.get_mut(&ix) else {
            return Vec::new();
        };
        if generation != r.generation {
            return Vec::new();
        }
        match result {
            Ok(page) => {
                if page.steps {
                    r.filling = true;
                }
                if page.last {
                    r.reading = r.reading.saturating_sub(1);
                }
                for u in &page.jobs {
                    if let Some(end) = u.detail.end_time {
                        if r.newest_end.is_none_or(|n| end > n) {
                            r.newest_end = Some(end);
                        }
                    }
                }
                let parts = partitions(self).to_vec();
                for u in page.jobs {
                    let Some(id) = u.detail.id.clone() else {
                        continue;
                    };
                    if page.steps {
                        self.history
                            .reports
                            .insert(id.clone(), Efficiency::compute(&u, &parts));
                        self.history.jobs.insert(id, u);
                    } else {
                        self.history.jobs.entry(id).or_insert(u);
                    }
                }
                if let Some(p) = page.problems.first() {
                    let on = match multi {
                        true => format!(" on {}", self.cluster.name),
                        false => String::new(),
                    };
                    self.note = Some(format!(
                        "history{on}: {} record(s) did not read: {p}",
                        page.problems.len()
                    ));
                }
                self.history_rows();
                if self.history.open {
                    return self.selection_changed();
                }
            }
            Err(e) => {
                r.reading = r.reading.saturating_sub(1);
                r.error = Some(e.clone());
                self.note = Some(match multi {
                    true => format!("history on {}: {e}", self.cluster.name),
                    false => format!("history: {e}"),
                });
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

    /// The active cluster's partitions arrived: its verdicts that name partitions are made
    /// again.
    pub(super) fn history_partitions(&mut self) {
        let parts = partitions(self).to_vec();
        if parts.is_empty() {
            return;
        }
        let ix = self.cluster.ix;
        let h = &mut self.history;
        for (id, u) in h.jobs.iter().chain(h.fetched.iter()) {
            if id.cluster() == ix && h.reports.contains_key(id) {
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "history_multi_tests.rs"]
mod multi_tests;
