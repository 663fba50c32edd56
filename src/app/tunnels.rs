//! Tunnels to what running jobs serve (`F`, `:forward PORT [NODE]`, `:tunnels`,
//! `:untunnel LOCAL_PORT`): a local port through the open connection to the job's node. A
//! URL the job printed (Jupyter's token, TensorBoard) is offered first; a job that ends takes
//! its tunnels with it. A component (see `component.rs`): it owns the open tunnels.

use super::component::{Out, View};
use super::{Input, InputKind};
use crate::action::Cmd;
use crate::logview::urls::{service_urls, ServiceUrl};
use crate::payload::Tunnel;
use crate::slurm::model::{JobId, Status};

/// The open tunnels (local port to a running job's node).
#[derive(Debug, Default)]
pub struct Tunnels {
    pub list: Vec<Tunnel>,
}

/// The selected job if it runs, with its nodes; otherwise why not.
fn running_selected(v: &View, what: &str) -> Result<(JobId, Vec<String>), String> {
    let Some(job) = v.queue.selected_job() else {
        return Err(format!("no job selected: select a running job for {what}"));
    };
    if job.status() != Status::Running {
        return Err(format!(
            "job {} is {}: {what} needs a running job",
            job.id,
            job.state.long_name()
        ));
    }
    let nodes = job.nodes();
    Ok((job.id.clone(), nodes))
}

/// Service URLs in the selected job's log panes (stdout, then stderr).
fn urls_in_log(v: &View, id: &JobId, nodes: &[String]) -> Vec<ServiceUrl> {
    if v.logs.job.as_ref() != Some(id) {
        return Vec::new();
    }
    let lines = [&v.logs.stdout, &v.logs.stderr].into_iter().flat_map(|p| {
        let b = p.buffer();
        (b.first_seq()..b.end_seq()).filter_map(move |s| b.get(s).map(|l| l.text()))
    });
    service_urls(lines, nodes)
}

impl Tunnels {
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Tunnel> {
        self.list.iter()
    }

    /// `F`: asks for the port, with the one the job printed filled in.
    pub fn open_forward(&self, v: &View) -> Out {
        let (id, nodes) = match running_selected(v, "a tunnel") {
            Ok(found) => found,
            Err(why) => return Out::note(why),
        };
        let found = urls_in_log(v, &id, &nodes);
        let (text, hint) = match found.last() {
            Some(u) => (
                format!("forward {}", u.port),
                format!(
                    "job {id} printed http://…:{}{}: enter forwards it to this machine · esc: cancel",
                    u.port, u.path
                ),
            ),
            None => (
                "forward ".to_string(),
                format!("the port job {id} serves on (e.g. 8888): enter forwards it here · esc: cancel"),
            ),
        };
        let mut input = Input::new(InputKind::Command, &text);
        input.hint = Some(hint);
        Out::prompt(input)
    }

    /// `:forward PORT [NODE]` on the selected running job.
    pub fn forward(&self, v: &View, port: &str, node: Option<&str>) -> Out {
        let Ok(port) = port.parse::<u16>() else {
            return Out::note(format!(
                ":forward: `{port}` is not a port number, e.g. :forward 8888"
            ));
        };
        let (id, nodes) = match running_selected(v, "a tunnel") {
            Ok(found) => found,
            Err(why) => return Out::note(why),
        };
        let node = match (node, nodes.first()) {
            (Some(n), _) if nodes.is_empty() || nodes.iter().any(|m| m == n) => n.to_string(),
            (Some(n), _) => {
                return Out::note(format!(
                    "job {id} does not run on {n}: its nodes are {}",
                    nodes.join(", ")
                ));
            }
            (None, Some(first)) => first.clone(),
            (None, None) => {
                return Out::note(format!(
                    "job {id} has no node list yet: try again in a moment"
                ));
            }
        };
        let path = urls_in_log(v, &id, &nodes)
            .into_iter()
            .rev()
            .find(|u| u.port == port)
            .map(|u| u.path)
            .unwrap_or_else(|| "/".into());
        Out::note(format!("forwarding port {port} of job {id} on {node}…")).with_cmd(Cmd::Forward {
            id,
            node,
            port,
            path,
        })
    }

    /// The forward's answer (`Msg::Job(JobMsg::Forwarded)`).
    pub fn on_forwarded(
        &mut self,
        id: JobId,
        node: String,
        port: u16,
        path: String,
        result: Result<u16, String>,
    ) -> Out {
        match result {
            Ok(local) => {
                let t = Tunnel {
                    job: id,
                    node,
                    port,
                    local,
                    path,
                };
                let moved = if local != port && port > 1023 {
                    format!(" (port {port} is in use on this machine)")
                } else {
                    String::new()
                };
                let note = format!(
                    "tunnel open: {}{moved} → {}:{} · :tunnels lists, :untunnel {local} closes",
                    t.url(),
                    t.node,
                    t.port
                );
                self.list.push(t);
                Out::note(note)
            }
            Err(e) => Out::note(format!("no tunnel to job {id} on {node}:{port}: {e}")),
        }
    }

    /// `:tunnels`
    pub fn describe(&self) -> Out {
        Out::note(if self.list.is_empty() {
            "no tunnels: F on a running job opens one".into()
        } else {
            let all: Vec<String> = self
                .list
                .iter()
                .map(|t| format!("{} {}", t.url(), t.describe()))
                .collect();
            format!("{} · :untunnel PORT closes one", all.join(" · "))
        })
    }

    /// `:untunnel LOCAL_PORT`
    pub fn untunnel(&mut self, local: &str) -> Out {
        let Some(i) = self.list.iter().position(|t| t.local.to_string() == local) else {
            return Out::note(format!(
                ":untunnel: no tunnel on local port {local} (:tunnels lists them)"
            ));
        };
        let t = self.list.remove(i);
        Out::note(format!("tunnel closed: {}", t.describe())).with_cmd(Cmd::Unforward(t))
    }

    /// After a refresh of cluster `ix` (`running`: the jobs squeue says run): tunnels of
    /// its jobs that no longer run close.
    pub fn close_ended(&mut self, ix: u16, running: &[JobId]) -> Out {
        let (ended, kept): (Vec<Tunnel>, Vec<Tunnel>) = std::mem::take(&mut self.list)
            .into_iter()
            .partition(|t| t.job.cluster() == ix && !running.contains(&t.job));
        self.list = kept;
        let mut out = Out::cmds(Vec::new());
        if let Some(t) = ended.first() {
            out.note = Some(format!(
                "job {} ended: tunnel {} closed",
                t.job,
                t.describe()
            ));
        }
        out.cmds = ended.into_iter().map(Cmd::Unforward).collect();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{app, jobs, loaded};
    use super::super::App;
    use super::*;
    use crate::action::JobMsg;
    use crate::slurm::model::JobState;

    fn running(a: &mut App) {
        let mut js = jobs();
        let j = js.iter_mut().find(|j| j.id.as_str() == "237").expect("job");
        j.state = JobState::Running;
        j.node_list = Some("gpu01".into());
        a.update(loaded(js));
        a.queue.shown_mut().select_id(&"237".parse().expect("id"));
    }

    #[test]
    fn forward_opens_then_closes_when_the_job_ends() {
        let mut a = app();
        running(&mut a);
        let cmds = a.run_command("forward 8888");
        let id: JobId = "237".parse().expect("id");
        assert_eq!(
            cmds,
            vec![Cmd::Forward {
                id: id.clone(),
                node: "gpu01".into(),
                port: 8888,
                path: "/".into()
            }]
        );
        a.update(crate::action::Msg::Job(JobMsg::Forwarded {
            id: id.clone(),
            node: "gpu01".into(),
            port: 8888,
            path: "/".into(),
            result: Ok(8889),
        }));
        assert!(a
            .note
            .as_deref()
            .is_some_and(|n| n.contains("http://127.0.0.1:8889/") && n.contains("in use")));
        assert_eq!(a.tunnels.len(), 1);
        // The job leaves the queue: its tunnel is closed.
        let rest: Vec<_> = jobs()
            .into_iter()
            .filter(|j| j.id.as_str() != "237")
            .collect();
        let cmds = a.update(loaded(rest));
        assert!(
            cmds.iter()
                .any(|c| matches!(c, Cmd::Unforward(t) if t.local == 8889)),
            "{cmds:?}"
        );
        assert!(a.tunnels.is_empty());
    }

    #[test]
    fn pending_jobs_bad_ports_and_unknown_tunnels_are_explained() {
        let mut a = app();
        a.update(loaded(jobs()));
        a.queue.shown_mut().select_id(&"248".parse().expect("id"));
        assert!(a.run_command("forward 8888").is_empty());
        assert!(a
            .note
            .as_deref()
            .is_some_and(|n| n.contains("needs a running job")));
        running(&mut a);
        assert!(a.run_command("forward http").is_empty());
        assert!(a
            .note
            .as_deref()
            .is_some_and(|n| n.contains("not a port number")));
        assert!(a.run_command("untunnel 1234").is_empty());
        assert!(a
            .note
            .as_deref()
            .is_some_and(|n| n.contains("no tunnel on local port 1234")));
    }
}
