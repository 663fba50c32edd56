//! Streaming a growing file over one long-lived command: `tail -c +N -F` on the cluster,
//! its stdout read as it arrives. One exec per followed file instead of one read per second;
//! slurmctld is never asked anything.
//!
//! The remote side is a short script of our own (the path and offset are positional
//! arguments, never pasted into it): tail runs in the background, and a `cat` reading the
//! channel's stdin kills it when the channel closes (no pty means no SIGHUP), so a stream we
//! drop does not leave a tail running on the login node. Anything tail says on stderr (the
//! file was truncated, replaced, or cannot be read) ends the stream: the caller then reads
//! from its offset as before, and streams again.

use tokio::io::{AsyncRead, AsyncReadExt};

use super::frame;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Most bytes per [`StreamEvent::Data`].
const CHUNK: usize = 64 << 10;
/// Most bytes of stderr held while waiting for the end of a line: tail says one short line;
/// anything longer ends the stream with what came so far as the reason.
const MAX_ERR_LINE: usize = 4 << 10;

/// The script run by `sh -c SCRIPT sh OFFSET+1 PATH`.
pub const STREAM_SCRIPT: &str = "exec 3<&0
tail -c +\"$1\" -F -- \"$2\" </dev/null &
t=$!
{ cat <&3 >/dev/null; kill \"$t\"; } >/dev/null 2>&1 &
exec 3<&-
wait \"$t\"
";

/// The argv that streams `path` from byte `offset` (0-based) on.
pub fn stream_argv(path: &str, offset: u64) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        STREAM_SCRIPT.into(),
        "sh".into(),
        (offset + 1).to_string(),
        path.into(),
    ]
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// The next bytes of the file, in order.
    Data(Vec<u8>),
    /// The stream is over. `reset`: the file was truncated or replaced, so the offset means
    /// nothing any more and the caller should read the file's tail again.
    Ended { reset: bool, reason: String },
}

/// A running stream. Dropping it stops the remote command.
pub struct FileStream {
    pub rx: mpsc::Receiver<StreamEvent>,
    task: JoinHandle<()>,
}

impl FileStream {
    pub fn new(rx: mpsc::Receiver<StreamEvent>, task: JoinHandle<()>) -> Self {
        Self { rx, task }
    }
}

impl Drop for FileStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether a line tail printed on stderr means the offset is no longer valid.
pub fn means_reset(line: &str) -> bool {
    line.contains("truncated") || line.contains("replaced") || line.contains("has appeared")
}

/// Forwards `stdout` as [`StreamEvent::Data`] until it ends or `stderr` says something, then
/// sends one [`StreamEvent::Ended`]. Returns when the receiver is gone too.
pub async fn pump<O, E>(
    stdout: O,
    stderr: E,
    tx: &mpsc::Sender<StreamEvent>,
    received: &std::sync::atomic::AtomicU64,
    marker: Option<&str>,
) where
    O: AsyncRead + Unpin,
    E: AsyncRead + Unpin,
{
    let mut out = stdout;
    let mut err = stderr;
    let mut out_frame = marker.map(frame::StreamUnframer::new);
    let mut err_frame = marker.map(frame::StreamUnframer::new);
    let mut buf = vec![0u8; CHUNK];
    let mut ebuf = vec![0u8; 4096];
    // stderr's bytes (its frame taken off) until a whole line is there.
    let mut line: Vec<u8> = Vec::new();
    let mut err_open = true;
    let end = loop {
        tokio::select! {
            n = out.read(&mut buf) => match n {
                Ok(0) => {
                    let rest = out_frame.as_mut().map(|f| f.finish()).unwrap_or_default();
                    if !rest.is_empty() {
                        let _ = tx.send(StreamEvent::Data(rest)).await;
                    }
                    break StreamEvent::Ended { reset: false, reason: "the stream ended".into() };
                }
                Ok(n) => {
                    received.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                    let data = match out_frame.as_mut() {
                        Some(f) => f.push(&buf[..n]),
                        None => buf[..n].to_vec(),
                    };
                    if !data.is_empty() && tx.send(StreamEvent::Data(data)).await.is_err() {
                        return;
                    }
                }
                Err(e) => break StreamEvent::Ended { reset: false, reason: e.to_string() },
            },
            n = err.read(&mut ebuf), if err_open => {
                let got = match n {
                    Ok(0) | Err(_) => {
                        err_open = false;
                        err_frame.as_mut().map(|f| f.finish()).unwrap_or_default()
                    }
                    Ok(n) => match err_frame.as_mut() {
                        Some(f) => f.push(&ebuf[..n]),
                        None => ebuf[..n].to_vec(),
                    },
                };
                line.extend_from_slice(&got);
                // The first line the command itself wrote on stderr ends the stream (tail
                // speaks there only to say the file went away or was truncated). A line that
                // never ends counts as ended once it is long enough.
                let whole = match line.iter().rposition(|&b| b == b'\n') {
                    _ if !err_open => Some(line.len()),
                    None if line.len() >= MAX_ERR_LINE => Some(line.len()),
                    found => found,
                };
                if let Some(upto) = whole {
                    let text = String::from_utf8_lossy(&line[..upto.min(MAX_ERR_LINE)]).to_string();
                    if let Some(l) = text.lines().find(|l| !l.trim().is_empty()) {
                        break StreamEvent::Ended { reset: means_reset(l), reason: l.trim().to_string() };
                    }
                    line.drain(..upto.min(line.len()));
                }
            },
        }
    };
    let _ = tx.send(end).await;
}

/// Channel capacity: a reader far behind stops reading the pipe (back-pressure) instead of
/// piling up memory.
pub const QUEUE: usize = 16;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn argv_keeps_path_and_offset_out_of_the_script() {
        let a = stream_argv("/scratch/it's $(rm -rf) x.out", 41);
        assert_eq!(a[..4], ["sh", "-c", STREAM_SCRIPT, "sh"]);
        assert_eq!(a[4], "42", "tail counts bytes from 1");
        assert_eq!(a[5], "/scratch/it's $(rm -rf) x.out");
    }

    #[tokio::test]
    async fn pump_forwards_bytes_then_ends_on_what_tail_says() {
        let (tx, mut rx) = mpsc::channel(QUEUE);
        let out: &[u8] = b"line 1\nline 2\n";
        // stderr speaks after stdout has been drained in this test's single poll order.
        let err: &[u8] = b"";
        pump(out, err, &tx, &std::sync::atomic::AtomicU64::new(0), None).await;
        let mut got = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            got.push(ev);
        }
        assert_eq!(got[0], StreamEvent::Data(b"line 1\nline 2\n".to_vec()));
        assert!(matches!(
            got.last(),
            Some(StreamEvent::Ended { reset: false, .. })
        ));

        let (tx, mut rx) = mpsc::channel(QUEUE);
        let (_w, out) = tokio::io::duplex(64); // never writes: only stderr speaks
        let err: &[u8] = b"tail: /x/slurm-7.out: file truncated\n";
        pump(out, err, &tx, &std::sync::atomic::AtomicU64::new(0), None).await;
        assert_eq!(
            rx.recv().await,
            Some(StreamEvent::Ended {
                reset: true,
                reason: "tail: /x/slurm-7.out: file truncated".into()
            })
        );
    }

    /// A stderr that never ends a line (nor ends) must not grow memory: the stream ends with
    /// the first few KiB as its reason.
    #[tokio::test]
    async fn an_endless_stderr_line_ends_the_stream_with_a_bounded_reason() {
        let (tx, mut rx) = mpsc::channel(QUEUE);
        let (_w, out) = tokio::io::duplex(64); // stdout stays silent and open
        let err = tokio::io::repeat(b'e'); // never a newline, never an end
        let received = std::sync::atomic::AtomicU64::new(0);
        let pumping = pump(out, err, &tx, &received, None);
        tokio::time::timeout(std::time::Duration::from_secs(10), pumping)
            .await
            .expect("the pump gives up on the endless line");
        let Some(StreamEvent::Ended { reset, reason }) = rx.recv().await else {
            panic!("an end")
        };
        assert!(!reset);
        assert!(reason.starts_with("eeee"), "{reason}");
        assert!(reason.len() <= MAX_ERR_LINE, "{}", reason.len());
    }

    async fn next(rx: &mut mpsc::Receiver<StreamEvent>) -> StreamEvent {
        tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
            .await
            .expect("in time")
            .expect("event")
    }

    #[tokio::test]
    async fn the_script_streams_a_local_file_and_stops_when_stdin_closes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.out");
        std::fs::write(&path, "skip\nfirst\n").unwrap();
        let argv = stream_argv(path.to_str().unwrap(), 5);
        let mut child = tokio::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let (tx, mut rx) = mpsc::channel(QUEUE);
        let pumping = tokio::spawn(async move {
            pump(out, err, &tx, &std::sync::atomic::AtomicU64::new(0), None).await
        });
        assert_eq!(next(&mut rx).await, StreamEvent::Data(b"first\n".to_vec()));
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"second\n").unwrap();
        assert_eq!(next(&mut rx).await, StreamEvent::Data(b"second\n".to_vec()));
        drop(stdin);
        tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
            .await
            .expect("the script (and its tail) exits once its stdin closes")
            .unwrap();
        assert!(matches!(next(&mut rx).await, StreamEvent::Ended { .. }));
        pumping.await.unwrap();
    }
}
