//! Work sessions in the dashboard (`:session`, `:extend`, `:ssh-config`): the launch form
//! opened prefilled for a session, the warnings 10 and 2 minutes before a session's time
//! runs out with the offer to extend it (the confirm question, `scontrol update` through
//! the edit path), and the `ssh` lines for an editor copied to the clipboard. A session is
//! any own job named `session-…` (see `launch::session`).

use super::component::{Out, View};
use super::confirm::{Answer, Choice, Confirm};
use super::{EventKind, FormState, Own};
use crate::action::Cmd;
use crate::launch::session::{self, Due, SessionOpts};
use crate::slurm::model::{Job, JobId, Status};
use crate::slurm::ops::{JobEdit, JobOp, OpKind};

/// Seconds without a key before the extension question may open.
const QUIET_SECS: i64 = 3;

/// One line for the event log: the job, its name, the kind, the text.
pub(super) type EventLine = (Option<JobId>, String, EventKind, String);

/// `:session [LABEL]`: the launch form just opened, prefilled for a session (no GPUs, an
/// hour, keeping the allocation); the user adjusts it and submits as any launch.
pub(super) fn prefill(form: &mut FormState, v: &View, label: Option<&str>) -> Out {
    let stamp = v.now.format("%H%M%S").to_string();
    let opts = SessionOpts {
        label: label.map(str::to_string),
        ..Default::default()
    };
    form.spec = session::spec(&v.cluster.launch.defaults, &opts, &stamp);
    // CPUs and memory are defaults here: fitted to the partition's nodes when they are more.
    form.fit = Some(Default::default());
    // The GPUs row: what a session is most often adjusted by.
    form.row = 1 + super::FIELDS
        .iter()
        .position(|f| f.0 == "gpus")
        .unwrap_or(0);
    form.revalidate();
    Out::note(
        "a work session: set GPUs, time and partition, then submit; x opens a shell in it once it runs",
    )
}

/// The own sessions of the cluster's rows that were launched from this machine (in its
/// registry): a question never pops up in a dashboard for someone else's session, or one
/// of the same name started elsewhere.
pub(super) fn launched_here(v: &View) -> Vec<Job> {
    let launch = &v.cluster.launch;
    let chains = &v.cluster.chains;
    let here = |j: &Job| {
        chains.contains_key(&j.id.base()) || launch.registry_jobs.iter().any(|r| r.id == j.id)
    };
    match &v.cluster.events.own {
        Own::Nobody => Vec::new(),
        who => v
            .own_jobs()
            .iter()
            .filter(|j| session::is_session(&j.name) && here(j))
            .filter(|j| !matches!(who, Own::User(u) if j.user.as_str() != u))
            .cloned()
            .collect(),
    }
}

/// After each refresh, the sessions whose end is 10 or 2 minutes away (`due`): a line for
/// the event log and a notification each, and (when `may_ask`: nothing else is open) the
/// question offering to extend the first of them, unless a key came in the last seconds
/// (the event's note says `:extend` then).
pub(super) fn warnings(v: &View, due: &[Due], may_ask: bool) -> (Vec<EventLine>, Out) {
    let Some(first) = due.first() else {
        return (Vec::new(), Out::none());
    };
    let events = due
        .iter()
        .map(|d| {
            (
                Some(d.id.clone()),
                d.name.clone(),
                EventKind::Note,
                format!(
                    "session {} ({}) ends in {} minutes{}",
                    d.id,
                    crate::queue::format::one_line(&d.name),
                    d.minutes,
                    if v.cluster.read_only {
                        ""
                    } else {
                        ": :extend adds 30 minutes"
                    }
                ),
            )
        })
        .collect();
    // A note is not notified: the warning is worth a notification of its own.
    let notify = due
        .iter()
        .map(|d| {
            Cmd::Notify(crate::notify::Notification {
                title: format!("slurmdash · {}", v.cluster.name),
                body: format!("work session {} ends in {} minutes", d.id, d.minutes),
                urgent: d.minutes <= session::WARN_MINUTES[1],
            })
        })
        .collect();
    let mut out = Out::cmds(notify);
    // Not while the user is typing: the question would take their next key.
    let typing = v
        .cluster
        .insight
        .last_key
        .is_some_and(|t| (v.now - t).num_seconds() < QUIET_SECS);
    if !v.cluster.read_only && !typing && may_ask {
        out.confirm = Some(extend_question(first));
    }
    (events, out)
}

/// `:extend [ID]`: asks Slurm for 30 more minutes of the session (the selected job by
/// default).
pub(super) fn extend_session(v: &View, id: Option<&str>) -> Out {
    if let Some(why) = v.read_only_refusal("extending a session") {
        return Out::note(why);
    }
    let id = match id {
        Some(t) => match t.parse::<JobId>() {
            Ok(id) => id.on(v.cluster.ix),
            Err(e) => return Out::note(format!(":extend takes a job id, not `{t}`: {e}")),
        },
        None => match v.queue.selected_job() {
            Some(j) => j.id.clone(),
            None => return Out::note("no job selected: select a session to extend"),
        },
    };
    extend(id)
}

/// 30 more minutes for session `id` (`:extend`, or `y` to the question).
pub(super) fn extend(id: JobId) -> Out {
    Out::note(format!("asking the cluster to extend {id} by 30 minutes…"))
        .with_busy(vec![id.clone()], "extending…")
        .with_cmd(Cmd::Edit(id, extension()))
}

/// `:ssh-config`: the `ssh` lines that reach the selected running job's node through the
/// login host, copied to the clipboard (OSC 52).
pub(super) fn copy_ssh_config(v: &View) -> Out {
    let Some(job) = v.queue.selected_job() else {
        return Out::note("no job selected: select a running session for its ssh config");
    };
    if job.status() != Status::Running {
        return Out::note(format!(
            "job {} is {}: its ssh config needs it running (on a node)",
            job.id,
            job.state.long_name()
        ));
    }
    let Some(node) = job.nodes().into_iter().next() else {
        return Out::note(format!("job {} has no node yet", job.id));
    };
    let Some(jump) = v.cluster.launch.jump.clone() else {
        return Out::note(format!(
            "cluster {} names no login host to jump through",
            v.cluster.name
        ));
    };
    let alias = session::host_alias(&v.cluster.name, job.id.as_str());
    match session::ssh_config(&alias, &node, &jump) {
        Ok(block) => Out::note(format!(
            "copied an ssh config block (Host {alias}: {node} through {}) to the clipboard (OSC 52): paste it into ~/.ssh/config",
            jump.host
        ))
        .with_cmd(Cmd::Clipboard(block)),
        Err(e) => Out::note(e),
    }
}

fn extension() -> JobEdit {
    JobEdit {
        time_limit: Some(session::EXTEND_BY.into()),
        ..Default::default()
    }
}

/// Whether an edit is a session's extension (its refusal is said in a session's words).
pub fn is_extension(edit: &JobEdit) -> bool {
    *edit == extension()
}

/// The keys of the question that opens by itself: it may open just as the user presses a
/// key meant for the dashboard (`y` files, `e` stderr, enter), so its keys mean nothing
/// else, and ending the session takes a second, explicit answer.
pub const EXTEND_KEY: char = '+';
pub const END_KEY: char = '!';

fn extend_question(d: &Due) -> Confirm {
    let name = crate::queue::format::one_line(&d.name);
    let name = crate::queue::format::fit(&name, 30).to_string();
    Confirm {
        prompt: format!(
            "session {} ({name}) ends in {} minutes: extend it?",
            d.id, d.minutes
        ),
        choices: vec![
            Choice {
                key: EXTEND_KEY,
                label: "30 more minutes".into(),
                answer: Answer::Extend(d.id.clone()),
            },
            Choice {
                key: END_KEY,
                label: "end it now…".into(),
                answer: Answer::Ask(Box::new(end_question(&d.id, &name))),
            },
        ],
    }
}

/// The second question before a session ends: only `y` (or enter) to this one cancels.
fn end_question(id: &JobId, name: &str) -> Confirm {
    Confirm {
        prompt: format!(
            "end session {id} ({name}) now? its job is cancelled and its allocation given back"
        ),
        choices: vec![Choice {
            key: 'y',
            label: "end it".into(),
            answer: Answer::Op(JobOp::new(OpKind::Cancel, [id.clone()])),
        }],
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "session_tests.rs"]
mod tests;
