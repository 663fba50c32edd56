//! The connection an [`SshRemote`](super::SshRemote) uses: its master's mux session, and
//! the check that the master still answers. Shared by `ssh.rs` (commands) and `channel.rs`
//! (long-lived channels).

use std::path::PathBuf;
use std::time::Duration;

use openssh::Session;

use super::hold::Hold;
use super::master::CHECK_TIMEOUT;

pub(super) struct Live {
    pub(super) session: Session,
    pub(super) host: String,
    pub(super) ctl: PathBuf,
    /// Started by us in our private directory: closed when the SshRemote is dropped.
    pub(super) owned: bool,
    /// Started by this remote (not found running).
    pub(super) started: bool,
    /// Keeps the master in use while this connection is (see [`hold`](super::hold)).
    pub(super) _hold: Hold,
    /// The login node has `timeout`, so commands are wrapped to die there when we give up.
    pub(super) remote_timeout: bool,
}

impl Live {
    /// Whether the master still answers, at most [`CHECK_TIMEOUT`] (see [`check_master`]).
    pub(super) async fn check(&self) -> Result<(), String> {
        check_master(&self.session, &self.ctl, CHECK_TIMEOUT).await
    }
}

/// openssh's `check` on the master at `ctl`, given up after `limit`: a master that accepts on
/// its socket and never answers (stopped, or a socket planted there) must not hang the
/// command that asked.
async fn check_master(
    session: &Session,
    ctl: &std::path::Path,
    limit: Duration,
) -> Result<(), String> {
    match tokio::time::timeout(limit, session.check()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "the SSH master on {} did not answer a check within {:.0}s",
            ctl.display(),
            limit.as_secs_f64()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_master_that_never_answers_fails_the_check_instead_of_hanging() {
        let t = tempfile::tempdir().expect("tmp");
        let ctl = t.path().join("hung.sock");
        let listener = std::os::unix::net::UnixListener::bind(&ctl).expect("bind");
        // Accepts every connection and never says a word.
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for s in listener.incoming().flatten() {
                held.push(s);
            }
        });
        let session = Session::resume_mux(ctl.clone().into_boxed_path(), None);
        let e = check_master(&session, &ctl, Duration::from_millis(300))
            .await
            .expect_err("a silent master is not alive");
        assert!(
            e.contains("did not answer a check") && e.contains(&ctl.display().to_string()),
            "{e}"
        );
        // No socket at all: the error comes at once, from openssh.
        let gone = t.path().join("gone.sock");
        let session = Session::resume_mux(gone.clone().into_boxed_path(), None);
        let e = check_master(&session, &gone, Duration::from_secs(30))
            .await
            .expect_err("no master");
        assert!(!e.contains("did not answer a check"), "{e}");
    }
}
