//! Tunnels (`F`, `:forward`, `slurmdash forward`): a local port to `HOST:PORT` as the login
//! node reaches it. The listening socket is this process's own, on 127.0.0.1 only, and each
//! connection it accepts is carried by `ssh -S SOCKET -W HOST:PORT`, a stdio forward
//! multiplexed on the open master (no login, no TCP connect of its own). So a tunnel ends
//! with the process that opened it, however that ends (kill -9 included): nothing is left
//! listening on a shared master that outlives the dashboard, as `ssh -O forward` would.
//! Any local user of this machine can connect to the port while it is open (127.0.0.1 is
//! not per user).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinSet};

/// The tunnels this process has open, by local port. Dropping it closes them all.
#[derive(Default)]
pub(super) struct Tunnels {
    open: Mutex<HashMap<u16, AbortHandle>>,
}

impl Tunnels {
    /// Listens on 127.0.0.1:`local` and carries each connection to `host:port` through the
    /// master on `ctl`.
    pub(super) async fn open(
        &self,
        ctl: PathBuf,
        local: u16,
        host: &str,
        port: u16,
    ) -> std::io::Result<()> {
        let listener = TcpListener::bind(("127.0.0.1", local)).await?;
        let target = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let task = tokio::spawn(serve(listener, ctl, target));
        let previous = self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(local, task.abort_handle());
        if let Some(p) = previous {
            p.abort();
        }
        Ok(())
    }

    /// Closes the tunnel on `local` and every connection through it; false if none was open.
    pub(super) fn close(&self, local: u16) -> bool {
        let task = self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&local);
        task.map(|t| t.abort()).is_some()
    }

    pub(super) fn close_all(&self) {
        for (_, t) in self.open.lock().unwrap_or_else(|p| p.into_inner()).drain() {
            t.abort();
        }
    }
}

impl Drop for Tunnels {
    fn drop(&mut self) {
        self.close_all();
    }
}

/// Accepts connections until aborted; aborting drops the set of connections, which kills
/// their `ssh -W` children.
async fn serve(listener: TcpListener, ctl: PathBuf, target: String) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    conns.spawn(carry(tcp, ctl.clone(), target.clone()));
                }
                Err(e) => {
                    tracing::warn!(target: "slurmdash::remote", error = %e, "a tunnel stopped accepting");
                    return;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// One connection: its bytes to and from `ssh -S ctl -W target`, until either side ends.
async fn carry(mut tcp: TcpStream, ctl: PathBuf, target: String) {
    let mut cmd = tokio::process::Command::new("ssh");
    cmd.arg("-S")
        .arg(&ctl)
        .args(["-o", "ControlMaster=no", "-W", &target, "none"]);
    let child = super::local::piped(&mut cmd, Stdio::piped()).spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(target: "slurmdash::remote", error = %e, "cannot run ssh for a tunnel");
            return;
        }
    };
    let (Some(to_ssh), Some(from_ssh)) = (child.stdin.take(), child.stdout.take()) else {
        return;
    };
    let mut ssh = tokio::io::join(from_ssh, to_ssh);
    if let Err(e) = tokio::io::copy_bidirectional(&mut tcp, &mut ssh).await {
        tracing::debug!(target: "slurmdash::remote", %target, error = %e, "a tunnel connection ended");
    }
    drop(ssh);
    let _ = child.wait().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_closed_tunnel_no_longer_listens_and_a_taken_port_is_an_error() {
        let t = Tunnels::default();
        let probe = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        let port = probe.local_addr().expect("addr").port();
        // Taken: an error, nothing registered.
        assert!(t.open("/nonexistent".into(), port, "h", 1).await.is_err());
        assert!(!t.close(port));
        drop(probe);
        t.open("/nonexistent".into(), port, "h", 1)
            .await
            .expect("free now");
        // Only on 127.0.0.1. A connection is accepted, and (no master) ends at once.
        let mut c = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let mut buf = Vec::new();
        let _ = c.write_all(b"x").await;
        let n = tokio::time::timeout(std::time::Duration::from_secs(20), c.read_to_end(&mut buf))
            .await
            .expect("the connection ends when ssh cannot reach a master");
        assert!(n.map_or(true, |n| n == 0), "{buf:?}");
        assert!(t.close(port));
        // The listener is gone once its task is aborted.
        let start = std::time::Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(10),
                "still listening"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}
