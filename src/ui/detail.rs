//! The job detail pane: everything known about the selected job, from the
//! squeue row at once and from scontrol/sacct once loaded.

use chrono::NaiveDateTime;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::theme::Theme;
use crate::app::ProgressView;
use crate::queue::format::{human_ago, human_until, one_line};
use crate::slurm::deptree::DepGraph;
use crate::slurm::model::{Job, JobDetail, JobState, SlurmDuration, Status};
use crate::slurm::reason::{explain, why_no_estimate, Outlook};

pub struct DetailWidget<'a> {
    /// The queue's row; None for a job no longer in the queue.
    pub job: Option<&'a Job>,
    pub detail: Option<&'a JobDetail>,
    pub loading: bool,
    /// The detail read waits for the RPC budget: what to say instead of "loading".
    pub held: Option<&'a str>,
    pub error: Option<&'a str>,
    pub theme: &'a Theme,
    pub now: NaiveDateTime,
    pub focused: bool,
    /// The triage of a finished job, shown under its state.
    pub triage: Option<&'a crate::app::TriageView>,
    /// Where the job sits in its launch's chain of attempts (launched jobs only).
    pub chain: Option<&'a crate::retry::Chain>,
    /// What a sweep's task runs, or the sweep's runs for its folded row (see
    /// [`crate::retry::Chain::sweep_text`]).
    pub sweep: Option<&'a str>,
    /// Rank, priority, fair-share and limits of a pending job.
    pub pending: PendingView<'a>,
    /// How a finished job used what it asked for (from its sacct read).
    pub efficiency: Option<&'a crate::efficiency::Efficiency>,
    /// Live use of a running job (sstat, nvidia-smi).
    pub live: LiveView<'a>,
    /// The user's dependency chains: the state of what the job waits on, what waits on it.
    pub deps: Option<&'a DepGraph>,
    /// When the queue's row (`job`) was read: a running job's elapsed time is its time used
    /// then plus the time since, moving with the clock.
    pub listed_at: Option<NaiveDateTime>,
    /// Progress read from the job's log, and what to do when the time limit comes first.
    pub progress: Option<&'a ProgressView>,
}

pub use live::LiveView;
pub use pending::PendingView;

/// A [`DetailWidget`] scrolled down by `scroll` lines (clamped to the content).
pub struct ScrolledDetail<'a> {
    pub widget: DetailWidget<'a>,
    pub scroll: u16,
}

impl<'a> DetailWidget<'a> {
    pub fn scrolled(self, scroll: u16) -> ScrolledDetail<'a> {
        ScrolledDetail {
            widget: self,
            scroll,
        }
    }
}

const LABEL_W: usize = 12;

/// Cells of the wait chart (`slurm::timeline`) beside the Waited/Waiting value: at most
/// this many, and none when fewer fit on the line.
const TIMELINE_MAX: usize = 30;
const TIMELINE_MIN: usize = 10;

fn time_fmt(t: NaiveDateTime) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

fn exit_text((code, signal): (i32, i32)) -> String {
    match signal {
        0 => code.to_string(),
        s => format!("{code}, killed by signal {s}"),
    }
}

/// Greedy word wrap to `width` cells; words longer than a line are cut.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut cur = String::new();
    let mut cur_w = 0;
    for word in text.split_inclusive(' ') {
        let ww = word.trim_end().width();
        if cur_w > 0 && cur_w + ww > width {
            lines.push(cur.trim_end().to_string());
            cur.clear();
            cur_w = 0;
        }
        for c in word.chars() {
            let cw = c.width().unwrap_or(0);
            if cur_w + cw > width && c != ' ' {
                lines.push(std::mem::take(&mut cur));
                cur_w = 0;
            }
            cur.push(c);
            cur_w += cw;
        }
    }
    if !cur.trim_end().is_empty() || lines.is_empty() {
        lines.push(cur.trim_end().to_string());
    }
    lines
}

struct Lines<'t> {
    out: Vec<Line<'static>>,
    width: usize,
    theme: &'t Theme,
}

impl Lines<'_> {
    fn field(&mut self, label: &str, value: &str, style: Style) {
        if value.is_empty() {
            return;
        }
        let value = one_line(value);
        let avail = self.width.saturating_sub(LABEL_W + 1).max(8);
        for (i, part) in wrap(&value, avail).into_iter().enumerate() {
            let head = if i == 0 {
                format!("{label:<LABEL_W$} ")
            } else {
                " ".repeat(LABEL_W + 1)
            };
            self.out.push(Line::from(vec![
                Span::styled(head, self.theme.label()),
                Span::styled(part, style),
            ]));
        }
    }

    fn plain(&mut self, label: &str, value: &str) {
        self.field(label, value, Style::new());
    }

    fn note(&mut self, text: &str, style: Style) {
        for part in wrap(text, self.width.max(8)) {
            self.out.push(Line::styled(part, style));
        }
    }

    fn gap(&mut self) {
        if self.out.last().is_some_and(|l| l.width() > 0) {
            self.out.push(Line::default());
        }
    }
}

/// What the job waits on, one condition a line with the state of the job it names (from
/// the dashboard's chains, when it knows it) and whether it can still be met, and a warning
/// when the job can never start on them (Slurm's text as it is when it cannot be read).
fn dependency_lines(l: &mut Lines<'_>, text: &str, chains: Option<(&DepGraph, u16, &str)>) {
    use crate::slurm::dependency::{Dependency, Join, Met};
    let Some(d) = Dependency::parse(text) else {
        l.plain("Dependency", text);
        return;
    };
    let many = d.conditions.len() > 1;
    for (i, c) in d.conditions.iter().enumerate() {
        let parent = chains
            .zip(c.job.as_deref())
            .and_then(|((g, k, _), j)| g.node(k, j));
        let mut what = match &c.job {
            Some(job) => format!("{} {job}", c.kind),
            None => format!("{} (the last of your jobs of this name)", c.kind),
        };
        if let Some(p) = parent {
            if !p.name.is_empty() {
                what.push_str(&format!(" {}", one_line(&p.name)));
            }
            match (&p.state, p.job.is_some()) {
                (Some(s), true) => what.push_str(&format!(" ({})", s.long_name())),
                (Some(s), false) => what.push_str(&format!(" ({}, left the queue)", s.long_name())),
                (None, _) => what.push_str(" (left the queue)"),
            }
        }
        let ended_otherwise = parent.and_then(|p| p.state.as_ref()).is_some_and(|s| {
            s.is_finished() && (*s == JobState::Completed) == (c.kind == "afternotok")
        });
        let (state, style) = match c.met {
            Met::Never => ("never: it did not end that way", l.theme.error()),
            Met::Waiting
                if ended_otherwise && matches!(c.kind.as_str(), "afterok" | "afternotok") =>
            {
                ("never: it did not end that way", l.theme.error())
            }
            Met::Waiting if c.kind == "afterok" && parent.is_some_and(|p| p.never) => {
                ("never: it can never start itself", l.theme.error())
            }
            Met::Waiting => ("not yet", Style::new()),
            Met::Unknown => ("as Slurm says", Style::new()),
        };
        let label = match (i, d.join, many) {
            (0, _, _) => "Waits on",
            (_, Join::All, _) => "and",
            (_, Join::Any, _) => "or",
        };
        l.field(label, &format!("{what} · {state}"), style);
    }
    let doomed = chains
        .and_then(|(g, k, id)| g.node(k, id))
        .is_some_and(|n| n.never);
    if !d.can_be_met() || doomed {
        l.note(
            "  this job can never start on its dependencies: cancel it (d)",
            l.theme.warn(),
        );
    }
}

/// The jobs that wait on this one, each with how, its state and whether it can still start.
fn waiter_lines(l: &mut Lines<'_>, g: &DepGraph, cluster: u16, id: &str) {
    for (i, (n, link)) in g.waiters(cluster, id).into_iter().enumerate() {
        let label = if i == 0 { "Waited on by" } else { "" };
        let state = n.state.as_ref().map_or("?", |s| s.long_name());
        let mut text = format!("{} {} ({}) · {state}", n.id, one_line(&n.name), link.kind);
        let style = if n.never {
            text.push_str(" · can never start");
            l.theme.error()
        } else {
            Style::new()
        };
        l.field(label, &text, style);
    }
}

/// `Progress  62 % · ETA 5 h 10 m · limit in 3 h`, where it was read, and when the estimate
/// lands after the time limit, the warning and what to do.
fn progress_lines(l: &mut Lines<'_>, p: &ProgressView, running: bool, now: NaiveDateTime) {
    let s = &p.summary;
    if !running {
        // Ended: where it got to (`98 % · the job completed`); else (requeued, suspended)
        // the last reading, which may move again.
        let text = match s.ended() {
            Some(_) => s.line(now),
            None => format!("{} % when last read", s.percent()),
        };
        l.field("Progress", &text, l.theme.dim());
        l.field("", &s.source_line(now), l.theme.dim());
        return;
    }
    let late = s.late();
    let style = if late { l.theme.warn() } else { Style::new() };
    l.field("Progress", &s.line(now), style);
    l.field("", &s.source_line(now), l.theme.dim());
    if late {
        l.field("Warning", "reaches its time limit first", l.theme.warn());
        l.field("To do", &p.advice, l.theme.warn());
    }
}

impl DetailWidget<'_> {
    fn title(&self) -> String {
        let id = self.job.map(|j| j.id.to_string()).or_else(|| {
            self.detail
                .and_then(|d| d.id.as_ref())
                .map(|i| i.to_string())
        });
        let name = self
            .job
            .map(|j| j.name.as_str())
            .or(self.detail.map(|d| d.name.as_str()))
            .unwrap_or("");
        match id {
            Some(id) => format!(" job {id} · {} ", one_line(name)),
            None => " job ".to_string(),
        }
    }

    /// The content at `width` cells, before scrolling.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let t = self.theme;
        let mut l = Lines {
            out: Vec::new(),
            width: usize::from(width),
            theme: t,
        };
        if let Some(e) = self.error {
            l.note(&format!("could not load details: {e}"), t.error());
            l.gap();
        }
        let (j, d) = (self.job, self.detail);
        if j.is_none() && d.is_none() {
            if self.error.is_none() {
                l.note("no job selected", t.dim());
            }
            return l.out;
        }
        // On top, where a short pane still shows it: what is shown is the queue's row
        // until scontrol answers (or the RPC budget lets the read go).
        if self.loading {
            match self.held {
                Some(why) => l.note(why, t.dim()),
                None => l.note("loading details…", t.dim()),
            }
        }
        // The queue keeps NAME to what most names need: a name the title cannot hold in
        // full is shown whole here.
        let name = j.map(|j| j.name.as_str()).or(d.map(|d| d.name.as_str()));
        if let Some(n) = name.filter(|_| self.title().width() > usize::from(width)) {
            l.plain("Name", n);
        }
        if let Some(p) = j.and_then(|j| j.problem.as_deref()) {
            l.field(
                "Problem",
                &format!("squeue's record of this job did not read cleanly; shown is what could be read ({p})"),
                t.error(),
            );
            l.gap();
        }
        let dd = d.cloned().unwrap_or_default();
        let state = dd
            .state
            .clone()
            .or_else(|| j.map(|j| j.state.clone()))
            .unwrap_or(JobState::Unknown("?".into()));
        let status = state.status();
        let pending = status == Status::Pending;

        // What it is doing, and why it waits.
        let mut raw = state.long_name().to_string();
        if let Some(uid) = dd.cancelled_by {
            raw.push_str(&format!(" by {uid}"));
        }
        // COMPLETED with a status.json that reports a failure is an Error.
        let status = match super::triage::refined_status(self.triage, &state) {
            Some(refined) => {
                raw.push_str(", status.json");
                refined
            }
            None => status,
        };
        l.field(
            "State",
            &format!("{} ({raw})", status_word(status)),
            t.status_style(status),
        );
        // The queue's reason is the freshest (the detail was fetched once on selection).
        let reason = j
            .and_then(|j| j.reason.as_deref())
            .or(dd.reason.as_deref())
            .filter(|r| *r != "None")
            .map(str::to_string);
        if let Some(r) = reason {
            if pending {
                let ctx = self.reason_context(&dd);
                let e = explain(&r, &ctx);
                let style = if e.outlook == Outlook::Never {
                    t.warn()
                } else {
                    Style::new()
                };
                l.field("Reason", &format!("{r}: {}", e.words), style);
                if let Some(fix) = e.fix {
                    l.field("To do", &fix, style);
                }
            } else {
                l.field("Reason", &r, Style::new());
            }
        }
        if let Some(code) = dd.exit_code.filter(|_| state.is_finished()) {
            let style = if code != (0, 0) {
                t.error()
            } else {
                Style::new()
            };
            l.field("Exit code", &exit_text(code), style);
        }
        if let Some(code) = dd.derived_exit_code.filter(|c| *c != (0, 0)) {
            l.field("Derived exit", &exit_text(code), t.error());
        }
        for (label, value, style) in self
            .triage
            .map(|v| super::triage::rows(v, t))
            .unwrap_or_default()
        {
            l.field(label, &value, style);
        }
        if let Some(e) = self.efficiency.filter(|_| state.is_finished()) {
            super::efficiency::rows(
                e,
                &mut |label, value, style| l.field(label, &value, style),
                t,
            );
        }
        if let Some(c) = self.chain {
            let style = if c.attempt > 1 {
                t.warn()
            } else {
                Style::new()
            };
            l.field("Attempts", &c.describe(), style);
            if let Some(code) = &c.code {
                l.plain("Code", code.strip_prefix("code ").unwrap_or(code));
            }
        }
        if let Some(text) = self.sweep {
            l.plain("Sweep", text);
        }
        l.gap();

        // When.
        let submit = dd.submit_time.or(j.and_then(|j| j.submit_time));
        let start = dd.start_time.or(j.and_then(|j| j.start_time));
        let at = |t0: NaiveDateTime, rel: String| format!("{} ({rel})", time_fmt(t0));
        if let Some(s) = submit {
            l.plain("Submitted", &at(s, human_ago(s, self.now)));
        }
        if let Some(e) = dd.eligible_time.filter(|e| Some(*e) != submit) {
            l.plain("Eligible", &time_fmt(e));
        }
        // sacct reports the end as the start of a job that ended while
        // pending ("None assigned" nodes): it never ran.
        let never_ran = state.is_finished()
            && d.is_some_and(|d| d.node_list.as_deref().is_none_or(|n| n == "None assigned"));
        match (pending, start) {
            // squeue's %S: the scheduler's estimate for a pending job.
            (true, _) => match start {
                Some(s) => {
                    // ◆ marks the estimate on the wait's chart, where there is room for one.
                    let text = at(s, human_until(s, self.now));
                    let marked = format!("{text} {}", crate::slurm::timeline::ESTIMATE);
                    let fits = marked.width() <= l.width.saturating_sub(LABEL_W + 1);
                    l.plain("Est. start", if fits { &marked } else { &text })
                }
                None => {
                    let r = dd.reason.as_deref().or(j.and_then(|j| j.reason.as_deref()));
                    l.field("Est. start", &why_no_estimate(r), t.dim())
                }
            },
            (false, _) if never_ran => l.field("Started", "never (ended while pending)", t.dim()),
            (false, Some(s)) => l.plain("Started", &at(s, human_ago(s, self.now))),
            (false, None) => {}
        }
        // The wait, with its chart beside it where the pane has room: submit → eligible →
        // start, for a pending job beside how long similar jobs waited (the line under
        // it names their marks) and the scheduler's estimate (◆).
        let waited = self.pending.waited.filter(|_| pending);
        let chart = |sub: NaiveDateTime, room: usize| {
            (room >= TIMELINE_MIN).then(|| {
                crate::slurm::timeline::chart(
                    &crate::slurm::timeline::Wait {
                        submit: sub,
                        eligible: dd.eligible_time,
                        start: start.filter(|_| !pending),
                        now: self.now,
                        estimate: start.filter(|_| pending),
                        similar: waited.as_ref(),
                    },
                    room.min(TIMELINE_MAX),
                )
                .bar
            })
        };
        let avail = l.width.saturating_sub(LABEL_W + 1);
        let with_chart = |text: String, sub: NaiveDateTime| match chart(
            sub,
            avail.saturating_sub(text.width() + 1),
        ) {
            Some(bar) => format!("{text} {bar}"),
            None => text,
        };
        if let (false, false, Some(s), Some(sub)) = (pending, never_ran, start, submit) {
            let secs = (s - sub).num_seconds().max(0) as u64;
            let mut text = SlurmDuration::from_secs(secs).human();
            let held = dd
                .eligible_time
                .map_or(0, |e| (e.min(s) - sub).num_seconds().max(0) as u64);
            if held > 0 {
                text.push_str(&format!(
                    " ({} held)",
                    SlurmDuration::from_secs(held).human()
                ));
            }
            l.plain("Waited", &with_chart(text, sub));
        } else if let (true, Some(sub)) = (pending, submit) {
            let secs = (self.now - sub).num_seconds().max(0) as u64;
            let text = SlurmDuration::from_secs(secs).human();
            l.plain("Waiting", &with_chart(text, sub));
        }
        if let Some(w) = waited {
            l.field("", &w.text(), t.dim());
        }
        if let Some(e) = dd.end_time.filter(|_| !pending) {
            let label = if state.is_finished() {
                "Ended"
            } else {
                "Ends by"
            };
            let rel = if e > self.now {
                human_until(e, self.now)
            } else {
                human_ago(e, self.now)
            };
            l.plain(label, &at(e, rel));
        }
        // A running job's elapsed time moves with the clock, not with the last read (from
        // the time used squeue said, so a suspended spell stays out of it).
        let since_read = |used: SlurmDuration, at: NaiveDateTime| {
            let used = used.known()?.as_secs();
            let more = (self.now - at).num_seconds().max(0) as u64;
            Some(SlurmDuration::from_secs(used + more))
        };
        let elapsed = match (state.status() == Status::Running, j, self.listed_at) {
            (true, Some(j), Some(at)) => since_read(j.time_used, at),
            _ => None,
        }
        .or(dd.elapsed)
        .or(j.map(|j| j.time_used));
        let limit = dd.time_limit.or(j.map(|j| j.time_limit));
        if let Some(lim) = limit {
            let text = match elapsed.filter(|_| !pending) {
                Some(e) => format!("{} of {}", e.to_slurm(), lim.to_slurm()),
                None => lim.to_slurm(),
            };
            l.plain(if pending { "Time limit" } else { "Elapsed" }, &text);
        }
        if let Some(p) = self.progress {
            progress_lines(&mut l, p, state.status() == Status::Running, self.now);
        }
        l.gap();

        if pending {
            self.pending_lines(&mut l, &dd);
        }
        if state.status() == Status::Running {
            self.live_lines(&mut l, &dd);
        }

        // Where and with what.
        let pick = |a: &Option<String>, b: Option<&str>| a.clone().or(b.map(str::to_string));
        l.plain(
            "Partition",
            &pick(&dd.partition, j.map(|j| j.partition.as_str())).unwrap_or_default(),
        );
        let account = pick(&dd.account, j.map(|j| j.account.as_str())).unwrap_or_default();
        let qos = pick(&dd.qos, j.map(|j| j.qos.as_str())).unwrap_or_default();
        l.plain("Account/QOS", &format!("{account} / {qos}"));
        if let Some(p) = dd.priority.or(j.and_then(|j| j.priority)) {
            l.plain("Priority", &p.to_string());
        }
        if let Some(u) = dd.user.clone().or(j.map(|j| j.user.to_string())) {
            l.plain("User", &u);
        }
        let nodes = dd.nodes.or(j.map(|j| j.nodes)).unwrap_or(0);
        let node_list = pick(&dd.node_list, j.and_then(|j| j.node_list.as_deref()))
            .filter(|n| !n.is_empty() && n != "None assigned");
        let mut where_ = format!("{nodes}");
        if let Some(n) = &node_list {
            where_.push_str(&format!(": {n}"));
        } else if let Some(s) = dd.field("SchedNodeList").filter(|s| !s.is_empty()) {
            where_.push_str(&format!(", expected on {s}"));
        }
        l.plain("Nodes", &where_);
        let cpus = dd.cpus.or(j.map(|j| j.cpus)).unwrap_or(0);
        let mem = pick(&dd.min_memory, j.and_then(|j| j.min_memory.as_deref()));
        let gpus = match d {
            Some(d) => d.gpus().max(j.map_or(0, |j| j.gpus())),
            None => j.map_or(0, |j| j.gpus()),
        };
        let mut res = vec![format!("{cpus} CPU{}", plural(cpus))];
        // Asked per CPU (`--mem-per-cpu`): the figure alone would read as the job's.
        let in_all = || {
            dd.tres
                .as_deref()?
                .split(',')
                .find_map(|kv| kv.strip_prefix("mem="))
        };
        match (dd.field("MinMemoryCPU").filter(|m| !m.is_empty()), mem) {
            (Some(per_cpu), _) => match in_all() {
                Some(all) => res.push(format!("{per_cpu} per CPU, {all} in all")),
                None => res.push(format!("{per_cpu} memory per CPU")),
            },
            (None, Some(m)) => res.push(format!("{m} memory")),
            (None, None) => {}
        }
        if gpus > 0 {
            res.push(format!("{gpus} GPU{}", plural(gpus)));
        }
        l.plain("Resources", &res.join(" · "));
        if let Some(tres) = dd.tres.as_deref() {
            l.field("TRES", tres, t.dim());
        } else if let Some(tpn) = j.and_then(|j| j.tres_per_node.as_deref()) {
            l.field("TRES/node", tpn, t.dim());
        }
        l.gap();

        // Files.
        let work_dir = pick(&dd.work_dir, j.map(|j| j.work_dir.as_str())).unwrap_or_default();
        l.plain("Work dir", &work_dir);
        let out = dd.stdout.clone();
        // A folded pending array's logs are a pattern: one file per task (`%a`).
        let folded = dd
            .id
            .as_ref()
            .or(j.map(|j| &j.id))
            .is_some_and(|i| i.array_pending().is_some());
        let per_task = |p: &str| match folded && !p.is_empty() {
            true => format!(
                "{} (one file per task)",
                crate::slurm::logpath::per_task_pattern(p)
            ),
            false => p.to_string(),
        };
        l.plain("Stdout", &per_task(out.as_deref().unwrap_or("")));
        if dd.stderr.is_some() && dd.stderr != out {
            l.plain("Stderr", &per_task(dd.stderr.as_deref().unwrap_or("")));
        } else if dd.stderr.is_some() {
            l.field("Stderr", "same file as stdout", t.dim());
        }
        match dd.command.as_deref() {
            Some(c) => l.plain("Command", c),
            None if dd.field("BatchFlag") == Some("1") => {
                l.field("Script", "given to sbatch on stdin (no file)", t.dim())
            }
            None => {}
        }
        l.gap();

        // Arrays, het jobs, dependencies, requeue.
        let array_job = dd.array_job_id.or(j.and_then(|j| j.array_job_id));
        let task = dd
            .array_task
            .clone()
            .or(j.and_then(|j| j.array_task.as_deref().map(str::to_string)));
        if let (Some(a), Some(task)) = (array_job, task) {
            let id = dd.id.as_ref().or(j.map(|j| &j.id));
            let text = match id.and_then(|i| i.array_pending()) {
                Some(spec) => format!(
                    "tasks {task} of array {a} ({}{} pending)",
                    spec.task_count(),
                    if spec.truncated { "+" } else { "" }
                ),
                None => match dd.field("JobId").filter(|own| own.parse() != Ok(a)) {
                    Some(own) => format!("task {task} of array {a} (job id {own})"),
                    None => format!("task {task} of array {a}"),
                },
            };
            l.plain("Array", &text);
        }
        let het = dd.het_offset.or(j.and_then(|j| j.id.het_offset()));
        if let Some(off) = het {
            let leader = dd.het_job_id.or(j.map(|j| j.id.base())).unwrap_or(0);
            l.plain("Het job", &format!("component +{off} of {leader}"));
        }
        let own = j
            .map(|j| (j.id.cluster(), j.id.as_str()))
            .or(dd.id.as_ref().map(|id| (id.cluster(), id.as_str())));
        let chains = self.deps.zip(own).map(|(g, (k, id))| (g, k, id));
        // scontrol's, else the queue row's (squeue's %E: the same text).
        let dep = dd
            .dependency
            .as_deref()
            .or(j.and_then(|j| j.dependency.as_deref()));
        if let Some(dep) = dep.filter(|d| *d != "(null)") {
            dependency_lines(&mut l, dep, chains);
        }
        if let Some((g, k, id)) = chains {
            waiter_lines(&mut l, g, k, id);
        }
        if dd.requeue.is_some() || dd.restarts.is_some() {
            let rq = match dd.requeue {
                Some(true) => "requeue on failure",
                Some(false) => "no requeue",
                None => "",
            };
            let rs = dd.restarts.map(|n| format!("{n} restart{}", plural(n)));
            let text: Vec<&str> = [Some(rq), rs.as_deref()]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect();
            l.plain("Requeue", &text.join(", "));
        }
        while l.out.last().is_some_and(|x| x.width() == 0) {
            l.out.pop();
        }
        l.out
    }

    fn render_at(self, area: Rect, buf: &mut Buffer, scroll: u16) {
        let t = self.theme;
        let block = Block::bordered()
            .border_style(t.border(self.focused))
            .title(Span::styled(self.title(), t.title()));
        let inner = block.inner(area);
        let lines = self.lines(inner.width);
        let max = (lines.len() as u16).saturating_sub(inner.height);
        Paragraph::new(lines)
            .block(block)
            .scroll((scroll.min(max), 0))
            .render(area, buf);
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Pending => "Pending",
        Status::Running => "Running",
        Status::Complete => "Complete",
        Status::Error => "Error",
        Status::Canceled => "Canceled",
        Status::Paused => "Paused",
        Status::Unknown => "Unknown",
    }
}

impl Widget for DetailWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.render_at(area, buf, 0);
    }
}

impl Widget for ScrolledDetail<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.widget.render_at(area, buf, self.scroll);
    }
}

#[path = "detail_pending.rs"]
mod pending;

#[path = "detail_live.rs"]
mod live;

/// For tests: a pane with nothing in it (no job, no detail, nothing loading, not focused),
/// to fill in with struct update syntax.
#[cfg(test)]
impl<'a> DetailWidget<'a> {
    pub(crate) fn blank(theme: &'a Theme, now: NaiveDateTime) -> DetailWidget<'a> {
        DetailWidget {
            job: None,
            detail: None,
            loading: false,
            held: None,
            error: None,
            theme,
            now,
            focused: false,
            triage: None,
            chain: None,
            sweep: None,
            pending: PendingView::default(),
            efficiency: None,
            live: LiveView::default(),
            deps: None,
            listed_at: None,
            progress: None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "detail_tests.rs"]
mod tests;
