//! The plan of a submission: validate, and decide the layout, the script and the guard
//! (`Prepared`); `io::submit` carries it out.

use chrono::Utc;

use crate::launch::container::{self, Conversion, Image};
use crate::launch::facts::ClusterFacts;
use crate::launch::guard::GuardPlan;
use crate::launch::script;
use crate::launch::spec::LaunchSpec;
use crate::launch::validate::{self, Plan, Problem};
use crate::registry::{Entry, Layout};
use crate::retry::RetryPolicy;
use crate::triage::Patterns;

/// Everything decided before touching the cluster: the plan, where it goes and the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub spec: LaunchSpec,
    pub plan: Plan,
    pub layout: Layout,
    pub conversion: Option<Conversion>,
    pub script: String,
    /// The cluster-side retry guard (`launch::guard`), or why the launch has none (it then
    /// keeps the dashboard's retry). Set by the caller, which knows `[retry]` and `[triage]`.
    pub guard: Result<crate::launch::guard::GuardPlan, String>,
    /// The code snapshot staged with the launch (`[launch] code = "snapshot"`); set by
    /// [`prepare_with_code`], made on the laptop by `io::code`.
    pub code: Option<crate::launch::code::Snapshot>,
}

impl Prepared {
    /// The guard plan of a prepared launch under `[retry]` (the launch's own `retries` first;
    /// `webhook` overrides `[retry] webhook`), or why it gets none.
    pub fn guard_plan(
        &self,
        policy: &RetryPolicy,
        patterns: &Patterns,
        webhook: Option<&str>,
    ) -> Result<GuardPlan, String> {
        if !policy.guard {
            return Err("[retry] guard = false".into());
        }
        if self.plan.array.is_some() {
            return Err("a job array (the guard follows single jobs; `slurmdash rerun ID --failed` reruns the tasks that did not complete)".into());
        }
        GuardPlan::resuming(
            self.spec.retries.unwrap_or(policy.max_retries),
            &self.plan.resume,
            self.plan.max_resumes,
            &self.plan.secrets,
            patterns,
            webhook.or(policy.webhook.as_deref()),
        )
        .map(|g| GuardPlan {
            webhook_plain_http: policy.webhook_plain_http,
            ..g
        })
    }
}

/// A new local id: UTC time plus a few random-ish hex digits (`20261123-105400-3fa2c1`).
pub fn new_local_id() -> String {
    let now = Utc::now();
    let nanos = now.timestamp_subsec_nanos() as u64;
    let mix = (nanos ^ (u64::from(std::process::id()) << 20)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!(
        "{}-{:06x}",
        now.format("%Y%m%d-%H%M%S"),
        (mix >> 40) & 0xff_ffff
    )
}

/// Validates `spec` and renders the script for job directory `<results_root>/<local_id>`.
pub fn prepare(
    spec: &LaunchSpec,
    facts: &ClusterFacts,
    results_root: &str,
    local_id: &str,
) -> Result<Prepared, Vec<Problem>> {
    prepare_with_code(spec, facts, results_root, local_id, None)
}

/// [`prepare`] carrying a code snapshot (see [`Prepared::with_code`]).
pub fn prepare_with_code(
    spec: &LaunchSpec,
    facts: &ClusterFacts,
    results_root: &str,
    local_id: &str,
    code: Option<crate::launch::code::Snapshot>,
) -> Result<Prepared, Vec<Problem>> {
    let p = prepare_plain(spec, facts, results_root, local_id)?;
    Ok(match code {
        Some(c) => p.with_code(c),
        None => p,
    })
}

impl Prepared {
    /// This launch carrying the code snapshot `c`: staged as `<job_dir>/code`, where the job
    /// runs (in the repository's sub-directory the snapshot was made from) unless the launch
    /// names a workdir. The spec records the snapshot's hash (`code_hash`).
    pub fn with_code(mut self, c: crate::launch::code::Snapshot) -> Self {
        self.spec.code_hash = c.hash.clone();
        self.spec.code_ran = Some(c.record());
        // What ran is a snapshot, whichever way it came: a relaunch of this offers it again.
        self.spec.code = "snapshot".into();
        if self.spec.workdir.trim().is_empty() {
            self.plan.workdir = Some(crate::launch::code::workdir(
                &self.layout.job_dir,
                &c.subdir,
            ));
            self.script = script::render(
                &self.plan,
                &self.layout,
                script_image(&self.conversion, &self.plan).as_deref(),
            );
        }
        self.code = Some(c);
        self
    }
}

/// The image the script names: the converted SQSH file, else the plan's own.
fn script_image(conversion: &Option<Conversion>, plan: &Plan) -> Option<String> {
    match (conversion, &plan.image) {
        (Some(c), _) => Some(c.sqsh.clone()),
        (None, Some(Image::Sqsh(p) | Image::Remote(p))) => Some(p.clone()),
        (None, None) => None,
    }
}

fn prepare_plain(
    spec: &LaunchSpec,
    facts: &ClusterFacts,
    results_root: &str,
    local_id: &str,
) -> Result<Prepared, Vec<Problem>> {
    let mut plan = validate::validate(spec, facts);
    if results_root.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"')
        || !results_root.starts_with('/')
    {
        let p = Problem {
            field: validate::Field::Workdir,
            message: format!(
                "results root `{results_root}` must be an absolute cluster path without spaces or quotes"
            ),
        };
        plan = match plan {
            Ok(_) => Err(vec![p]),
            Err(mut v) => {
                v.push(p);
                Err(v)
            }
        };
    }
    let plan = plan?;
    let layout = Layout::new(results_root, local_id);
    let cache_dir = if spec.sqsh_cache_dir.trim().is_empty() {
        let root = layout.results_root.as_str();
        let parent = root.rsplit_once('/').map_or(root, |(p, _)| p);
        format!(
            "{}/sqsh-cache",
            if parent.is_empty() { root } else { parent }
        )
    } else {
        spec.sqsh_cache_dir.trim().to_string()
    };
    let conv_part = if spec.conversion_partition.trim().is_empty() {
        plan.partition.clone()
    } else {
        spec.conversion_partition.trim().to_string()
    };
    let conversion = plan.image.as_ref().and_then(|i| {
        container::conversion(
            i,
            spec.sqsh_cache,
            spec.force_reconvert,
            &cache_dir,
            &conv_part,
        )
    });
    let script = script::render(&plan, &layout, script_image(&conversion, &plan).as_deref());
    Ok(Prepared {
        spec: spec.clone(),
        plan,
        layout,
        conversion,
        script,
        guard: Err("no retry guard asked for".into()),
        code: None,
    })
}

/// Reads each secret's value from this machine's environment (`lookup`), refusing a
/// missing one by name.
pub fn read_secrets(
    names: &[String],
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for n in names {
        match lookup(n) {
            Some(v) => out.push((n.clone(), v)),
            None => {
                return Err(format!(
                    "secret {n} is not set in this environment: export {n}=... before launching (its value is passed to sbatch over the SSH channel, never written)"
                ))
            }
        }
    }
    Ok(out)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub job_id: u64,
    pub local_id: String,
    pub job_dir: String,
    pub script_path: String,
    pub stdout: String,
    pub stderr: String,
    pub entry: Entry,
    /// Things that went wrong after the job was queued (it still runs).
    pub warnings: Vec<String>,
    /// How the code snapshot was staged (`code abc1234 + 1 changed file: reused ...`).
    pub code: Option<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn local_ids_are_unique_and_path_safe() {
        let a = new_local_id();
        std::thread::sleep(Duration::from_millis(2));
        let b = new_local_id();
        assert_ne!(a, b);
        assert!(
            a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-'),
            "{a}"
        );
    }

    #[test]
    fn missing_secret_is_named() {
        let e = read_secrets(&["HF_TOKEN".into()], |_| None).unwrap_err();
        assert!(e.contains("HF_TOKEN is not set"), "{e}");
        let ok = read_secrets(&["A".into()], |_| Some("v".into())).unwrap();
        assert_eq!(ok, [("A".to_string(), "v".to_string())]);
    }
}
