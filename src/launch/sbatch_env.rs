//! The user's own `SBATCH_*` variables (set by their login environment on the cluster) and
//! a launch: sbatch takes an input variable over an `#SBATCH` line of the script, so
//! `SBATCH_TIMELIMIT=1:00` in a `.bashrc` would shorten every launch whatever the form says.
//! The form's values win: the submission unsets, for that sbatch alone, each variable that
//! sets an option the script sets (or that would break the submission, like
//! `SBATCH_WAIT`); the others (`SBATCH_QOS`, `SBATCH_RESERVATION`, ...) still apply, and
//! the form's preview says which is which. Pure: the plan in, names out.

/// Input variables whose option the generated script always sets, or that would change how
/// the submission itself behaves (sbatch(1), 22.05 to 26.05).
const ALWAYS: &[(&str, &str)] = &[
    ("SBATCH_JOB_NAME", "job name"),
    ("SBATCH_PARTITION", "partition"),
    ("SBATCH_TIMELIMIT", "time limit"),
    ("SBATCH_OUTPUT", "main.out path"),
    ("SBATCH_ERROR", "main.err path"),
    ("SBATCH_EXCLUSIVE", "exclusive"),
    ("SBATCH_REQUEUE", "requeue"),
    ("SBATCH_NO_REQUEUE", "requeue"),
    ("SBATCH_EXPORT", "environment passed (--export=ALL)"),
    ("SBATCH_GRES", "GPUs"),
    ("SBATCH_GPUS", "GPUs"),
    ("SBATCH_GPUS_PER_NODE", "GPUs"),
    ("SBATCH_GPUS_PER_TASK", "GPUs"),
    ("SBATCH_CPUS_PER_GPU", "CPUs per task"),
    ("SBATCH_ARRAY_INX", "array indices (the form's, or none)"),
    (
        "SBATCH_WAIT",
        "submission returns at once (--wait would hold it)",
    ),
];

/// Set only when the launch sets that option.
const ACCOUNT: (&str, &str) = ("SBATCH_ACCOUNT", "account");
const MEM: &[(&str, &str)] = &[
    ("SBATCH_MEM_PER_NODE", "memory"),
    ("SBATCH_MEM_PER_CPU", "memory"),
    ("SBATCH_MEM_PER_GPU", "memory"),
];

/// What the launch sets beyond what every launch sets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sets {
    pub account: bool,
    pub mem: bool,
}

/// The variables the submission unsets for this launch, each with the form's field that wins.
pub fn overridden(sets: Sets) -> Vec<(&'static str, &'static str)> {
    let mut v = ALWAYS.to_vec();
    if sets.account {
        v.push(ACCOUNT);
    }
    if sets.mem {
        v.extend_from_slice(MEM);
    }
    v
}

/// Shell text for the submission script, after it copied the script to `$tmp/job.sbatch`:
/// unsets each variable of [`overridden`] for what that script sets (read from its
/// `#SBATCH` lines, so a retry decides as the first submission did), printing
/// `slurmdash-sbatch-env NAME` for each one that was set.
pub fn unset_sh() -> String {
    let names = |v: &[(&str, &str)]| v.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(" ");
    format!(
        r#"sd_unset() {{ eval "[ -n \"\${{$1+x}}\" ]" || return 0; echo "slurmdash-sbatch-env $1"; unset "$1"; }}
for v in {always}; do sd_unset "$v"; done
grep -q '^#SBATCH --account=' "$tmp/job.sbatch" && sd_unset {account}
if grep -q '^#SBATCH --mem=' "$tmp/job.sbatch"; then for v in {mem}; do sd_unset "$v"; done; fi
"#,
        always = names(ALWAYS),
        account = ACCOUNT.0,
        mem = names(MEM),
    )
}

/// The `slurmdash-sbatch-env NAME` lines of the submission's output.
pub fn unset_in(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix("slurmdash-sbatch-env "))
        .map(|n| n.trim().to_string())
        .collect()
}

/// `NAME=value` lines of `SBATCH_*` variables (as `env` prints them).
pub fn parse(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| {
            k.starts_with("SBATCH_")
                && k.bytes()
                    .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit())
        })
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// For the form's preview: one line per variable the login environment sets, saying
/// whether the form's value wins or the variable applies to the job.
pub fn describe(env: &[(String, String)], sets: Sets) -> Vec<String> {
    let over = overridden(sets);
    env.iter()
        .map(|(k, v)| match over.iter().find(|(n, _)| n == k) {
            Some((_, field)) => format!("{k}={v}: not used, the form's {field} wins"),
            None => format!("{k}={v}: applies to this job (the form does not set it)"),
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn what_the_form_sets_wins_and_the_rest_applies() {
        let env = parse("SBATCH_TIMELIMIT=1:00\nSBATCH_QOS=high\nSBATCH_MEM_PER_CPU=1G\nPATH=/bin\nSBATCH_bad name=x\n");
        assert_eq!(env.len(), 3, "{env:?}");
        let plan = Sets::default();
        let lines = describe(&env, plan);
        assert_eq!(
            lines,
            [
                "SBATCH_TIMELIMIT=1:00: not used, the form's time limit wins",
                "SBATCH_QOS=high: applies to this job (the form does not set it)",
                "SBATCH_MEM_PER_CPU=1G: applies to this job (the form does not set it)",
            ]
        );
        let with_mem = Sets {
            mem: true,
            account: true,
        };
        let names: Vec<&str> = overridden(with_mem).iter().map(|(n, _)| *n).collect();
        assert!(names.contains(&"SBATCH_MEM_PER_CPU") && names.contains(&"SBATCH_ACCOUNT"));
        assert!(!overridden(plan).iter().any(|(n, _)| *n == "SBATCH_ACCOUNT"));
        // Every name is one the submission script may take as a word.
        for (n, _) in overridden(with_mem) {
            assert!(
                n.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{n}"
            );
        }
    }
}
