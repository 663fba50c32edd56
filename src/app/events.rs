//! Changes of the user's own jobs between queue refreshes, kept as an event log (the
//! `:events` view), shown on the status bar and handed to the dashboard as notifications.
//!
//! Detection is pure: it compares each refresh's job list with the previous one by job id.
//! squeue drops a job as soon as it ends, so a job that vanishes without a final state is
//! logged once its final state is known: from a later job list that carries it (sacct rows
//! merged into the queue), from a detail fetch, or from the sacct part of the next refresh
//! (`Msg::PollExtra`); after that many lookups without one, as "left the queue".

use std::collections::{HashMap, VecDeque};

use chrono::NaiveDateTime;

use crate::action::Cmd;
use crate::notify::Notification;
use crate::slurm::model::{Job, JobDetail, JobId, JobState, Status};

use super::App;

/// Seconds the newest event stays on the status bar (when nothing more urgent is shown).
pub const STATUS_LINE_SECS: i64 = 60;
/// Events kept for the `:events` view.
pub const EVENT_LOG_CAP: usize = 1000;
/// sacct lookups for a vanished job before it is logged as "left the queue" (its final state
/// unknown): as many as the refresh asks sacct about a departed job.
const FINAL_LOOKUPS: u32 = crate::app::insight::SACCT_TRIES as u32;
/// Failures triaged automatically per batch of final states (each reads up to two log tails).
const AUTO_TRIAGE: usize = 5;
/// More changes than this in one refresh become one summary notification.
const NOTIFY_EACH_UP_TO: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    Started,
    Completed,
    Failed,
    Cancelled,
    Requeued,
    /// Gone from squeue, final state not known yet.
    LeftQueue,
    /// slurmdash re-submitted a job (reported by the retry logic through `push_event`).
    Retried,
    /// The user cancelled it from slurmdash.
    CancelledByYou,
    Note,
}

impl EventKind {
    pub fn word(self) -> &'static str {
        match self {
            EventKind::Started => "started",
            EventKind::Completed => "completed",
            EventKind::Failed => "failed",
            EventKind::Cancelled => "cancelled",
            EventKind::Requeued => "requeued",
            EventKind::LeftQueue => "left the queue",
            EventKind::Retried => "retried",
            EventKind::CancelledByYou => "cancelled by you",
            EventKind::Note => "note",
        }
    }

    /// Worth a bell / desktop notification (the rest only goes to the log and status bar).
    pub fn notifies(self) -> bool {
        !matches!(self, EventKind::LeftQueue | EventKind::Note)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub at: NaiveDateTime,
    pub job: Option<JobId>,
    pub name: String,
    pub kind: EventKind,
    /// The whole line as the log shows it (without the time).
    pub text: String,
}

/// What is kept per listed job between refreshes: 16 bytes plus the map's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    status: Status,
    /// The refresh that last listed the job.
    generation: u64,
}

/// FNV-1a: job ids come from our own cluster, so no hash flooding to guard against, and a
/// 20,000-job refresh does 20,000 lookups on the UI thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// A job id as a 64-bit FNV-1a hash of its text: 20,000 ids collide with odds of about
/// 1 in 10^10, and the map holds no strings.
pub(crate) fn id_key(id: &JobId) -> u64 {
    use std::hash::Hasher;
    let mut h = Fnv::default();
    h.write(id.as_str().as_bytes());
    h.finish()
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Vanished {
    name: String,
    lookups: u32,
}

/// Whose jobs count as "own" for events.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Own {
    /// The queue lists only the user's jobs (`squeue --me`).
    #[default]
    Listed,
    /// The queue lists other users too: only this user's jobs count.
    User(String),
    /// Not the user's queue (e.g. `--user=someone`): no events.
    Nobody,
}

#[derive(Debug, Clone, Default)]
pub struct Events {
    pub log: VecDeque<Event>,
    pub own: Own,
    /// The `:events` view is open, scrolled this many lines up from the newest.
    pub open: bool,
    pub scroll: usize,
    prev: FastMap<u64, Seen>,
    vanished: HashMap<JobId, Vanished>,
    baseline: bool,
    generation: u64,
    /// Jobs the user cancelled from slurmdash (`push_event(CancelledByYou)`).
    cancelled_by_you: std::collections::HashSet<JobId>,
}

fn kind_for(o: Option<Status>, new: &JobState) -> Option<EventKind> {
    let n = new.status();
    if o == Some(n) {
        return None;
    }
    Some(match n {
        Status::Running if o == Some(Status::Pending) || o.is_none() => EventKind::Started,
        Status::Pending if o == Some(Status::Running) => EventKind::Requeued,
        Status::Complete => EventKind::Completed,
        Status::Error => EventKind::Failed,
        Status::Canceled => EventKind::Cancelled,
        _ => return None,
    })
}

fn line(kind: EventKind, id: &JobId, name: &str, state: Option<&JobState>, extra: &str) -> String {
    let name = crate::queue::format::one_line(name);
    let mut s = format!("job {id} {name} {}", kind.word());
    match (kind, state) {
        (EventKind::Failed | EventKind::Cancelled, Some(st)) => {
            s.push_str(&format!(" ({})", st.long_name()));
        }
        (EventKind::LeftQueue, _) => s.push_str(" (sacct does not know its final state)"),
        _ => {}
    }
    if !extra.is_empty() {
        s.push(' ');
        s.push_str(extra);
    }
    s
}

fn event(
    at: NaiveDateTime,
    kind: EventKind,
    id: &JobId,
    name: &str,
    state: Option<&JobState>,
    extra: &str,
) -> Event {
    Event {
        at,
        job: Some(id.clone()),
        name: name.to_string(),
        kind,
        text: line(kind, id, name, state, extra),
    }
}

impl Events {
    fn is_own(&self, j: &Job) -> bool {
        match &self.own {
            Own::Listed => true,
            Own::User(u) => j.user.as_str() == u,
            Own::Nobody => false,
        }
    }

    /// Compares a refresh's jobs with the previous ones (`old`, the list they replace,
    /// names the jobs that left). The first list only sets the baseline: jobs that were
    /// already running at start are not news.
    pub fn on_jobs(&mut self, old: &[Job], jobs: &[Job], at: NaiveDateTime) -> Vec<Event> {
        // Updated in place: an unchanged refresh only looks ids up.
        self.generation += 1;
        let (generation, baseline) = (self.generation, self.baseline);
        let mut out = Vec::new();
        for j in jobs {
            if !self.is_own(j) {
                continue;
            }
            let status = j.state.status();
            let kind = match self.prev.get_mut(&id_key(&j.id)) {
                Some(seen) => {
                    let kind = kind_for(Some(seen.status), &j.state);
                    seen.status = status;
                    seen.generation = generation;
                    kind
                }
                None => {
                    self.prev.insert(id_key(&j.id), Seen { status, generation });
                    if self.vanished.contains_key(&j.id) && j.state.is_finished() {
                        // Back with its final state after leaving squeue.
                        kind_for(None, &j.state)
                    } else if status == Status::Running {
                        // New and already running (submitted and started between
                        // refreshes, or an array task split off its pending array).
                        Some(EventKind::Started)
                    } else {
                        None
                    }
                }
            };
            if let Some(k) = kind.filter(|_| baseline) {
                let extra = match (k, j.node_list.as_deref()) {
                    (EventKind::Started, Some(n)) if !n.is_empty() => format!("on {n}"),
                    _ => String::new(),
                };
                out.push(event(at, k, &j.id, &j.name, Some(&j.state), &extra));
            }
            if j.state.is_finished() && !self.vanished.is_empty() {
                self.vanished.remove(&j.id);
            }
        }
        if baseline {
            // A collapsed pending array (`12_[3-9]`) changes id as tasks start: not gone.
            let mut gone: Vec<&Job> = old
                .iter()
                .filter(|o| {
                    self.is_own(o)
                        && !o.state.is_finished()
                        && o.id.array_pending().is_none()
                        && self
                            .prev
                            .get(&id_key(&o.id))
                            .is_some_and(|s| s.generation != generation)
                })
                .collect();
            gone.sort_by(|a, b| (a.id.base(), a.id.as_str()).cmp(&(b.id.base(), b.id.as_str())));
            gone.dedup_by(|a, b| a.id == b.id);
            // Logged once sacct has the final state (the next refresh asks), or as
            // "left the queue" when it never does (`count_lookup`).
            for o in gone {
                self.vanished.insert(
                    o.id.clone(),
                    Vanished {
                        name: o.name.clone(),
                        lookups: 0,
                    },
                );
            }
        }
        self.prev.retain(|_, s| s.generation == generation);
        self.baseline = true;
        out
    }

    /// Counts a sacct lookup for each id; those that reach the limit without a final state
    /// are given up on and logged as "left the queue".
    pub fn count_lookup(&mut self, ids: &[JobId], at: NaiveDateTime) -> Vec<Event> {
        let mut out = Vec::new();
        for id in ids {
            let Some(v) = self.vanished.get_mut(id) else {
                continue;
            };
            v.lookups += 1;
            if v.lookups >= FINAL_LOOKUPS {
                if let Some(v) = self.vanished.remove(id) {
                    out.push(event(at, EventKind::LeftQueue, id, &v.name, None, ""));
                }
            }
        }
        out
    }

    /// A final state learned for a job (sacct, a detail fetch): refines "left the queue".
    pub fn on_final(&mut self, id: &JobId, state: &JobState, at: NaiveDateTime) -> Option<Event> {
        if !state.is_finished() {
            return None;
        }
        let v = self.vanished.remove(id)?;
        let kind = kind_for(None, state)?;
        Some(event(at, kind, id, &v.name, Some(state), ""))
    }

    /// The newest event for the status bar, while it is recent.
    pub fn status_line(&self, now: NaiveDateTime) -> Option<String> {
        let e = self.log.back()?;
        let age = (now - e.at).num_seconds();
        (age < STATUS_LINE_SECS).then(|| format!("{} {}", e.at.format("%H:%M:%S"), e.text))
    }

    pub fn push(&mut self, e: Event) {
        self.log.push_back(e);
        while self.log.len() > EVENT_LOG_CAP {
            self.log.pop_front();
        }
    }
}

/// The notification for the events of one refresh: each alone, or a summary when many
/// jobs changed at once (an array finishing).
pub fn notifications(events: &[Event], cluster: &str) -> Vec<Notification> {
    let notable: Vec<&Event> = events.iter().filter(|e| e.kind.notifies()).collect();
    if notable.len() <= NOTIFY_EACH_UP_TO {
        return notable
            .iter()
            .map(|e| Notification {
                title: format!("slurmdash · {cluster}"),
                body: e.text.clone(),
                urgent: matches!(e.kind, EventKind::Failed),
            })
            .collect();
    }
    let mut counts: Vec<(EventKind, usize)> = Vec::new();
    for e in &notable {
        match counts.iter_mut().find(|(k, _)| *k == e.kind) {
            Some((_, n)) => *n += 1,
            None => counts.push((e.kind, 1)),
        }
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(k, n)| format!("{n} {}", k.word()))
        .collect();
    vec![Notification {
        title: format!("slurmdash · {cluster}"),
        body: format!("{} jobs changed: {}", notable.len(), parts.join(", ")),
        urgent: notable.iter().any(|e| e.kind == EventKind::Failed),
    }]
}

impl App {
    /// Records events: the log, the status bar, and notifications for the dashboard.
    fn record(&mut self, events: Vec<Event>) -> Vec<Cmd> {
        if events.is_empty() {
            return Vec::new();
        }
        // The user already knows about jobs they cancelled from slurmdash.
        let news: Vec<Event> = events
            .iter()
            .filter(|e| {
                !(e.kind == EventKind::Cancelled
                    && e.job
                        .as_ref()
                        .is_some_and(|j| self.cluster.events.cancelled_by_you.contains(j)))
            })
            .cloned()
            .collect();
        let cmds = notifications(&news, &self.cluster.name)
            .into_iter()
            .map(Cmd::Notify)
            .collect();
        for e in events {
            self.cluster.events.push(e);
        }
        cmds
    }

    /// An event from elsewhere in the App (e.g. "retry submitted", "cancelled by you"):
    /// logged, shown on the status bar, notified as configured. Returns the commands to run.
    /// After `CancelledByYou` for a job, its later CANCELLED state is logged but not notified.
    pub fn push_event(
        &mut self,
        job: Option<&JobId>,
        name: &str,
        kind: EventKind,
        text: &str,
    ) -> Vec<Cmd> {
        self.push_events(vec![(
            job.cloned(),
            name.to_string(),
            kind,
            text.to_string(),
        )])
    }

    /// Several events at once (one summary notification when there are many).
    pub fn push_events(
        &mut self,
        events: Vec<(Option<JobId>, String, EventKind, String)>,
    ) -> Vec<Cmd> {
        let at = self.now;
        let mut out = Vec::with_capacity(events.len());
        for (job, name, kind, text) in events {
            if let (EventKind::CancelledByYou, Some(id)) = (kind, &job) {
                self.cluster.events.cancelled_by_you.insert(id.clone());
            }
            out.push(Event {
                at,
                job,
                name,
                kind,
                text,
            });
        }
        self.record(out)
    }

    /// Jobs cancelled from slurmdash: logged as such (their CANCELLED state is then not
    /// notified again).
    pub(super) fn cancelled_by_you(&mut self, ids: &[JobId]) -> Vec<Cmd> {
        let wanted: std::collections::HashSet<&JobId> = ids.iter().collect();
        let names: HashMap<&JobId, &str> = self
            .queue
            .jobs()
            .iter()
            .filter(|j| wanted.contains(&j.id))
            .map(|j| (&j.id, j.name.as_str()))
            .collect();
        let events = ids
            .iter()
            .map(|id| {
                let name = names.get(id).copied().unwrap_or("");
                let text = line(EventKind::CancelledByYou, id, name, None, "");
                (
                    Some(id.clone()),
                    name.to_string(),
                    EventKind::CancelledByYou,
                    text,
                )
            })
            .collect();
        self.push_events(events)
    }

    /// Called with every successful queue refresh, before the list replaces the old one.
    pub(super) fn track_jobs(&mut self, jobs: &[Job]) -> Vec<Cmd> {
        let ix = self.multi().then_some(self.cluster.ix);
        let previous = super::clusters::jobs_of(&self.queue, ix);
        let events = self.cluster.events.on_jobs(&previous, jobs, self.now);
        self.record(events)
    }

    /// The sacct part of a refresh (asked about jobs that left squeue): final states refine
    /// "left the queue"; ids asked about count towards giving up on them.
    pub(super) fn on_sacct_finals(&mut self, asked: &[JobId], details: &[JobDetail]) -> Vec<Cmd> {
        let mut cmds = self.final_states_known(details);
        let unknown = self.cluster.events.count_lookup(asked, self.now);
        cmds.extend(self.record(unknown));
        cmds
    }

    /// Refines "left the queue" events with final states from anywhere (sacct rows, details).
    /// Failures are then triaged (a few per batch) so the log can say why.
    pub fn final_states_known(&mut self, details: &[JobDetail]) -> Vec<Cmd> {
        let now = self.now;
        let mut events = Vec::new();
        let mut triage = Vec::new();
        for d in details {
            let (Some(id), Some(state)) = (d.id.as_ref(), d.state.as_ref()) else {
                continue;
            };
            let Some(e) = self.cluster.events.on_final(id, state, now) else {
                continue;
            };
            let selected_triaging =
                self.detail.id.as_ref() == Some(id) && self.detail.triage.is_some();
            if e.kind == EventKind::Failed && !selected_triaging && triage.len() < AUTO_TRIAGE {
                triage.push(Cmd::Triage {
                    id: id.clone(),
                    detail: Box::new(d.clone()),
                    source: crate::payload::DetailSource::Sacct,
                    results_dir: self.results_dir(id),
                });
            }
            events.push(e);
        }
        let mut cmds = self.record(events);
        cmds.extend(triage);
        cmds
    }

    /// A triage arrived: the job's latest failure event says the class and the evidence.
    pub(super) fn annotate_failure(&mut self, id: &JobId, r: &crate::payload::TriageReport) {
        let Some(e) = self
            .cluster
            .events
            .log
            .iter_mut()
            .rev()
            .find(|e| e.job.as_ref() == Some(id) && e.kind == EventKind::Failed)
        else {
            return;
        };
        if e.text.contains(" · ERR_") {
            return;
        }
        e.text = format!("{} · {} ({})", e.text, r.triage.class, r.triage.evidence);
    }

    pub(super) fn on_events_key(&mut self, k: crossterm::event::KeyEvent) -> Vec<Cmd> {
        use crossterm::event::KeyCode;
        let page = usize::from(self.size.1.saturating_sub(4)).max(1);
        let max = self.cluster.events.log.len().saturating_sub(1);
        let s = &mut self.cluster.events.scroll;
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') => self.cluster.events.open = false,
            KeyCode::Up | KeyCode::Char('k') => *s = (*s + 1).min(max),
            KeyCode::Down | KeyCode::Char('j') => *s = s.saturating_sub(1),
            KeyCode::PageUp => *s = (*s + page).min(max),
            KeyCode::PageDown => *s = s.saturating_sub(page),
            KeyCode::Char('g') | KeyCode::Home => *s = max,
            KeyCode::Char('G') | KeyCode::End => *s = 0,
            _ => {}
        }
        Vec::new()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "events_tests.rs"]
mod tests;
