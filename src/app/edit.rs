//! `E`: edit a pending job's time limit, partition, QOS and name. Checked as the user
//! types against the partitions' limits (fetched when the form opens), sent as one
//! `scontrol update` with only the fields that changed.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use crate::action::Cmd;
use crate::slurm::model::{CancelOutcome, JobId, Status};
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

impl App {
    pub(super) fn open_edit(&mut self) -> Vec<Cmd> {
        if self.refuse_read_only("edit") {
            return Vec::new();
        }
        let Some(row) = self.queue.selected_row() else {
            self.note = Some("no job selected to edit".into());
            return Vec::new();
        };
        let job = row.job;
        if job.status() != Status::Pending {
            self.note = Some(format!(
                "only pending jobs can be edited; {} is {}",
                job.id,
                job.state.long_name()
            ));
            return Vec::new();
        }
        let time = match job.time_limit.known() {
            Some(_) => job.time_limit.to_slurm(),
            None => String::new(),
        };
        let original = [
            time,
            job.partition.to_string(),
            job.qos.to_string(),
            job.name.clone(),
        ];
        self.edit = Some(EditForm {
            id: job.id.clone(),
            values: original.clone(),
            original,
            focus: 0,
            errors: Vec::new(),
            warnings: Vec::new(),
            sending: false,
        });
        self.check_edit();
        if self.cluster.partitions.is_none() {
            vec![Cmd::FetchLimits]
        } else {
            Vec::new()
        }
    }

    pub(super) fn check_edit(&mut self) {
        let parts = self
            .cluster
            .partitions
            .as_ref()
            .and_then(|p| p.as_ref().ok());
        let parts = parts.map(Vec::as_slice).unwrap_or(&[]);
        let Some(form) = self.edit.as_mut() else {
            return;
        };
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

    pub(super) fn on_edit_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        let Some(form) = self.edit.as_mut() else {
            return Vec::new();
        };
        if form.sending {
            if k.code == KeyCode::Esc {
                self.edit = None;
            }
            return Vec::new();
        }
        match k.code {
            KeyCode::Esc => {
                self.edit = None;
                self.note = Some("edit abandoned; nothing changed".into());
                return Vec::new();
            }
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
            KeyCode::Enter => return self.submit_edit(),
            _ => {}
        }
        self.check_edit();
        Vec::new()
    }

    fn submit_edit(&mut self) -> Vec<Cmd> {
        self.check_edit();
        let Some(form) = self.edit.as_mut() else {
            return Vec::new();
        };
        if !form.errors.is_empty() {
            return Vec::new();
        }
        let edit = form.edit();
        if edit.is_empty() {
            self.edit = None;
            self.note = Some("nothing changed".into());
            return Vec::new();
        }
        form.sending = true;
        let id = form.id.clone();
        self.queue.set_busy(std::slice::from_ref(&id), "updating…");
        vec![Cmd::Edit(id, edit)]
    }

    pub(super) fn on_edited(
        &mut self,
        id: JobId,
        edit: JobEdit,
        result: Result<Vec<(JobId, CancelOutcome)>, String>,
    ) -> Vec<Cmd> {
        self.queue.clear_busy(std::slice::from_ref(&id));
        let failure = match result {
            Ok(outcomes) => match outcomes.into_iter().next().map(|(_, o)| o) {
                Some(CancelOutcome::Cancelled) | None => None,
                Some(CancelOutcome::AlreadyGone) => Some("Slurm no longer knows this job".into()),
                Some(CancelOutcome::AlreadyFinished) => Some("the job has already finished".into()),
                Some(CancelOutcome::Failed(m)) => Some(m),
            },
            Err(e) => Some(e),
        };
        match failure {
            None => {
                if self.edit.as_ref().is_some_and(|f| f.id == id) {
                    self.edit = None;
                }
                let what: Vec<String> = edit.argv(&id).into_iter().skip(3).collect();
                self.note = Some(format!("updated {id}: {}", what.join(" ")));
            }
            Some(msg) if super::session::is_extension(&edit) => {
                // A session's extension: said on the status bar, in a session's words.
                self.note = Some(format!(
                    "{id}: {}",
                    crate::launch::session::extend_refused(&msg)
                ));
            }
            Some(msg) => {
                let line = format!("could not update {id}: {msg}");
                match self.edit.as_mut().filter(|f| f.id == id) {
                    Some(form) => {
                        form.sending = false;
                        form.errors = vec![line];
                    }
                    None => self.cluster.status.last_error = Some(line),
                }
            }
        }
        self.poll_now()
    }
}
