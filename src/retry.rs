//! Automatic retry of launched jobs that failed on infrastructure (ERR_INFRA): the policy,
//! the decision, and the chain of attempts as the user sees it. Pure; the worker in
//! `io::retry` reads Slurm and the registry and acts on the decisions.

use serde::{Deserialize, Serialize};

use crate::registry::{Entry, Layout};
use crate::triage::Class;

/// `[retry]` in the config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// Re-submissions after the first attempt; 0 turns automatic retry off.
    pub max_retries: u32,
    /// Leave a retry guard on the cluster beside each launch without secrets, so that
    /// retries happen with no slurmdash running (`launch::guard`).
    pub guard: bool,
    /// An HTTP(S) URL the guard POSTs each decision to (JSON). It reaches the cluster only
    /// as a 0600 file in the job directory, never in a command line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// The name of an environment variable that holds the webhook URL, for a config file
    /// that must not hold the token (see [`RetryPolicy::resolve_webhook`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_env: Option<String>,
    /// Accept a plain `http://` webhook beyond the node itself (e.g. a receiver on the
    /// cluster's private network): its token and the posted evidence then travel
    /// unencrypted. Off: only `https://` (and `http://` to localhost).
    pub webhook_plain_http: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 10,
            guard: true,
            webhook: None,
            webhook_env: None,
            webhook_plain_http: false,
        }
    }
}

impl RetryPolicy {
    /// Attempts a launch may have in all (the first plus the retries).
    pub fn max_attempts(&self) -> usize {
        self.max_retries as usize + 1
    }

    /// Fills `webhook` from the variable `webhook_env` names (read through `var`); an error
    /// (for the key `retry.webhook_env`) when both are set or the variable is unset or empty.
    /// The URL never comes from a command line, where `ps` and shell history would keep it.
    pub fn resolve_webhook(&mut self, var: impl Fn(&str) -> Option<String>) -> Result<(), String> {
        let Some(name) = self.webhook_env.as_deref().map(str::trim) else {
            return Ok(());
        };
        if self.webhook.is_some() {
            return Err("set either webhook or webhook_env, not both".into());
        }
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(format!(
                "`{name}` is not the name of an environment variable"
            ));
        }
        match var(name).map(|v| v.trim().to_string()) {
            Some(url) if !url.is_empty() => {
                self.webhook = Some(url);
                Ok(())
            }
            _ => Err(format!(
                "the environment variable {name} that should hold the webhook URL is not set: export {name}=URL (e.g. in your shell profile)"
            )),
        }
    }

    /// Whether a launch whose latest attempt ended as `class` is submitted again.
    /// Only infrastructure failures are: a program error would fail the same way.
    pub fn should_retry(&self, entry: &Entry, class: Class) -> bool {
        class.is_retriable() && entry.attempts.len() < self.max_attempts()
    }
}

/// The job directory layout of a registry entry (its staged script and log paths).
pub fn layout(entry: &Entry) -> Layout {
    let dir = entry.job_dir.trim_end_matches('/');
    let root = dir.rsplit_once('/').map_or("", |(r, _)| r);
    Layout {
        local_id: entry.local_id.clone(),
        results_root: root.to_string(),
        job_dir: dir.to_string(),
    }
}

/// Where a Slurm job sits in its launch's chain of attempts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain {
    pub local_id: String,
    /// The launch's job directory (results dir: status.json, slurm-logs/).
    pub job_dir: String,
    /// The launch's job name (names its log directories).
    pub name: String,
    /// 1-based.
    pub attempt: usize,
    pub attempts: usize,
    pub max_attempts: usize,
    /// Earlier attempts: (job id, final state if known).
    pub previous: Vec<(u64, Option<String>)>,
    /// The launch has a retry guard on the cluster: its chain's last line, if any yet.
    pub guard: Option<Option<String>>,
    /// The names of the secrets the launch exported, as this laptop recorded them (a
    /// relaunch exports these, never names read from the cluster).
    pub secrets: Vec<String>,
    /// sha256 of the launch's `specs/launch.json` as staged (see [`Entry::spec_sha256`]).
    pub spec_sha256: Option<String>,
    /// A sweep's runs by array index (see [`Entry::sweep`]).
    pub sweep: Vec<String>,
    /// The code snapshot the launch carried (`code abc1234 + 3 changed files`); None: none.
    pub code: Option<String>,
}

impl Chain {
    /// For every attempt of every entry: job id -> its place in the chain.
    pub fn index(entries: &[Entry], policy: &RetryPolicy) -> Vec<(u64, Chain)> {
        let mut out = Vec::new();
        for e in entries {
            for (i, a) in e.attempts.iter().enumerate() {
                if a.job_id == 0 {
                    continue;
                }
                out.push((
                    a.job_id,
                    Chain {
                        local_id: e.local_id.clone(),
                        job_dir: e.job_dir.clone(),
                        name: e.name.clone(),
                        attempt: i + 1,
                        attempts: e.attempts.len(),
                        max_attempts: policy.max_attempts().max(e.attempts.len()),
                        previous: e.attempts[..i]
                            .iter()
                            .map(|p| (p.job_id, p.state.clone()))
                            .collect(),
                        guard: e.guard.as_ref().map(|g| g.last.clone()),
                        sweep: e.sweep.clone(),
                        code: e
                            .code
                            .as_ref()
                            .map(|c| crate::registry::code_summary(&c.commit, c.dirty)),
                        secrets: e.secrets.clone(),
                        spec_sha256: e.spec_sha256.clone(),
                    },
                ));
            }
        }
        out
    }

    /// What a sweep's task runs (`LR=1e-3 BATCH=32 · task 4 of 12`), or how many runs the
    /// sweep has for the array as a whole; None when the launch is not a sweep.
    pub fn sweep_text(&self, task: Option<u32>) -> Option<String> {
        if self.sweep.is_empty() {
            return None;
        }
        let n = self.sweep.len();
        let here = self.sweep_tasks();
        Some(match task {
            Some(i) => match self.sweep.get(i as usize).filter(|r| !r.is_empty()) {
                Some(run) => format!("{run} · task {i} of {n} runs"),
                None => format!("task {i} is not one of the sweep's runs this array ran"),
            },
            None if here < n => format!(
                "{here} of its {n} runs in this array; expand it (enter) and select a task for its values"
            ),
            None => format!("{n} runs; expand it (enter) and select a task for its values"),
        })
    }

    /// How many of the sweep's runs this array runs (a rerun runs some of them).
    pub fn sweep_tasks(&self) -> usize {
        self.sweep.iter().filter(|r| !r.is_empty()).count()
    }

    /// The job's stdout and stderr in the launch's job directory, where sacct cannot say.
    pub fn log_paths(&self, job_id: u64) -> (String, String) {
        let l = Layout {
            local_id: self.local_id.clone(),
            results_root: String::new(),
            job_dir: self.job_dir.clone(),
        };
        (l.stdout(&self.name, job_id), l.stderr(&self.name, job_id))
    }

    /// [`Self::log_paths`] of job or array task `id` of this launch: a task logs into the
    /// array's directory, a file per index.
    pub fn log_paths_of(&self, id: &crate::slurm::model::JobId) -> (String, String) {
        match id.array_task() {
            Some(task) => Layout {
                local_id: self.local_id.clone(),
                results_root: String::new(),
                job_dir: self.job_dir.clone(),
            }
            .task_logs(&self.name, id.base(), task),
            None => self.log_paths(id.base()),
        }
    }

    /// Short form for the queue: `↻2/11` (nothing for a first attempt); for the attempt a
    /// guard resumed, the resume and why: `↻3/10 resumed after TIMEOUT`.
    pub fn badge(&self) -> Option<String> {
        if self.attempt <= 1 {
            // The only attempt so far: marked when a guard on the cluster stands by it.
            return (self.attempts <= 1 && self.guard.is_some())
                .then(|| crate::queue::GUARDED.to_string());
        }
        if self.attempt == self.attempts {
            if let Some((state, r, m)) = self.resumed() {
                return Some(format!("↻{r}/{m} resumed after {state}"));
            }
        }
        Some(format!("↻{}/{}", self.attempt, self.max_attempts))
    }

    /// The guard's last decision, when it was a resume: (end state, resume, max resumes),
    /// from `… resumed after TIMEOUT as 12 (resume 3 of 10)`.
    fn resumed(&self) -> Option<(String, u32, u32)> {
        let last = self.guard.as_ref()?.as_deref()?;
        let rest = last.split("resumed after ").nth(1)?;
        let state = rest.split_whitespace().next()?.to_string();
        let inner = rest.split("(resume ").nth(1)?.split(')').next()?;
        let (r, m) = inner.split_once(" of ")?;
        Some((state, r.trim().parse().ok()?, m.trim().parse().ok()?))
    }

    /// For the detail pane: `attempt 2 of up to 11 · earlier: 123 NODE_FAIL`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "attempt {} of up to {} (launch {})",
            self.attempt, self.max_attempts, self.local_id
        );
        if !self.previous.is_empty() {
            let prev: Vec<String> = self
                .previous
                .iter()
                .map(|(id, st)| match st {
                    Some(st) => format!("{id} {st}"),
                    None => id.to_string(),
                })
                .collect();
            s.push_str(&format!(" · earlier: {}", prev.join(", ")));
        }
        match &self.guard {
            Some(Some(last)) => s.push_str(&format!(" · cluster guard: {last}")),
            Some(None) => s.push_str(" · cluster guard armed"),
            None => {}
        }
        s
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::registry::Attempt;
    use chrono::Utc;

    fn entry(attempts: &[(u64, Option<&str>)]) -> Entry {
        let now = Utc::now();
        Entry {
            local_id: "20261123-1-abc".into(),
            cluster: "dev".into(),
            job_id: attempts.last().unwrap().0,
            job_dir: "/lustre/r/results/20261123-1-abc".into(),
            name: "train".into(),
            submitted_at: now,
            script: "/lustre/r/results/20261123-1-abc/sbatch/job_20261123-1-abc.sbatch".into(),
            attempts: attempts
                .iter()
                .map(|(id, st)| Attempt {
                    job_id: *id,
                    submitted_at: now,
                    state: st.map(str::to_string),
                })
                .collect(),
            ..Entry::default()
        }
    }

    #[test]
    fn only_infrastructure_failures_are_retried_up_to_the_limit() {
        let p = RetryPolicy {
            max_retries: 2,
            ..RetryPolicy::default()
        };
        let one = entry(&[(10, None)]);
        assert!(p.should_retry(&one, Class::Infra));
        for c in [
            Class::Program,
            Class::Oom,
            Class::Timeout,
            Class::Cancelled,
            Class::Complete,
            Class::Error,
        ] {
            assert!(!p.should_retry(&one, c), "{c}");
        }
        let three = entry(&[(10, Some("NODE_FAIL")), (11, Some("NODE_FAIL")), (12, None)]);
        assert!(
            !p.should_retry(&three, Class::Infra),
            "3 attempts = 1 + 2 retries"
        );
        assert!(!RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
        .should_retry(&one, Class::Infra));
    }

    #[test]
    fn the_webhook_url_comes_from_the_variable_the_config_names() {
        let env = |n: &str| (n == "SD_HOOK").then(|| " https://ntfy.sh/t0p1c \n".to_string());
        let mut p = RetryPolicy {
            webhook_env: Some("SD_HOOK".into()),
            ..RetryPolicy::default()
        };
        p.resolve_webhook(env).expect("set");
        assert_eq!(p.webhook.as_deref(), Some("https://ntfy.sh/t0p1c"));

        let mut unset = RetryPolicy {
            webhook_env: Some("SD_NOT_SET".into()),
            ..RetryPolicy::default()
        };
        let e = unset.resolve_webhook(env).expect_err("unset");
        assert!(e.contains("SD_NOT_SET") && e.contains("export"), "{e}");
        assert_eq!(unset.webhook, None);

        let mut both = RetryPolicy {
            webhook: Some("https://a.example/x".into()),
            webhook_env: Some("SD_HOOK".into()),
            ..RetryPolicy::default()
        };
        assert!(both.resolve_webhook(env).is_err());

        // No variable named: the file's own value, or none.
        let mut plain = RetryPolicy {
            webhook: Some("https://a.example/x".into()),
            ..RetryPolicy::default()
        };
        plain.resolve_webhook(env).expect("nothing to do");
        assert_eq!(plain.webhook.as_deref(), Some("https://a.example/x"));
    }

    #[test]
    fn layout_of_an_entry_finds_script_and_logs() {
        let e = entry(&[(10, None)]);
        let l = layout(&e);
        assert_eq!(l.script_path(), e.script);
        assert_eq!(
            l.stdout("train", 10),
            "/lustre/r/results/20261123-1-abc/slurm-logs/train-10/main.out"
        );
    }

    #[test]
    fn a_guarded_chain_shows_the_guards_last_decision() {
        let mut e = entry(&[(10, Some("FAILED ERR_INFRA")), (11, None)]);
        e.guard = Some(crate::registry::GuardRecord {
            last: Some("attempt 1 (job 10): retried as 11".into()),
        });
        let idx = Chain::index(&[e], &RetryPolicy::default());
        assert_eq!(
            idx[1].1.describe(),
            "attempt 2 of up to 11 (launch 20261123-1-abc) · earlier: 10 FAILED ERR_INFRA · cluster guard: attempt 1 (job 10): retried as 11"
        );
    }

    #[test]
    fn a_resumed_attempt_says_which_resume_and_after_what() {
        let mut e = entry(&[(10, Some("TIMEOUT")), (11, Some("TIMEOUT")), (12, None)]);
        e.guard = Some(crate::registry::GuardRecord {
            last: Some("attempt 2 (job 11): resumed after TIMEOUT as 12 (resume 2 of 10) · ERR_TIMEOUT: state TIMEOUT".into()),
        });
        let idx = Chain::index(&[e], &RetryPolicy::default());
        assert_eq!(
            idx[2].1.badge().as_deref(),
            Some("↻2/10 resumed after TIMEOUT")
        );
        // An earlier attempt keeps its place in the chain.
        assert_eq!(idx[1].1.badge().as_deref(), Some("↻2/11"));
    }

    /// A guarded launch's first and only attempt is marked; an unguarded one is not.
    #[test]
    fn a_guarded_first_attempt_is_marked() {
        let mut e = entry(&[(10, None)]);
        let idx = Chain::index(std::slice::from_ref(&e), &RetryPolicy::default());
        assert_eq!(idx[0].1.badge(), None);
        e.guard = Some(crate::registry::GuardRecord::default());
        let idx = Chain::index(&[e], &RetryPolicy::default());
        assert_eq!(idx[0].1.badge().as_deref(), Some(crate::queue::GUARDED));
    }

    #[test]
    fn chain_names_the_earlier_attempts() {
        let e = entry(&[(10, Some("NODE_FAIL")), (11, None)]);
        let idx = Chain::index(&[e], &RetryPolicy::default());
        assert_eq!(idx.len(), 2);
        assert_eq!(idx[0].1.badge(), None);
        let (id, c) = &idx[1];
        assert_eq!(*id, 11);
        assert_eq!(c.badge().as_deref(), Some("↻2/11"));
        assert_eq!(
            c.describe(),
            "attempt 2 of up to 11 (launch 20261123-1-abc) · earlier: 10 NODE_FAIL"
        );
    }

    /// A sweep's task logs into the array's directory, a file per index, as the script
    /// says (`%x-%A/main-%a.out`); a plain job into its own.
    #[test]
    fn a_task_of_a_launch_logs_into_the_arrays_directory() {
        let c = Chain {
            local_id: "l".into(),
            job_dir: "/r/l".into(),
            name: "sw".into(),
            ..Default::default()
        };
        let task: crate::slurm::model::JobId = "5_7".parse().unwrap();
        assert_eq!(
            c.log_paths_of(&task),
            (
                "/r/l/slurm-logs/sw-5/main-7.out".into(),
                "/r/l/slurm-logs/sw-5/main-7.err".into()
            )
        );
        let job = crate::slurm::model::JobId::new(6);
        assert_eq!(c.log_paths_of(&job).0, "/r/l/slurm-logs/sw-6/main.out");
    }
}
