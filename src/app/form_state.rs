//! The launch form's state: its fields in order, what the dashboard knows for launching on
//! a cluster (templates, the last launch, the facts), and the form being filled in with its
//! problems. The keys and the submission are `form.rs`.

use crate::launch::facts::ClusterFacts;
use crate::launch::outlook;
use crate::launch::stage::Estimate;
use crate::launch::submit::{self, Prepared};
use crate::launch::{Field, LaunchSpec, Problem};
use crate::slurm::model::Job;
use crate::slurm::reservation::Reservation;
use chrono::NaiveDateTime;

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
    ("sweep", "sweep (values per run)", Field::Extra),
    ("image", "container image", Field::Image),
    ("container_mounts", "container mounts", Field::Mounts),
    ("workdir", "working directory", Field::Workdir),
    ("code", "code snapshot", Field::Extra),
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
    /// `:session`: the sizes still at their defaults (not edited in the form) are fitted to
    /// the partition's nodes as it is validated (`validate::fit_defaults`); `None`: as they are.
    pub fit: Option<crate::launch::validate::Chosen>,
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
    /// The form was filled from a batch script (`o`): its file name, and what its
    /// `#SBATCH` options became.
    pub from_script: Option<(String, crate::launch::directives::FromScript)>,
    /// The cluster's reservations as the dashboard last read them, with the cluster's clock
    /// now (`app::maintenance`, handed over as it changes); None while never read.
    pub windows: Option<(Vec<Reservation>, NaiveDateTime)>,
    /// What the form says of its request as it is now (`launch::outlook`).
    pub outlook: Outlook,
    /// Submit was pressed before the partitions were read: it goes on by itself (to the
    /// cluster named here) once they are, never asking to be pressed again.
    pub submit_when_read: Option<String>,
}

/// The form's lines about its request: worked out again on every change, never read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outlook {
    /// The maintenance window its time limit runs into, and the limit that starts before.
    pub maintenance: Option<String>,
    /// The largest request that starts now on its partitions, and whether the form's fits.
    pub starts_now: Option<(String, bool)>,
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

    /// The reservations and the cluster's clock now: the outlook is worked out again when
    /// they changed or a minute passed.
    pub fn set_windows(&mut self, windows: Option<(Vec<Reservation>, NaiveDateTime)>) {
        let same = match (&self.windows, &windows) {
            (Some((a, at)), Some((b, bt))) => {
                let minute = |t: &NaiveDateTime| t.and_utc().timestamp().div_euclid(60);
                a == b && minute(at) == minute(bt)
            }
            (None, None) => true,
            _ => false,
        };
        self.windows = windows;
        if !same {
            self.update_outlook();
        }
    }

    /// The outlook of the values shown (with the edit being typed applied).
    fn update_outlook(&mut self) {
        let Some(facts) = &self.facts else {
            self.outlook = Outlook::default();
            return;
        };
        let spec = self.effective().unwrap_or_else(|_| self.spec.clone());
        let req = outlook::Request::of(&spec, facts);
        let (items, cnow) = match &self.windows {
            Some((items, cnow)) => (&items[..], Some(*cnow)),
            None => (&[][..], None),
        };
        let maintenance = cnow.and_then(|cnow| {
            outlook::maintenance(&req, facts, items, cnow)
                .map(|hit| outlook::maintenance_text(&hit, &req, cnow))
        });
        let now = cnow.unwrap_or_default();
        let starts_now = outlook::starts_now(&req, facts, items, now).map(|s| {
            let fits = matches!(s, outlook::StartsNow::Up { fits: true, .. });
            let mut text = outlook::starts_now_text(&s, &req);
            if cnow.is_none() {
                text.push_str(" (reservations not read yet)");
            }
            (text, fits)
        });
        self.outlook = Outlook {
            maintenance,
            starts_now,
        };
    }

    pub fn revalidate(&mut self) {
        self.prepared = None;
        self.problems.clear();
        if let (Some(chosen), Some(facts)) = (self.fit, &self.facts) {
            let said = crate::launch::validate::fit_defaults(&mut self.spec, facts, chosen);
            if !said.is_empty() {
                let said: Vec<String> = said.into_iter().map(|(_, s)| s).collect();
                self.error = Some(said.join("; "));
            }
        }
        self.update_outlook();
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
