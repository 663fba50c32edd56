//! `E`: edit a pending job's time limit, partition, QOS and name. Checked as the user
//! types against the partitions' limits (fetched when the form opens), sent as one
//! `scontrol update` with only the fields that changed.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::component::{Out, View};
use crate::action::Cmd;
use crate::slurm::model::{CancelOutcome, JobId, Partition, Status};
use crate::slurm::ops::JobEdit;

pub const EDIT_FIELDS: [&str; 4] = ["time limit", "partition", "QOS", "name"];

#[derive(Debug, Clone, PartialEq)]
pub struct EditForm {
    pub id: JobId,
    /// What the job has now, in `EDIT_FIELDS` order.
    pub original: [String; 4],
    pub values: [String; 4],
    pub focus: usize,
    /// Problems with the values as typed; submitting is refused while there are any.
    pub errors: Vec<String>,
    /// Problems with what the job already has (e.g. the time limit that keeps it
    /// pending): shown, but they do not block other changes.
    pub warnings: Vec<String>,
    /// The update is running.
    pub sending: bool,
}

impl EditForm {
    /// Only the fields the user changed.
    pub fn edit(&self) -> JobEdit {
        let changed = |i: usize| {
            let v = self.values[i].trim();
            (v != self.original[i]).then(|| v.to_string())
        };
        JobEdit {
            time_limit: changed(0),
            partition: changed(1),
            qos: changed(2),
            name: (self.values[3] != self.original[3]).then(|| self.values[3].clone()),
        }
    }
}

impl EditForm {
    /// `E` on the selected job: the form, or why there is none.
    pub fn open(v: &View) -> Result<EditForm, String> {
        if let Some(why) = v.read_only_refusal("edit") {
            return Err(why);
        }
        let Some(row) = v.queue.selected_row() else {
            return Err("no job selected to edit".into());
        };
        let job = row.job;
        if job.status() != Status::Pending {
            return Err(format!(
                "only pending jobs can be edited; {} is {}",
                job.id,
                job.state.long_name()
            ));
        }
        let time = match job.time_limit.known() {
            Some(_) => job.time_limit.to_slurm(),
            None => String::new(),
        };
        let original = [
            time,
            job.partition.to_string(),
            job.qos.to_string(),
            job.name.to_string(),
        ];
        let mut form = EditForm {
            id: job.id.clone(),
            values: original.clone(),
            original,
            focus: 0,
            errors: Vec::new(),
            warnings: Vec::new(),
            sending: false,
        };
        form.check(v.partitions());
        Ok(form)
    }

    /// Checks the values as typed against the partitions' limits.
    pub fn check(&mut self, parts: &[Partition]) {
        let form = self;
        let current = form.original[1].clone();
        let edit = form.edit();
        form.errors = edit.check(&current, parts);
        // The time limit and partition the job would have, changed or not.
        let effective = JobEdit {
            time_limit: Some(form.values[0].trim().to_string()).filter(|t| !t.is_empty()),
            partition: Some(form.values[1].trim().to_string()),
            ..JobEdit::default()
        };
        form.warnings.clear();
        for e in effective.check(&current, parts) {
            if form.errors.contains(&e) {
                continue;
            }
            if edit.partition.is_some() || edit.time_limit.is_some() {
                form.errors.push(e);
            } else {
                form.warnings
                    .push(format!("{e}: the job cannot start until you change this"));
            }
        }
    }

    /// A key while the form is open; `parts`: the partitions it checks against.
    pub fn on_key(&mut self, k: KeyEvent, parts: &[Partition]) -> Out {
        let form = self;
        if form.sending {
            if k.code == KeyCode::Esc {
                return Out::close();
            }
            return Out::none();
        }
        match k.code {
            KeyCode::Esc => return Out::close().with_note("edit abandoned; nothing changed"),
            KeyCode::Tab | KeyCode::Down => form.focus = (form.focus + 1) % EDIT_FIELDS.len(),
            KeyCode::BackTab | KeyCode::Up => {
                form.focus = (form.focus + EDIT_FIELDS.len() - 1) % EDIT_FIELDS.len()
            }
            KeyCode::Backspace => {
                form.values[form.focus].pop();
            }
            KeyCode::Char('u') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                form.values[form.focus].clear();
            }
            KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => {
                form.values[form.focus].push(c);
            }
            KeyCode::Enter => return form.submit(parts),
            _ => {}
        }
        form.check(parts);
        Out::none()
    }

    fn submit(&mut self, parts: &[Partition]) -> Out {
        self.check(parts);
        if !self.errors.is_empty() {
            return Out::none();
        }
        let edit = self.edit();
        if edit.is_empty() {
            return Out::close().with_note("nothing changed");
        }
        self.sending = true;
        Out::cmds(vec![Cmd::Edit(self.id.clone(), edit)])
            .with_busy(vec![self.id.clone()], "updating…")
    }
}

/// Held as `Option<EditForm>`: open while there is one.
impl super::component::OverlayKeys for EditForm {
    fn overlay_key(&mut self, k: &KeyEvent, cx: &super::component::Keys) -> Out {
        self.on_key(*k, cx.view.partitions())
    }
}

/// What an update's answer means, for the form (`form`: the one open, if any, which
/// closes on success or shows the error) and the status bar.
pub struct Edited {
    /// For the status bar.
    pub note: Option<String>,
    /// The failure, for the cluster's last error when no form of this job shows it.
    pub error: Option<String>,
}

/// `scontrol update`'s answer for job `id`.
pub fn on_edited(
    form: &mut Option<EditForm>,
    id: &JobId,
    edit: &JobEdit,
    result: Result<Vec<(JobId, CancelOutcome)>, String>,
) -> Edited {
    let failure = match result {
        Ok(outcomes) => match outcomes.into_iter().next().map(|(_, o)| o) {
            Some(CancelOutcome::Cancelled) | None => None,
            Some(CancelOutcome::AlreadyGone) => Some("Slurm no longer knows this job".into()),
            Some(CancelOutcome::AlreadyFinished) => Some("the job has already finished".into()),
            Some(CancelOutcome::Failed(m)) => Some(m),
        },
        Err(e) => Some(e),
    };
    let mut done = Edited {
        note: None,
        error: None,
    };
    match failure {
        None => {
            if form.as_ref().is_some_and(|f| &f.id == id) {
                *form = None;
            }
            let what: Vec<String> = edit.argv(id).into_iter().skip(3).collect();
            done.note = Some(format!("updated {id}: {}", what.join(" ")));
        }
        Some(msg) if super::session::is_extension(edit) => {
            // A session's extension: said on the status bar, in a session's words.
            done.note = Some(format!(
                "{id}: {}",
                crate::launch::session::extend_refused(&msg)
            ));
        }
        Some(msg) => {
            let line = format!("could not update {id}: {msg}");
            match form.as_mut().filter(|f| &f.id == id) {
                Some(form) => {
                    form.sending = false;
                    form.errors = vec![line];
                }
                None => done.error = Some(line),
            }
        }
    }
    done
}
