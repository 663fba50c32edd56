//! A question on the bottom line (confirm a cancel, extend a session): its prompt and
//! choices. A leaf, so that components can hand one back in an `Out`; its keys are
//! `ops.rs`'s.

use crate::slurm::model::JobId;
use crate::slurm::ops::JobOp;

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
    /// Another question first (ending a session: its own explicit confirmation).
    Ask(Box<Confirm>),
    /// A change of a pending job's request (`:sooner N`), run as `scontrol update`.
    Change(JobId, crate::slurm::why::Change),
    /// Adopt a job submitted elsewhere (`A`): a guard and a registry record.
    Adopt(JobId),
    /// Run one of the user's own commands marked `confirm = true`.
    Custom(Box<crate::slurm::custom::CustomRun>),
}

impl Confirm {
    /// The question before `op` on the one job `job`: "cancel 12 (train, RUNNING)?".
    pub fn one_job(op: JobOp, job: &crate::slurm::model::Job) -> Confirm {
        let kind = op.kind;
        let name = crate::queue::format::one_line(&job.name);
        Confirm {
            prompt: format!(
                "{kind} {} ({}, {})?",
                job.id,
                crate::queue::format::fit(&name, 40),
                job.state.long_name()
            ),
            choices: vec![Choice {
                key: 'y',
                label: kind.verb().into(),
                answer: Answer::Op(op),
            }],
        }
    }

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
