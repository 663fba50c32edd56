//! The launch form's state and keys. The form is modal: while it is open it gets every key.
//! Values are validated as they change (against the partitions fetched when it opened);
//! `p` shows the exact script, `t` asks `sbatch --test-only`, enter on Submit submits.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub use super::form_state::{Busy, FormState};

use super::component::Out;
use crate::action::Cmd;
use crate::launch::facts::ClusterFacts;
use crate::launch::stage::Estimate;
use crate::launch::submit::{self, Prepared, Submitted};
use crate::slurm::model::{Job, JobId, JobState, SlurmDuration};

const TOGGLES: [&str; 2] = ["requeue", "force_reconvert"];

/// What the form is about to be used for, in the questions asked first.
#[derive(Debug, Clone, Copy)]
enum Use {
    Submit,
    Save,
}

impl FormState {
    /// `n`: a form on cluster `c` with its last used values (or the defaults), still to be
    /// given the partitions (`Cmd::FetchLaunchFacts`).
    pub fn open(c: &super::ClusterState) -> FormState {
        let choices = c.launch.choices();
        let spec = choices.first().map(|c| c.1.clone()).unwrap_or_default();
        let mut form = FormState {
            cluster: c.ix,
            spec,
            choices: choices.into_iter().map(|c| c.0).collect(),
            origins: c.launch.choice_origins(),
            template_problems: c.launch.template_problems.clone(),
            overwrite: None,
            choice: 0,
            row: 1,
            editing: None,
            picker: None,
            facts: c.launch.facts.clone(),
            problems: Vec::new(),
            prepared: None,
            preview: None,
            estimate: None,
            busy: Some(Busy::Facts),
            error: None,
            local_id: submit::new_local_id(),
            results_root: c.launch.results_root.clone(),
            foreign: None,
            spec_changed: None,
            rerun: None,
            from_script: None,
            fit: None,
            windows: None,
            outlook: Default::default(),
            submit_when_read: None,
        };
        form.revalidate();
        form
    }

    /// A key while the form is open (it is modal: it gets every key). `c`: the cluster
    /// on screen, whose templates and name the form uses.
    pub fn on_key(&mut self, k: KeyEvent, c: &super::ClusterState) -> Out {
        let form = self;
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(name) = form.overwrite.take() {
            if k.code == KeyCode::Char('y') {
                form.error = Some(format!("saving template `{name}`…"));
                return Out::cmds(vec![Cmd::SaveTemplate {
                    name,
                    spec: Box::new(form.spec.clone()),
                    overwrite: true,
                }]);
            }
            form.error = Some(format!("template `{name}` kept as it was; nothing saved"));
            return Out::none();
        }
        if let Some(buf) = form.editing.as_mut() {
            match k.code {
                KeyCode::Esc => {
                    form.editing = None;
                    form.revalidate();
                    return Out::none();
                }
                KeyCode::Enter => {
                    let text = buf.clone();
                    form.editing = None;
                    if let Some(key) = form.field_key() {
                        // A size typed in is the user's: checked as it is, never fitted.
                        if let Some(chosen) = form.fit.as_mut() {
                            chosen.cpus |= key == "cpus_per_task";
                            chosen.mem |= key == "mem";
                        }
                        match form.spec.set(key, &text) {
                            Ok(()) => form.error = None,
                            Err(e) => form.error = Some(e),
                        }
                        form.revalidate();
                    }
                }
                KeyCode::Backspace => {
                    buf.pop();
                }
                KeyCode::Char('u') if ctrl => buf.clear(),
                KeyCode::Char(c) if !ctrl => buf.push(c),
                _ => return Out::none(),
            }
            form.revalidate();
            return Out::none();
        }
        if let Some(cur) = form.picker {
            let n = form.facts.as_ref().map_or(0, |f| f.partitions.len());
            match k.code {
                KeyCode::Esc => form.picker = None,
                KeyCode::Down | KeyCode::Char('j') if n > 0 => form.picker = Some((cur + 1) % n),
                KeyCode::Up | KeyCode::Char('k') if n > 0 => form.picker = Some((cur + n - 1) % n),
                KeyCode::Enter => {
                    if let Some(p) = form.facts.as_ref().and_then(|f| f.partitions.get(cur)) {
                        form.spec.partition = p.name.clone();
                    }
                    form.picker = None;
                    form.revalidate();
                }
                _ => {}
            }
            return Out::none();
        }
        if let Some(off) = form.preview {
            match k.code {
                KeyCode::Esc | KeyCode::Char('p') | KeyCode::Char('q') => form.preview = None,
                KeyCode::Down | KeyCode::Char('j') => form.preview = Some(off.saturating_add(1)),
                KeyCode::Up | KeyCode::Char('k') => form.preview = Some(off.saturating_sub(1)),
                KeyCode::PageDown => form.preview = Some(off.saturating_add(10)),
                KeyCode::PageUp => form.preview = Some(off.saturating_sub(10)),
                _ => {}
            }
            return Out::none();
        }
        let last = FormState::submit_row();
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') => return Out::close(),
            KeyCode::Down | KeyCode::Tab | KeyCode::Char('j') => {
                form.row = (form.row + 1) % (last + 1)
            }
            KeyCode::Up | KeyCode::BackTab | KeyCode::Char('k') => {
                form.row = (form.row + last) % (last + 1)
            }
            KeyCode::Left | KeyCode::Right if form.row == 0 => {
                let n = form.choices.len().max(1);
                let next = if k.code == KeyCode::Right {
                    form.choice + 1
                } else {
                    form.choice + n - 1
                };
                form.pick_template(next % n, c);
            }
            KeyCode::Char('p') => {
                if form.prepared.is_some() {
                    form.preview = Some(0);
                } else {
                    form.error = Some("fix the marked fields to preview the script".into());
                }
            }
            KeyCode::Char('t') => return Out::cmds(form.test_only()),
            KeyCode::Char('o') if !ctrl => {
                return Out::prompt(super::prompt::script_path());
            }
            KeyCode::Char('w') if !ctrl => {
                // A template keeps the script and spec for later launches: the same
                // questions as Submit first.
                if form.ask_first(Use::Save) {
                    return Out::none();
                }
                // The name asked for on the bottom line; the template's own name to start.
                return Out::prompt(super::prompt::template_name(
                    &form.spec.template.clone().unwrap_or_default(),
                ));
            }
            KeyCode::Char('s') if ctrl => return Out::cmds(form.submit(&c.name)),
            KeyCode::Char('r') => {
                form.busy = Some(Busy::Facts);
                return Out::cmds(vec![Cmd::FetchLaunchFacts]);
            }
            KeyCode::Enter => {
                if form.row == 0 {
                    let next = (form.choice + 1) % form.choices.len().max(1);
                    form.pick_template(next, c);
                    return Out::none();
                }
                if form.row == last {
                    return Out::cmds(form.submit(&c.name));
                }
                match form.field_key() {
                    Some(key) if TOGGLES.contains(&key) => {
                        let on = form.spec.get(key) == "true";
                        let _ = form.spec.set(key, if on { "false" } else { "true" });
                        form.revalidate();
                    }
                    Some("partition")
                        if form
                            .facts
                            .as_ref()
                            .is_some_and(|f| !f.partitions.is_empty()) =>
                    {
                        let at = form.facts.as_ref().and_then(|f| {
                            f.partitions
                                .iter()
                                .position(|p| p.name == form.spec.partition)
                        });
                        form.picker = Some(at.unwrap_or(0));
                    }
                    Some(key) => form.editing = Some(form.spec.get(key)),
                    None => {}
                }
            }
            _ => {}
        }
        Out::none()
    }

    /// The path typed after `o`: read on this machine by the local worker.
    pub fn read_script(&mut self, path: &str) -> Vec<Cmd> {
        let path = path.trim();
        if path.is_empty() {
            self.error = Some("no script named: nothing read".into());
            return Vec::new();
        }
        self.error = Some(format!("reading {path}…"));
        vec![Cmd::ReadScript(path.to_string())]
    }

    /// The script read for `o`: the form becomes a launch of it (its `#SBATCH` options set
    /// the fields they name, as `slurmdash submit SCRIPT` reads them), and says what it read,
    /// passed to Slurm unchanged and left out.
    pub fn on_script(&mut self, path: &str, result: Result<Vec<u8>, String>) {
        let bytes = match result {
            Ok(b) => b,
            Err(e) => {
                self.error = Some(format!("script not read: {e}"));
                return;
            }
        };
        let file = path
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(path);
        let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
        let mut spec = self.spec.clone();
        match crate::launch::directives::from_script(&mut spec, stem, bytes) {
            Ok(r) => {
                self.spec = spec;
                self.error = None;
                self.from_script = Some((file.to_string(), r));
                self.revalidate();
            }
            Err(e) => self.error = Some(format!("script {path}: {e}; the form is as it was")),
        }
    }

    /// The name typed after `w`: a name that is not one file name is refused here, saying
    /// why; otherwise the dashboard writes the file (and asks before replacing one).
    pub fn save_as(&mut self, name: &str) -> Vec<Cmd> {
        let name = name.trim();
        if let Err(e) = crate::config::template_files::check_name(name) {
            self.error = Some(format!("not saved: {e}"));
            return Vec::new();
        }
        self.error = Some(format!("saving template `{name}`…"));
        vec![Cmd::SaveTemplate {
            name: name.to_string(),
            spec: Box::new(self.spec.clone()),
            overwrite: false,
        }]
    }

    /// A template was saved as `name` on cluster `c` (already listed there): the form
    /// lists it and picks it.
    pub fn saved(&mut self, name: &str, c: &super::ClusterState) {
        let choices = c.launch.choices();
        self.choices = choices.iter().map(|c| c.0.clone()).collect();
        self.origins = c.launch.choice_origins();
        if let Some(i) = choices.iter().position(|c| c.0 == name) {
            self.choice = i;
            self.spec.template = Some(name.to_string());
        }
        self.error = None;
    }

    fn pick_template(&mut self, i: usize, c: &super::ClusterState) {
        if let Some((_, spec)) = c.launch.choices().get(i) {
            self.choice = i;
            self.spec = spec.clone();
            self.estimate = None;
            self.revalidate();
        }
    }

    fn test_only(&mut self) -> Vec<Cmd> {
        match (&self.prepared, &self.busy) {
            (_, Some(Busy::Testing | Busy::Submitting)) => Vec::new(),
            (Some(p), _) => {
                let cmd = Cmd::TestOnly(Box::new(p.clone()));
                self.busy = Some(Busy::Testing);
                self.estimate = None;
                vec![cmd]
            }
            (None, _) => {
                self.error = Some("fix the marked fields first".into());
                Vec::new()
            }
        }
    }

    /// The questions a foreign script or a rewritten spec ask before the form is used
    /// (submitted, or saved as a template with `w`): asks the first one not yet answered
    /// (the same key again answers it) and says true, or false when all are answered.
    fn ask_first(&mut self, how: Use) -> bool {
        if let Some(f) = self.foreign.as_mut().filter(|f| !f.confirmed) {
            f.confirmed = true;
            let again = match how {
                Use::Submit => "enter on Submit again to launch it",
                Use::Save => "w again to save it as a template",
            };
            self.error = Some(format!(
                "{}'s script would run as {}: {again}, esc to leave",
                f.owner,
                f.me.as_deref().unwrap_or("you")
            ));
            return true;
        }
        if let Some(c) = self.spec_changed.as_mut().filter(|c| !c.confirmed) {
            c.confirmed = true;
            let again = match how {
                Use::Submit => "enter on Submit again to launch what the form shows",
                Use::Save => "w again to save what the form shows as a template",
            };
            self.error = Some(format!(
                "job {}'s specs/launch.json is not the one launched: {again}, esc to leave",
                c.job
            ));
            return true;
        }
        false
    }

    /// Submit on cluster `cluster` (its name), after the questions a foreign script or a
    /// rewritten spec ask first.
    fn submit(&mut self, cluster: &str) -> Vec<Cmd> {
        let form = self;
        if form.busy == Some(Busy::Submitting) {
            return Vec::new();
        }
        if form.ask_first(Use::Submit) {
            return Vec::new();
        }
        match &form.prepared {
            Some(p) => {
                let cmd = Cmd::Submit {
                    cluster: cluster.to_string(),
                    prepared: Box::new(p.clone()),
                };
                form.busy = Some(Busy::Submitting);
                form.error = None;
                vec![cmd]
            }
            None if form.facts.is_none() => {
                form.submit_when_read = Some(cluster.to_string());
                form.error = Some(
                    "submitting as soon as the cluster's partitions are read (checked against them first)…"
                        .into(),
                );
                Vec::new()
            }
            None => {
                form.error = Some("not submitted: fix the marked fields first".into());
                Vec::new()
            }
        }
    }

    /// The partitions and limits fetched for the form; a submit pressed while they were
    /// read goes on now.
    pub fn on_facts(&mut self, r: Result<ClusterFacts, String>) -> Vec<Cmd> {
        if self.busy == Some(Busy::Facts) {
            self.busy = None;
        }
        let asked = self.submit_when_read.take();
        match r {
            Ok(f) => {
                self.facts = Some(f);
                self.revalidate();
                match asked {
                    Some(cluster) => self.submit(&cluster),
                    None => Vec::new(),
                }
            }
            Err(e) => {
                self.error = Some(match asked {
                    Some(_) => {
                        format!("not submitted: reading partitions: {e}; r reads them again")
                    }
                    None => format!("reading partitions: {e}"),
                });
                Vec::new()
            }
        }
    }

    /// `sbatch --test-only`'s answer.
    pub fn on_test_only(&mut self, r: Result<Estimate, String>) {
        self.busy = None;
        self.estimate = Some(r);
    }

    /// A submission that failed: the form says why and can be submitted again.
    pub fn on_refused(&mut self, e: String) {
        self.busy = None;
        self.error = Some(e);
    }
}

/// Held as `Option<FormState>`: open while there is one; the cluster on screen's facts.
impl super::component::OverlayKeys for FormState {
    fn overlay_key(&mut self, k: &KeyEvent, cx: &super::component::Keys) -> Out {
        self.on_key(*k, cx.view.cluster)
    }
}

/// The row a submitted job shows until squeue lists it.
pub(super) fn placeholder_job(s: &Submitted, p: &Prepared, cluster: u16) -> Job {
    Job::new(crate::slurm::model::JobRecord {
        id: JobId::new(s.job_id).on(cluster),
        cluster: "".into(),
        array_job_id: None,
        array_task: None,
        name: p.plan.name.as_str().into(),
        user: "".into(),
        account: p.plan.account.clone().unwrap_or_default().into(),
        partition: p.plan.partition.as_str().into(),
        state: JobState::Pending,
        reason: Some("submitted".into()),
        time_used: SlurmDuration::from_secs(0),
        time_limit: SlurmDuration::Known(p.plan.time),
        nodes: p.plan.nodes,
        cpus: p.plan.cpus_per_task.saturating_mul(p.plan.nodes),
        min_memory: p.plan.mem.as_deref().map(Into::into),
        tres_per_node: (p.plan.gpus_per_node > 0)
            .then(|| format!("gres:gpu:{}", p.plan.gpus_per_node).into()),
        tres: None,
        node_list: None,
        submit_time: None,
        start_time: None,
        work_dir: s.job_dir.as_str().into(),
        qos: "".into(),
        priority: None,
        dependency: None,
        problem: None,
    })
}

#[cfg(test)]
#[path = "form_tests.rs"]
mod tests;
