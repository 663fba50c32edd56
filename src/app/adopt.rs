//! `A`: put the selected job, submitted elsewhere, under slurmdash's care (`slurmdash
//! adopt`): asks first, saying what it will do; the worker checks whose job it is on the
//! cluster, keeps Slurm's copy of its script, arms the guard and records it.

use super::component::{Out, View};
use super::confirm::{Answer, Choice, Confirm};
use crate::action::Cmd;
use crate::slurm::model::JobId;

/// The question for `A` on the selected job, or why there is none.
pub fn ask(v: &View) -> Out {
    let Some(job) = v.queue.selected_job() else {
        return Out::none();
    };
    let id = job.id.clone();
    if let Some(c) = v.launch_of(&id) {
        return Out::note(format!(
            "job {id} is already under slurmdash's care (launch {}): nothing to do",
            c.local_id
        ));
    }
    if id.array().is_some() || id.het_offset().is_some() {
        return Out::note(format!(
            "A adopts single jobs; {id} is part of an array or heterogeneous job"
        ));
    }
    let st = job.state.long_name();
    if !matches!(st, "PENDING" | "RUNNING" | "CONFIGURING") {
        return Out::note(format!("A adopts a running or pending job; {id} is {st}"));
    }
    if v.cluster.read_only {
        return Out::note("read-only session: adopting jobs is off");
    }
    if !v.cluster.retry.policy.guard {
        return Out::note("[retry] guard = false: adopting a job means a guard on the cluster");
    }
    if v.cluster.launch.results_root.is_none() {
        return Out::note("no results root for this cluster: nowhere to keep the job's script");
    }
    let retries = v.cluster.retry.policy.max_retries;
    Out::confirm(Confirm {
        prompt: format!(
            "adopt job {id} ({})? a guard resubmits Slurm's copy of its script after an infrastructure failure (up to {retries}×)",
            job.name
        ),
        choices: vec![Choice {
            key: 'y',
            label: "adopt".into(),
            answer: Answer::Adopt(id),
        }],
    })
}

/// The command for a `y` to [`ask`].
pub fn start(v: &View, id: JobId) -> Out {
    let Some(root) = v.cluster.launch.results_root.clone() else {
        return Out::note("no results root for this cluster");
    };
    let mode = crate::launch::validate::parse_mode(&v.cluster.launch.defaults.job_dir_mode)
        .unwrap_or(0o700);
    let note = format!("adopting job {id}…");
    Out::cmds(vec![Cmd::Adopt {
        id: id.clone(),
        results_root: root,
        job_dir_mode: mode,
    }])
    .with_busy(vec![id], "adopting…")
    .with_note(note)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::action::{Cmd, Msg};
    use crate::action::{LaunchMsg, PollMsg};
    use crate::app::tests::{app, id, jobs, key, loaded};

    /// `A` asks first and says what it does; `y` starts it; a finished job is refused; the
    /// answer is said and the launches are read at the next tick.
    #[test]
    fn a_asks_then_adopts_and_says_so() {
        let mut a = app();
        a.update(Msg::Poll(PollMsg::PollDue));
        a.update(loaded(jobs()));
        a.clusters[0].launch.results_root = Some("/lustre/r".into());
        assert!(
            a.queue.shown_mut().select_id(&id("242")),
            "242 in the queue"
        );
        a.selection_changed();
        assert!(a.update(key('A')).is_empty(), "nothing before the answer");
        let c = a.overlays.confirm.clone().expect("a question");
        assert!(c.prompt.starts_with("adopt job 242 ("), "{}", c.prompt);
        assert!(
            c.prompt
                .contains("a guard resubmits Slurm's copy of its script"),
            "{}",
            c.prompt
        );
        let cmds = a.update(key('y'));
        match cmds.as_slice() {
            [Cmd::Adopt {
                id: got,
                results_root,
                job_dir_mode,
            }] => {
                assert_eq!(*got, id("242"));
                assert_eq!(results_root, "/lustre/r");
                assert_eq!(*job_dir_mode, 0o700);
            }
            other => panic!("{other:?}"),
        }
        a.clusters[0].retry.last = Some(a.now);
        a.update(Msg::Cluster(
            0,
            Box::new(Msg::Launch(LaunchMsg::Adopted {
                id: id("242"),
                result: Ok("job 242 adopted as launch L1".into()),
            })),
        ));
        assert_eq!(a.note.as_deref(), Some("job 242 adopted as launch L1"));
        assert_eq!(
            a.clusters[0].retry.last, None,
            "the launches are read again"
        );
        a.update(Msg::Cluster(
            0,
            Box::new(Msg::Launch(LaunchMsg::Adopted {
                id: id("242"),
                result: Err("job 242 belongs to x".into()),
            })),
        ));
        assert_eq!(
            a.clusters[0].status.last_error.as_deref(),
            Some("job 242 belongs to x")
        );
    }
}
