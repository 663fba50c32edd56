//! The queue pane's state: jobs folded into rows, filtered and sorted when
//! they change (never per frame), and a selection that follows its job.
//! Pure: the App owns one `QueueView` and drawing only reads it.

mod column;

pub mod facts;
pub mod format;
mod marks;
mod rows;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use chrono::NaiveDateTime;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

pub use column::{arrow as column_arrow, name_suffix, Column, Width, STALE_MARK};
pub use rows::{QueueRow, RowKind, MAX_EXPANDED_TASKS};

use crate::logview::progress::Summary;

/// The badge of a launch's only attempt while a guard on the cluster stands by it (shown
/// only until the job ends: the guard ends with it).
pub const GUARDED: &str = "↻ guarded";
use crate::slurm::command::Scope;
use crate::slurm::model::{ArrayKey, Job, JobId, JobRecord, JobState};
use rows::{build_rows, Haystack, RowKey, Rows};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sort {
    /// None: squeue's own order.
    pub column: Option<Column>,
    pub descending: bool,
}

#[derive(Debug, Clone)]
pub struct QueueView {
    columns: Vec<Column>,
    jobs: Vec<Job>,
    /// Counts the changes of `jobs`: what is worked out from them can be kept until it moves.
    generation: u64,
    loaded: bool,
    /// Every row after folding arrays, in squeue's order.
    all: Rows,
    /// The filter's text of every row in `all`: built when a filter is
    /// first set, dropped when the rows change.
    haystack: Option<Haystack>,
    /// Indices into `all`: the rows shown, filtered and sorted.
    order: Vec<usize>,
    filter: String,
    sort: Sort,
    expanded: HashSet<ArrayKey>,
    /// Position in `order`.
    cursor: usize,
    selected: Option<RowKey>,
    offset: usize,
    /// Body rows on screen, as last told by the App (0: unknown).
    viewport: usize,
    /// Widths of the data-sized columns, measured when the rows change.
    widths: Vec<(Column, u16)>,
    /// Jobs per (cluster, state), a collapsed array counting each task: counted when the
    /// jobs change, read by every frame's status bar (a pass over 100,000 jobs each second
    /// was most of the dashboard's idle CPU).
    tally: Vec<(u16, JobState, usize)>,
    scope: Scope,
    /// Rows the user marked for a bulk action, by the id the row shows.
    marks: HashSet<JobId>,
    /// Where the next `mark_range` starts: the last row marked one by one.
    mark_anchor: Option<JobId>,
    /// Jobs with an action in flight, and what the row says meanwhile.
    busy: HashMap<JobId, &'static str>,
    /// Extra words after a job's name (e.g. `↻2/11` for a retried launch), by job id.
    badges: HashMap<ArrayKey, String>,
    /// The sweeps slurmdash launched (array -> its runs): each shown as one row.
    sweeps: HashMap<ArrayKey, u32>,
    /// Running jobs whose GPUs stayed idle (`z` in the marks column).
    idle: HashSet<JobId>,
    /// Running jobs that use much less CPU or memory than they asked (`u`).
    low_use: HashSet<JobId>,
    /// Several clusters are shown: the CLUSTER column is added.
    multi: bool,
    /// Clusters (by number) whose rows are out of date: their last refresh failed.
    stale: HashSet<u16>,
    /// The columns drawn: the configured ones, with CLUSTER only when several clusters
    /// are shown.
    shown: Vec<Column>,
    /// Figures beyond squeue's record (`:history`), by job id.
    facts: HashMap<JobId, facts::RowFacts>,
    /// A view that is not the queue (`:history`): its title and what it says when empty.
    caption: Option<(String, String)>,
    /// Progress read from the logs open this session, by job id (the PROGRESS column).
    progress: HashMap<JobId, Summary>,
    /// When each cluster's rows were read, by cluster number: a running job's TIME counts
    /// on from there between reads.
    listed_at: HashMap<u16, NaiveDateTime>,
    /// Rows changed by a newer read of their job than the list (`patch_job`), and when.
    read_at: HashMap<JobId, NaiveDateTime>,
}

impl Default for QueueView {
    fn default() -> Self {
        QueueView::new(Column::defaults())
    }
}

impl QueueView {
    pub fn new(columns: Vec<Column>) -> QueueView {
        let columns = if columns.is_empty() {
            Column::defaults()
        } else {
            columns
        };
        QueueView {
            shown: shown_columns(&columns, false, false),
            multi: false,
            stale: HashSet::new(),
            columns,
            jobs: Vec::new(),
            generation: 0,
            loaded: false,
            all: Rows::default(),
            haystack: None,
            order: Vec::new(),
            filter: String::new(),
            sort: Sort::default(),
            expanded: HashSet::new(),
            cursor: 0,
            selected: None,
            offset: 0,
            viewport: 0,
            widths: Vec::new(),
            tally: Vec::new(),
            scope: Scope::Me,
            marks: HashSet::new(),
            mark_anchor: None,
            busy: HashMap::new(),
            badges: HashMap::new(),
            sweeps: HashMap::new(),
            facts: HashMap::new(),
            listed_at: HashMap::new(),
            read_at: HashMap::new(),
            caption: None,
            progress: HashMap::new(),
            idle: HashSet::new(),
            low_use: HashSet::new(),
        }
    }

    /// Names a view that is not the queue: (title, text when it has no rows).
    pub fn set_caption(&mut self, caption: Option<(String, String)>) {
        self.caption = caption;
    }

    pub fn caption(&self) -> Option<&(String, String)> {
        self.caption.as_ref()
    }

    /// Figures for the facts columns (exit code, efficiency, triage), by job id; the order
    /// is kept up to date when sorted by one of them.
    pub fn set_facts(&mut self, facts: HashMap<JobId, facts::RowFacts>) {
        self.facts = facts;
        if self.sort.column.is_some_and(Column::is_fact) {
            self.reorder();
        }
    }

    /// Progress of the jobs whose logs were read, by job id. The PROGRESS column is drawn
    /// while one is known.
    pub fn set_progress(&mut self, progress: HashMap<JobId, Summary>) {
        let was = self.progress.is_empty();
        self.progress = progress;
        if was != self.progress.is_empty() {
            self.shown = self.shown();
        }
        if self.sort.column == Some(Column::Progress) {
            self.reorder();
        }
    }

    /// One job's progress changed (the job whose log is open).
    pub fn set_job_progress(&mut self, id: &JobId, s: Option<Summary>) {
        let mut all = std::mem::take(&mut self.progress);
        match s {
            Some(s) => all.insert(id.clone(), s),
            None => all.remove(id),
        };
        self.set_progress(all);
    }

    pub fn progress(&self, id: &JobId) -> Option<&Summary> {
        self.progress.get(id)
    }

    fn shown(&self) -> Vec<Column> {
        shown_columns(&self.columns, self.multi, !self.progress.is_empty())
    }

    /// The text of a facts column for this job.
    pub fn fact_text(&self, id: &JobId, col: Column) -> Option<String> {
        self.facts.get(id).and_then(|f| f.text(col))
    }

    /// Whose jobs the queue holds, for the "no jobs" text.
    pub fn set_scope(&mut self, scope: Scope) {
        self.scope = scope;
    }

    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The columns drawn.
    pub fn shown_columns(&self) -> &[Column] {
        &self.shown
    }

    /// Marks the rows of these clusters as out of date (their last refresh failed).
    pub fn set_stale(&mut self, clusters: HashSet<u16>) {
        self.stale = clusters;
    }

    /// The row's cluster could not be refreshed: what it shows may be old.
    pub fn is_stale(&self, job: &Job) -> bool {
        self.stale.contains(&job.id.cluster())
    }

    /// The dashboard shows these clusters (by number): with more than one, rows say which
    /// cluster they are on (CLUSTER column, filter, sort).
    pub fn set_cluster_names(&mut self, names: Vec<String>) {
        self.multi = names.iter().filter(|n| !n.is_empty()).count() > 1;
        self.shown = self.shown();
        self.rebuild();
    }

    /// The columns chosen (the cluster's own is added when several are shown).
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    pub fn set_columns(&mut self, columns: Vec<Column>) {
        if columns.is_empty() {
            return;
        }
        if let Some(c) = self.sort.column {
            if !columns.contains(&c) {
                self.sort = Sort::default();
            }
        }
        self.columns = columns;
        // What is drawn follows (it was left as before: a view made anew was the only
        // caller until columns could change on screen).
        self.shown = self.shown();
        self.measure();
        self.reorder();
    }

    /// A fresh squeue result. Keeps the selected job selected wherever it
    /// moved; if it is gone, the row now at the same position is selected.
    pub fn set_jobs(&mut self, jobs: Vec<Job>) {
        // A refresh that changed nothing (every record the same as before, as an idle queue
        // gives) leaves the rows, their order and the widths as they are: none of them
        // depends on the time. At 100,000 jobs that is most of a refresh's work.
        if self.loaded && crate::slurm::model::same_list(&jobs, &self.jobs) {
            return;
        }
        // The old rows refer to the old jobs: drop them before building anew. A patched
        // row's read time holds until its cluster is listed again (`set_listed_at`), while
        // another cluster's list replaces the rest.
        let present: HashSet<&JobId> = jobs.iter().map(|j| &j.id).collect();
        self.read_at.retain(|id, _| present.contains(id));
        self.all = Rows::default();
        self.haystack = None;
        self.jobs = jobs;
        self.generation += 1;
        self.tally = tally(&self.jobs);
        self.loaded = true;
        let present: HashSet<ArrayKey> = self.jobs.iter().map(|j| j.id.array_key()).collect();
        self.expanded.retain(|b| present.contains(b));
        self.rebuild();
        self.prune_marks();
    }

    /// A newer read of one job (its detail) changes its row before the next refresh: `f`
    /// edits a copy of the record, and the list is set again. False when no row has `id`.
    /// `at` is when that read was made: the row's TIME counts on from then.
    pub fn patch_job(
        &mut self,
        id: &JobId,
        at: NaiveDateTime,
        f: impl FnOnce(&mut JobRecord),
    ) -> bool {
        let Some(i) = self.jobs.iter().position(|j| &j.id == id) else {
            return false;
        };
        let mut jobs = self.jobs.clone();
        let mut record = (*jobs[i]).clone();
        f(&mut record);
        jobs[i] = Job::new(record);
        self.set_jobs(jobs);
        self.read_at.insert(id.clone(), at);
        true
    }

    /// Cluster `ix`'s rows were read at `at` (a refresh's list).
    /// Its rows patched before then say what the list says.
    pub fn set_listed_at(&mut self, ix: u16, at: NaiveDateTime) {
        self.listed_at.insert(ix, at);
        self.read_at.retain(|id, _| id.cluster() != ix);
    }

    /// The TIME cell of `job` at `now`: a running job's time used counts on from when its
    /// record was read, so the column moves between refreshes rather than jumping. The rows
    /// of a cluster that could not be refreshed say what was read (they are greyed).
    pub fn time_text(&self, job: &Job, now: NaiveDateTime) -> String {
        if self.is_stale(job) {
            return format::time_used_limit(job);
        }
        let read = self
            .read_at
            .get(&job.id)
            .or_else(|| self.listed_at.get(&job.id.cluster()));
        let ran = read.map_or(0, |&at| (now - at).num_seconds().max(0).unsigned_abs());
        format::time_used_limit_after(job, ran)
    }

    /// False until the first `set_jobs`: the pane says "loading" rather
    /// than "no jobs".
    pub fn is_loaded(&self) -> bool {
        self.loaded
    }

    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }

    /// Changes whenever the jobs do (not when a refresh brought the very same records).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The rows of cluster `ix`, or all of them (borrowed, without a copy) for `None`.
    pub fn jobs_on(&self, ix: Option<u16>) -> std::borrow::Cow<'_, [Job]> {
        use std::borrow::Cow;
        match ix {
            None => Cow::Borrowed(&self.jobs),
            Some(ix) => Cow::Owned(
                self.jobs
                    .iter()
                    .filter(|j| j.id.cluster() == ix)
                    .cloned()
                    .collect(),
            ),
        }
    }

    /// Case-insensitive substring of id, name, state (long or short) or
    /// partition. An empty string clears the filter.
    pub fn set_filter(&mut self, filter: &str) {
        let f = filter.trim().to_lowercase();
        if f == self.filter {
            return;
        }
        self.filter = f;
        self.reorder();
    }

    pub fn filter(&self) -> &str {
        &self.filter
    }

    pub fn sort(&self) -> Sort {
        self.sort
    }

    /// squeue order → first column → … → last column → squeue order.
    pub fn cycle_sort(&mut self) {
        let next = match self.sort.column {
            None => self.columns.first().copied(),
            Some(c) => {
                let i = self.columns.iter().position(|x| *x == c);
                i.and_then(|i| self.columns.get(i + 1)).copied()
            }
        };
        self.sort = Sort {
            column: next,
            descending: false,
        };
        self.reorder();
    }

    pub fn sort_by(&mut self, column: Option<Column>, descending: bool) {
        self.sort = Sort { column, descending };
        self.reorder();
    }

    pub fn reverse_sort(&mut self) {
        self.sort.descending = !self.sort.descending;
        self.reorder();
    }

    /// On a collapsed array row: list its tasks. On a task of an expanded
    /// array: fold it back. Returns whether anything changed.
    pub fn toggle_expand(&mut self) -> bool {
        let Some(row) = self.selected_row() else {
            return false;
        };
        let Some(base) = row.array_id() else {
            return false;
        };
        if row.is_collapsed() {
            let too_many = row
                .job
                .id
                .array_pending()
                .is_some_and(|s| s.task_count() > MAX_EXPANDED_TASKS);
            if too_many || !self.expanded.insert(base) {
                return false;
            }
        } else if self.expanded.remove(&base) {
            self.selected = Some(RowKey::Array(base));
        } else {
            return false;
        }
        self.rebuild();
        true
    }

    pub fn is_expanded(&self, array_id: ArrayKey) -> bool {
        self.expanded.contains(&array_id)
    }

    fn rebuild(&mut self) {
        self.all = Rows::default();
        self.haystack = None;
        self.all = build_rows(&self.jobs, &self.expanded, &self.sweeps);
        self.measure();
        self.reorder();
    }

    fn measure(&mut self) {
        // Data-sized columns do not depend on the time: any `now` will do.
        let now = chrono::NaiveDateTime::default();
        self.widths = self
            .shown
            .iter()
            .filter_map(|&c| column::data_width(c, self.all.iter(&self.jobs), now).map(|w| (c, w)))
            .collect();
        // Room for the badges after names (`↻2/5 resumed after TIMEOUT`), within the
        // column's largest width: a badge should not hide the name it follows.
        if self.badges.is_empty() {
            return;
        }
        use unicode_width::UnicodeWidthStr;
        let widest = self
            .all
            .iter(&self.jobs)
            .filter_map(|r| {
                let b = self.shown_badge(r.job)?;
                let name = column::Column::Name.text(&r, now).width();
                Some(name + 1 + b.width())
            })
            .max();
        if let (Some(want), Some((_, w))) = (
            widest,
            self.widths
                .iter_mut()
                .find(|(c, _)| *c == column::Column::Name),
        ) {
            let cap = match column::Column::Name.width() {
                column::Width::Data { max, .. } => max,
                _ => *w,
            };
            *w = (*w).max(u16::try_from(want).unwrap_or(u16::MAX).min(cap));
        }
    }

    /// Filter, sort, then find the selection again.
    fn reorder(&mut self) {
        let f = self.filter.as_str();
        if f.is_empty() {
            self.order = (0..self.all.len()).collect();
        } else {
            let (all, jobs) = (&self.all, &self.jobs);
            let hay = self
                .haystack
                .get_or_insert_with(|| Haystack::build(all.iter(jobs)));
            self.order = (0..self.all.len())
                .filter(|&i| hay.contains(i, f))
                .collect();
        }
        let (all, jobs) = (&self.all, &self.jobs);
        let Sort { column, descending } = self.sort;
        if column == Some(Column::Progress) {
            let p = &self.progress;
            let key = |i: usize| p.get(&all.at(jobs, i).job.id).map(|s| s.reading.fraction);
            self.order.sort_by(|&a, &b| match (key(a), key(b)) {
                (Some(x), Some(y)) if descending => y.total_cmp(&x),
                (Some(x), Some(y)) => x.total_cmp(&y),
                (x, y) => y.is_some().cmp(&x.is_some()),
            });
        } else if let Some(col) = column.filter(|c| c.is_fact()) {
            let facts = &self.facts;
            let cmp = |a: usize, b: usize| {
                let (a, b) = (all.at(jobs, a), all.at(jobs, b));
                facts::RowFacts::compare(col, facts.get(&a.job.id), facts.get(&b.job.id))
            };
            self.order.sort_by(|&a, &b| match cmp(a, b) {
                Some(o) if descending => o.reverse(),
                Some(o) => o,
                None => cmp(b, b).is_some().cmp(&cmp(a, a).is_some()),
            });
        } else if let Some(col) = column {
            // Stable: equal rows keep squeue's order. Missing values last.
            self.order.sort_by(|&a, &b| {
                let (a, b) = (all.at(jobs, a), all.at(jobs, b));
                match col.compare(&a, &b) {
                    Some(o) if descending => o.reverse(),
                    Some(o) => o,
                    None => missing_last(&a, &b, col),
                }
            });
        } else if descending {
            self.order.reverse();
        }
        self.reselect();
    }

    fn reselect(&mut self) {
        let found = self.selected.as_ref().and_then(|key| {
            self.rows()
                .position(|r| key.matches(&r))
                .or_else(|| match key {
                    // A task that was folded into its array: select the array.
                    RowKey::Job(id) => self
                        .rows()
                        .position(|r| r.is_collapsed() && r.job.id.array_key() == id.array_key()),
                    RowKey::Array(_) => None,
                })
        });
        self.cursor = match found {
            Some(p) => p,
            None => self.cursor.min(self.order.len().saturating_sub(1)),
        };
        self.selected = self.selected_row().map(|r| RowKey::of(&r));
        self.scroll_to_cursor();
    }

    // ---- rows ----

    /// Rows shown (after filter), in display order.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Rows before filtering.
    pub fn total(&self) -> usize {
        self.all.len()
    }

    pub fn row(&self, i: usize) -> Option<QueueRow<'_>> {
        self.order.get(i).map(|&k| self.all.at(&self.jobs, k))
    }

    pub fn rows(&self) -> impl ExactSizeIterator<Item = QueueRow<'_>> + '_ {
        self.order.iter().map(|&k| self.all.at(&self.jobs, k))
    }

    /// Cells for `col` as measured over the rows (the widest value, within the column's
    /// bounds); None for a column sharing the leftover width.
    pub fn column_width(&self, col: Column) -> Option<u16> {
        match col.width() {
            Width::Fixed(w) => Some(w),
            Width::Flex => None,
            Width::Data { min, .. } | Width::Grow { min } => Some(
                self.widths
                    .iter()
                    .find(|(c, _)| *c == col)
                    .map_or(min, |(_, w)| *w),
            ),
        }
    }

    /// Jobs per state over the whole queue (not the filter), a collapsed
    /// array counting each task: for "12 PD · 3 R · 1 CG".
    pub fn counts_by_state(&self) -> Vec<(JobState, usize)> {
        self.counts_where(None)
    }

    /// Short codes and counts of one cluster's jobs (by its number).
    pub fn state_counts_of(&self, cluster: u16) -> Vec<(String, usize)> {
        self.counts_where(Some(cluster))
            .into_iter()
            .map(|(s, n)| (s.short_code().to_string(), n))
            .collect()
    }

    fn counts_where(&self, cluster: Option<u16>) -> Vec<(JobState, usize)> {
        let mut counts: Vec<(JobState, usize)> = Vec::new();
        for (_, state, n) in self
            .tally
            .iter()
            .filter(|(c, _, _)| cluster.is_none_or(|x| x == *c))
        {
            match counts.iter_mut().find(|(s, _)| s == state) {
                Some((_, c)) => *c += n,
                None => counts.push((state.clone(), *n)),
            }
        }
        let rank = |s: &JobState| {
            JobState::ALL
                .iter()
                .position(|x| x == s)
                .unwrap_or(JobState::ALL.len())
        };
        counts.sort_by_key(|(s, _)| rank(s));
        counts
    }

    /// As [`Self::counts_by_state`] with Slurm's short codes (`PD`, `R`).
    pub fn state_counts(&self) -> Vec<(String, usize)> {
        self.counts_by_state()
            .into_iter()
            .map(|(s, n)| (s.short_code().to_string(), n))
            .collect()
    }

    /// `12 PD · 3 R · 1 CG`; empty for an empty queue.
    pub fn counts_label(&self) -> String {
        self.counts_by_state()
            .iter()
            .map(|(s, n)| format!("{n} {}", s.short_code()))
            .collect::<Vec<_>>()
            .join(" · ")
    }

    // ---- selection ----

    pub fn selected_index(&self) -> Option<usize> {
        (!self.order.is_empty()).then_some(self.cursor)
    }

    pub fn selected_row(&self) -> Option<QueueRow<'_>> {
        self.row(self.cursor)
    }

    /// The selection is an array row that `toggle_expand` would open or fold.
    pub fn selected_is_collapsed(&self) -> bool {
        self.selected_row().is_some_and(|r| r.is_collapsed())
    }

    /// The selection is a task of an array the user expanded.
    pub fn selected_is_expanded(&self) -> bool {
        self.selected_row()
            .and_then(|r| r.array_id())
            .is_some_and(|a| self.expanded.contains(&a))
    }

    /// For a collapsed row, its squeue record (id `123_[4-99]`, which
    /// scancel and scontrol accept).
    pub fn selected_job(&self) -> Option<&Job> {
        self.selected_row().map(|r| r.job)
    }

    pub fn selected_id(&self) -> Option<&JobId> {
        self.selected_job().map(|j| &j.id)
    }

    /// Selects the row of this job if it is shown.
    pub fn select_id(&mut self, id: &JobId) -> bool {
        let found = self.rows().position(|r| r.job.id == *id);
        match found {
            Some(i) => {
                self.select_index(i);
                true
            }
            None => false,
        }
    }

    pub fn select_index(&mut self, i: usize) {
        if self.order.is_empty() {
            return;
        }
        self.cursor = i.min(self.order.len() - 1);
        self.selected = self.selected_row().map(|r| RowKey::of(&r));
        self.scroll_to_cursor();
    }

    /// A click on body row `row` (0 = first row under the header) of a
    /// table showing `height` body rows.
    pub fn click(&mut self, row: usize, height: usize) {
        self.set_viewport(height);
        let i = self.offset_for(height) + row;
        if i < self.order.len() {
            self.select_index(i);
        }
    }

    pub fn select_next(&mut self) {
        self.select_index(self.cursor.saturating_add(1));
    }

    pub fn select_prev(&mut self) {
        self.select_index(self.cursor.saturating_sub(1));
    }

    pub fn select_first(&mut self) {
        self.select_index(0);
    }

    pub fn select_last(&mut self) {
        self.select_index(usize::MAX);
    }

    /// `height`: body rows on screen (see `ui::queue::body_height`).
    pub fn page_down(&mut self, height: usize) {
        self.set_viewport(height);
        self.select_index(self.cursor.saturating_add(height.max(1)));
    }

    pub fn page_up(&mut self, height: usize) {
        self.set_viewport(height);
        self.select_index(self.cursor.saturating_sub(height.max(1)));
    }

    // ---- scrolling ----

    /// The number of body rows the table shows; call when the terminal is
    /// resized so that moving the selection scrolls smoothly.
    pub fn set_viewport(&mut self, height: usize) {
        self.viewport = height;
        self.scroll_to_cursor();
    }

    fn scroll_to_cursor(&mut self) {
        self.offset = window_start(self.offset, self.cursor, self.viewport, self.order.len());
    }

    /// First row to draw in a body of `height` rows: the remembered scroll
    /// position, moved just enough to show the selection. Reads only.
    pub fn offset_for(&self, height: usize) -> usize {
        window_start(self.offset, self.cursor, height, self.order.len())
    }
}

fn window_start(offset: usize, cursor: usize, height: usize, len: usize) -> usize {
    if height == 0 {
        return offset.min(cursor);
    }
    let mut off = offset.min(len.saturating_sub(height));
    if cursor < off {
        off = cursor;
    } else if cursor >= off + height {
        off = cursor + 1 - height;
    }
    off
}

/// Jobs per (cluster, state), a collapsed array counting each of its tasks.
fn tally(jobs: &[Job]) -> Vec<(u16, JobState, usize)> {
    let mut out: Vec<(u16, JobState, usize)> = Vec::new();
    for j in jobs {
        let n =
            j.id.array_pending()
                .map(|s| s.task_count() as usize)
                .unwrap_or(1);
        let c = j.id.cluster();
        match out.iter_mut().find(|(x, s, _)| *x == c && *s == j.state) {
            Some((_, _, k)) => *k += n,
            None => out.push((c, j.state.clone(), n)),
        }
    }
    out
}

fn missing_last(a: &QueueRow, b: &QueueRow, col: Column) -> Ordering {
    // compare() returned None: at least one side lacks the value.
    let has = |r: &QueueRow| col.compare(r, r).is_some();
    has(b).cmp(&has(a))
}

/// The configured columns; CLUSTER after the id when several clusters are shown (unless
/// configured elsewhere), never when one is; PROGRESS once a job's progress is known.
fn shown_columns(configured: &[Column], multi: bool, progress: bool) -> Vec<Column> {
    let mut shown: Vec<Column> = configured
        .iter()
        .copied()
        .filter(|c| multi || *c != Column::Cluster)
        .filter(|c| progress || *c != Column::Progress)
        .collect();
    if multi && !shown.contains(&Column::Cluster) {
        let at = shown
            .iter()
            .position(|c| *c == Column::Id)
            .map_or(0, |i| i + 1);
        shown.insert(at, Column::Cluster);
    }
    shown
}
