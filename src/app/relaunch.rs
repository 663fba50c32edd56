//! `L`: launch a finished job again with the values its use suggests (more time after a
//! timeout, more memory after running out, less memory or fewer GPUs when most went
//! unused), in the launch form, from the spec staged in its job directory. A job slurmdash
//! did not launch gets sacct's options and its own batch script: a `--wrap` one-liner as the
//! command, any other script staged verbatim and run as the batch step, its `#SBATCH`
//! options read into the form; what is not carried over is said.

use super::component::{Out, View};
use super::FormState;
use crate::action::Cmd;
use crate::efficiency::Efficiency;
use crate::launch::relaunch::{Recovered, Relaunchable, RerunRead, RerunSource};
use crate::launch::rerun;
use crate::launch::spec::{apply_suggestion as apply, time_text};
use crate::launch::LaunchSpec;
use crate::slurm::eff::recover::{sbatch_directives, wrapped_command, Directive};
use crate::slurm::model::JobId;

/// A launch form filled for `L`, or why there is none (a note for the status bar).
pub type Prefilled = Result<(FormState, String), String>;

/// Opens a form filled for `L` with its note, or says why there is none.
pub fn opened(form: Prefilled) -> Out {
    match form {
        Ok((form, note)) => Out {
            form: Some(Box::new(form)),
            ..Out::note(note)
        },
        Err(note) => Out::note(note),
    }
}

/// `L` on the selected job: what to read (the launch spec and use, a job slurmdash did not
/// launch's options and script, an array's tasks), with a note that says so.
pub fn relaunch(v: &View) -> Out {
    let Some(job) = v.queue.selected_job() else {
        return Out::none();
    };
    let id = job.id.clone();
    if !job.state.is_finished() {
        return Out::note(format!(
            "L relaunches a finished job; {id} is {}",
            job.state.long_name()
        ));
    }
    if v.cluster.read_only {
        return Out::note("read-only session: launching jobs is off");
    }
    if id.array().is_some() {
        // An array's task: read the array too, to offer a rerun of the tasks that did
        // not complete. Its launch is the array's (the leader id's).
        let leader = JobId::new(id.base()).on(id.cluster());
        let job_dir = v.launch_of(&leader).map(|c| c.job_dir.clone());
        return Out::note(format!("reading array {}'s tasks…", id.base()))
            .with_cmd(Cmd::Rerun { id, job_dir });
    }
    let Some(dir) = v.launch_of(&id).map(|c| c.job_dir.clone()) else {
        return Out::note(format!("recovering {id}'s options and batch script…"))
            .with_cmd(Cmd::Recover(id));
    };
    Out::note(format!("reading {id}'s launch spec and use…"))
        .with_cmd(Cmd::Relaunch { id, job_dir: dir })
}

/// The form of a relaunch of a job slurmdash launched; `sized`: with the values the job's
/// use suggests.
pub fn relaunch_form(
    v: &View,
    id: &JobId,
    result: Result<Relaunchable, String>,
    sized: bool,
) -> Prefilled {
    let Relaunchable {
        mut spec,
        spec_sha256,
        used,
    } = result.map_err(|e| format!("cannot relaunch {id}: {e}"))?;
    let report = used
        .as_ref()
        .map(|u| Efficiency::compute(u, v.partitions()));
    let changed = report
        .as_ref()
        .filter(|_| sized)
        .map(|r| apply(&mut spec, &r.suggestion))
        .unwrap_or_default();
    // The names of secrets to export come from this laptop's record of the launch,
    // never from specs/launch.json, which the job (or anyone who can write its
    // directory) can rewrite.
    spec.secrets = v
        .launch_of(id)
        .map(|c| c.secrets.clone())
        .unwrap_or_default();
    // The command, environment and image do come from that file: when it is not the
    // one launched (by the hash this laptop recorded), the form says so and asks.
    let rewritten = v
        .launch_of(id)
        .and_then(|c| c.spec_sha256.as_deref())
        .is_some_and(|launched| launched != spec_sha256);
    let mut form = FormState::open(v.cluster);
    form.spec = spec;
    form.spec_changed = rewritten.then(|| crate::app::form_state::SpecChanged {
        job: id.clone(),
        confirmed: false,
    });
    form.revalidate();
    let note = match (changed.is_empty(), report) {
        (false, _) => format!("relaunch of {id}: {}", changed.join(", ")),
        (true, Some(r)) => format!("relaunch of {id} as it was ({})", r.verdict),
        (true, None) => format!("relaunch of {id} as it was (sacct has no use figures)"),
    };
    Ok((form, note))
}

/// The job is another user's (or whose it is cannot be told): what the form must say.
fn foreign(id: &JobId, rec: &Recovered) -> Option<crate::app::form_state::Foreign> {
    let owner = rec.used.detail.user.clone().filter(|u| !u.is_empty());
    if owner.is_some() && owner == rec.me {
        return None;
    }
    Some(crate::app::form_state::Foreign {
        job: id.clone(),
        owner: owner.unwrap_or_else(|| "an unknown user".into()),
        me: rec.me.clone(),
        confirmed: false,
    })
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

/// The form of a relaunch of a job slurmdash did not launch; `sized`: with the values the
/// job's use suggests.
pub fn recovered_form(
    v: &View,
    id: &JobId,
    result: Result<Recovered, String>,
    sized: bool,
) -> Prefilled {
    let rec = result.map_err(|e| format!("cannot relaunch {id}: {e}"))?;
    let report = Efficiency::compute(&rec.used, v.partitions());
    let mut form = FormState::open(v.cluster);
    let mut spec = form.spec.clone();
    let missing = spec_from_job(&mut spec, &rec, &report);
    let changed = match sized {
        true => apply(&mut spec, &report.suggestion),
        false => Vec::new(),
    };
    form.spec = spec;
    form.foreign = foreign(id, &rec);
    form.revalidate();
    let changed = if changed.is_empty() {
        String::new()
    } else {
        format!("; {}", changed.join(", "))
    };
    let script = match (&rec.script, form.spec.batch_script_summary()) {
        (Some(s), Some(_)) => format!(
            ", its {}-line batch script from {} runs as the command",
            crate::slurm::eff::recover::script_lines(s),
            rec.script_from
        ),
        (Some(_), None) => format!(", script from {}", rec.script_from),
        (None, _) => String::new(),
    };
    let note = format!(
        "relaunch of {id} (not launched by slurmdash; options from sacct{script}){changed}; not recovered: {}",
        missing.join("; ")
    );
    Ok((form, note))
}

/// `L` on an array's task: with tasks that did not complete, the form reruns exactly
/// those (`launch::rerun`), sized from their own use; otherwise `L` as on any job.
pub fn rerun_form(v: &View, id: &JobId, read: RerunRead) -> Prefilled {
    let plan = read.array.and_then(|a| {
        rerun::plan(id.base(), &a.tasks, v.partitions(), a.max_array_size)
            .map_err(|e| e.to_string())
    });
    let sized = plan.is_err();
    let leader = JobId::new(id.base()).on(id.cluster());
    let (opened, job_dir) = match read.source {
        RerunSource::Launch { job_dir, result } => {
            (relaunch_form(v, &leader, *result, sized), Some(job_dir))
        }
        RerunSource::Recovered(r) => (recovered_form(v, id, *r, sized), None),
    };
    let plan = match plan {
        Ok(p) => p,
        Err(why) => {
            let array = format!(" (array {}: {why})", id.base());
            return match opened {
                Ok((form, note)) => Ok((form, note + &array)),
                Err(note) => Err(note + &array),
            };
        }
    };
    let (mut form, old) = opened?;
    let changed = rerun::respec(&mut form.spec, &plan, &plan.arrays[0], job_dir.as_deref());
    form.revalidate();
    let mut line = plan.line();
    if plan.arrays.len() > 1 {
        line = format!(
            "{line} (more than MaxArraySize: the form submits the first {} tasks; `slurmdash rerun {} --failed` submits them all)",
            rerun::expand(&plan.arrays[0]).len(),
            id.base()
        );
    }
    form.rerun = Some(line.clone());
    let mut note = format!("array {}: {line}", id.base());
    if !changed.is_empty() {
        note.push_str(&format!("; {}", changed.join(", ")));
    }
    // A job slurmdash did not launch: what relaunch said of it (whose, what is missing).
    if job_dir.is_none() {
        note.push_str(&format!(" · {old}"));
    }
    Ok((form, note))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::efficiency::Suggestion;

    #[test]
    fn a_job_not_launched_by_slurmdash_gets_its_recorded_options_and_wrapped_command() {
        let u = crate::slurm::eff::parse_eff(include_str!(
            "../../tests/fixtures/slurm/22.05/sacct_eff.out"
        ))
        .unwrap()
        .into_iter()
        .find(|u| u.detail.name == "tmo")
        .unwrap();
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
        let u = crate::slurm::eff::parse_eff(include_str!(
            "../../tests/fixtures/slurm/22.05/sacct_eff.out"
        ))
        .unwrap()
        .into_iter()
        .find(|u| u.detail.name == "tmo")
        .unwrap();
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

    #[test]
    fn a_suggestion_changes_only_what_it_names() {
        let mut spec = LaunchSpec {
            time: "1m".into(),
            mem: "1G".into(),
            ..LaunchSpec::default()
        };
        let s = Suggestion {
            time_s: Some(5 * 3600),
            partition: Some("long".into()),
            ..Suggestion::default()
        };
        let changed = apply(&mut spec, &s);
        assert_eq!(spec.time, "5h");
        assert_eq!(spec.partition, "long");
        assert_eq!(spec.mem, "1G");
        assert_eq!(
            changed,
            ["time 5h (was 1m)", "partition long (was the default)"]
        );
        assert_eq!(time_text(120), "2m");
    }
}
