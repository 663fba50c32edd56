//! App's side of launching: the launch form's answers (cluster facts, `--test-only`, a read
//! script, a saved template), a submission landing (a placeholder row at once), the
//! registry of launches (their chains, badges and sweeps; their jobs re-attached through
//! sacct), retry checks, `A` and `L`'s reads.

use super::form::placeholder_job;
use super::{component, relaunch, App};
use crate::action::{Cmd, LaunchMsg};
use crate::launch::submit::Submitted;
use crate::launch::LaunchSpec;
use crate::slurm::model::{Job, JobId};

impl App {
    /// A launch message about cluster `ix`.
    pub(super) fn on_launch_msg(&mut self, ix: u16, msg: LaunchMsg) -> Vec<Cmd> {
        match msg {
            LaunchMsg::Relaunch { id, result } => {
                let out = relaunch::opened(relaunch::relaunch_form(
                    &view!(self, ix),
                    &id,
                    *result,
                    true,
                ));
                self.apply(out)
            }
            LaunchMsg::Recovered { id, result } => {
                let out = relaunch::opened(relaunch::recovered_form(
                    &view!(self, ix),
                    &id,
                    *result,
                    true,
                ));
                self.apply(out)
            }
            LaunchMsg::Rerun { id, result } => {
                let out = relaunch::opened(relaunch::rerun_form(&view!(self, ix), &id, *result));
                self.apply(out)
            }
            LaunchMsg::Retries(result) => {
                let r = self.clusters[ix].on_retries(result, self.now);
                if let Some(badges) = r.badges {
                    self.launches_shown(ix, badges);
                }
                let mut out = component::Out::cmds(r.cmds);
                out.note = r.note.or(r.quiet_note.filter(|_| self.note.is_none()));
                self.apply(out)
            }
            LaunchMsg::Launches(entries) => {
                let badges = self.clusters[ix].set_launches(&entries);
                self.launches_shown(ix, badges);
                Vec::new()
            }
            LaunchMsg::LaunchFacts(r) => {
                if let Ok(f) = &r {
                    self.clusters[ix].launch.facts = Some(f.clone());
                }
                match self.overlays.form.as_mut() {
                    Some(form) => form.on_facts(r),
                    None => Vec::new(),
                }
            }
            LaunchMsg::TestOnly(r) => {
                if let Some(form) = self.overlays.form.as_mut() {
                    form.on_test_only(r);
                }
                Vec::new()
            }
            LaunchMsg::Submitted(r) => {
                // The new launch's chain (job dir, attempts): at the next tick.
                self.clusters[ix].retry.last = None;
                self.on_submitted(ix, *r)
            }
            LaunchMsg::RegistryJobs(r) => self.on_registry_jobs(ix, r),
            LaunchMsg::Adopted { id, result } => {
                self.queue.shown_mut().clear_busy(std::slice::from_ref(&id));
                match result {
                    Ok(line) => {
                        // The new launch's chain: at the next tick.
                        self.clusters[ix].retry.last = None;
                        self.say(line);
                    }
                    Err(e) => self.clusters[ix].status.last_error = Some(e),
                }
                Vec::new()
            }
            LaunchMsg::TemplateSaved { name, spec, result } => {
                self.on_template_saved(name, *spec, result)
            }
            LaunchMsg::ScriptRead { path, result } => {
                if let Some(form) = self.overlays.form.as_mut() {
                    form.on_script(&path, result);
                }
                Vec::new()
            }
        }
    }

    /// A submission's answer: the form closes, the queue shows the job at once (a
    /// placeholder row until squeue lists it) and selects it; or the form says why not.
    pub(super) fn on_submitted(&mut self, ix: u16, r: Result<Submitted, String>) -> Vec<Cmd> {
        match r {
            Err(e) => {
                if let Some(form) = self.overlays.form.as_mut() {
                    form.on_refused(e);
                } else {
                    self.say(e);
                }
                Vec::new()
            }
            Ok(s) => {
                let form = self.overlays.form.take();
                if let Some(p) = form.as_ref().and_then(|f| f.prepared.as_ref()) {
                    self.clusters[ix].launch.last_used = Some(p.spec.clone());
                    // The queue shows it at once; the poll below brings the real row.
                    // A queue poll already in flight does not list it yet: the row stays
                    // (as a registry job) until squeue or sacct says more.
                    let mut placeholder = placeholder_job(&s, p, ix);
                    if self.multi() {
                        placeholder.cluster =
                            crate::slurm::shared::SharedStr::from(&self.clusters[ix].name);
                    }
                    self.clusters[ix]
                        .launch
                        .registry_jobs
                        .retain(|j| j.id != placeholder.id);
                    self.clusters[ix].launch.registry_jobs.push(placeholder);
                    let own = self.own_jobs(ix).into_owned();
                    let (jobs, _) = self.clusters[ix].with_registry_jobs(own);
                    self.set_own_jobs(ix, jobs);
                }
                // The new job's row is the queue's: shown, with nothing filtering it out.
                if self.history.open {
                    self.queue.show_history(false);
                    self.history.close();
                }
                self.queue.shown_mut().set_filter("");
                self.queue
                    .shown_mut()
                    .select_id(&JobId::new(s.job_id).on(ix));
                self.focus = crate::keymap::Pane::Queue;
                let mut note = format!("submitted job {} · logs {}", s.job_id, s.stdout);
                for w in &s.warnings {
                    note.push_str(" · ");
                    note.push_str(w);
                }
                self.say(note);
                let mut cmds = self.selection_changed();
                cmds.extend(self.poll_now(ix));
                cmds
            }
        }
    }

    /// Cluster `ix`'s launches were read anew (`badges` from their chains): the queue's
    /// retry badges and folded sweeps follow.
    pub(super) fn launches_shown(
        &mut self,
        ix: u16,
        badges: std::collections::HashMap<u64, String>,
    ) {
        self.queue.jobs.set_badges(ix, badges);
        let sweeps = super::retry::sweeps(&self.clusters[ix].chains);
        self.queue.jobs.set_sweeps(ix, sweeps);
    }

    pub(super) fn on_registry_jobs(&mut self, ix: u16, r: Result<Vec<Job>, String>) -> Vec<Cmd> {
        match r {
            Ok(jobs) => {
                self.clusters[ix].launch.on_registry_jobs(jobs);
                // sacct's answer is newer than the rows on screen.
                let rows = self.clusters[ix]
                    .launch
                    .over(self.own_jobs(ix).into_owned());
                self.set_own_jobs(ix, rows);
                let mut cmds = self.selection_changed();
                if cmds.is_empty() {
                    cmds = self.refetch_if_state_changed();
                }
                cmds
            }
            Err(e) => {
                self.clusters[ix].launch.reattaching = false;
                self.say(format!("re-attaching launched jobs: {e}"));
                Vec::new()
            }
        }
    }

    /// The template file was written (it is listed and picked), exists (the form asks), or
    /// could not be written (the form says why).
    pub(super) fn on_template_saved(
        &mut self,
        name: String,
        spec: LaunchSpec,
        result: Result<std::path::PathBuf, crate::config::template_files::SaveError>,
    ) -> Vec<Cmd> {
        use crate::config::template_files::SaveError;
        match result {
            Ok(path) => {
                let shown = path.display().to_string();
                // Template files are this machine's: every cluster's form lists it.
                for c in self.clusters.iter_mut() {
                    c.launch.add_saved(&name, spec.clone(), &shown);
                }
                if let Some(form) = self.overlays.form.as_mut() {
                    form.saved(&name, &self.clusters[form.cluster]);
                }
                self.say(format!(
                    "template `{name}` saved in {shown} (slurmdash submit --template {name})"
                ));
            }
            Err(SaveError::Exists(path)) => match self.overlays.form.as_mut() {
                Some(form) => {
                    form.overwrite = Some(name.clone());
                    form.error = Some(format!(
                        "template `{name}` exists ({}): y overwrites it, any other key keeps it",
                        path.display()
                    ));
                }
                None => self.say(format!(
                    "template `{name}` exists ({}): not saved",
                    path.display()
                )),
            },
            Err(SaveError::Failed(e)) => {
                let msg = format!("template `{name}` not saved: {e}");
                match self.overlays.form.as_mut() {
                    Some(form) => form.error = Some(msg),
                    None => self.say(msg),
                }
            }
        }
        Vec::new()
    }
}
