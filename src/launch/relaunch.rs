//! What `L` reads of a finished job to launch it again (a launch's staged spec, or what
//! could be recovered of a job slurmdash did not launch) and of an array to rerun its
//! unfinished tasks: the payloads of `LaunchMsg::Relaunch`, `Recovered`
//! and `Rerun`;
//! and the spec made of what was recovered (`spec_from_job`).

use super::spec::time_text;
use super::LaunchSpec;
use crate::efficiency::Efficiency;
use crate::slurm::eff::recover::{sbatch_directives, wrapped_command, Directive};

/// What `L` reads to launch a finished launch again.
#[derive(Debug, Clone, PartialEq)]
pub struct Relaunchable {
    /// The spec staged in the job directory (`specs/launch.json`).
    pub spec: LaunchSpec,
    /// sha256 of that file as read now.
    pub spec_sha256: String,
    /// The job's use, for the suggested values.
    pub used: Option<crate::slurm::eff::JobUse>,
}

/// What `L` could recover of a job slurmdash did not launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    pub used: crate::slurm::eff::JobUse,
    pub script: Option<String>,
    /// Where the script came from, or why there is none.
    pub script_from: String,
    /// Who you are on the cluster (`id -un`), to tell whether the job is yours.
    pub me: Option<String>,
}

/// An array's tasks as sacct records them (every step), and the cluster's MaxArraySize: what
/// a rerun of its unfinished tasks is planned from (`launch::rerun::plan`).
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayRead {
    pub tasks: Vec<crate::slurm::eff::JobUse>,
    pub max_array_size: u32,
}

/// What `L` on an array reads: the array's tasks, and what `L` reads of the selected job
/// (a launch's staged spec and use, or what could be recovered of a job slurmdash did not
/// launch).
#[derive(Debug, Clone, PartialEq)]
pub struct RerunRead {
    pub array: Result<ArrayRead, String>,
    pub source: RerunSource,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RerunSource {
    /// A launch of slurmdash's: its job directory and what `io::history::relaunch` read.
    Launch {
        job_dir: String,
        result: Box<Result<Relaunchable, String>>,
    },
    Recovered(Box<Result<Recovered, String>>),
}

/// Letters, digits, `.`, `_`, `-` (what a launch's name may hold).
fn launch_name(name: &str) -> String {
    let n: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    if n.trim_matches('-').is_empty() {
        "job".into()
    } else {
        n
    }
}

/// A spec from what Slurm recorded of a job slurmdash did not launch; returns what could
/// not be recovered, in words.
pub fn spec_from_job(spec: &mut LaunchSpec, rec: &Recovered, report: &Efficiency) -> Vec<String> {
    let d = &rec.used.detail;
    let nodes = d.nodes.unwrap_or(1).max(1);
    spec.name = launch_name(&d.name);
    spec.partition = d.partition.clone().unwrap_or_default();
    spec.account = d.account.clone().unwrap_or_default();
    spec.nodes = nodes;
    spec.gpus = d.gpus();
    spec.cpus_per_task = (d.cpus.unwrap_or(1) / nodes).max(1);
    if let Some(m) = report.mem_requested_bytes {
        spec.mem = format!("{}M", (m >> 20).max(1));
    }
    if let Some(t) = report.time_limit_s {
        spec.time = time_text(t);
    }
    spec.workdir = d.work_dir.clone().unwrap_or_default();
    spec.image.clear();
    spec.env.clear();
    // Not your last launch's secrets: nothing is exported that this job did not ask for.
    spec.secrets.clear();
    spec.extra_sbatch.clear();
    spec.inputs.clear();
    spec.batch_script.clear();
    let mut missing = vec![
        "container, environment and other sbatch options (not in Slurm's records)".to_string(),
    ];
    match rec.script.as_deref().map(|s| (s, wrapped_command(s))) {
        Some((_, Some(cmd))) => spec.command = cmd,
        Some((script, None)) => {
            spec.command.clear();
            spec.batch_script = script.to_string();
            missing = vec![
                "the environment it was submitted from and any arguments given after the script (not in Slurm's records)".to_string(),
            ];
            let mut lacks = Vec::new();
            if report.time_limit_s.is_none() {
                lacks.push("time");
            }
            if report.mem_requested_bytes.is_none() {
                lacks.push("mem");
            }
            let skipped = directives_into(spec, &sbatch_directives(script), nodes, &lacks);
            if !skipped.is_empty() {
                missing.push(format!("#SBATCH {} (not carried over)", skipped.join(", ")));
            }
        }
        None => {
            spec.command.clear();
            missing.push(format!(
                "the command: no batch script ({})",
                rec.script_from
            ));
        }
    }
    missing
}

/// Reads a recovered script's `#SBATCH` options into the spec. What sacct recorded wins
/// (name, partition, account, nodes, CPUs, memory, time, GPUs, working directory): it is
/// what the job ran with, command-line options of sbatch included, which override the
/// script's. Mail, requeue, QOS, constraints, exclusivity and task counts are taken from
/// the script; the rest is returned, as written, as not carried over. `lacks`: the keys
/// (`time`, `mem`) sacct had no value for, which the script's then gives.
pub fn directives_into(
    spec: &mut LaunchSpec,
    dirs: &[Directive],
    nodes: u32,
    lacks: &[&str],
) -> Vec<String> {
    const FROM_SACCT: &[&str] = &[
        "job-name",
        "partition",
        "account",
        "nodes",
        "cpus-per-task",
        "mem",
        "time",
        "gres",
        "gpus",
        "chdir",
    ];
    const PASSED: &[&str] = &[
        "qos",
        "constraint",
        "exclude",
        "nodelist",
        "exclusive",
        "reservation",
        "licenses",
        "ntasks-per-node",
    ];
    let mut skipped = Vec::new();
    let mut cpus_per_task = None;
    let mut tasks = false;
    for d in dirs {
        let v = d.value.as_deref().unwrap_or("");
        match d.key.as_str() {
            "cpus-per-task" => cpus_per_task = v.parse::<u32>().ok(),
            "time" if lacks.contains(&"time") && !v.is_empty() => spec.time = v.to_string(),
            "mem" if lacks.contains(&"mem") && !v.is_empty() => spec.mem = v.to_string(),
            k if FROM_SACCT.contains(&k) => {}
            "mail-type" => spec.mail_type = v.to_string(),
            "mail-user" => spec.mail_user = v.to_string(),
            "requeue" => spec.requeue = true,
            "no-requeue" => spec.requeue = false,
            "ntasks" => match v.parse::<u32>() {
                // Tasks spread over the nodes as evenly as sbatch would.
                Ok(n) if n > 0 => {
                    tasks = true;
                    spec.extra_sbatch
                        .push(format!("--ntasks-per-node={}", n.div_ceil(nodes.max(1))));
                }
                _ => skipped.push(d.text.clone()),
            },
            k if PASSED.contains(&k) => {
                tasks |= k == "ntasks-per-node";
                spec.extra_sbatch.push(match &d.value {
                    Some(v) => format!("--{k}={v}"),
                    None => format!("--{k}"),
                });
            }
            _ => skipped.push(d.text.clone()),
        }
    }
    // sacct's CPU count is for all tasks: with several tasks a node, CPUs per task is the
    // script's (1 when it does not say).
    if tasks {
        spec.cpus_per_task = cpus_per_task.unwrap_or(1);
    }
    skipped
}

/// Which code a relaunch of a launch that ran `spec` carries: `None` (the default) runs the
/// snapshot it ran again, from the cluster's copy; `same`, `current` (the repository as it
/// is now, snapshotted again) or `none` choose. A launch that ran no snapshot is left as it
/// was unless a choice is given.
pub fn choose_code(spec: &mut LaunchSpec, choice: Option<&str>) -> Result<(), String> {
    match choice.map(str::trim) {
        None if spec.code == "snapshot" && spec.snapshot_ran().is_some() => {
            spec.code = "same".into();
            Ok(())
        }
        None => Ok(()),
        Some("current") => spec.set("code", "snapshot"),
        Some(c @ ("same" | "none" | "snapshot")) => spec.set("code", c),
        Some(c) => Err(format!("--code is `same`, `current` or `none`, not `{c}`")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::launch::spec::apply_suggestion as apply;

    /// A launch that ran a snapshot relaunches it by default (`same`); `current` snapshots
    /// the repository again, `none` drops it; a launch without one is left alone, and `same`
    /// on it is refused.
    #[test]
    fn a_relaunch_runs_the_snapshot_the_launch_ran_unless_told_otherwise() {
        let ran = crate::registry::CodeRecord {
            commit: "abc1234def".into(),
            dirty: 3,
            hash: "0f".repeat(32),
            subdir: "src".into(),
        };
        let launched = LaunchSpec {
            code: "snapshot".into(),
            code_hash: ran.hash.clone(),
            code_ran: Some(ran.clone()),
            ..LaunchSpec::default()
        };
        let mut s = launched.clone();
        choose_code(&mut s, None).unwrap();
        assert_eq!(
            (s.code.as_str(), s.snapshot_ran()),
            ("same", Some(ran.clone()))
        );
        assert_eq!(s.get("code"), "same");
        let mut s = launched.clone();
        choose_code(&mut s, Some("current")).unwrap();
        assert_eq!(s.code, "snapshot");
        let mut s = launched.clone();
        choose_code(&mut s, Some("none")).unwrap();
        assert_eq!(s.code, "");
        let mut s = launched.clone();
        assert!(choose_code(&mut s, Some("git"))
            .unwrap_err()
            .contains("`git`"));

        // A spec that kept only the hash (written before the record) still reruns it.
        let mut s = LaunchSpec {
            code: "snapshot".into(),
            code_hash: ran.hash.clone(),
            ..LaunchSpec::default()
        };
        choose_code(&mut s, None).unwrap();
        assert_eq!(s.code, "same");
        assert_eq!(s.snapshot_ran().map(|r| r.hash), Some(ran.hash.clone()));

        let mut plain = LaunchSpec::default();
        choose_code(&mut plain, None).unwrap();
        assert_eq!(plain.code, "");
        let e = choose_code(&mut plain, Some("same")).unwrap_err();
        assert!(e.contains("ran none"), "{e}");
    }

    /// The job `tmo` of the 22.05 sacct fixture.
    fn tmo() -> crate::slurm::eff::JobUse {
        crate::slurm::eff::parse_eff(include_str!(
            "../../tests/fixtures/slurm/22.05/sacct_eff.out"
        ))
        .unwrap()
        .into_iter()
        .find(|u| u.detail.name == "tmo")
        .unwrap()
    }

    #[test]
    fn a_job_not_launched_by_slurmdash_gets_its_recorded_options_and_wrapped_command() {
        let u = tmo();
        let rec = Recovered {
            used: u,
            script: Some(
                "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nsleep 300\n".into(),
            ),
            script_from: "scontrol write batch_script".into(),
            me: Some("sduser".into()),
        };
        let report = Efficiency::compute(&rec.used, &[]);
        let mut spec = LaunchSpec::default();
        let missing = spec_from_job(&mut spec, &rec, &report);
        assert_eq!(spec.command, "sleep 300");
        assert_eq!(spec.partition, "short");
        assert_eq!(spec.gpus, 0);
        assert_eq!(spec.cpus_per_task, 1);
        assert_eq!(spec.mem, "200M");
        assert_eq!(spec.time, "1m");
        assert_eq!(missing.len(), 1, "{missing:?}");
        apply(&mut spec, &report.suggestion);
        assert_eq!(spec.time, "2m");
    }

    fn multiline(v: &str) -> Recovered {
        let u = tmo();
        let script = match v {
            "22.05" => include_str!("../../tests/fixtures/slurm/22.05/batch_script_multiline.out"),
            _ => include_str!("../../tests/fixtures/slurm/26.05/batch_script_multiline.out"),
        };
        Recovered {
            used: u,
            script: Some(script.into()),
            script_from: "scontrol write batch_script".into(),
            me: Some("sduser".into()),
        }
    }

    #[test]
    fn a_multi_line_batch_script_becomes_the_command_with_its_directives_read() {
        for v in ["22.05", "26.05"] {
            let rec = multiline(v);
            let report = Efficiency::compute(&rec.used, &[]);
            let mut spec = LaunchSpec {
                command: "old".into(),
                ..LaunchSpec::default()
            };
            let missing = spec_from_job(&mut spec, &rec, &report);
            assert_eq!(spec.command, "", "{v}");
            assert_eq!(spec.batch_script, rec.script.clone().unwrap(), "{v}");
            // sacct's values win: partition, memory and time are the job's records.
            assert_eq!(
                (
                    spec.partition.as_str(),
                    spec.mem.as_str(),
                    spec.time.as_str()
                ),
                ("short", "200M", "1m")
            );
            // From the script: mail, requeue, QOS, tasks a node and so CPUs per task.
            assert_eq!(spec.mail_type, "END,FAIL");
            assert!(!spec.requeue);
            assert_eq!(spec.extra_sbatch, ["--qos=normal", "--ntasks-per-node=1"]);
            assert_eq!(spec.cpus_per_task, 2);
            assert_eq!(
                missing,
                [
                    "the environment it was submitted from and any arguments given after the script (not in Slurm's records)",
                    "#SBATCH --output=/tmp/train-%j.out (not carried over)"
                ],
                "{v}"
            );
            assert_eq!(
                spec.batch_script_summary().as_deref(),
                Some("the job's recovered batch script: 20 lines (type a command to replace it)")
            );
            // Typing a command replaces the recovered script.
            spec.set("command", "echo hi").unwrap();
            assert!(spec.batch_script.is_empty());
            assert_eq!(spec.batch_script_summary(), None);
        }
    }

    #[test]
    fn tasks_spread_over_nodes_and_a_container_is_refused_with_a_recovered_script() {
        let dirs = sbatch_directives(
            "#!/bin/bash\n#SBATCH -n 8 -c 4 --exclusive --array=1-3 -d afterok:1\nsrun x\n",
        );
        let mut spec = LaunchSpec::default();
        let skipped = directives_into(&mut spec, &dirs, 2, &[]);
        // What sacct did not record comes from the script.
        let mut other = LaunchSpec::default();
        directives_into(
            &mut other,
            &sbatch_directives("#!/bin/sh\n#SBATCH -t 3 --mem=1G\n"),
            1,
            &["time"],
        );
        assert_eq!((other.time.as_str(), other.mem.as_str()), ("3", ""));
        assert_eq!(spec.extra_sbatch, ["--ntasks-per-node=4", "--exclusive"]);
        assert_eq!(spec.cpus_per_task, 4);
        assert_eq!(skipped, ["--array=1-3", "-d afterok:1"]);
    }
}
