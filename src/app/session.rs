//! Work sessions in the dashboard (`:session`, `:extend`, `:ssh-config`): the launch form
//! opened prefilled for a session, the warnings 10 and 2 minutes before a session's time
//! runs out with the offer to extend it (the confirm question, `scontrol update` through
//! the edit path), and the `ssh` lines for an editor copied to the clipboard. A session is
//! any own job named `session-…` (see `launch::session`).

use super::ops::{Answer, Choice, Confirm};
use super::App;
use crate::action::Cmd;
use crate::launch::session::{self, Due, SessionOpts};
use crate::slurm::model::{Job, JobId, Status};
use crate::slurm::ops::{JobEdit, JobOp, OpKind};

/// Seconds without a key before the extension question may open.
const QUIET_SECS: i64 = 3;

impl App {
    /// `:session [LABEL]`: the launch form, prefilled for a session (no GPUs, an hour,
    /// keeping the allocation); the user adjusts it and submits as any launch.
    pub(super) fn open_session_form(&mut self, label: Option<&str>) -> Vec<Cmd> {
        let cmds = self.open_form();
        let stamp = self.now.format("%H%M%S").to_string();
        let opts = SessionOpts {
            label: label.map(str::to_string),
            ..Default::default()
        };
        if let Some(form) = self.form.as_mut() {
            form.spec = session::spec(&self.cluster.launch.defaults, &opts, &stamp);
            // The GPUs row: what a session is most often adjusted by.
            form.row = 1 + super::FIELDS
                .iter()
                .position(|f| f.0 == "gpus")
                .unwrap_or(0);
            form.revalidate();
            self.note = Some(
                "a work session: set GPUs, time and partition, then submit; x opens a shell in it once it runs".into(),
            );
        }
        cmds
    }

    /// After each refresh: the sessions launched from here whose end is 10 or 2 minutes
    /// away are said on the status bar and notified, and (when nothing else is open) the
    /// question offers to extend the first of them (unless a key came in the last seconds:
    /// the note says `:extend` then).
    pub(super) fn session_warnings(&mut self) -> Vec<Cmd> {
        // Only the sessions launched from this machine (in its registry) are copied out of
        // the rows: a question never pops up in a dashboard for someone else's session, or
        // one of the same name started elsewhere.
        let launch = &self.cluster.launch;
        let chains = &self.cluster.chains;
        let here = |j: &Job| {
            chains.contains_key(&j.id.base()) || launch.registry_jobs.iter().any(|r| r.id == j.id)
        };
        let own: Vec<Job> = match &self.cluster.events.own {
            super::Own::Nobody => Vec::new(),
            who => self
                .own_jobs()
                .iter()
                .filter(|j| session::is_session(&j.name) && here(j))
                .filter(|j| !matches!(who, super::Own::User(u) if j.user.as_str() != u))
                .cloned()
                .collect(),
        };
        let due = self.cluster.sessions.on_jobs(own.iter());
        let Some(first) = due.first().cloned() else {
            return Vec::new();
        };
        let events = due
            .iter()
            .map(|d| {
                (
                    Some(d.id.clone()),
                    d.name.clone(),
                    super::EventKind::Note,
                    format!(
                        "session {} ({}) ends in {} minutes{}",
                        d.id,
                        crate::queue::format::one_line(&d.name),
                        d.minutes,
                        if self.cluster.read_only {
                            ""
                        } else {
                            ": :extend adds 30 minutes"
                        }
                    ),
                )
            })
            .collect();
        let mut cmds = self.cluster.push_events(events, self.now);
        // A note is not notified: the warning is worth a notification of its own.
        for d in &due {
            cmds.push(Cmd::Notify(crate::notify::Notification {
                title: format!("slurmdash · {}", self.cluster.name),
                body: format!("work session {} ends in {} minutes", d.id, d.minutes),
                urgent: d.minutes <= session::WARN_MINUTES[1],
            }));
        }
        // Not while the user is typing: the question would take their next key.
        let typing = self
            .cluster
            .insight
            .last_key
            .is_some_and(|t| (self.now - t).num_seconds() < QUIET_SECS);
        if !self.cluster.read_only && !typing && self.top_overlay().is_none() {
            self.confirm = Some(extend_question(&first));
        }
        cmds
    }

    /// `:extend [ID]`: asks Slurm for 30 more minutes of the session (the selected job by
    /// default).
    pub(super) fn extend_session(&mut self, id: Option<&str>) -> Vec<Cmd> {
        if self.refuse_read_only("extending a session") {
            return Vec::new();
        }
        let id = match id {
            Some(t) => match t.parse::<JobId>() {
                Ok(id) => id.on(self.cluster.ix),
                Err(e) => {
                    self.note = Some(format!(":extend takes a job id, not `{t}`: {e}"));
                    return Vec::new();
                }
            },
            None => match self.queue.selected_job() {
                Some(j) => j.id.clone(),
                None => {
                    self.note = Some("no job selected: select a session to extend".into());
                    return Vec::new();
                }
            },
        };
        self.start_extend(id)
    }

    pub(super) fn start_extend(&mut self, id: JobId) -> Vec<Cmd> {
        self.queue.set_busy(std::slice::from_ref(&id), "extending…");
        self.note = Some(format!("asking the cluster to extend {id} by 30 minutes…"));
        vec![Cmd::Edit(id, extension())]
    }

    /// `:ssh-config`: the `ssh` lines that reach the selected running job's node through
    /// the login host, copied to the clipboard (OSC 52).
    pub(super) fn copy_ssh_config(&mut self) -> Vec<Cmd> {
        let Some(job) = self.queue.selected_job() else {
            self.note = Some("no job selected: select a running session for its ssh config".into());
            return Vec::new();
        };
        if job.status() != Status::Running {
            self.note = Some(format!(
                "job {} is {}: its ssh config needs it running (on a node)",
                job.id,
                job.state.long_name()
            ));
            return Vec::new();
        }
        let Some(node) = job
            .node_list
            .as_deref()
            .map(crate::slurm::hostlist::expand)
            .and_then(|n| n.into_iter().next())
        else {
            self.note = Some(format!("job {} has no node yet", job.id));
            return Vec::new();
        };
        let Some(jump) = self.cluster.launch.jump.clone() else {
            self.note = Some(format!(
                "cluster {} names no login host to jump through",
                self.cluster.name
            ));
            return Vec::new();
        };
        let alias = session::host_alias(&self.cluster.name, job.id.as_str());
        match session::ssh_config(&alias, &node, &jump) {
            Ok(block) => {
                self.note = Some(format!(
                    "copied an ssh config block (Host {alias}: {node} through {}) to the clipboard (OSC 52): paste it into ~/.ssh/config",
                    jump.host
                ));
                vec![Cmd::Clipboard(block)]
            }
            Err(e) => {
                self.note = Some(e);
                Vec::new()
            }
        }
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

fn extend_question(d: &Due) -> Confirm {
    Confirm {
        prompt: format!(
            "session {} ({}) ends in {} minutes: extend it?",
            d.id,
            crate::queue::format::fit(&crate::queue::format::one_line(&d.name), 30),
            d.minutes
        ),
        choices: vec![
            Choice {
                key: 'y',
                label: "30 more minutes".into(),
                answer: Answer::Extend(d.id.clone()),
            },
            Choice {
                key: 'e',
                label: "end it now".into(),
                answer: Answer::Op(JobOp::new(OpKind::Cancel, [d.id.clone()])),
            },
        ],
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "session_tests.rs"]
mod tests;
