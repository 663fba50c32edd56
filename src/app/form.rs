//! The launch form's state and keys. The form is modal: while it is open it gets every key.
//! Values are validated as they change (against the partitions fetched when it opened);
//! `p` shows the exact script, `t` asks `sbatch --test-only`, enter on Submit submits.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use crate::action::Cmd;
use crate::launch::facts::ClusterFacts;
use crate::launch::stage::Estimate;
use crate::launch::submit::{self, Prepared, Submitted};
use crate::launch::{Field, LaunchSpec, Problem};
use crate::slurm::model::{Job, JobId, JobState, SlurmDuration};

/// (spec key, label, validation field) in form order.
pub const FIELDS: &[(&str, &str, Field)] = &[
    ("name", "job name", Field::Name),
    ("partition", "partition", Field::Partition),
    ("account", "account", Field::Account),
    ("nodes", "nodes", Field::Nodes),
    ("gpus", "GPUs", Field::Gpus),
    ("cpus_per_task", "CPUs per task", Field::Cpus),
    ("mem", "memory", Field::Mem),
    ("time", "time limit", Field::Time),
    ("array", "array indices", Field::Extra),
    ("image", "container image", Field::Image),
    ("container_mounts", "container mounts", Field::Mounts),
    ("workdir", "working directory", Field::Workdir),
    ("command", "command", Field::Command),
    ("env", "environment", Field::Env),
    ("secrets", "secrets (names)", Field::Secrets),
    ("extra_sbatch", "extra sbatch options", Field::Extra),
    ("inputs", "input paths", Field::Inputs),
    ("requeue", "requeue", Field::Extra),
    ("retries", "retries", Field::Extra),
    ("resume", "resume after", Field::Extra),
    ("max_resumes", "max resumes", Field::Extra),
    ("signal", "signal before limit", Field::Extra),
    ("mail_type", "mail type", Field::Extra),
    ("mail_user", "mail to", Field::Extra),
    ("force_reconvert", "force reconvert", Field::Image),
];

const TOGGLES: [&str; 2] = ["requeue", "force_reconvert"];

/// What the dashboard knows for launching on the current cluster, set up at start.
#[derive(Debug, Clone, Default)]
pub struct LaunchContext {
    /// `[launch]` with the cluster's partition/account filled in.
    pub defaults: LaunchSpec,
    pub templates: Vec<(String, LaunchSpec)>,
    /// Where each template comes from (name -> its file, or the config), for the form.
    pub origins: std::collections::BTreeMap<String, String>,
    /// Template files left out, each naming the file and the key (shown in the form).
    pub template_problems: Vec<String>,
    pub last_used: Option<LaunchSpec>,
    pub results_root: Option<String>,
    pub facts: Option<ClusterFacts>,
    /// Launched jobs as last seen (squeue, else sacct, else the row made at submission);
    /// merged into every queue refresh so they stay visible after leaving squeue.
    pub registry_jobs: Vec<Job>,
    /// A sacct lookup of registry jobs is in flight.
    pub reattaching: bool,
    /// The login host an editor's `ssh` jumps through to a session's node (`:ssh-config`).
    pub jump: Option<crate::launch::session::Jump>,
}

impl LaunchContext {
    /// The launches' jobs as the registry and sacct know them now.
    pub fn on_registry_jobs(&mut self, jobs: Vec<Job>) {
        self.reattaching = false;
        for j in jobs {
            match self.registry_jobs.iter_mut().find(|r| r.id == j.id) {
                Some(r) => *r = j,
                None => self.registry_jobs.push(j),
            }
        }
    }

    /// `rows` with the launches' jobs in place of (or beside) their rows.
    pub fn over(&self, mut rows: Vec<Job>) -> Vec<Job> {
        for r in &self.registry_jobs {
            match rows.iter_mut().find(|j| j.id == r.id) {
                Some(j) => *j = r.clone(),
                None => rows.push(r.clone()),
            }
        }
        rows
    }

    /// (label, values) choices for the template row: last used first when there is one.
    pub fn choices(&self) -> Vec<(String, LaunchSpec)> {
        let mut v = Vec::new();
        if let Some(l) = &self.last_used {
            v.push(("last used".to_string(), l.clone()));
        }
        v.push(("defaults".to_string(), self.defaults.clone()));
        v.extend(self.templates.iter().cloned());
        v
    }

    /// A template saved from the form: listed (or replaced) as coming from `path`.
    pub fn add_saved(&mut self, name: &str, mut spec: LaunchSpec, path: &str) {
        spec.template = Some(name.to_string());
        match self.templates.iter_mut().find(|t| t.0 == name) {
            Some(t) => t.1 = spec,
            None => self.templates.push((name.to_string(), spec)),
        }
        self.origins.insert(name.to_string(), path.to_string());
    }

    /// Where each choice comes from ("" for last used and the defaults).
    pub fn choice_origins(&self) -> Vec<String> {
        self.choices()
            .iter()
            .map(|(label, spec)| match &spec.template {
                Some(t) if t == label => self.origins.get(t).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Busy {
    Facts,
    Testing,
    Submitting,
}

#[derive(Debug, Clone)]
pub struct FormState {
    /// The cluster the job is launched on (the dashboard's number for it).
    pub cluster: u16,
    pub spec: LaunchSpec,
    pub choices: Vec<String>,
    /// Where each choice comes from (a template's file or the config; "" for the others).
    pub origins: Vec<String>,
    /// Template files that were left out (the file and the key), shown under the choice.
    pub template_problems: Vec<String>,
    /// A template of the name asked for exists: `y` overwrites it, any other key keeps it.
    pub overwrite: Option<String>,
    pub choice: usize,
    /// 0: template row; 1..=FIELDS.len(): fields; then the Submit row.
    pub row: usize,
    pub editing: Option<String>,
    /// The partition picker's cursor, when open.
    pub picker: Option<usize>,
    pub facts: Option<ClusterFacts>,
    pub problems: Vec<Problem>,
    pub prepared: Option<Prepared>,
    /// Scroll offset of the script preview, when shown.
    pub preview: Option<u16>,
    pub estimate: Option<Result<Estimate, String>>,
    pub busy: Option<Busy>,
    pub error: Option<String>,
    pub local_id: String,
    pub results_root: Option<String>,
    /// The form holds another user's job (relaunched with `L`): the form says whose script
    /// it is, and Submit asks once more before it runs as you.
    pub foreign: Option<Foreign>,
    /// The form holds a relaunch (`L`) from a `specs/launch.json` that is not the one
    /// launched: the form says so, and Submit asks once more.
    pub spec_changed: Option<SpecChanged>,
    /// `L` on an array with tasks that did not complete: the line that says which the form
    /// reruns (`rerun the 4 tasks that did not complete: 3,7,11,19`).
    pub rerun: Option<String>,
}

/// A relaunch of a job that is not the user's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    pub job: crate::slurm::model::JobId,
    /// The job's user, as sacct names them.
    pub owner: String,
    /// You on the cluster (`id -un`), when known.
    pub me: Option<String>,
    /// Submit was pressed once after the question.
    pub confirmed: bool,
}

impl Foreign {
    /// The warning line of the form.
    pub fn warning(&self) -> String {
        let me = self.me.as_deref().unwrap_or("you");
        format!(
            "job {} is {}'s, not yours: its script would run as {me}, with your files and accounts; read it (p) before you submit",
            self.job, self.owner
        )
    }
}

/// A relaunch from a `specs/launch.json` whose sha256 differs from the one this laptop
/// recorded at launch: the job (or anyone who can write its directory) rewrote it, so its
/// command, environment and image may not be what was launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecChanged {
    pub job: crate::slurm::model::JobId,
    /// Submit was pressed once after the question.
    pub confirmed: bool,
}

impl SpecChanged {
    /// The warning line of the form.
    pub fn warning(&self) -> &'static str {
        "the job's specs/launch.json changed since it was launched: check the command and environment before you submit"
    }
}

impl FormState {
    pub fn submit_row() -> usize {
        FIELDS.len() + 1
    }
    pub fn field_key(&self) -> Option<&'static str> {
        self.row
            .checked_sub(1)
            .and_then(|i| FIELDS.get(i))
            .map(|f| f.0)
    }
    pub fn problems_for(&self, key: &str) -> impl Iterator<Item = &Problem> + '_ {
        let field = FIELDS.iter().find(|f| f.0 == key).map(|f| f.2);
        let own = key != "requeue" && key != "force_reconvert";
        self.problems
            .iter()
            .filter(move |p| own && Some(p.field) == field)
    }

    /// Re-runs validation and rendering after any change.
    /// While a field is being edited, the values with the edit applied (validation runs
    /// as the user types); a value that does not even parse is a problem of that field.
    fn effective(&self) -> Result<LaunchSpec, Problem> {
        let (Some(buf), Some(i)) = (&self.editing, self.row.checked_sub(1)) else {
            return Ok(self.spec.clone());
        };
        let Some((key, _, field)) = FIELDS.get(i) else {
            return Ok(self.spec.clone());
        };
        let mut trial = self.spec.clone();
        trial
            .set(key, buf)
            .map(|_| trial)
            .map_err(|message| Problem {
                field: *field,
                message,
            })
    }

    pub fn revalidate(&mut self) {
        self.prepared = None;
        self.problems.clear();
        let spec = match self.effective() {
            Ok(s) => s,
            Err(p) => {
                self.problems.push(p);
                return;
            }
        };
        let Some(facts) = &self.facts else { return };
        let Some(root) = &self.results_root else {
            self.error = Some(
                "this cluster has no results_root: set it in the config or SLURM_BASE_RESULTS_DIR"
                    .into(),
            );
            return;
        };
        match submit::prepare(&spec, facts, root, &self.local_id) {
            Ok(p) => self.prepared = Some(p),
            Err(problems) => self.problems = problems,
        }
    }
}

impl App {
    /// `n`: opens the form with the last used values (or the defaults).
    pub fn open_form(&mut self) -> Vec<Cmd> {
        if self.cluster.read_only {
            self.note = Some("read-only session: launching jobs is off".into());
            return Vec::new();
        }
        let choices = self.cluster.launch.choices();
        let spec = choices.first().map(|c| c.1.clone()).unwrap_or_default();
        let mut form = FormState {
            cluster: self.cluster.ix,
            spec,
            choices: choices.into_iter().map(|c| c.0).collect(),
            origins: self.cluster.launch.choice_origins(),
            template_problems: self.cluster.launch.template_problems.clone(),
            overwrite: None,
            choice: 0,
            row: 1,
            editing: None,
            picker: None,
            facts: self.cluster.launch.facts.clone(),
            problems: Vec::new(),
            prepared: None,
            preview: None,
            estimate: None,
            busy: Some(Busy::Facts),
            error: None,
            local_id: submit::new_local_id(),
            results_root: self.cluster.launch.results_root.clone(),
            foreign: None,
            spec_changed: None,
            rerun: None,
        };
        form.revalidate();
        self.form = Some(form);
        // Partitions change (idle GPUs, pending jobs): fetch them fresh each time.
        vec![Cmd::FetchLaunchFacts]
    }

    pub(super) fn on_form_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        let Some(form) = self.form.as_mut() else {
            return Vec::new();
        };
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(name) = form.overwrite.take() {
            if k.code == KeyCode::Char('y') {
                form.error = Some(format!("saving template `{name}`…"));
                return vec![Cmd::SaveTemplate {
                    name,
                    spec: Box::new(form.spec.clone()),
                    overwrite: true,
                }];
            }
            form.error = Some(format!("template `{name}` kept as it was; nothing saved"));
            return Vec::new();
        }
        if let Some(buf) = form.editing.as_mut() {
            match k.code {
                KeyCode::Esc => {
                    form.editing = None;
                    form.revalidate();
                    return Vec::new();
                }
                KeyCode::Enter => {
                    let text = buf.clone();
                    form.editing = None;
                    if let Some(key) = form.field_key() {
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
                _ => return Vec::new(),
            }
            form.revalidate();
            return Vec::new();
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
            return Vec::new();
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
            return Vec::new();
        }
        let last = FormState::submit_row();
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') => {
                self.form = None;
                return Vec::new();
            }
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
                let next = next % n;
                return self.pick_template(next);
            }
            KeyCode::Char('p') => {
                if form.prepared.is_some() {
                    form.preview = Some(0);
                } else {
                    form.error = Some("fix the marked fields to preview the script".into());
                }
            }
            KeyCode::Char('t') => return self.form_test_only(),
            KeyCode::Char('w') if !ctrl => {
                // The name asked for on the bottom line; the template's own name to start.
                let start = form.spec.template.clone().unwrap_or_default();
                self.ask_template_name(&start);
            }
            KeyCode::Char('s') if ctrl => return self.form_submit(),
            KeyCode::Char('r') => {
                form.busy = Some(Busy::Facts);
                return vec![Cmd::FetchLaunchFacts];
            }
            KeyCode::Enter => {
                if form.row == 0 {
                    let next = (form.choice + 1) % form.choices.len().max(1);
                    return self.pick_template(next);
                }
                if form.row == last {
                    return self.form_submit();
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
        Vec::new()
    }

    /// The name typed after `w`: a name that is not one file name is refused here, saying
    /// why; otherwise the dashboard writes the file (and asks before replacing one).
    pub(super) fn save_template_as(&mut self, name: &str) -> Vec<Cmd> {
        let Some(form) = self.form.as_mut() else {
            return Vec::new();
        };
        let name = name.trim();
        if let Err(e) = crate::config::template_files::check_name(name) {
            form.error = Some(format!("not saved: {e}"));
            return Vec::new();
        }
        form.error = Some(format!("saving template `{name}`…"));
        vec![Cmd::SaveTemplate {
            name: name.to_string(),
            spec: Box::new(form.spec.clone()),
            overwrite: false,
        }]
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
                for c in &mut self.parked {
                    c.launch.add_saved(&name, spec.clone(), &shown);
                }
                self.cluster.launch.add_saved(&name, spec, &shown);
                let choices = self.cluster.launch.choices();
                if let Some(form) = self.form.as_mut() {
                    form.choices = choices.iter().map(|c| c.0.clone()).collect();
                    form.origins = self.cluster.launch.choice_origins();
                    if let Some(i) = choices.iter().position(|c| c.0 == name) {
                        form.choice = i;
                        form.spec.template = Some(name.clone());
                    }
                    form.error = None;
                }
                self.note = Some(format!(
                    "template `{name}` saved in {shown} (slurmdash submit --template {name})"
                ));
            }
            Err(SaveError::Exists(path)) => match self.form.as_mut() {
                Some(form) => {
                    form.overwrite = Some(name.clone());
                    form.error = Some(format!(
                        "template `{name}` exists ({}): y overwrites it, any other key keeps it",
                        path.display()
                    ));
                }
                None => {
                    self.note = Some(format!(
                        "template `{name}` exists ({}): not saved",
                        path.display()
                    ))
                }
            },
            Err(SaveError::Failed(e)) => {
                let msg = format!("template `{name}` not saved: {e}");
                match self.form.as_mut() {
                    Some(form) => form.error = Some(msg),
                    None => self.note = Some(msg),
                }
            }
        }
        Vec::new()
    }

    fn pick_template(&mut self, i: usize) -> Vec<Cmd> {
        let choices = self.cluster.launch.choices();
        if let (Some(form), Some((_, spec))) = (self.form.as_mut(), choices.get(i)) {
            form.choice = i;
            form.spec = spec.clone();
            form.estimate = None;
            form.revalidate();
        }
        Vec::new()
    }

    fn form_test_only(&mut self) -> Vec<Cmd> {
        let Some(form) = self.form.as_mut() else {
            return Vec::new();
        };
        match (&form.prepared, &form.busy) {
            (_, Some(Busy::Testing | Busy::Submitting)) => Vec::new(),
            (Some(p), _) => {
                form.busy = Some(Busy::Testing);
                form.estimate = None;
                vec![Cmd::TestOnly(Box::new(p.clone()))]
            }
            (None, _) => {
                form.error = Some("fix the marked fields first".into());
                Vec::new()
            }
        }
    }

    fn form_submit(&mut self) -> Vec<Cmd> {
        let cluster = self.cluster.name.clone();
        let Some(form) = self.form.as_mut() else {
            return Vec::new();
        };
        if form.busy == Some(Busy::Submitting) {
            return Vec::new();
        }
        if let Some(f) = form.foreign.as_mut().filter(|f| !f.confirmed) {
            f.confirmed = true;
            form.error = Some(format!(
                "{}'s script would run as {}: enter on Submit again to launch it, esc to leave",
                f.owner,
                f.me.as_deref().unwrap_or("you")
            ));
            return Vec::new();
        }
        if let Some(c) = form.spec_changed.as_mut().filter(|c| !c.confirmed) {
            c.confirmed = true;
            form.error = Some(format!(
                "job {}'s specs/launch.json is not the one launched: enter on Submit again to launch what the form shows, esc to leave",
                c.job
            ));
            return Vec::new();
        }
        match &form.prepared {
            Some(p) => {
                form.busy = Some(Busy::Submitting);
                form.error = None;
                vec![Cmd::Submit {
                    cluster,
                    prepared: Box::new(p.clone()),
                }]
            }
            None => {
                form.error = Some(if form.facts.is_none() {
                    "still reading the cluster's partitions; try again in a moment".into()
                } else {
                    "not submitted: fix the marked fields first".into()
                });
                Vec::new()
            }
        }
    }

    pub(super) fn on_launch_facts(&mut self, r: Result<ClusterFacts, String>) -> Vec<Cmd> {
        if let Ok(f) = &r {
            self.cluster.launch.facts = Some(f.clone());
        }
        if let Some(form) = self.form.as_mut() {
            if form.busy == Some(Busy::Facts) {
                form.busy = None;
            }
            match r {
                Ok(f) => {
                    form.facts = Some(f);
                    form.revalidate();
                }
                Err(e) => form.error = Some(format!("reading partitions: {e}")),
            }
        }
        Vec::new()
    }

    pub(super) fn on_test_only(&mut self, r: Result<Estimate, String>) -> Vec<Cmd> {
        if let Some(form) = self.form.as_mut() {
            form.busy = None;
            form.estimate = Some(r);
        }
        Vec::new()
    }

    pub(super) fn on_submitted(&mut self, r: Result<Submitted, String>) -> Vec<Cmd> {
        match r {
            Err(e) => {
                if let Some(form) = self.form.as_mut() {
                    form.busy = None;
                    form.error = Some(e);
                } else {
                    self.note = Some(e);
                }
                Vec::new()
            }
            Ok(s) => {
                let form = self.form.take();
                if let Some(p) = form.as_ref().and_then(|f| f.prepared.as_ref()) {
                    self.cluster.launch.last_used = Some(p.spec.clone());
                    // The queue shows it at once; the poll below brings the real row.
                    // A queue poll already in flight does not list it yet: the row stays
                    // (as a registry job) until squeue or sacct says more.
                    let mut placeholder = placeholder_job(&s, p, self.cluster.ix);
                    if self.multi() {
                        placeholder.cluster =
                            crate::slurm::shared::SharedStr::from(&self.cluster.name);
                    }
                    self.cluster
                        .launch
                        .registry_jobs
                        .retain(|j| j.id != placeholder.id);
                    self.cluster.launch.registry_jobs.push(placeholder);
                    let (jobs, _) = self
                        .cluster
                        .with_registry_jobs(self.own_jobs().into_owned());
                    self.set_own_jobs(jobs);
                }
                self.queue.set_filter("");
                self.queue
                    .select_id(&JobId::new(s.job_id).on(self.cluster.ix));
                self.focus = crate::keymap::Pane::Queue;
                let mut note = format!("submitted job {} · logs {}", s.job_id, s.stdout);
                for w in &s.warnings {
                    note.push_str(" · ");
                    note.push_str(w);
                }
                self.note = Some(note);
                let mut cmds = self.selection_changed();
                cmds.extend(self.poll_now());
                cmds
            }
        }
    }

    pub(super) fn on_registry_jobs(&mut self, r: Result<Vec<Job>, String>) -> Vec<Cmd> {
        match r {
            Ok(jobs) => {
                self.cluster.launch.on_registry_jobs(jobs);
                // sacct's answer is newer than the rows on screen.
                let rows = self.cluster.launch.over(self.own_jobs().into_owned());
                self.set_own_jobs(rows);
                let mut cmds = self.selection_changed();
                if cmds.is_empty() {
                    cmds = self.refetch_if_state_changed();
                }
                cmds
            }
            Err(e) => {
                self.cluster.launch.reattaching = false;
                self.note = Some(format!("re-attaching launched jobs: {e}"));
                Vec::new()
            }
        }
    }
}

fn placeholder_job(s: &Submitted, p: &Prepared, cluster: u16) -> Job {
    Job {
        id: JobId::new(s.job_id).on(cluster),
        cluster: "".into(),
        array_job_id: None,
        array_task: None,
        name: p.plan.name.clone(),
        user: "".into(),
        account: p.plan.account.clone().unwrap_or_default().into(),
        partition: p.plan.partition.as_str().into(),
        state: JobState::Pending,
        reason: Some("submitted".into()),
        time_used: SlurmDuration::from_secs(0),
        time_limit: SlurmDuration::Known(p.plan.time),
        nodes: p.plan.nodes,
        cpus: p.plan.cpus_per_task.saturating_mul(p.plan.nodes),
        min_memory: p.plan.mem.clone(),
        tres_per_node: (p.plan.gpus_per_node > 0)
            .then(|| format!("gres:gpu:{}", p.plan.gpus_per_node)),
        node_list: None,
        submit_time: None,
        start_time: None,
        work_dir: s.job_dir.as_str().into(),
        qos: "".into(),
        priority: None,
        dependency: None,
        problem: None,
    }
}

#[cfg(test)]
#[path = "form_tests.rs"]
mod tests;
