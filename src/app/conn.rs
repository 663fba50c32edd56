//! The connection as the App sees it: reconnecting while the login node is away, and `r`
//! to try again at once: the cluster's own state (its `Status`, refresh and budget).

use std::time::Duration;

use crate::action::Cmd;
use crate::payload::ConnState;
use crate::slurm::model::Job;

impl super::Status {
    /// The transport's state, and the host it reached (when known).
    pub fn on_conn(&mut self, state: ConnState, host: Option<String>) {
        self.conn = state;
        if host.is_some() {
            self.host = host;
        }
    }

    /// While the connection is down, a refresh is due when the transport's next attempt
    /// is (almost) due, whatever the refresh interval: the transport waits out the rest, so
    /// a login node that comes back is noticed within its backoff cap.
    pub fn reconnect_due(&self) -> bool {
        matches!(&self.conn, ConnState::Reconnecting { retry_in, .. }
            if retry_in.is_none_or(|d| d <= Duration::from_secs(1)))
    }

    /// Down in a way `r` can act on at once (reconnect now instead of after the backoff).
    pub fn down(&self) -> bool {
        matches!(
            self.conn,
            ConnState::Reconnecting { .. }
                | ConnState::Failed { .. }
                | ConnState::LoginNeeded { .. }
        )
    }
}

impl super::ClusterState {
    /// A refresh, unless one is already out (the timer, `r`, reconnecting).
    pub fn poll(&mut self) -> Vec<Cmd> {
        if self.status.polling {
            return Vec::new();
        }
        vec![self.poll_cmd()]
    }

    /// The transport's state, from a refresh or the hub's once-a-second look.
    pub fn on_conn(&mut self, state: ConnState, host: Option<String>) -> Vec<Cmd> {
        self.status.on_conn(state, host);
        if self.status.reconnect_due() {
            return self.poll();
        }
        Vec::new()
    }

    /// `r`: refresh now; while disconnected, reconnect now instead of after the backoff.
    /// `selected`: the selected job (a pending one's reason is read again, for its user's
    /// pending jobs among `jobs`).
    pub fn refresh_now(
        &mut self,
        selected: Option<&Job>,
        jobs: &[Job],
        now: chrono::NaiveDateTime,
    ) -> Vec<Cmd> {
        let mut cmds = Vec::new();
        if self.status.down() {
            cmds.push(Cmd::Reconnect);
        }
        // A refresh the budget holds goes now (and is counted).
        match self.budget.take(super::budget::Kind::Refresh) {
            Some(held) => cmds.push(held),
            None => cmds.extend(self.poll()),
        }
        cmds.extend(self.insight.refresh_pending(selected, jobs, now));
        cmds
    }
}

#[cfg(test)]
mod tests {
    use crate::action::PollMsg;
    use std::time::Duration;

    use super::super::tests::{app, key};
    use crate::action::{Cmd, Msg};
    use crate::payload::ConnState;

    fn reconnecting(attempt: u32, retry_in: Option<u64>) -> Msg {
        Msg::Poll(PollMsg::Conn {
            state: ConnState::Reconnecting {
                attempt,
                last_error: "Connection refused".into(),
                retry_in: retry_in.map(Duration::from_secs),
            },
            host: None,
        })
    }

    fn polls(cmds: &[Cmd]) -> bool {
        cmds.iter()
            .any(|c| matches!(c, Cmd::PollQueue | Cmd::PollWith { .. }))
    }

    #[test]
    fn a_reconnect_attempt_is_started_when_due_not_at_the_next_refresh() {
        let mut a = app();
        // Waiting: no refresh yet.
        assert!(!polls(&a.update(reconnecting(3, Some(3)))));
        assert!(!polls(&a.update(reconnecting(3, Some(2)))));
        // Due within a second: the refresh goes now and the transport waits out the rest.
        assert!(polls(&a.update(reconnecting(3, Some(1)))));
        assert!(a.clusters[0].status.polling);
        // One at a time.
        assert!(!polls(&a.update(reconnecting(3, Some(0)))));
    }

    #[test]
    fn a_dropped_connection_is_retried_at_once() {
        let mut a = app();
        assert!(polls(&a.update(reconnecting(1, None))));
    }

    #[test]
    fn connected_or_failed_states_start_nothing() {
        let mut a = app();
        let connected = Msg::Poll(PollMsg::Conn {
            state: ConnState::Connected { host: "h".into() },
            host: Some("h".into()),
        });
        assert!(a.update(connected).is_empty());
        let failed = Msg::Poll(PollMsg::Conn {
            state: ConnState::Failed {
                reason: "Permission denied".into(),
            },
            host: None,
        });
        assert!(a.update(failed).is_empty());
    }

    #[test]
    fn r_while_disconnected_skips_the_backoff() {
        let mut a = app();
        a.update(reconnecting(4, Some(3)));
        let cmds = a.update(key('r'));
        assert_eq!(cmds.first(), Some(&Cmd::Reconnect), "{cmds:?}");
        assert!(polls(&cmds), "{cmds:?}");
    }

    #[test]
    fn r_while_connected_only_refreshes() {
        let mut a = app();
        a.update(Msg::Poll(PollMsg::Conn {
            state: ConnState::Connected { host: "h".into() },
            host: Some("h".into()),
        }));
        let cmds = a.update(key('r'));
        assert!(!cmds.contains(&Cmd::Reconnect), "{cmds:?}");
        assert!(polls(&cmds), "{cmds:?}");
    }

    #[test]
    fn the_cluster_has_one_refresh_out_at_a_time_and_r_reconnects_it_when_down() {
        let mut a = app();
        let c = &mut a.clusters[0];
        assert!(polls(&c.poll()));
        assert!(c.poll().is_empty(), "one refresh out at a time");
        c.on_conn(
            ConnState::Failed {
                reason: "Permission denied".into(),
            },
            None,
        );
        // r while the refresh is still out: reconnect now, no second refresh.
        assert_eq!(
            c.refresh_now(None, &[], crate::app::tests::now()),
            vec![Cmd::Reconnect]
        );
    }
}
