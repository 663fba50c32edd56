//! `Out`: what a component hands back for a key or a message (commands for the workers,
//! a note, a line to type on, a question, busy rows, and what the App around it does next:
//! close the overlay that answered, select a job, run a keymap action, open the launch
//! form, hand work on to an owner it cannot reach). `App::land` is the one place it is
//! applied.

use super::confirm::Confirm;
use super::prompt::Input;
use crate::action::Cmd;
use crate::keymap::{Action, Pane};
use crate::slurm::model::JobId;

/// A component's answer to a key or a message.
#[derive(Debug, Default)]
#[must_use]
pub struct Out {
    pub cmds: Vec<Cmd>,
    /// For the status bar.
    pub note: Option<String>,
    /// A line to type on (the `:` line prefilled, a name to give).
    pub prompt: Option<Input>,
    /// A question on the bottom line.
    pub confirm: Option<Confirm>,
    /// Queue rows to mark busy (e.g. "extending…") until their command's answer.
    pub busy: Option<(Vec<JobId>, &'static str)>,
    /// The overlay that answered closes (after `select`, when that finds its job).
    pub close: bool,
    /// Select this job in the queue, clearing a filter that hides it (a note says so when
    /// it is not listed, and the rest of the answer is dropped).
    pub select: Option<JobId>,
    /// Then the keymap's action, as if its key were pressed (help, quit, refresh, copy,
    /// the files view), in the pane `focus` names (else the focused one).
    pub then: Option<Action>,
    pub focus: Option<Pane>,
    /// Opens the launch form, filled (`L`: a relaunch, a recovered job, an array's rerun).
    pub form: Option<Box<super::form_state::FormState>>,
    /// The live queue's columns, set (the column chooser's enter).
    pub columns: Option<Vec<crate::queue::Column>>,
    /// Then the selected job's log shown at a line (when that job is the one selected).
    pub jump: Option<Jump>,
    /// Last, work for an owner the component cannot reach, which App hands on.
    pub pass: Option<Pass>,
}

/// Work an overlay hands on through App to the state that owns it.
#[derive(Debug)]
pub enum Pass {
    /// The key, to the keymap as if no overlay were open.
    Key(crossterm::event::KeyEvent),
    /// The key, to the cluster's `:usage` state, which lets through what it does not use.
    UsageKey(crossterm::event::KeyEvent),
    /// The queue's filter, as typed.
    Filter(String),
    /// A typed line, entered: to its kind's owner.
    Line(super::prompt::InputKind, String),
    /// The value one of the user's own commands asked for, not given (esc).
    NoValue,
    /// One of the user's own commands, confirmed: run it.
    Custom(Box<crate::slurm::custom::CustomRun>),
}

/// A job's log, at a line (enter on a `:grep` hit).
#[derive(Debug, Clone, PartialEq)]
pub struct Jump {
    pub job: JobId,
    pub stream: crate::logview::Stream,
    pub line: u64,
    pub text: String,
}

impl Out {
    /// Nothing to do.
    pub fn none() -> Out {
        Out::default()
    }

    /// Only a note for the status bar.
    pub fn note(text: impl Into<String>) -> Out {
        Out {
            note: Some(text.into()),
            ..Out::default()
        }
    }

    /// Only commands.
    pub fn cmds(cmds: Vec<Cmd>) -> Out {
        Out {
            cmds,
            ..Out::default()
        }
    }

    /// Only a line to type on.
    pub fn prompt(input: Input) -> Out {
        Out {
            prompt: Some(input),
            ..Out::default()
        }
    }

    /// Only a question.
    pub fn confirm(confirm: Confirm) -> Out {
        Out {
            confirm: Some(confirm),
            ..Out::default()
        }
    }

    pub fn with_note(mut self, text: impl Into<String>) -> Out {
        self.note = Some(text.into());
        self
    }

    pub fn with_cmd(mut self, cmd: Cmd) -> Out {
        self.cmds.push(cmd);
        self
    }

    /// The overlay that answered closes.
    pub fn close() -> Out {
        Out {
            close: true,
            ..Out::default()
        }
    }

    /// Only work handed on.
    pub fn pass(pass: Pass) -> Out {
        Out {
            pass: Some(pass),
            ..Out::default()
        }
    }

    /// Only a keymap action, run as if its key were pressed.
    pub fn then(action: Action) -> Out {
        Out {
            then: Some(action),
            ..Out::default()
        }
    }

    /// Runs `op` on its jobs: the rows say "cancelling…" (or its verb) at once, the
    /// status bar what runs.
    pub fn op(op: crate::slurm::ops::JobOp) -> Out {
        if op.ids.is_empty() {
            return Out::none();
        }
        let note = format!("{}…", op.describe());
        let busy = (op.ids.clone(), op.kind.doing());
        Out {
            cmds: vec![Cmd::Op(op)],
            note: Some(note),
            busy: Some(busy),
            ..Out::default()
        }
    }

    /// Marks `ids` busy with `label` in the queue.
    pub fn with_busy(mut self, ids: Vec<JobId>, label: &'static str) -> Out {
        self.busy = Some((ids, label));
        self
    }

    /// Both answers: commands in order, the later note, prompt and question win.
    pub fn and(mut self, later: Out) -> Out {
        self.cmds.extend(later.cmds);
        self.note = later.note.or(self.note);
        self.prompt = later.prompt.or(self.prompt);
        self.confirm = later.confirm.or(self.confirm);
        self.busy = later.busy.or(self.busy);
        self.close |= later.close;
        self.select = later.select.or(self.select);
        self.then = later.then.or(self.then);
        self.focus = later.focus.or(self.focus);
        self.form = later.form.or(self.form);
        self.columns = later.columns.or(self.columns);
        self.jump = later.jump.or(self.jump);
        self.pass = later.pass.or(self.pass);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn and_keeps_every_command_and_the_later_note() {
        let a = Out::note("first").with_cmd(Cmd::Quit);
        let b = Out::cmds(vec![Cmd::Suspend]).with_note("second");
        let both = a.and(b);
        assert_eq!(both.cmds.len(), 2);
        assert!(matches!(both.cmds[0], Cmd::Quit));
        assert!(matches!(both.cmds[1], Cmd::Suspend));
        assert_eq!(both.note.as_deref(), Some("second"));
        let kept = Out::note("only").and(Out::none());
        assert_eq!(
            kept.note.as_deref(),
            Some("only"),
            "a later Out without a note keeps the earlier one"
        );
    }
}
