//! `[[commands]]`: the user's own commands, bound to keys (k9s plugins, lazygit custom
//! commands). Each entry is checked at start-up: its key is a key and free, its states are
//! Slurm's, its template splits into words and names only known placeholders and its own
//! prompts. An error names the entry by its key and name.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::keymap::{Key, Keymap};
use crate::slurm::custom::{Template, Where, PLACEHOLDERS};
use crate::slurm::model::JobState;

/// One `[[commands]]` entry as written.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CommandDef {
    /// The key that runs it (`"J"`, `"ctrl-j"`, `"f5"`): one slurmdash leaves free.
    pub key: String,
    pub name: String,
    /// The job states it applies to (`["RUNNING"]`); empty: any job, or none selected.
    #[serde(default)]
    pub states: Vec<String>,
    /// `login` (default), `node` (inside the job, on its first node) or `laptop`.
    #[serde(default, rename = "where")]
    pub place: Where,
    /// The command, split into words like a shell would; `{job_id}` and the others are
    /// filled in inside their word, each value one argument.
    pub command: String,
    /// Values asked for before it runs, one after another, used as `{name}`.
    #[serde(default)]
    pub prompts: Vec<PromptDef>,
    /// Ask before running it.
    #[serde(default)]
    pub confirm: bool,
    /// Hand its output to `$PAGER` (else the dashboard's output pane).
    #[serde(default)]
    pub pager: bool,
    /// How long it may run; default: the cluster's `command_timeout_secs`.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

/// A value asked for before a command runs.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PromptDef {
    pub name: String,
    /// The answer filled in to start with.
    #[serde(default)]
    pub default: String,
}

/// The longest `timeout_secs` accepted.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

/// A checked entry, ready for the dashboard.
#[derive(Debug, Clone, PartialEq)]
pub struct UserCommand {
    pub key: Key,
    pub def: CommandDef,
    pub template: Template,
    pub states: Vec<JobState>,
}

impl UserCommand {
    pub fn timeout(&self) -> Option<Duration> {
        self.def.timeout_secs.map(Duration::from_secs)
    }

    /// Whether it needs a selected job: a job's placeholder, states, or running inside it.
    pub fn needs_job(&self) -> bool {
        self.def.place == Where::Node
            || !self.states.is_empty()
            || self.template.slots().iter().any(|s| {
                PLACEHOLDERS.iter().any(|(p, _)| p == s)
                    && !crate::slurm::custom::JOBLESS.contains(s)
            })
    }

    /// `RUNNING, PENDING` or `any`.
    pub fn states_word(&self) -> String {
        match self.states.is_empty() {
            true => "any".into(),
            false => self
                .states
                .iter()
                .map(JobState::long_name)
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// The problem with entry `index` (from 0), as the config error says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `commands[2]`.
    pub key: String,
    pub reason: String,
}

/// Checks every entry against the keymap (with the user's `[keys]`) and each other.
pub fn check(defs: &[CommandDef], keymap: &Keymap) -> Result<Vec<UserCommand>, Problem> {
    let mut out: Vec<UserCommand> = Vec::new();
    for (i, d) in defs.iter().enumerate() {
        let problem = |reason: String| Problem {
            key: format!("commands[{i}]"),
            reason: format!("the command on key `{}` (\"{}\"): {reason}", d.key, d.name),
        };
        let key = Key::parse(&d.key).map_err(problem)?;
        if let Some((pane, action)) = keymap.bound_anywhere(&key) {
            return Err(problem(format!(
                "`{key}` is slurmdash's key for \"{}\" ({pane}): pick a free key (or rebind that one in [keys])",
                action.describe()
            )));
        }
        if let Some(other) = out.iter().find(|c| c.key == key) {
            return Err(problem(format!(
                "`{key}` is already the key of \"{}\"",
                other.def.name
            )));
        }
        if d.name.trim().is_empty() {
            return Err(problem("`name` is empty: give it a name to show".into()));
        }
        let mut states = Vec::new();
        for s in &d.states {
            match JobState::parse(&s.to_ascii_uppercase()) {
                JobState::Unknown(_) => {
                    return Err(problem(format!(
                        "`{s}` is not a job state (examples: RUNNING, PENDING, COMPLETED, FAILED)"
                    )))
                }
                st => states.push(st),
            }
        }
        let mut names: Vec<&str> = Vec::new();
        for p in &d.prompts {
            let n = p.name.as_str();
            let ok = !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                && !n.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                return Err(problem(format!(
                    "prompt `{n}`: a prompt's name is lower-case letters, digits and _ (used as {{name}})"
                )));
            }
            if PLACEHOLDERS.iter().any(|(ph, _)| *ph == n) || names.contains(&n) {
                return Err(problem(format!(
                    "prompt `{n}`: the name is already taken (a placeholder or another prompt)"
                )));
            }
            names.push(n);
        }
        let template = Template::parse(&d.command, &names).map_err(problem)?;
        if let Some(unused) = names.iter().find(|n| !template.slots().contains(n)) {
            return Err(problem(format!(
                "prompt `{unused}` is asked but the command never uses {{{unused}}}"
            )));
        }
        if let Some(t) = d.timeout_secs {
            if t == 0 || t > MAX_TIMEOUT_SECS {
                return Err(problem(format!(
                    "timeout_secs must be between 1 and {MAX_TIMEOUT_SECS}, not {t}"
                )));
            }
        }
        out.push(UserCommand {
            key,
            def: d.clone(),
            template,
            states,
        });
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn def(key: &str, command: &str) -> CommandDef {
        CommandDef {
            key: key.into(),
            name: "mine".into(),
            command: command.into(),
            ..CommandDef::default()
        }
    }

    fn err(defs: &[CommandDef]) -> String {
        let p = check(defs, &Keymap::default()).unwrap_err();
        format!("{}: {}", p.key, p.reason)
    }

    #[test]
    fn a_good_entry_is_ready_with_its_key_and_states() {
        let mut d = def("J", "jobstats {job_id}");
        d.states = vec!["running".into(), "CD".into()];
        let c = check(&[d], &Keymap::default()).unwrap();
        assert_eq!(c[0].key.to_string(), "J");
        assert_eq!(c[0].states_word(), "RUNNING, COMPLETED");
        assert!(c[0].needs_job());
        let quota = check(
            &[def("M", "myquota --cluster {cluster}")],
            &Keymap::default(),
        )
        .unwrap();
        assert!(!quota[0].needs_job());
    }

    #[test]
    fn bad_entries_are_named_by_key_and_name() {
        let e = err(&[def("d", "seff {job_id}")]);
        assert!(
            e.starts_with("commands[0]: the command on key `d` (\"mine\")"),
            "{e}"
        );
        assert!(e.contains("slurmdash's key for"), "{e}");
        let e = err(&[def("J", "x"), def("J", "y")]);
        assert!(
            e.starts_with("commands[1]") && e.contains("already the key"),
            "{e}"
        );
        let e = err(&[def("J", "seff {jobid}")]);
        assert!(e.contains("unknown placeholder {jobid}"), "{e}");
        let mut d = def("J", "x");
        d.states = vec!["RUNNIN".into()];
        assert!(err(&[d]).contains("`RUNNIN` is not a job state"));
        assert!(err(&[def("hyper-x", "x")]).contains("not a key"));
        let mut d = def("J", "tail {job_id}");
        d.prompts = vec![PromptDef {
            name: "lines".into(),
            default: "100".into(),
        }];
        assert!(err(&[d]).contains("never uses {lines}"));
        let mut d = def("J", "x");
        d.timeout_secs = Some(0);
        assert!(err(&[d]).contains("timeout_secs"));
    }

    #[test]
    fn a_key_the_user_bound_in_keys_is_taken_too() {
        let keys: crate::keymap::KeyConfig = toml::from_str("[log]\nJ = \"quit\"\n").unwrap();
        let map = Keymap::with_overrides(&keys).unwrap();
        assert!(check(&[def("J", "x")], &Keymap::default()).is_ok());
        let p = check(&[def("J", "x")], &map).unwrap_err();
        assert!(p.reason.contains("(log pane)"), "{}", p.reason);
    }
}
