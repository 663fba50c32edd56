//! Acting on jobs from the dashboard: which jobs an action applies to (marks, else the
//! selected row), the one-line confirmation, the rows' "cancelling…" state while the
//! command runs, and the report when it is done. Read-only sessions refuse all of it.

use crossterm::event::{KeyCode, KeyEvent};

use super::component::{Keys, Out, OverlayKeys, Pass, View};
use super::App;
use super::{Answer, Choice, Confirm};
use crate::action::Cmd;
use crate::keymap::Action;
use crate::slurm::model::CancelOutcome;
use crate::slurm::model::JobId;
use crate::slurm::ops::OpReport;
use crate::slurm::ops::{ids_list, JobOp, OpKind};

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

/// d, D, h, u, R, T on the marks (else the selected row); `quick_cancel`: `D` cancels
/// without asking.
pub fn ask(v: &View, a: Action, quick_cancel: bool) -> Out {
    let Some(kind) = kind_of(a) else {
        return Out::none();
    };
    if let Some(why) = v.read_only_refusal(kind.verb()) {
        return Out::note(why);
    }
    let ask = !(a == Action::CancelNow && quick_cancel);
    if v.queue.mark_count() > 0 {
        let op = JobOp::new(kind, v.queue.marked_ids());
        if !ask {
            return Out::op(op);
        }
        let prompt = format!(
            "{} {} marked job{} ({})?",
            kind,
            op.ids.len(),
            if op.ids.len() == 1 { "" } else { "s" },
            ids_list(&op.ids, 4)
        );
        return Out::confirm(Confirm {
            prompt,
            choices: vec![Choice {
                key: 'y',
                label: kind.verb().into(),
                answer: Answer::Op(op),
            }],
        });
    }
    let Some(row) = v.queue.selected_row() else {
        return Out::note(format!("no job selected to {kind}"));
    };
    let job = row.job;
    if row.is_collapsed() {
        // A folded array: the whole array, or only the pending tasks this row shows.
        let whole = JobOp::new(kind, [JobId::new(job.id.base()).on(job.id.cluster())]);
        let these = JobOp::new(kind, [job.id.clone()]);
        let tasks = match row.kind {
            crate::queue::RowKind::Collapsed { tasks, .. }
            | crate::queue::RowKind::Sweep { tasks, .. } => tasks,
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
            return Out::confirm(Confirm {
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
        }
        return Out::confirm(Confirm {
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
    }
    let op = JobOp::new(kind, [job.id.clone()]);
    if !ask {
        return Out::op(op);
    }
    Out::confirm(Confirm::one_job(op, job))
}

impl Confirm {
    /// The choice a key picks (`y` also answers to enter); none: the answer is no.
    pub fn pick(&self, k: &KeyEvent) -> Option<Answer> {
        let pick = match k.code {
            KeyCode::Enter => self.choices.iter().find(|c| c.key == 'y'),
            KeyCode::Char(ch) => self.choices.iter().find(|c| c.key == ch),
            _ => None,
        };
        pick.map(|c| c.answer.clone())
    }
}

/// The answer to the question on the bottom line: the choice's, and the question closes
/// (another may follow it).
impl OverlayKeys for Confirm {
    fn overlay_key(&mut self, k: &KeyEvent, cx: &Keys) -> Out {
        let out = match self.pick(k) {
            Some(Answer::Op(op)) => Out::op(op),
            Some(Answer::Extend(id)) => super::session::extend(id),
            Some(Answer::Change(id, change)) => {
                let note = format!("job {id}: {}…", change.words());
                Out::cmds(vec![Cmd::ApplySooner {
                    id: id.clone(),
                    change,
                }])
                .with_busy(vec![id], "updating…")
                .with_note(note)
            }
            Some(Answer::Ask(next)) => Out::confirm(*next),
            Some(Answer::Adopt(id)) => super::adopt::start(&cx.view.on(id.cluster()), id),
            Some(Answer::Custom(run)) => Out::pass(Pass::Custom(run)),
            None => Out::note("nothing changed"),
        };
        Out { close: true, ..out }
    }
}

/// `:cancel 123 124`, `:hold` (marks or selection), ...: typed, so no question; or why
/// not.
pub fn typed(v: &View, kind: OpKind, args: &[&str]) -> Result<JobOp, String> {
    if let Some(why) = v.read_only_refusal(kind.verb()) {
        return Err(why);
    }
    let ids: Vec<JobId> = if args.is_empty() {
        if v.queue.mark_count() > 0 {
            v.queue.marked_ids()
        } else {
            v.queue.selected_id().cloned().into_iter().collect()
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
                Ok(id) => ids.push(id.on(v.cluster.ix)),
                Err(e) => return Err(format!(":{kind}: `{a}` is not a job id ({e})")),
            }
        }
        ids
    };
    if ids.is_empty() {
        return Err(format!(":{kind} needs job ids, marks or a selected job"));
    }
    Ok(JobOp::new(kind, ids))
}

/// The App's side of acting on jobs: the question or the start, and the report.
impl App {
    /// d, D, h, u, R, T: asks first, or runs at once (`D` with quick_cancel).
    pub(super) fn on_job_action(&mut self, a: Action) -> Vec<Cmd> {
        let out = super::ops::ask(&view!(self, self.view_cluster()), a, self.quick_cancel);
        self.apply(out)
    }

    /// `:cancel 123 124`, `:hold` (marks or selection), ...: typed, so no question.
    pub(super) fn run_op_command(&mut self, kind: OpKind, args: &[&str]) -> Vec<Cmd> {
        match super::ops::typed(&view!(self, self.view_cluster()), kind, args) {
            Ok(op) => self.apply(Out::op(op)),
            Err(why) => self.apply(Out::note(why)),
        }
    }

    /// An action's report: the rows lose their "cancelling…", the status bar says what
    /// happened (a failure stays as the cluster's last error), cancelled jobs are unmarked
    /// and logged as yours, and the queue is read again at once.
    pub(super) fn on_op_done(
        &mut self,
        ix: u16,
        op: JobOp,
        result: Result<OpReport, String>,
    ) -> Vec<Cmd> {
        self.queue.shown_mut().clear_busy(&op.ids);
        let mut events = Vec::new();
        match result {
            Ok(report) => {
                let failed = !report.failed().is_empty();
                let line = report.summary();
                if failed {
                    self.clusters[ix].status.last_error = Some(line);
                    self.unsay();
                } else {
                    self.say(line);
                }
                if op.kind == OpKind::Cancel {
                    let done: Vec<JobId> = report
                        .outcomes
                        .iter()
                        .filter(|(_, o)| !matches!(o, CancelOutcome::Failed(_)))
                        .map(|(id, _)| id.clone())
                        .collect();
                    for id in &done {
                        self.queue.shown_mut().unmark(id);
                    }
                    let pushed = super::events::cancelled_by_you(self.queue.shown().jobs(), &done);
                    events = self.clusters[ix].push_events(pushed, self.now);
                }
            }
            Err(e) => {
                self.clusters[ix].status.last_error =
                    Some(format!("could not {}: {e}", op.describe()));
                self.unsay();
            }
        }
        // Show the new states now rather than at the next poll.
        events.extend(self.poll_now(ix));
        events
    }
}
