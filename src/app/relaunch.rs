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
use crate::launch::relaunch::{spec_from_job, Recovered, Relaunchable, RerunRead, RerunSource};
use crate::launch::rerun;
use crate::launch::spec::apply_suggestion as apply;
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
    // The code it ran, again: the form's `code snapshot` field says so and can change it.
    let _ = crate::launch::relaunch::choose_code(&mut spec, None);
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
    use crate::launch::spec::time_text;
    use crate::launch::LaunchSpec;

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
