//! Long-lived channels on an SSH master: a command whose output is forwarded as it arrives
//! (copies, `Remote::exec_stream`) and a followed file (`tail -F`, `Remote::stream_file`).
//! Each runs on a task of its own, holds one of the process's sessions while it lives, and
//! is opened the way every command is: a session the login node refuses is asked for again
//! after a pause, until the wait is over.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openssh::{RemoteChild, Stdio};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::display_argv;
use super::exec::{pump, ExecEvent, ExecStream, QUEUE};
use super::frame;
use super::session::Live;
use super::stream::{self, FileStream, StreamEvent};

/// What a channel needs: the master, the process's sessions, how long to wait for one.
pub(super) struct Channel {
    pub live: Arc<Live>,
    pub sessions: Arc<Semaphore>,
    pub wait: Duration,
    /// Bytes the channels received, for `:stats`.
    pub received: Arc<AtomicU64>,
}

impl Channel {
    /// Takes a session and starts `argv` on it (stdin piped when `stdin`); the error says
    /// why not, without naming the command (the caller does).
    /// The command runs as the framed sh program of `marker` (remote/frame.rs).
    async fn open(
        &self,
        argv: &[String],
        stdin: bool,
        marker: &str,
    ) -> Result<(OwnedSemaphorePermit, RemoteChild<'_>), String> {
        let Ok(Ok(permit)) =
            tokio::time::timeout(self.wait, self.sessions.clone().acquire_owned()).await
        else {
            return Err(format!("no session free within {}s", self.wait.as_secs()));
        };
        let mut cmd = self
            .live
            .session
            .raw_command(frame::login_line(argv, marker));
        cmd.stdin(if stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let deadline = Instant::now() + self.wait;
        let mut pause = Duration::from_millis(50);
        loop {
            match cmd.spawn().await {
                Ok(c) => return Ok((permit, c)),
                Err(e) => match pause_before_retry(&self.live, &mut pause, deadline).await {
                    Ok(()) => continue,
                    Err(Some(gone)) => return Err(format!("{gone}: {e}")),
                    Err(None) => return Err(refused(&e, self.wait)),
                },
            }
        }
    }

    /// Runs `argv` (not empty), forwarding its stdout as it arrives, then its exit.
    pub fn exec_stream(self, argv: Vec<String>) -> ExecStream {
        let (tx, rx) = tokio::sync::mpsc::channel(QUEUE);
        let task = tokio::spawn(async move {
            let command = display_argv(&argv);
            let host = self.live.host.clone();
            let marker = frame::new_marker();
            let (_session, mut child) = match self.open(&argv, false, &marker).await {
                Ok(v) => v,
                Err(e) => {
                    let reason = format!("starting `{command}` on {host}: {e}");
                    let _ = tx.send(ExecEvent::Failed(reason)).await;
                    return;
                }
            };
            let (Some(out), Some(err)) = (child.stdout().take(), child.stderr().take()) else {
                return;
            };
            let ev = match pump(out, err, &tx, &self.received, Some(&marker)).await {
                Ok(None) => return,
                Ok(Some((stderr, framed_code))) => match child.wait().await {
                    Ok(st) => ExecEvent::Exit {
                        code: framed_code.or(st.code()),
                        stderr,
                    },
                    Err(openssh::Error::RemoteProcessTerminated) => ExecEvent::Exit {
                        code: framed_code,
                        stderr,
                    },
                    Err(e) => ExecEvent::Failed(format!(
                        "`{command}` on {host}: the connection failed: {e}"
                    )),
                },
                Err(e) => ExecEvent::Failed(format!(
                    "`{command}` on {host}: reading its output failed: {e}"
                )),
            };
            let _ = tx.send(ev).await;
        });
        ExecStream::new(rx, Some(task))
    }

    /// Runs the `tail -F` script `argv`, forwarding what the file gains until the stream is
    /// dropped.
    pub fn follow(self, argv: Vec<String>) -> FileStream {
        let (tx, rx) = tokio::sync::mpsc::channel(stream::QUEUE);
        let task = tokio::spawn(async move {
            // The session is held while the stream lives.
            let marker = frame::new_marker();
            let (_session, mut child) = match self.open(&argv, true, &marker).await {
                Ok(v) => v,
                Err(e) => {
                    let reason = format!("starting tail -F on {}: {e}", self.live.host);
                    let _ = tx
                        .send(StreamEvent::Ended {
                            reset: false,
                            reason,
                        })
                        .await;
                    return;
                }
            };
            // Held open: the remote script stops its tail when this closes.
            let _stdin = child.stdin().take();
            if let (Some(out), Some(err)) = (child.stdout().take(), child.stderr().take()) {
                stream::pump(out, err, &tx, &self.received, Some(&marker)).await;
            }
            // Dropping the child ends the channel (and, through its stdin, the remote tail).
        });
        FileStream::new(rx, task)
    }
}

/// After a session could not be opened: `Ok` once it is worth asking again (after a pause
/// that doubles up to 1 s), `Err(Some(why))` when the master is gone, `Err(None)` when
/// `deadline` has passed. A live master means the login node refused the session itself
/// (sshd's `MaxSessions`, reached by the other slurmdash processes sharing the master).
pub(super) async fn pause_before_retry(
    live: &Live,
    pause: &mut Duration,
    deadline: Instant,
) -> Result<(), Option<String>> {
    if let Err(gone) = live.check().await {
        return Err(Some(gone));
    }
    if Instant::now() + *pause >= deadline {
        return Err(None);
    }
    tokio::time::sleep(*pause).await;
    *pause = (*pause * 2).min(Duration::from_secs(1));
    Ok(())
}

/// Why a command never started on a live master, and what to do.
pub(super) fn refused(e: &openssh::Error, waited: Duration) -> String {
    use std::error::Error;
    let why = e.source().map(|s| format!(" ({s})")).unwrap_or_default();
    format!(
        "{e}{why}: the login node refused a new session on the SSH connection for {}s (sshd's MaxSessions, shared by every slurmdash window and command on this cluster): close some, or raise MaxSessions",
        waited.as_secs()
    )
}
