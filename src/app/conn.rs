//! The connection as the App sees it: reconnecting while the login node is away, and `r`
//! to try again at once.

use std::time::Duration;

use super::App;
use crate::action::Cmd;
use crate::payload::ConnState;

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

impl App {
    /// The transport's state, from a refresh or the hub's once-a-second look.
    pub(super) fn on_conn(&mut self, state: ConnState, host: Option<String>) -> Vec<Cmd> {
        self.cluster.status.on_conn(state, host);
        if self.cluster.status.reconnect_due() {
            return self.poll();
        }
        Vec::new()
    }

    /// `r`: refresh now; while disconnected, reconnect now instead of after the backoff.
    pub(super) fn refresh_now(&mut self) -> Vec<Cmd> {
        let mut cmds = Vec::new();
        if self.cluster.status.down() {
            cmds.push(Cmd::Reconnect);
        }
        // A refresh the budget holds goes now (and is counted).
        match self.cluster.budget.take(super::budget::Kind::Refresh) {
            Some(held) => cmds.push(held),
            None => cmds.extend(self.poll()),
        }
        cmds.extend(
            self.cluster
                .insight
                .refresh_pending(self.queue.selected_job()),
        );
        cmds
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::tests::{app, key};
    use crate::action::{Cmd, Msg};
    use crate::payload::ConnState;

    fn reconnecting(attempt: u32, retry_in: Option<u64>) -> Msg {
        Msg::Conn {
            state: ConnState::Reconnecting {
                attempt,
                last_error: "Connection refused".into(),
                retry_in: retry_in.map(Duration::from_secs),
            },
            host: None,
        }
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
        assert!(a.cluster.status.polling);
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
        let connected = Msg::Conn {
            state: ConnState::Connected { host: "h".into() },
            host: Some("h".into()),
        };
        assert!(a.update(connected).is_empty());
        let failed = Msg::Conn {
            state: ConnState::Failed {
                reason: "Permission denied".into(),
            },
            host: None,
        };
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
        a.update(Msg::Conn {
            state: ConnState::Connected { host: "h".into() },
            host: Some("h".into()),
        });
        let cmds = a.update(key('r'));
        assert!(!cmds.contains(&Cmd::Reconnect), "{cmds:?}");
        assert!(polls(&cmds), "{cmds:?}");
    }
}
