//! Work sessions: an allocation to work in, asked for like `salloc` but without holding a
//! terminal. A session is an ordinary launch (the form's checks, containers, account, the
//! one submission path) whose command keeps the allocation until its time limit, named
//! `session-<label>` so that the queue, the events and the dashboard's warnings recognise
//! it by its name alone. Everything here is pure: the spec, the time-left warnings (and
//! `Sessions`, which of them each running session has had), the
//! `ssh` config block that lets an editor's remote mode reach the node, and the words for a
//! refused extension.

use std::collections::HashMap;
use std::time::Duration;

use super::LaunchSpec;
use crate::slurm::model::{Job, JobId, Status};

/// The job name's prefix that marks a session.
pub const PREFIX: &str = "session-";

/// How long a session asks for when no time is given.
pub const DEFAULT_TIME: &str = "1h";

/// What an extension adds (`scontrol update JobId=ID TimeLimit=+30:00`).
pub const EXTEND_BY: &str = "+30:00";

/// What the user asks of a session; `None` keeps the launch defaults' value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOpts {
    /// The name after `session-` (default: the time it was asked for, `HHMMSS`).
    pub label: Option<String>,
    pub gpus: Option<u32>,
    pub cpus: Option<u32>,
    pub mem: Option<String>,
    pub time: Option<String>,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub image: Option<String>,
    /// A command started in the session beside the keep-alive (a Jupyter or VS Code
    /// server): its output goes to the session's log, where the dashboard finds its URL.
    pub command: Option<String>,
}

/// Whether a job name is a session's.
pub fn is_session(name: &str) -> bool {
    name.starts_with(PREFIX) && name.len() > PREFIX.len()
}

/// The command of a session: says where it runs, starts `command` in the background when
/// there is one (its output in the session's log), then sleeps until Slurm ends the job at
/// its time limit. `sleep` in a loop rather than `sleep infinity`, which not every image's
/// `sleep` knows.
pub fn keep_alive(command: Option<&str>) -> String {
    let mut s = String::from(
        "echo \"slurmdash work session: job $SLURM_JOB_ID on $(hostname), until its time limit\"; ",
    );
    if let Some(c) = command.map(str::trim).filter(|c| !c.is_empty()) {
        s.push_str(&format!("( {c} ) & "));
    }
    s.push_str("while :; do sleep 600; done");
    s
}

/// The launch spec of a session: `base` (the `[launch]` defaults with the cluster's
/// partition and account) with the session's values. One node, no array, no retries or
/// resumes (a session that ends is over), no requeue. `stamp` names it when no label is
/// given (`session-143210`).
pub fn spec(base: &LaunchSpec, opts: &SessionOpts, stamp: &str) -> LaunchSpec {
    let mut s = base.clone();
    let label = opts
        .label
        .as_deref()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .unwrap_or(stamp);
    s.name = format!("{PREFIX}{}", label.strip_prefix(PREFIX).unwrap_or(label));
    s.nodes = 1;
    s.array.clear();
    s.batch_script.clear();
    s.gpus = opts.gpus.unwrap_or(0);
    if let Some(c) = opts.cpus {
        s.cpus_per_task = c;
    }
    if let Some(m) = &opts.mem {
        s.mem = m.clone();
    }
    s.time = opts.time.clone().unwrap_or_else(|| DEFAULT_TIME.into());
    if let Some(p) = &opts.partition {
        s.partition = p.clone();
    }
    if let Some(a) = &opts.account {
        s.account = a.clone();
    }
    if let Some(i) = &opts.image {
        s.image = i.clone();
    }
    s.command = keep_alive(opts.command.as_deref());
    s.retries = Some(0);
    s.resume.clear();
    s.requeue = false;
    s.template = None;
    s
}

/// The warnings before a session's end, as minutes left.
pub const WARN_MINUTES: [u64; 2] = [10, 2];

/// How far the warnings of one session have gone: 0 none yet, 1 the 10-minute one,
/// 2 the 2-minute one.
pub type Stage = u8;

/// What to say about a session with `left` of its time limit, when `stage` warnings were
/// given: the new stage and, when one is due now, the minutes it warns of. A limit that was
/// raised past a warning's mark starts over, so the warnings come again before the new end.
/// Only the latest warning due is given (a session first seen with one minute left is warned
/// once, of 2 minutes).
pub fn warning(left: Duration, stage: Stage) -> (Stage, Option<u64>) {
    let mins = |m: u64| Duration::from_secs(m * 60);
    let [first, last] = WARN_MINUTES;
    if left > mins(first) {
        return (0, None);
    }
    if left <= mins(last) {
        return if stage < 2 {
            (2, Some(last))
        } else {
            (2, None)
        };
    }
    match stage {
        0 => (1, Some(first)),
        // Raised from below 2 minutes to between them: the 10-minute mark is passed again.
        2 => (1, None),
        s => (s, None),
    }
}

/// How far each running session's warnings have gone, by job id.
#[derive(Debug, Clone, Default)]
pub struct Sessions {
    stages: HashMap<JobId, Stage>,
}

/// One warning due now.
#[derive(Debug, Clone, PartialEq)]
pub struct Due {
    pub id: JobId,
    pub name: String,
    pub minutes: u64,
}

impl Sessions {
    /// The warnings due for `jobs` (the cluster's own rows of one refresh); sessions no
    /// longer listed, or no longer running, are forgotten.
    pub fn on_jobs<'a>(&mut self, jobs: impl IntoIterator<Item = &'a Job>) -> Vec<Due> {
        let mut due = Vec::new();
        let mut seen = HashMap::new();
        for j in jobs {
            if j.status() != Status::Running || !is_session(&j.name) {
                continue;
            }
            let Some(left) = time_left(j.time_limit.known(), j.time_used.known()) else {
                continue;
            };
            let before = self.stages.get(&j.id).copied().unwrap_or(0);
            let (stage, warn) = warning(left, before);
            seen.insert(j.id.clone(), stage);
            if let Some(minutes) = warn {
                due.push(Due {
                    id: j.id.clone(),
                    name: j.name.to_string(),
                    minutes,
                });
            }
        }
        self.stages = seen;
        due
    }
}

/// Time left of a running job as squeue last reported it: its limit less its time used.
pub fn time_left(limit: Option<Duration>, used: Option<Duration>) -> Option<Duration> {
    Some(limit?.saturating_sub(used.unwrap_or_default()))
}

/// The words for an extension the cluster refused: most sites let users only lower a time
/// limit, and Slurm says so as a permission error.
pub fn extend_refused(slurm_says: &str) -> String {
    let m = slurm_says.to_ascii_lowercase();
    if m.contains("permission denied")
        || m.contains("access/permission")
        || m.contains("not permitted")
        || m.contains("only change your own")
    {
        "the cluster refused to extend: only an operator can raise a time limit here".into()
    } else {
        format!("the cluster refused to extend: {slurm_says}")
    }
}

/// Where an editor's `ssh` reaches the login host: a host (or `~/.ssh/config` alias) with
/// the user and port the config names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jump {
    pub host: String,
    pub user: Option<String>,
    pub port: Option<u16>,
}

/// A word ssh_config reads as it is: no spaces, quotes, `#`, `%` tokens, `,` lists or
/// control characters, not starting with `-`.
fn plain(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('-')
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-@:[]".contains(&b))
}

/// The alias the block names: `<cluster>-<job id>` with anything unusual replaced.
pub fn host_alias(cluster: &str, job: &str) -> String {
    let safe: String = format!("{cluster}-{job}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("slurmdash-{}", safe.trim_matches('-'))
}

/// The `ssh` config block that lets an editor's remote mode (VS Code, Zed, Emacs TRAMP)
/// reach `node` through the login host. Refuses a node, host or user that ssh_config would
/// read differently (spaces, quotes, `%` tokens, a leading `-`): those come from the
/// cluster and the config, and a block that said something else than it seems to is
/// worse than none.
pub fn ssh_config(alias: &str, node: &str, jump: &Jump) -> Result<String, String> {
    for (what, w) in [("node name", node), ("login host", jump.host.as_str())] {
        if !plain(w) {
            return Err(format!(
                "the {what} `{}` cannot be written into an ssh config as it is",
                w.escape_debug()
            ));
        }
    }
    if let Some(u) = &jump.user {
        if !plain(u) || u.contains('@') || u.contains(':') {
            return Err(format!(
                "the user name `{}` cannot be written into an ssh config as it is",
                u.escape_debug()
            ));
        }
    }
    let mut via = String::new();
    if let Some(u) = &jump.user {
        via.push_str(u);
        via.push('@');
    }
    via.push_str(&jump.host);
    if let Some(p) = jump.port {
        via.push_str(&format!(":{p}"));
    }
    let mut s = format!("Host {alias}\n    HostName {node}\n    ProxyJump {via}\n");
    if let Some(u) = &jump.user {
        s.push_str(&format!("    User {u}\n"));
    }
    Ok(s)
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
