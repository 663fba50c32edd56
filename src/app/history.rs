//! `:history`: own jobs that ended in the last N days, in place of the queue. The history's
//! rows are a list of their own (`Lists::history`) that the queue pane shows while it is
//! open, so filter, sort, marks, the detail and the log panes work on them as on the queue. The
//! list is read first (one line per job), then the same windows with every step, which
//! fill in the use figures. Efficiency reports of finished jobs selected in the queue (from
//! the detail fetch's sacct read) are kept here too, for the detail pane.

use std::collections::{BTreeMap, HashMap};

use chrono::NaiveDateTime;

use super::component::{Out, View};
#[cfg(test)]
use super::App;
use crate::action::Cmd;
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
    /// The view has the CLUSTER column (several clusters).
    cluster_column: bool,
}

impl Default for HistoryState {
    fn default() -> Self {
        HistoryState {
            open: false,
            days: DEFAULT_DAYS,
            generations: 0,
            reads: BTreeMap::new(),
            jobs: HashMap::new(),
            fetched: HashMap::new(),
            reports: HashMap::new(),
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
            cluster: ix,
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

/// The partitions of the cluster being worked on, when read.
fn partitions<'a>(v: &View<'a>) -> &'a [Partition] {
    match &v.cluster.partitions {
        Some(Ok(p)) => p,
        _ => &[],
    }
}

/// Every cluster's number and name.
fn named_clusters(v: &View) -> Vec<(u16, String)> {
    let mut all: Vec<(u16, String)> = v.clusters().map(|c| (c.ix, c.name.clone())).collect();
    all.sort_by_key(|(ix, _)| *ix);
    all
}

/// The component: `rows` is its own list of `App::queue` (`Lists::history`), which the
/// queue pane shows while `open`. The router follows the selection after each handler
/// while the history is shown.
impl HistoryState {
    /// Shows the rows again (newest end first, every cluster's together) with their figures.
    pub fn show(&mut self, v: &View, rows: &mut QueueView) {
        let mut jobs: Vec<&JobUse> = self.jobs.values().collect();
        jobs.sort_by(|a, b| {
            let (ia, ib) = (a.detail.id.as_ref(), b.detail.id.as_ref());
            b.detail
                .end_time
                .cmp(&a.detail.end_time)
                .then_with(|| ib.map(JobId::base).cmp(&ia.map(JobId::base)))
                .then_with(|| ia.map(JobId::cluster).cmp(&ib.map(JobId::cluster)))
        });
        let multi = v.multi();
        let mut names = Vec::new();
        for (ix, name) in named_clusters(v) {
            let i = usize::from(ix);
            if names.len() <= i {
                names.resize(i + 1, String::new());
            }
            names[i] = name;
        }
        let list = jobs
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
        // CLUSTER is one of the columns (to sort by with `s`) only with several clusters.
        if multi != self.cluster_column {
            self.cluster_column = multi;
            let mut cols = columns();
            if multi {
                cols.insert(1, Column::Cluster);
            }
            rows.set_columns(cols);
        }
        rows.set_cluster_names(if multi { names } else { Vec::new() });
        rows.set_jobs(list);
        rows.set_facts(self.facts());
        rows.set_caption(Some(self.caption(multi)));
    }

    /// `:history [DAYS]`: opens the history, reading from every cluster (each through its
    /// own connection) what ended since its last read (or everything, the first time or
    /// for another number of days).
    pub fn open(&mut self, v: &View, rows: &mut QueueView, days: Option<u32>) -> Out {
        let days = days.unwrap_or(self.days).max(1);
        self.open = true;
        self.days = days;
        let mut cmds = Vec::new();
        for (ix, name) in named_clusters(v) {
            if let Some(cmd) = self.open_read(ix, &name, days) {
                cmds.push(cmd);
            }
        }
        // Partitions, for the verdicts that name one.
        let mut wanting: Vec<u16> = v
            .clusters()
            .filter(|c| c.partitions.is_none())
            .map(|c| c.ix)
            .collect();
        wanting.sort_unstable();
        for ix in wanting {
            cmds.push(Cmd::FetchLimits(ix));
        }
        self.show(v, rows);
        Out::cmds(cmds)
    }

    /// `[` a week further back (`older`), `]` a week less: on every cluster.
    pub fn page_days(&mut self, v: &View, rows: &mut QueueView, older: bool) -> Out {
        if !self.open {
            return Out::note("[ and ] page :history (open it with :history)");
        }
        let mut cmds = Vec::new();
        if older {
            self.days += WINDOW_DAYS;
            let days = self.days;
            for (ix, name) in named_clusters(v) {
                let cmd = self.older(ix, &name, days);
                cmds.push(cmd);
            }
        } else {
            let days = self.days.saturating_sub(WINDOW_DAYS).max(1);
            if days == self.days {
                return Out::note(format!("history: already the last {days} day"));
            }
            self.days = days;
            for (ix, name) in named_clusters(v) {
                self.reads.entry(ix).or_default().name = name;
                let cmd = self.full(ix, days);
                cmds.push(cmd);
            }
        }
        self.show(v, rows);
        Out::cmds(cmds)
    }

    /// esc: the history closes (the queue's rows, kept current meanwhile, are shown).
    pub fn close(&mut self) {
        self.open = false;
    }

    /// A page of the read of the cluster being worked on (dropped unless of its latest read).
    pub fn on_page(
        &mut self,
        v: &View,
        rows: &mut QueueView,
        generation: u64,
        result: Result<Page, String>,
    ) -> Out {
        let ix = v.cluster.ix;
        let multi = v.multi();
        let Some(r) = self.reads.get_mut(&ix) else {
            return Out::none();
        };
        if generation != r.generation {
            return Out::none();
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
                let parts = partitions(v);
                for u in page.jobs {
                    let Some(id) = u.detail.id.clone() else {
                        continue;
                    };
                    if page.steps {
                        self.reports
                            .insert(id.clone(), Efficiency::compute(&u, parts));
                        self.jobs.insert(id, u);
                    } else {
                        self.jobs.entry(id).or_insert(u);
                    }
                }
                let mut out = Out::none();
                if let Some(p) = page.problems.first() {
                    let on = match multi {
                        true => format!(" on {}", v.cluster.name),
                        false => String::new(),
                    };
                    out.note = Some(format!(
                        "history{on}: {} record(s) did not read: {p}",
                        page.problems.len()
                    ));
                }
                self.show(v, rows);
                out
            }
            Err(e) => {
                r.reading = r.reading.saturating_sub(1);
                r.error = Some(e.clone());
                rows.set_caption(Some(self.caption(multi)));
                Out::note(match multi {
                    true => format!("history on {}: {e}", v.cluster.name),
                    false => format!("history: {e}"),
                })
            }
        }
    }

    /// The use figures that came with a finished job's detail (its sacct read).
    pub fn on_job_use(&mut self, v: &View, id: JobId, u: JobUse) -> Out {
        let timeout = matches!(u.detail.state, Some(JobState::Timeout | JobState::Deadline));
        self.reports
            .insert(id.clone(), Efficiency::compute(&u, partitions(v)));
        self.fetched.insert(id, u);
        // A timeout's verdict names the partition a longer run needs.
        if timeout && v.cluster.partitions.is_none() {
            return Out::cmds(vec![Cmd::FetchLimits(v.cluster.ix)]);
        }
        Out::none()
    }

    /// The partitions of the cluster being worked on arrived: its verdicts that name
    /// partitions are made again.
    pub fn on_partitions(&mut self, v: &View) {
        let parts = partitions(v);
        if parts.is_empty() {
            return;
        }
        let ix = v.cluster.ix;
        for (id, u) in self.jobs.iter().chain(self.fetched.iter()) {
            if id.cluster() == ix && self.reports.contains_key(id) {
                self.reports
                    .insert(id.clone(), Efficiency::compute(u, parts));
            }
        }
    }

    /// The detail of a history row shown, already known: no remote command to show it.
    pub fn shown_detail(&self, id: &JobId) -> Option<(JobDetail, DetailSource)> {
        if !self.open {
            return None;
        }
        self.jobs
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
