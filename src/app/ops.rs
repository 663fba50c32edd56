//! Acting on jobs from the dashboard: which jobs an action applies to (marks, else the
//! selected row), the one-line confirmation, the rows' "cancelling…" state while the
//! command runs, and the report when it is done. Read-only sessions refuse all of it.

use crossterm::event::{KeyCode, KeyEvent};

use super::App;
use crate::action::Cmd;
use crate::keymap::Action;
use crate::slurm::model::JobId;
use crate::slurm::ops::{ids_list, JobOp, OpKind, OpReport};

/// A question on the bottom line; each choice is a key and the op it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirm {
    pub prompt: String,
    pub choices: Vec<Choice>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// `y` also answers to enter.
    pub key: char,
    pub label: String,
    pub answer: Answer,
}

/// What a choice does.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Op(JobOp),
    /// 30 more minutes for a work session (`scontrol update TimeLimit=+30:00`).
    Extend(JobId),
}

impl Confirm {
    /// "y/enter: cancel · any other key: keep" or the choices of an array.
    pub fn hint(&self) -> String {
        let mut parts: Vec<String> = self
            .choices
            .iter()
            .map(|c| {
                if c.key == 'y' {
                    format!("y/enter: {}", c.label)
                } else {
                    format!("{}: {}", c.key, c.label)
                }
            })
            .collect();
        parts.push("any other key: no".into());
        parts.join(" · ")
    }
}

fn kind_of(a: Action) -> Option<OpKind> {
    Some(match a {
        Action::Cancel | Action::CancelNow => OpKind::Cancel,
        Action::Hold => OpKind::Hold,
        Action::Release => OpKind::Release,
        Action::Requeue => OpKind::Requeue,
        Action::Prioritize => OpKind::Top,
        _ => return None,
    })
}

impl App {
    /// Says why a changing action is refused, if it is.
    pub(super) fn refuse_read_only(&mut self, what: &str) -> bool {
        if self.cluster.read_only {
            self.note = Some(format!(
                "read-only session: {what} is disabled (started with --read-only or read_only = true in the config)"
            ));
        }
        self.cluster.read_only
    }

    /// d, D, h, u, R, T.
    pub(super) fn on_job_action(&mut self, a: Action) -> Vec<Cmd> {
        let Some(kind) = kind_of(a) else {
            return Vec::new();
        };
        if self.refuse_read_only(kind.verb()) {
            return Vec::new();
        }
        let ask = !(a == Action::CancelNow && self.quick_cancel);
        if self.queue.mark_count() > 0 {
            let op = JobOp::new(kind, self.queue.marked_ids());
            if !ask {
                return self.start_op(op);
            }
            let prompt = format!(
                "{} {} marked job{} ({})?",
                kind,
                op.ids.len(),
                if op.ids.len() == 1 { "" } else { "s" },
                ids_list(&op.ids, 4)
            );
            self.confirm = Some(Confirm {
                prompt,
                choices: vec![Choice {
                    key: 'y',
                    label: kind.verb().into(),
                    answer: Answer::Op(op),
                }],
            });
            return Vec::new();
        }
        let Some(row) = self.queue.selected_row() else {
            self.note = Some(format!("no job selected to {kind}"));
            return Vec::new();
        };
        let job = row.job;
        if row.is_collapsed() {
            // A folded array: the whole array, or only the pending tasks this row shows.
            let whole = JobOp::new(kind, [JobId::new(job.id.base()).on(job.id.cluster())]);
            let these = JobOp::new(kind, [job.id.clone()]);
            let tasks = match row.kind {
                crate::queue::RowKind::Collapsed { tasks, .. } => tasks,
                _ => 0,
            };
            let truncated = matches!(
                row.kind,
                crate::queue::RowKind::Collapsed {
                    truncated: true,
                    ..
                }
            );
            if truncated {
                // squeue cut the task list: only the whole array can be named exactly.
                self.confirm = Some(Confirm {
                    prompt: format!(
                        "{kind} the whole array {} (squeue did not list every pending task)?",
                        job.id.base()
                    ),
                    choices: vec![Choice {
                        key: 'y',
                        label: format!("whole array {}", job.id.base()),
                        answer: Answer::Op(whole),
                    }],
                });
                return Vec::new();
            }
            self.confirm = Some(Confirm {
                prompt: format!("{kind} array {}?", job.id.base()),
                choices: vec![
                    Choice {
                        key: 'a',
                        label: format!("whole array {} (running tasks too)", job.id.base()),
                        answer: Answer::Op(whole),
                    },
                    Choice {
                        key: 'p',
                        label: format!("the {tasks} pending tasks {}", job.id),
                        answer: Answer::Op(these),
                    },
                ],
            });
            return Vec::new();
        }
        let op = JobOp::new(kind, [job.id.clone()]);
        if !ask {
            return self.start_op(op);
        }
        let name = crate::queue::format::one_line(&job.name);
        let prompt = format!(
            "{kind} {} ({}, {})?",
            op.ids.first().map(JobId::as_str).unwrap_or(""),
            crate::queue::format::fit(&name, 40),
            job.state.long_name()
        );
        self.confirm = Some(Confirm {
            prompt,
            choices: vec![Choice {
                key: 'y',
                label: kind.verb().into(),
                answer: Answer::Op(op),
            }],
        });
        Vec::new()
    }

    pub(super) fn on_confirm_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        let Some(confirm) = self.confirm.take() else {
            return Vec::new();
        };
        let pick = match k.code {
            KeyCode::Enter => confirm.choices.iter().find(|c| c.key == 'y'),
            KeyCode::Char(ch) => confirm.choices.iter().find(|c| c.key == ch),
            _ => None,
        };
        match pick {
            Some(c) => match c.answer.clone() {
                Answer::Op(op) => self.start_op(op),
                Answer::Extend(id) => self.start_extend(id),
            },
            None => {
                self.note = Some("nothing changed".into());
                Vec::new()
            }
        }
    }

    /// The rows say "cancelling…" at once; the worker runs the command.
    pub(super) fn start_op(&mut self, op: JobOp) -> Vec<Cmd> {
        if op.ids.is_empty() {
            return Vec::new();
        }
        self.queue.set_busy(&op.ids, op.kind.doing());
        self.note = Some(format!("{}…", op.describe()));
        vec![Cmd::Op(op)]
    }

    pub(super) fn on_op_done(&mut self, op: JobOp, result: Result<OpReport, String>) -> Vec<Cmd> {
        self.queue.clear_busy(&op.ids);
        let mut events = Vec::new();
        match result {
            Ok(report) => {
                let failed = !report.failed().is_empty();
                let line = report.summary();
                if failed {
                    self.cluster.status.last_error = Some(line);
                    self.note = None;
                } else {
                    self.note = Some(line);
                }
                if op.kind == OpKind::Cancel {
                    let done: Vec<JobId> = report
                        .outcomes
                        .iter()
                        .filter(|(_, o)| {
                            !matches!(o, crate::slurm::model::CancelOutcome::Failed(_))
                        })
                        .map(|(id, _)| id.clone())
                        .collect();
                    for id in &done {
                        self.queue.unmark(id);
                    }
                    let pushed = super::events::cancelled_by_you(self.queue.jobs(), &done);
                    events = self.cluster.push_events(pushed, self.now);
                }
            }
            Err(e) => {
                self.cluster.status.last_error = Some(format!("could not {}: {e}", op.describe()));
                self.note = None;
            }
        }
        // Show the new states now rather than at the next poll.
        events.extend(self.poll_now());
        events
    }

    /// `:cancel 123 124`, `:hold` (marks or selection), ...: typed, so no confirmation.
    pub(super) fn run_op_command(&mut self, kind: OpKind, args: &[&str]) -> Vec<Cmd> {
        if self.refuse_read_only(kind.verb()) {
            return Vec::new();
        }
        let ids: Vec<JobId> = if args.is_empty() {
            if self.queue.mark_count() > 0 {
                self.queue.marked_ids()
            } else {
                self.queue.selected_id().cloned().into_iter().collect()
            }
        } else {
            let mut ids = Vec::new();
            for a in args
                .iter()
                .flat_map(|a| a.split(','))
                .filter(|a| !a.is_empty())
            {
                match a.parse::<JobId>() {
                    // Ids typed on the command line are on the cluster in view.
                    Ok(id) => ids.push(id.on(self.cluster.ix)),
                    Err(e) => {
                        self.note = Some(format!(":{kind}: `{a}` is not a job id ({e})"));
                        return Vec::new();
                    }
                }
            }
            ids
        };
        if ids.is_empty() {
            self.note = Some(format!(":{kind} needs job ids, marks or a selected job"));
            return Vec::new();
        }
        self.start_op(JobOp::new(kind, ids))
    }
}
