//! [`LocalRemote`]: slurmdash running on the login node itself. Commands are spawned
//! directly (no shell), so arguments need no escaping at all.

use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use super::{
    display_argv, read_via_run, ConnState, FileChunk, ReadPos, Remote, RemoteError, RemoteStats,
    RunOutput,
};

pub struct LocalRemote {
    host: String,
    read_timeout: Duration,
    /// Bytes read at most from a command's stdout (and from its stderr).
    pub max_output: u64,
    stats: Mutex<RemoteStats>,
    /// Bytes received by streamed commands and followed files (`:stats`).
    streamed: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Default for LocalRemote {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalRemote {
    pub fn new() -> Self {
        let host = std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.is_empty())
            .or_else(|| {
                std::fs::read_to_string("/etc/hostname")
                    .ok()
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_else(|| "localhost".into());
        Self {
            host,
            read_timeout: Duration::from_secs(20),
            max_output: super::MAX_OUTPUT,
            stats: Mutex::new(RemoteStats::default()),
            streamed: Default::default(),
        }
    }

    fn bump(&self, f: impl FnOnce(&mut RemoteStats)) {
        f(&mut self.stats.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

/// `cmd` as a child of this process, its stdin as given, its stdout and stderr read through
/// pipes; killed when its handle is dropped.
pub fn piped(cmd: &mut tokio::process::Command, stdin: Stdio) -> &mut tokio::process::Command {
    cmd.stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
}

impl LocalRemote {
    /// [`Remote::run`] without the debug-log record.
    async fn run_unlogged(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<RunOutput, RemoteError> {
        let command = display_argv(argv);
        let host = self.host.clone();
        let Some((prog, args)) = argv.split_first() else {
            return Err(RemoteError::Other {
                command,
                host,
                reason: "empty command".into(),
            });
        };
        let mut cmd = tokio::process::Command::new(prog);
        let input = if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        };
        piped(cmd.args(args), input);
        let t0 = Instant::now();
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            // Same as a remote shell: command not found is exit code 127, not a transport error.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(RunOutput {
                    stdout: Vec::new(),
                    stderr: format!("{prog}: command not found\n").into_bytes(),
                    code: Some(127),
                    login_lines: (0, 0),
                })
            }
            Err(e) => {
                return Err(RemoteError::Other {
                    command,
                    host,
                    reason: e.to_string(),
                })
            }
        };
        self.bump(|s| {
            s.count(argv);
            s.bytes_out += stdin.map_or(0, |d| d.len() as u64);
        });
        let child_pid = child.id();
        let input = child.stdin.take();
        let (sout, serr) = (child.stdout.take(), child.stderr.take());
        let data = stdin.map(<[u8]>::to_vec);
        let cap = self.max_output;
        let work = async move {
            let write = async move {
                if let (Some(mut w), Some(d)) = (input, data) {
                    let _ = w.write_all(&d).await;
                }
                Ok(())
            };
            // The first stream past the cap ends the command (kill_on_drop).
            let (_, stdout, stderr) =
                tokio::try_join!(write, capped(sout, cap), capped(serr, cap))?;
            let status = child.wait().await?;
            Ok::<_, std::io::Error>(std::process::Output {
                status,
                stdout,
                stderr,
            })
        };
        // Past the timeout the command gets SIGTERM and 5 s to run its traps (the submission
        // cancels the job it queued), as `timeout -k 5s` does on a login node; then SIGKILL
        // (kill_on_drop).
        let pid = child_pid;
        tokio::pin!(work);
        let finished = match tokio::time::timeout(timeout, &mut work).await {
            Ok(r) => Ok(r),
            Err(e) => {
                if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                    // SAFETY: kill(2) on the pid of our own child, which we have not reaped.
                    unsafe { libc::kill(pid, libc::SIGTERM) };
                    let _ = tokio::time::timeout(Duration::from_secs(5), &mut work).await;
                }
                Err(e)
            }
        };
        match finished {
            Err(_) => Err(RemoteError::Timeout {
                command,
                host,
                secs: timeout.as_secs_f64(),
            }),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                Err(RemoteError::TooMuchOutput {
                    command,
                    host,
                    limit: cap,
                })
            }
            Ok(Err(e)) => Err(RemoteError::Other {
                command,
                host,
                reason: e.to_string(),
            }),
            Ok(Ok(out)) => {
                self.bump(|s| {
                    s.bytes_in += (out.stdout.len() + out.stderr.len()) as u64;
                    s.last_rtt = Some(t0.elapsed());
                });
                Ok(RunOutput {
                    stdout: out.stdout,
                    stderr: out.stderr,
                    code: out.status.code(),
                    login_lines: (0, 0),
                })
            }
        }
    }
}

/// Reads a pipe to its end; `FileTooLarge` as soon as it has sent more than `cap` bytes.
async fn capped<R: tokio::io::AsyncRead + Unpin>(
    r: Option<R>,
    cap: u64,
) -> std::io::Result<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut v = Vec::new();
    if let Some(r) = r {
        r.take(cap.saturating_add(1)).read_to_end(&mut v).await?;
    }
    if v.len() as u64 > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            "output over the cap",
        ));
    }
    Ok(v)
}

#[async_trait::async_trait]
impl Remote for LocalRemote {
    fn terminal_argv(&self, argv: &[String]) -> Option<Vec<String>> {
        Some(argv.to_vec())
    }

    async fn run(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<RunOutput, RemoteError> {
        let run = self.run_unlogged(argv, stdin, timeout);
        super::run_logged(&self.host, argv, stdin, run).await
    }

    async fn read_file(
        &self,
        path: &str,
        pos: ReadPos,
        max_bytes: u64,
    ) -> Result<FileChunk, RemoteError> {
        read_via_run(self, &self.host, path, pos, max_bytes, self.read_timeout).await
    }

    /// The command as a local process; its stdout in chunks as it arrives.
    async fn exec_stream(&self, argv: &[String]) -> Result<super::ExecStream, RemoteError> {
        use super::exec::{pump, ExecEvent, ExecStream, QUEUE};
        let Some((prog, args)) = argv.split_first() else {
            return Err(RemoteError::Other {
                command: display_argv(argv),
                host: self.host.clone(),
                reason: "empty command".into(),
            });
        };
        let mut child = piped(tokio::process::Command::new(prog).args(args), Stdio::null())
            .spawn()
            .map_err(|e| RemoteError::Other {
                command: display_argv(argv),
                host: self.host.clone(),
                reason: e.to_string(),
            })?;
        self.bump(|s| s.count(argv));
        let (tx, rx) = tokio::sync::mpsc::channel(QUEUE);
        let received = self.streamed.clone();
        let task = tokio::spawn(async move {
            let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
                return;
            };
            let ev = match pump(out, err, &tx, &received, None).await {
                Ok(None) => return,
                Ok(Some((stderr, _))) => match child.wait().await {
                    Ok(st) => ExecEvent::Exit {
                        code: st.code(),
                        stderr,
                    },
                    Err(e) => ExecEvent::Failed(e.to_string()),
                },
                Err(e) => ExecEvent::Failed(e),
            };
            let _ = tx.send(ev).await;
        });
        Ok(ExecStream::new(rx, Some(task)))
    }

    /// The same `tail -F` script as over SSH, as a local process.
    async fn stream_file(
        &self,
        path: &str,
        offset: u64,
    ) -> Result<Option<super::FileStream>, RemoteError> {
        use super::stream::{self, StreamEvent};
        let argv = stream::stream_argv(path, offset);
        self.bump(|s| s.execs += 1);
        let mut cmd = tokio::process::Command::new(&argv[0]);
        piped(cmd.args(&argv[1..]), Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| RemoteError::Other {
            command: format!("tail -F {path}"),
            host: self.host.clone(),
            reason: e.to_string(),
        })?;
        let (tx, rx) = tokio::sync::mpsc::channel(stream::QUEUE);
        let received = self.streamed.clone();
        let task = tokio::spawn(async move {
            let _stdin = child.stdin.take();
            match (child.stdout.take(), child.stderr.take()) {
                (Some(out), Some(err)) => stream::pump(out, err, &tx, &received, None).await,
                _ => {
                    let reason = "tail -F started without pipes".to_string();
                    let _ = tx
                        .send(StreamEvent::Ended {
                            reset: false,
                            reason,
                        })
                        .await;
                }
            }
        });
        Ok(Some(super::FileStream::new(rx, task)))
    }

    fn host(&self) -> Option<String> {
        Some(self.host.clone())
    }

    fn state(&self) -> ConnState {
        ConnState::Connected {
            host: self.host.clone(),
        }
    }

    fn stats(&self) -> RemoteStats {
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
        s.bytes_in += self.streamed.load(std::sync::atomic::Ordering::Relaxed);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn streamed_bytes_count_as_received_in_the_stats() {
        use crate::remote::exec::ExecEvent;
        let r = LocalRemote::new();
        let before = r.stats();
        let mut st = r
            .exec_stream(&s(&["head", "-c", "300000", "/dev/zero"]))
            .await
            .expect("started");
        let mut got = 0usize;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            match tokio::time::timeout_at(deadline, st.rx.recv()).await {
                Ok(Some(ExecEvent::Data(d))) => got += d.len(),
                Ok(Some(ExecEvent::Exit { code, .. })) => {
                    assert_eq!(code, Some(0));
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(got, 300_000);
        let after = r.stats();
        assert_eq!(after.execs, before.execs + 1);
        assert_eq!(after.bytes_in - before.bytes_in, 300_000);
    }

    /// A command past its timeout gets SIGTERM first, so its traps run (the submission
    /// script cancels the job it queued), as `timeout -k` does on a login node.
    #[tokio::test]
    async fn a_timed_out_command_runs_its_term_trap_before_it_is_killed() {
        let dir = tempfile::tempdir().expect("tmp");
        let mark = dir.path().join("trapped");
        let r = LocalRemote::new();
        let script = "trap 'echo cleaned > \"$1\"; exit 1' TERM; sleep 30 & wait";
        let argv = s(&["sh", "-c", script, "sh", mark.to_str().expect("utf-8")]);
        let err = r
            .run(&argv, None, Duration::from_millis(500))
            .await
            .expect_err("timed out");
        assert!(matches!(err, RemoteError::Timeout { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(&mark).expect("the trap ran"),
            "cleaned\n"
        );
    }

    #[tokio::test]
    async fn output_past_the_cap_ends_the_command_with_a_clear_error() {
        let mut r = LocalRemote::new();
        r.max_output = 4096;
        let t = Duration::from_secs(20);
        // Endless output: ended at the cap, long before the timeout.
        let e = r.run(&s(&["yes"]), None, t).await.expect_err("capped");
        assert!(
            matches!(e, RemoteError::TooMuchOutput { limit: 4096, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("printed more than 4 KiB"), "{e}");
        let e = r
            .run(&s(&["sh", "-c", "yes >&2"]), None, t)
            .await
            .expect_err("stderr capped too");
        assert!(matches!(e, RemoteError::TooMuchOutput { .. }), "{e}");
        // Exactly the cap is fine.
        let out = r
            .run(&s(&["head", "-c", "4096", "/dev/zero"]), None, t)
            .await
            .expect("at the cap");
        assert_eq!(out.stdout.len(), 4096);
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[tokio::test]
    async fn runs_with_exact_args_stdin_and_codes() {
        let r = LocalRemote::new();
        let hostile = ["a b", "$(touch /tmp/pwned)", ";", "'\"", "é\n"];
        let mut argv = s(&["printf", "%s|"]);
        argv.extend(s(&hostile));
        let out = r
            .run(&argv, None, Duration::from_secs(5))
            .await
            .expect("printf");
        assert_eq!(out.stdout_lossy(), format!("{}|", hostile.join("|")));
        let out = r
            .run(&s(&["cat"]), Some(b"in\xffput"), Duration::from_secs(5))
            .await
            .expect("cat");
        assert_eq!(out.stdout, b"in\xffput");
        let out = r
            .run(&s(&["sh", "-c", "exit 3"]), None, Duration::from_secs(5))
            .await
            .expect("exit");
        assert_eq!(out.code, Some(3));
        let out = r
            .run(&s(&["no-such-cmd-xyz"]), None, Duration::from_secs(5))
            .await
            .expect("missing command is an exit code");
        assert_eq!(out.code, Some(127));
        let e = r
            .run(&s(&["sleep", "5"]), None, Duration::from_millis(200))
            .await
            .expect_err("timeout");
        assert!(matches!(e, RemoteError::Timeout { .. }), "{e}");
        assert_eq!(r.stats().execs, 4);
    }

    #[tokio::test]
    async fn reads_files_locally() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("log");
        std::fs::write(&p, b"hello\xffworld").expect("write");
        let r = LocalRemote::new();
        let path = p.to_str().expect("utf8");
        let c = r
            .read_file(path, ReadPos::Tail(5), 100)
            .await
            .expect("tail");
        assert_eq!(
            (c.offset, c.data.as_slice(), c.size),
            (6, &b"world"[..], 11)
        );
        let c = r
            .read_file(path, ReadPos::Offset(99), 10)
            .await
            .expect("past end");
        assert!(c.truncated());
        let e = r
            .read_file(&format!("{path}.missing"), ReadPos::Offset(0), 10)
            .await
            .expect_err("missing");
        assert!(matches!(e, RemoteError::NotFound { .. }), "{e}");
    }
}
