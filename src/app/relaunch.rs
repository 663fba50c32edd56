//! `L`: launch a finished job again with the values its use suggests (more time after a
//! timeout, more memory after running out, less memory or fewer GPUs when most went
//! unused), in the launch form, from the spec staged in its job directory. Jobs slurmdash
//! did not launch have no staged spec: the key says so.

use super::App;
use crate::action::Cmd;
use crate::launch::LaunchSpec;
use crate::slurm::eff::{Efficiency, JobUse, Suggestion};
use crate::slurm::model::JobId;

/// Slurm's `--time` as a person writes it: `5h`, `90m`.
fn time_text(secs: u64) -> String {
    if secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else {
        format!("{}m", secs.div_ceil(60))
    }
}

/// Applies the suggestion to the spec; returns what changed, in words.
pub fn apply(spec: &mut LaunchSpec, s: &Suggestion) -> Vec<String> {
    let mut changed = Vec::new();
    if let Some(t) = s.time_s {
        let new = time_text(t);
        changed.push(format!("time {new} (was {})", spec.time));
        spec.time = new;
    }
    if let Some(p) = &s.partition {
        changed.push(format!(
            "partition {p} (was {})",
            or_default(&spec.partition)
        ));
        spec.partition = p.clone();
    }
    if let Some(m) = &s.mem {
        changed.push(format!("memory {m} (was {})", or_default(&spec.mem)));
        spec.mem = m.clone();
    }
    if let Some(g) = s.gpus {
        changed.push(format!("GPUs {g} (was {})", spec.gpus));
        spec.gpus = g;
    }
    changed
}

fn or_default(s: &str) -> &str {
    if s.is_empty() {
        "the default"
    } else {
        s
    }
}

impl App {
    /// `L` on the selected job.
    pub(super) fn relaunch(&mut self) -> Vec<Cmd> {
        let Some(job) = self.queue.selected_job() else {
            return Vec::new();
        };
        let id = job.id.clone();
        if !job.state.is_finished() {
            self.note = Some(format!(
                "L relaunches a finished job; {id} is {}",
                job.state.long_name()
            ));
            return Vec::new();
        }
        if self.cluster.read_only {
            self.note = Some("read-only session: launching jobs is off".into());
            return Vec::new();
        }
        let Some(dir) = self.launch_of(&id).map(|c| c.job_dir.clone()) else {
            self.note = Some(format!(
                "L works for jobs slurmdash launched (from their staged spec); {id} was submitted otherwise"
            ));
            return Vec::new();
        };
        self.note = Some(format!("reading {id}'s launch spec and use…"));
        vec![Cmd::Relaunch { id, job_dir: dir }]
    }

    pub(super) fn on_relaunch(
        &mut self,
        id: JobId,
        result: Result<(LaunchSpec, Option<JobUse>), String>,
    ) -> Vec<Cmd> {
        let (mut spec, used) = match result {
            Ok(r) => r,
            Err(e) => {
                self.note = Some(format!("cannot relaunch {id}: {e}"));
                return Vec::new();
            }
        };
        let parts = match &self.cluster.partitions {
            Some(Ok(p)) => p.clone(),
            _ => Vec::new(),
        };
        let report = used.as_ref().map(|u| Efficiency::compute(u, &parts));
        let changed = report
            .as_ref()
            .map(|r| apply(&mut spec, &r.suggestion))
            .unwrap_or_default();
        let cmds = self.open_form();
        if let Some(form) = self.form.as_mut() {
            form.spec = spec;
            form.revalidate();
        }
        self.note = Some(match (changed.is_empty(), report) {
            (false, _) => format!("relaunch of {id}: {}", changed.join(", ")),
            (true, Some(r)) => format!("relaunch of {id} as it was ({})", r.verdict),
            (true, None) => format!("relaunch of {id} as it was (sacct has no use figures)"),
        });
        cmds
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
