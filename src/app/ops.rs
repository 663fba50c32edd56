//! Acting on jobs from the dashboard: which jobs an action applies to (marks, else the
//! selected row), the one-line confirmation, the rows' "cancelling…" state while the
//! command runs, and the report when it is done. Read-only sessions refuse all of it.

use crossterm::event::{KeyCode, KeyEvent};

use super::component::{Out, View};
use super::{Answer, Choice, Confirm};
use crate::keymap::Action;
use crate::slurm::model::JobId;
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
    let name = crate::queue::format::one_line(&job.name);
    let prompt = format!(
        "{kind} {} ({}, {})?",
        op.ids.first().map(JobId::as_str).unwrap_or(""),
        crate::queue::format::fit(&name, 40),
        job.state.long_name()
    );
    Out::confirm(Confirm {
        prompt,
        choices: vec![Choice {
            key: 'y',
            label: kind.verb().into(),
            answer: Answer::Op(op),
        }],
    })
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
