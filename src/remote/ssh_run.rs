//! One command over the master ([`SshRemote`]'s `run`): a session taken, the framed
//! program spawned on a channel (asked again while the login node refuses it), stdin fed,
//! stdout and stderr read under the output cap (gathered, or stdout handed on as it arrives),
//! the frame taken off; and one transparent retry when the command provably never reached
//! the cluster.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use openssh::Stdio;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::SshRemote;
use crate::remote::channel::{pause_before_retry, refused};
use crate::remote::frame;
use crate::remote::master::mux_never_connected;
use crate::remote::session::Live;
use crate::remote::{display_argv, Remote, RemoteError, RunOutput};

/// How one exec ended.
enum Exec {
    Done(RunOutput),
    Timeout,
    /// stdout or stderr went past `SshOptions::max_output`.
    TooMuch,
    MasterGone {
        ran: bool,
        reason: String,
    },
    Failed(String),
}

impl SshRemote {
    /// [`Remote::run`] without the debug-log record.
    /// With `sink`, stdout goes there as it arrives (see [`Remote::run_into`]).
    pub(super) async fn run_unlogged(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
        mut sink: Option<&mut Sink<'_>>,
    ) -> Result<RunOutput, RemoteError> {
        let command = display_argv(argv);
        if argv.is_empty() {
            return Err(RemoteError::Other {
                command,
                host: self.host().unwrap_or_default(),
                reason: "empty command".into(),
            });
        }
        let sent = argv.iter().map(|a| a.len() as u64 + 1).sum::<u64>()
            + stdin.map_or(0, |s| s.len() as u64);
        let Ok(Ok(_session)) =
            tokio::time::timeout(timeout, self.sessions.clone().acquire_owned()).await
        else {
            return Err(RemoteError::Timeout {
                command,
                host: self.host().unwrap_or_default(),
                secs: timeout.as_secs_f64(),
            });
        };
        // One transparent retry, only when the command provably never reached the cluster.
        for round in 0..2 {
            let live = self.ensure(timeout).await?;
            let t0 = Instant::now();
            let result = self
                .exec(
                    &live,
                    argv,
                    stdin,
                    timeout,
                    sink.as_mut().map(|s| &mut **s as _),
                )
                .await;
            {
                let mut sh = self.shared();
                sh.stats.count(argv);
                sh.stats.bytes_out += sent;
                if let Exec::Done(out) = &result {
                    sh.stats.bytes_in += (out.stdout.len() + out.stderr.len()) as u64;
                    sh.stats.last_rtt = Some(t0.elapsed());
                }
            }
            let host = live.host.clone();
            match result {
                Exec::Done(out) => return Ok(out),
                Exec::Timeout => {
                    return Err(RemoteError::Timeout {
                        command,
                        host,
                        secs: timeout.as_secs_f64(),
                    })
                }
                Exec::TooMuch => {
                    return Err(RemoteError::TooMuchOutput {
                        command,
                        host,
                        limit: self.opts.max_output,
                    })
                }
                Exec::Failed(reason) => {
                    return Err(RemoteError::Other {
                        command,
                        host,
                        reason,
                    })
                }
                Exec::MasterGone { ran, reason } => {
                    self.invalidate(&live, &reason).await;
                    if ran || round == 1 {
                        return Err(RemoteError::Disconnected {
                            command,
                            host,
                            reason,
                        });
                    }
                }
            }
        }
        Err(RemoteError::Other {
            command,
            host: self.host().unwrap_or_default(),
            reason: "reconnect loop ended".into(),
        })
    }

    async fn exec(
        &self,
        live: &Live,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
        sink: Option<&mut Sink<'_>>,
    ) -> Exec {
        let wrapped;
        let argv = match remote_timeout_argv(live.remote_timeout, argv, timeout) {
            Some(w) => {
                wrapped = w;
                &wrapped
            }
            None => argv,
        };
        // One sh program whatever the login shell; its output framed (remote/frame.rs).
        let marker = frame::new_marker();
        let mut cmd = live.session.raw_command(frame::login_line(argv, &marker));
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let max_output = self.opts.max_output;
        // The cap is on the command's own bytes: the frame and what the login prints around
        // it come on top (a welcome banner, a quota note).
        let read_cap = max_output.saturating_add(FRAME_SLACK);
        let t0 = Instant::now();
        let deadline = t0 + timeout;
        let mut pause = Duration::from_millis(50);
        let mut child = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, cmd.spawn()).await {
                Err(_) => return Exec::Timeout,
                Ok(Ok(c)) => break c,
                // Native mux: nothing ran yet. A master that is gone fails here; a live one
                // whose login node refused the session is asked again after a pause.
                Ok(Err(e)) => match pause_before_retry(live, &mut pause, deadline).await {
                    Ok(()) => continue,
                    Err(Some(gone)) => {
                        return Exec::MasterGone {
                            ran: false,
                            reason: format!("{gone}: {e}"),
                        }
                    }
                    Err(None) => return Exec::Failed(refused(&e, timeout)),
                },
            }
        };
        let timeout = timeout.saturating_sub(t0.elapsed());
        let work = async {
            let (sin, sout, serr) = (
                child.stdin().take(),
                child.stdout().take(),
                child.stderr().take(),
            );
            let write = async move {
                if let (Some(mut w), Some(data)) = (sin, stdin) {
                    // A command that does not read its input is not an error.
                    let _ = w.write_all(data).await;
                    let _ = w.shutdown().await;
                }
            };
            let write = async move {
                write.await;
                Ok(())
            };
            // The first stream past the cap ends the command (dropping the child kills
            // the local ssh client, the channel closes and the remote side gets SIGPIPE).
            let read_out = async {
                match sink {
                    // Streamed: handed on framed off, and counted against the cap as it
                    // comes.
                    Some(sink) => read_into(sout, read_cap, &marker, sink)
                        .await
                        .map(|n| (Vec::new(), n)),
                    None => read_capped(sout, read_cap).await.map(|v| (v, 0)),
                }
            };
            let (_, (out, streamed), err) =
                tokio::try_join!(write, read_out, read_capped(serr, read_cap))?;
            let status = child.wait().await;
            Ok::<_, ReadError>((out, streamed, err, status))
        };
        let (stdout, streamed, stderr, status) = match tokio::time::timeout(timeout, work).await {
            Err(_) => return Exec::Timeout,
            Ok(Err(ReadError::TooMuch)) => return Exec::TooMuch,
            Ok(Err(ReadError::Failed(e))) => return Exec::Failed(e),
            Ok(Ok(v)) => v,
        };
        let code = match status {
            Ok(s) => s.code(),
            Err(openssh::Error::Remote(e)) if e.kind() == std::io::ErrorKind::NotFound => Some(127),
            Err(openssh::Error::RemoteProcessTerminated) => {
                // 255 is both "ssh failed" and a real exit code: ask the master.
                if let Err(e) = live.check().await {
                    let ran = !mux_never_connected(&stderr);
                    let detail = String::from_utf8_lossy(&stderr).trim().to_string();
                    return Exec::MasterGone {
                        ran,
                        reason: format!("{e}: {detail}"),
                    };
                }
                Some(255)
            }
            Err(e) => return Exec::Failed(e.to_string()),
        };
        let (out, err) = (
            frame::unframe_vec(stdout, &marker),
            frame::unframe_vec(stderr, &marker),
        );
        if out.bytes.len() as u64 > max_output
            || err.bytes.len() as u64 > max_output
            || streamed > max_output
        {
            return Exec::TooMuch;
        }
        self.streamed.fetch_add(streamed, Ordering::Relaxed);
        Exec::Done(RunOutput {
            // The status the program itself printed, else what the login shell returned.
            code: out.code.or(err.code).or(code),
            login_lines: (out.noise_lines(), err.noise_lines()),
            stdout: out.bytes,
            stderr: err.bytes,
        })
    }
}

/// Where a streamed command's stdout goes ([`Remote::run_into`]).
type Sink<'a> = dyn FnMut(&[u8]) + Send + 'a;

/// What a command's streams may carry beyond its own output before the cap ends it: the
/// frame's markers and the lines a login shell's dotfiles print.
const FRAME_SLACK: u64 = 64 * 1024;

enum ReadError {
    TooMuch,
    Failed(String),
}

/// Hands the bytes of a framed command's stream (remote/frame.rs) to `sink` as they arrive;
/// fails as soon as it has sent more than `cap` bytes. The command's own bytes, counted.
async fn read_into<R: tokio::io::AsyncRead + Unpin>(
    r: Option<R>,
    cap: u64,
    marker: &str,
    sink: &mut (dyn for<'b> FnMut(&'b [u8]) + Send),
) -> Result<u64, ReadError> {
    let Some(mut r) = r else {
        return Ok(0);
    };
    let mut unframer = frame::StreamUnframer::new(marker);
    let mut buf = vec![0u8; 64 << 10];
    let (mut read, mut given) = (0u64, 0u64);
    loop {
        let n = r
            .read(&mut buf)
            .await
            .map_err(|e| ReadError::Failed(e.to_string()))?;
        let bytes = if n == 0 {
            unframer.finish()
        } else {
            read += n as u64;
            if read > cap {
                return Err(ReadError::TooMuch);
            }
            unframer.push(&buf[..n])
        };
        given += bytes.len() as u64;
        if !bytes.is_empty() {
            sink(&bytes);
        }
        if n == 0 {
            return Ok(given);
        }
    }
}

/// Reads a stream to its end, or fails as soon as it has sent more than `cap` bytes.
async fn read_capped<R: tokio::io::AsyncRead + Unpin>(
    r: Option<R>,
    cap: u64,
) -> Result<Vec<u8>, ReadError> {
    let mut v = Vec::new();
    if let Some(r) = r {
        r.take(cap.saturating_add(1))
            .read_to_end(&mut v)
            .await
            .map_err(|e| ReadError::Failed(e.to_string()))?;
    }
    if v.len() as u64 > cap {
        return Err(ReadError::TooMuch);
    }
    Ok(v)
}

/// `timeout -k 5s <T+1>s argv…`: a command we stopped waiting for also ends on the login node
/// (closing the channel alone leaves e.g. a hung `squeue` running there, since no pty means
/// no SIGHUP).
fn remote_timeout_argv(enabled: bool, argv: &[String], timeout: Duration) -> Option<Vec<String>> {
    if !enabled || timeout > Duration::from_secs(86_400) {
        return None;
    }
    let mut w = vec![
        "timeout".to_string(),
        "-k".into(),
        "5s".into(),
        format!("{:.1}s", timeout.as_secs_f64() + 1.0),
    ];
    w.extend(argv.iter().cloned());
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_timeout_wraps_argv_unchanged() {
        let argv = vec!["squeue".to_string(), "-o".into(), "%i|%j".into()];
        let w = remote_timeout_argv(true, &argv, Duration::from_millis(2500)).expect("wrapped");
        assert_eq!(w[..4], ["timeout", "-k", "5s", "3.5s"]);
        assert_eq!(w[4..], argv[..]);
        assert!(remote_timeout_argv(false, &argv, Duration::from_secs(1)).is_none());
        assert!(remote_timeout_argv(true, &argv, Duration::MAX).is_none());
    }
}
