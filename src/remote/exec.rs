//! A command whose stdout arrives in chunks as it is printed (a file being copied), with how
//! it exited at the end. One exec on the existing connection; dropping the stream ends it.

use tokio::io::{AsyncRead, AsyncReadExt};

use super::frame;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Most bytes per [`ExecEvent::Data`].
pub const CHUNK: usize = 256 << 10;
/// Chunks queued at most: a slow reader stops the pipe (back-pressure), not memory.
pub const QUEUE: usize = 8;
/// The most of stderr kept (a command that floods stderr is not read into memory).
const MAX_STDERR: u64 = 64 << 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecEvent {
    /// The next bytes of stdout, in order.
    Data(Vec<u8>),
    /// The command ended: its exit code (`None`: killed by a signal) and what it said on
    /// stderr.
    Exit { code: Option<i32>, stderr: Vec<u8> },
    /// The transport failed before the command ended (the message names the host).
    Failed(String),
}

/// A running command. Dropping it stops the command (its channel closes).
pub struct ExecStream {
    pub rx: mpsc::Receiver<ExecEvent>,
    task: Option<JoinHandle<()>>,
}

impl ExecStream {
    pub fn new(rx: mpsc::Receiver<ExecEvent>, task: Option<JoinHandle<()>>) -> Self {
        Self { rx, task }
    }

    /// A stream of events already known (a transport that can only run to completion).
    pub fn done(events: Vec<ExecEvent>) -> Self {
        let (tx, rx) = mpsc::channel(events.len().max(1));
        for e in events {
            let _ = tx.try_send(e);
        }
        Self { rx, task: None }
    }
}

impl Drop for ExecStream {
    fn drop(&mut self) {
        if let Some(t) = &self.task {
            t.abort();
        }
    }
}

/// Forwards `stdout` as chunks while collecting `stderr`; returns stderr (and the exit status
/// the framed program printed) once stdout ends (`Err` with the reason when reading failed,
/// `Ok(None)` when the receiver is gone). `marker`, for a command run as the framed program
/// (remote/frame.rs), says which bytes are the command's; without it all are.
pub async fn pump<O, E>(
    stdout: O,
    stderr: E,
    tx: &mpsc::Sender<ExecEvent>,
    received: &std::sync::atomic::AtomicU64,
    marker: Option<&str>,
) -> Result<Option<(Vec<u8>, Option<i32>)>, String>
where
    O: AsyncRead + Unpin,
    E: AsyncRead + Unpin,
{
    let mut out = stdout;
    let read_err = async move {
        let mut v = Vec::new();
        let mut e = stderr.take(MAX_STDERR);
        let _ = e.read_to_end(&mut v).await;
        match marker {
            Some(m) => {
                let u = frame::unframe(&v, m);
                (u.bytes, u.code)
            }
            None => (v, None),
        }
    };
    let forward = async {
        let mut buf = vec![0u8; CHUNK];
        let mut unframer = marker.map(frame::StreamUnframer::new);
        loop {
            let data = match out.read(&mut buf).await {
                Ok(0) => {
                    let rest = unframer.as_mut().map(|u| u.finish()).unwrap_or_default();
                    if !rest.is_empty() && tx.send(ExecEvent::Data(rest)).await.is_err() {
                        return Ok(false);
                    }
                    return Ok(true);
                }
                Ok(n) => {
                    received.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                    match unframer.as_mut() {
                        Some(u) => u.push(&buf[..n]),
                        None => buf[..n].to_vec(),
                    }
                }
                Err(e) => return Err(e.to_string()),
            };
            if !data.is_empty() && tx.send(ExecEvent::Data(data)).await.is_err() {
                return Ok(false);
            }
        }
    };
    let (fwd, err) = tokio::join!(forward, read_err);
    match fwd {
        Ok(true) => Ok(Some(err)),
        Ok(false) => Ok(None),
        Err(e) => Err(e),
    }
}
