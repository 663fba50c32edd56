//! A shell inside the selected running job (`x`, `:shell [NODE]`): the dashboard hands the
//! terminal to `srun --overlap --pty` over the open connection and takes it back after. A
//! component (see `component.rs`) with no state of its own: it reads the selected job.

use super::component::{Out, View};
use super::{Input, InputKind};
use crate::action::Cmd;
use crate::slurm::model::Status;

/// Nodes named in the hint of a multi-node job's node question.
const NODES_SHOWN: usize = 8;

/// `x` or `:shell [NODE]` on the selected job. A multi-node job asks which node (the
/// command line opens with the first one filled in).
pub(super) fn open(v: &View, node: Option<&str>) -> Out {
    let Some(job) = v.queue.selected_job() else {
        return Out::note("no job selected: select a running job for a shell");
    };
    let id = job.id.clone();
    match job.status() {
        Status::Running => {}
        Status::Pending => {
            return Out::note(format!(
                "job {id} is pending: a shell opens once it runs (on its nodes)"
            ));
        }
        _ => {
            return Out::note(format!(
                "job {id} is {}: no shell, it has no allocation any more",
                job.state.long_name()
            ));
        }
    }
    let nodes = job.nodes();
    if let Some(n) = node {
        if !nodes.is_empty() && !nodes.iter().any(|m| m == n) {
            return Out::note(format!(
                "job {id} does not run on {n}: its nodes are {}",
                nodes.join(", ")
            ));
        }
        return Out::cmds(vec![Cmd::Shell {
            id,
            node: Some(n.to_string()),
        }]);
    }
    if nodes.len() > 1 {
        let mut shown: Vec<&str> = nodes.iter().take(NODES_SHOWN).map(String::as_str).collect();
        if nodes.len() > NODES_SHOWN {
            shown.push("…");
        }
        let mut input = Input::new(InputKind::Command, &format!("shell {}", nodes[0]));
        input.hint = Some(format!(
            "job {id} runs on {}: enter opens a shell there · esc: cancel",
            shown.join(" ")
        ));
        return Out::prompt(input);
    }
    Out::cmds(vec![Cmd::Shell {
        id,
        node: nodes.into_iter().next(),
    }])
}

#[cfg(test)]
mod tests {
    use super::super::tests::{app, jobs, loaded};
    use super::super::App;
    use super::*;
    use crate::slurm::model::JobState;

    fn with(a: &mut App, id: &str, state: JobState, nodes: &str) {
        let mut js = jobs();
        let j = js
            .iter_mut()
            .find(|j| j.id.as_str() == id)
            .expect("fixture job");
        j.state = state;
        j.node_list = Some(nodes.into());
        a.update(loaded(js));
        a.queue.shown_mut().select_id(&id.parse().expect("id"));
    }

    #[test]
    fn a_running_job_on_one_node_opens_a_shell_there() {
        let mut a = app();
        with(&mut a, "237", JobState::Running, "gpu01");
        assert_eq!(
            a.run_command("shell"),
            vec![Cmd::Shell {
                id: "237".parse().expect("id"),
                node: Some("gpu01".into())
            }]
        );
    }

    #[test]
    fn a_multi_node_job_asks_which_node() {
        let mut a = app();
        with(&mut a, "237", JobState::Running, "gpu[01-02]");
        assert!(a.run_command("shell").is_empty());
        let input = a.overlays.input.clone().expect("asks");
        assert_eq!(input.text, "shell gpu01");
        assert!(input
            .hint
            .as_deref()
            .is_some_and(|h| h.contains("gpu01 gpu02")));
        assert_eq!(
            a.run_command("shell gpu02"),
            vec![Cmd::Shell {
                id: "237".parse().expect("id"),
                node: Some("gpu02".into())
            }]
        );
        assert!(a.run_command("shell cpu09").is_empty());
        assert!(a
            .note
            .as_deref()
            .is_some_and(|n| n.contains("does not run on cpu09")));
    }

    #[test]
    fn pending_and_finished_jobs_say_why_there_is_no_shell() {
        let mut a = app();
        with(&mut a, "248", JobState::Pending, "");
        assert!(a.run_command("shell").is_empty());
        assert!(a.note.as_deref().is_some_and(|n| n.contains("pending")));
        with(&mut a, "237", JobState::Completed, "gpu01");
        assert!(a.run_command("shell").is_empty());
        assert!(
            a.note.as_deref().is_some_and(|n| n.contains("no shell")),
            "{:?}",
            a.note
        );
    }
}
