//! Changes of the user's own jobs between queue refreshes, kept as an event log (the
//! `:events` view), shown on the status bar and handed to the dashboard as notifications.
//!
//! Detection is pure: it compares each refresh's job list with the previous one by job id.
//! Which jobs left squeue is the cluster's `Departures` to say (tracked once there); an own
//! job that left without a final state is logged once its final state is known: from a
//! later job list that carries it (the registry's rows), from a detail fetch, or from the
//! sacct part of a refresh; when `Departures` gives up on it, as "left the queue".

use std::collections::{HashMap, VecDeque};

use chrono::NaiveDateTime;

use crate::action::Cmd;
use crate::notify::Notification;
use crate::slurm::model::{Job, JobDetail, JobId, JobState, Status};

#[cfg(test)]
use super::App;

/// Seconds the newest event stays on the status bar (when nothing more urgent is shown).
pub const STATUS_LINE_SECS: i64 = 60;
/// Events kept for the `:events` view.
pub const EVENT_LOG_CAP: usize = 1000;
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

use super::departures::{id_key, Fnv};

type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

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

/// A job that left squeue, as last seen there.
#[derive(Debug, Clone)]
struct Awaited {
    name: String,
    /// Still pending when last seen: when its final state says it ran, its start is news
    /// too (it started and ended between two reads).
    pending: bool,
}

/// Whether a finished job ever ran: it was given nodes (a job cancelled while pending
/// shows `None assigned` or none).
fn ran(state: &JobState, nodes: Option<&str>) -> bool {
    state.is_finished()
        && nodes.is_some_and(|n| {
            let n = n.trim();
            !n.is_empty() && !n.starts_with("None") && !n.starts_with('(')
        })
}

/// The "started" event of a job first seen finished after it was last seen pending.
fn missed_start(at: NaiveDateTime, id: &JobId, name: &str, nodes: Option<&str>) -> Event {
    let on = nodes
        .map(|n| format!("on {}", n.trim()))
        .unwrap_or_default();
    event(at, EventKind::Started, id, name, None, &on)
}

#[derive(Debug, Clone, Default)]
pub struct Events {
    pub log: VecDeque<Event>,
    pub own: Own,
    prev: FastMap<u64, Seen>,
    /// Own jobs that left squeue without a final state, until one is known.
    awaiting: HashMap<JobId, Awaited>,
    baseline: bool,
    generation: u64,
    /// Jobs the user cancelled from slurmdash (`push_event(CancelledByYou)`).
    cancelled_by_you: std::collections::HashSet<JobId>,
    /// Events logged so far: what is worked out from the log holds while this does.
    pub pushed: u64,
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

    /// Compares a refresh's jobs with the previous ones; `gone` are the rows of the jobs
    /// that left the list (from `Departures`). The first list only sets the baseline: jobs
    /// that were already running at start are not news.
    /// Whether a first list was seen: after it, a list of the very same records with none
    /// gone has nothing to log (`on_jobs` would find every state as it was).
    pub fn has_baseline(&self) -> bool {
        self.baseline
    }

    pub fn on_jobs(&mut self, jobs: &[Job], gone: &[Job], at: NaiveDateTime) -> Vec<Event> {
        // Updated in place: an unchanged refresh only looks ids up.
        self.generation += 1;
        let (generation, baseline) = (self.generation, self.baseline);
        let mut out = Vec::new();
        for j in jobs {
            if !self.is_own(j) {
                continue;
            }
            let status = j.state.status();
            let nodes = j.node_list.as_deref();
            // Seen pending, now finished: it started and ended between two reads.
            let mut started_unseen = false;
            let kind = match self.prev.get_mut(&id_key(&j.id)) {
                Some(seen) => {
                    let kind = kind_for(Some(seen.status), &j.state);
                    started_unseen = seen.status == Status::Pending && ran(&j.state, nodes);
                    seen.status = status;
                    seen.generation = generation;
                    kind
                }
                None => {
                    self.prev.insert(id_key(&j.id), Seen { status, generation });
                    let awaited = match self.awaiting.is_empty() {
                        true => None,
                        false => self.awaiting.get(&j.id),
                    };
                    if let Some(aw) = awaited.filter(|_| j.state.is_finished()) {
                        // Back with its final state after leaving squeue.
                        started_unseen = aw.pending && ran(&j.state, nodes);
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
            if started_unseen && baseline {
                out.push(missed_start(at, &j.id, &j.name, nodes));
            }
            if let Some(k) = kind.filter(|_| baseline) {
                let extra = match (k, j.node_list.as_deref()) {
                    (EventKind::Started, Some(n))
                        if !n.is_empty() && crate::launch::session::is_session(&j.name) =>
                    {
                        format!("on {n}: work session ready (x: shell, F: tunnel, :ssh-config)")
                    }
                    (EventKind::Started, Some(n)) if !n.is_empty() => format!("on {n}"),
                    _ => String::new(),
                };
                out.push(event(at, k, &j.id, &j.name, Some(&j.state), &extra));
            }
            if !self.awaiting.is_empty() {
                // Listed again: with its final state (logged above) or requeued.
                self.awaiting.remove(&j.id);
            }
        }
        if baseline {
            // Logged once sacct has the final state, or as "left the queue" when
            // `Departures` gives up on it (`given_up`).
            for o in gone {
                // Its row may already carry the final state sacct gave in this refresh
                // (a state check saw it leave): awaited all the same when the list last
                // showed it live, so that the final state is logged once.
                let last = self.prev.get(&id_key(&o.id)).map(|s| s.status);
                let was_live = last.is_some_and(|s| {
                    !matches!(s, Status::Complete | Status::Error | Status::Canceled)
                });
                if self.is_own(o) && (!o.state.is_finished() || was_live) {
                    let aw = Awaited {
                        name: o.name.to_string(),
                        pending: last == Some(Status::Pending),
                    };
                    self.awaiting.insert(o.id.clone(), aw);
                }
            }
        }
        self.prev.retain(|_, s| s.generation == generation);
        self.baseline = true;
        out
    }

    /// Jobs whose final state sacct never gave: logged as "left the queue".
    pub fn given_up(&mut self, ids: &[JobId], at: NaiveDateTime) -> Vec<Event> {
        ids.iter()
            .filter_map(|id| {
                let aw = self.awaiting.remove(id)?;
                Some(event(at, EventKind::LeftQueue, id, &aw.name, None, ""))
            })
            .collect()
    }

    /// A final state learned for a job (sacct, a detail fetch; `nodes` it ran on): refines
    /// "left the queue", after its start when it was pending when last seen.
    pub fn on_final(
        &mut self,
        id: &JobId,
        state: &JobState,
        nodes: Option<&str>,
        at: NaiveDateTime,
    ) -> Vec<Event> {
        if !state.is_finished() {
            return Vec::new();
        }
        let Some(aw) = self.awaiting.remove(id) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if aw.pending && ran(state, nodes) {
            out.push(missed_start(at, id, &aw.name, nodes));
        }
        out.extend(kind_for(None, state).map(|k| event(at, k, id, &aw.name, Some(state), "")));
        out
    }

    /// The newest event for the status bar, while it is recent.
    pub fn status_line(&self, now: NaiveDateTime) -> Option<String> {
        let e = self.log.back()?;
        let age = (now - e.at).num_seconds();
        (age < STATUS_LINE_SECS).then(|| format!("{} {}", e.at.format("%H:%M:%S"), e.text))
    }

    /// Logs `events` and returns the notifications they call for: the user already knows
    /// about jobs they cancelled from slurmdash, so those are logged, not notified.
    pub fn record(&mut self, events: Vec<Event>, cluster: &str) -> Vec<Notification> {
        if events.is_empty() {
            return Vec::new();
        }
        let news: Vec<Event> = events
            .iter()
            .filter(|e| {
                !(e.kind == EventKind::Cancelled
                    && e.job
                        .as_ref()
                        .is_some_and(|j| self.cancelled_by_you.contains(j)))
            })
            .cloned()
            .collect();
        let notes = notifications(&news, cluster);
        for e in events {
            self.push(e);
        }
        notes
    }

    /// A key while the `:events` view (of `lines` events) is open: scroll it, or close it.
    pub fn push(&mut self, e: Event) {
        self.log.push_back(e);
        self.pushed += 1;
        while self.log.len() > EVENT_LOG_CAP {
            self.log.pop_front();
        }
    }
}

/// Several clusters' logs as one, oldest first (a tie keeps the clusters' order), each event
/// with its cluster's name when given.
pub fn merged_events<'a>(
    logs: &[(Option<&'a str>, &'a Events)],
) -> Vec<(Option<&'a str>, &'a Event)> {
    let mut all: Vec<(Option<&str>, &Event)> = logs
        .iter()
        .flat_map(|(name, ev)| ev.log.iter().map(move |e| (*name, e)))
        .collect();
    all.sort_by_key(|(_, e)| e.at);
    all
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

/// Jobs cancelled from slurmdash (`jobs`: the queue's rows, for their names), as events to
/// push: logged as such, and their CANCELLED state then not notified again.
pub fn cancelled_by_you(
    jobs: &[Job],
    ids: &[JobId],
) -> Vec<(Option<JobId>, String, EventKind, String)> {
    let wanted: std::collections::HashSet<&JobId> = ids.iter().collect();
    let names: HashMap<&JobId, &str> = jobs
        .iter()
        .filter(|j| wanted.contains(&j.id))
        .map(|j| (&j.id, j.name.as_str()))
        .collect();
    ids.iter()
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
        .collect()
}

/// The triages to ask for the failures among `events` (final states just learned from
/// `details`), a few per batch, but not `triaging`'s (the selected job, when its own
/// triage is out). `results_dir`: where a job's status.json lives, when slurmdash
/// launched it.
pub fn auto_triage(
    events: &[Event],
    details: &[JobDetail],
    triaging: Option<&JobId>,
    results_dir: impl Fn(&JobId) -> Option<String>,
) -> Vec<Cmd> {
    let mut triage = Vec::new();
    for e in events.iter().filter(|e| e.kind == EventKind::Failed) {
        let Some(id) = e.job.as_ref() else { continue };
        let selected_triaging = triaging == Some(id);
        let Some(d) = details.iter().find(|d| d.id.as_ref() == Some(id)) else {
            continue;
        };
        if !selected_triaging && triage.len() < AUTO_TRIAGE {
            triage.push(Cmd::Triage {
                id: id.clone(),
                detail: Box::new(d.clone()),
                source: crate::payload::DetailSource::Sacct,
                results_dir: results_dir(id),
            });
        }
    }
    triage
}

/// Events pushed from elsewhere, and the triage's word on a failure.
impl Events {
    /// Events from elsewhere in the App (e.g. "retry submitted", "cancelled by you"), made
    /// at `at`, to record. After `CancelledByYou` for a job, its later CANCELLED state is
    /// logged but not notified.
    pub fn stamp(
        &mut self,
        events: Vec<(Option<JobId>, String, EventKind, String)>,
        at: NaiveDateTime,
    ) -> Vec<Event> {
        let mut out = Vec::with_capacity(events.len());
        for (job, name, kind, text) in events {
            if let (EventKind::CancelledByYou, Some(id)) = (kind, &job) {
                self.cancelled_by_you.insert(id.clone());
            }
            out.push(Event {
                at,
                job,
                name,
                kind,
                text,
            });
        }
        out
    }

    /// A triage arrived: the job's latest failure event says the class and the evidence.
    pub fn annotate_failure(&mut self, id: &JobId, r: &crate::payload::TriageReport) {
        let Some(e) = self
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
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "events_tests.rs"]
mod tests;
