//! Transport to the cluster: run a command, read part of a file.
//!
//! [`SshRemote`] talks to a login node through one SSH ControlMaster, [`LocalRemote`] runs on
//! the login node itself, and [`FakeRemote`] scripts answers for tests. Everything above this
//! layer sees only the [`Remote`] trait.

pub mod askpass;
mod channel;
pub mod exec;
mod failover;
pub mod fake;
pub mod frame;
mod hold;
mod lasthost;
pub mod local;
mod master;
mod options;
mod readfile;
pub mod route;
mod session;
mod sockets;
pub mod ssh;
pub mod stream;
mod tunnel;

pub use crate::payload::{ConnState, RemoteStats};
use std::time::Duration;

pub use exec::{ExecEvent, ExecStream};
pub use failover::{
    backoff_delay, jitter_unit, parse_host_list, permanent_hint, try_in_order, try_staggered,
    with_jitter, Attempt, BACKOFF_CAP, HEAD_START, QUICK_CAP,
};
pub use fake::FakeRemote;
pub use local::LocalRemote;
pub use master::{
    control_master_alive, control_master_pid, interactive_login, master_answers, running_login,
    Login, CHECK_TIMEOUT,
};
pub(crate) use options::with_login_fields;
pub use options::{HostKeyCheck, SharedMasters, SshOptions};
pub use readfile::{parse_read_output, read_file_argv, ReadOutcome, READ_SCRIPT};
pub use sockets::{runtime_dir, MAX_SOCKET_PATH};
pub use ssh::SshRemote;
pub use stream::{FileStream, StreamEvent};

/// The most bytes read from one remote command's stdout (and from its stderr): 64 MiB, a
/// hundred times a 20,000-job squeue. A runaway command cannot fill the laptop's memory.
pub const MAX_OUTPUT: u64 = 64 << 20;

/// What a remote command printed and how it exited. A non-zero `code` is the command's own
/// failure (e.g. `squeue` rejecting an option), not a transport error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// `None` when the process was killed by a signal and no code is known.
    pub code: Option<i32>,
    /// Lines the login shell and its dotfiles printed around the command on (stdout,
    /// stderr), taken off the output above (remote/frame.rs); (0, 0) where no login shell
    /// ran.
    pub login_lines: (usize, usize),
}

impl RunOutput {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
    /// stdout and stderr as text, moved rather than copied (invalid UTF-8 replaced): for
    /// answers too large to hold twice.
    pub fn into_text(self) -> (String, String) {
        let text = |v: Vec<u8>| {
            String::from_utf8(v)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
        };
        (text(self.stdout), text(self.stderr))
    }
    pub fn stdout_lossy(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn stderr_lossy(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Where to start reading a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPos {
    /// From this byte offset (the next unread byte of a log being followed).
    Offset(u64),
    /// The last N bytes (capped by `max_bytes`).
    Tail(u64),
}

/// Bytes read from a remote file. `data` starts at `offset`. `size` is the file size when it
/// was read: `size < offset` means the file was truncated or replaced since the caller's last
/// read, and the caller should restart (e.g. from `ReadPos::Tail`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileChunk {
    pub offset: u64,
    pub data: Vec<u8>,
    pub size: u64,
}

impl FileChunk {
    /// True when the file is now shorter than the offset that was asked for.
    pub fn truncated(&self) -> bool {
        self.size < self.offset
    }
    /// Offset to pass next time to continue where this chunk ended.
    pub fn next_offset(&self) -> u64 {
        self.offset + self.data.len() as u64
    }
}

/// A transport failure: the command did not run to completion on the cluster, or the file
/// could not be read. Every message names the host and what to try next.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RemoteError {
    #[error("cannot connect to {host}: {reason} (check that plain `ssh` to it works in a terminal: keys, agent, known_hosts; for password or 2FA logins run `slurmdash login` first)")]
    Connect { host: String, reason: String },
    #[error("`{command}` on {host} did not finish within {secs:.1}s and was abandoned (the cluster may be slow; retry or raise the timeout)")]
    Timeout {
        command: String,
        host: String,
        secs: f64,
    },
    #[error("{path} does not exist on {host} (the job may not have started writing it yet)")]
    NotFound { path: String, host: String },
    #[error("permission denied reading {path} on {host} (is the file, or a directory above it, readable by your cluster user?)")]
    PermissionDenied { path: String, host: String },
    #[error("{path} on {host} is not a regular file (a directory or device cannot be tailed)")]
    NotRegularFile { path: String, host: String },
    #[error("the connection to {host} dropped while running `{command}`: {reason} (it may or may not have run; slurmdash reconnects on the next command)")]
    Disconnected {
        command: String,
        host: String,
        reason: String,
    },
    #[error("`{command}` on {host} printed more than {}, so slurmdash stopped reading and ended it (ask for less: a narrower query, or one job's log instead of a whole file)", size_text(*limit))]
    TooMuchOutput {
        command: String,
        host: String,
        limit: u64,
    },
    #[error("running `{command}` on {host} failed: {reason}")]
    Other {
        command: String,
        host: String,
        reason: String,
    },
}

impl RemoteError {
    /// Errors after which the same request may succeed later without user action.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            RemoteError::Connect { .. }
                | RemoteError::Timeout { .. }
                | RemoteError::Disconnected { .. }
        )
    }
}

#[async_trait::async_trait]
pub trait Remote: Send + Sync {
    /// Runs `argv` on the cluster; each element arrives as one argument, unchanged.
    async fn run(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<RunOutput, RemoteError>;

    /// Runs `argv` like [`Remote::run`] (no stdin), handing its stdout to `sink` in pieces as
    /// it arrives instead of gathering it: a large answer is never held whole. The output
    /// returned has an empty stdout. This default gathers it with `run`, then hands it on.
    async fn run_into(
        &self,
        argv: &[String],
        timeout: Duration,
        sink: &mut (dyn for<'b> FnMut(&'b [u8]) + Send),
    ) -> Result<RunOutput, RemoteError> {
        let mut out = self.run(argv, None, timeout).await?;
        sink(&out.stdout);
        out.stdout = Vec::new();
        Ok(out)
    }

    /// Reads at most `max_bytes` of `path` with one remote command.
    async fn read_file(
        &self,
        path: &str,
        pos: ReadPos,
        max_bytes: u64,
    ) -> Result<FileChunk, RemoteError>;

    /// Streams `path` from byte `offset` on as it grows, over one long-lived command (see
    /// [`stream`]). `Ok(None)`: this transport cannot stream; read from offsets instead.
    async fn stream_file(
        &self,
        _path: &str,
        _offset: u64,
    ) -> Result<Option<FileStream>, RemoteError> {
        Ok(None)
    }

    /// Runs `argv` and yields its stdout in chunks as it arrives, then how it exited (a
    /// file copy: no output cap, no overall time limit; the reader decides how long to wait
    /// for the next chunk). This default runs the command to completion with `run` (capped
    /// at [`MAX_OUTPUT`]), for transports that cannot stream.
    async fn exec_stream(&self, argv: &[String]) -> Result<ExecStream, RemoteError> {
        let out = self.run(argv, None, Duration::from_secs(600)).await?;
        Ok(ExecStream::done(vec![
            ExecEvent::Data(out.stdout),
            ExecEvent::Exit {
                code: out.code,
                stderr: out.stderr,
            },
        ]))
    }

    /// The login host in use, if connected.
    fn host(&self) -> Option<String>;
    fn state(&self) -> ConnState;
    fn stats(&self) -> RemoteStats;

    /// The local command that runs `argv` on the cluster in this terminal, with a tty (a
    /// shell in a job): over the connection already open, so no new login. `None` when not
    /// connected yet, or when the transport cannot hand over a terminal.
    fn terminal_argv(&self, _argv: &[String]) -> Option<Vec<String>> {
        None
    }

    /// Forwards `127.0.0.1:local` on this machine to `host:port` as the login node reaches
    /// it, through the open connection (`cancel`: ends that forward). Nothing listens beyond
    /// 127.0.0.1, and nothing outlives this process (any local user can connect meanwhile).
    async fn forward(
        &self,
        _local: u16,
        _host: &str,
        _port: u16,
        _cancel: bool,
    ) -> Result<(), RemoteError> {
        Err(RemoteError::Other {
            command: "port forward".into(),
            host: self.host().unwrap_or_default(),
            reason: "this connection cannot forward ports (local = true runs on the login node: connect to the node directly)".into(),
        })
    }

    /// Skips the wait before the next reconnect attempt (the user pressed `r`); a command
    /// already waiting for it goes ahead at once.
    fn retry_now(&self) {}

    /// Ends the connection for good: a master shared with other processes is let go of (it
    /// ends `persist_secs` after the last slurmdash using it), masters of this remote alone
    /// are told to exit, and its temporary files are removed. Later commands fail. Safe to
    /// call more than once.
    async fn close(&self) {}
}

/// Runs one remote command (`run`: the transport's own, unlogged) and records it in the
/// debug log: every transport's `run` is this.
pub(crate) async fn run_logged(
    host: &str,
    argv: &[String],
    stdin: Option<&[u8]>,
    run: impl std::future::Future<Output = Result<RunOutput, RemoteError>>,
) -> Result<RunOutput, RemoteError> {
    let t0 = std::time::Instant::now();
    let result = run.await;
    log_run(
        host,
        argv,
        stdin.map_or(0, <[u8]>::len),
        t0.elapsed(),
        &result,
    );
    result
}

/// Records one remote command in the debug log (`--log FILE`, off by default): the whole
/// argv, how it exited, how long it took and the bytes each way. Never stdin's content:
/// that is where secrets travel.
fn log_run(
    host: &str,
    argv: &[String],
    stdin_len: usize,
    took: Duration,
    result: &Result<RunOutput, RemoteError>,
) {
    let ms = took.as_millis() as u64;
    let argv =
        shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| format!("{argv:?}"));
    match result {
        Ok(out) => {
            let exit = out
                .code
                .map_or_else(|| "killed by a signal".to_string(), |c| c.to_string());
            if out.success() {
                tracing::info!(target: "slurmdash::remote", host, argv = ?argv, exit = %exit, ms, stdin_bytes = stdin_len, stdout_bytes = out.stdout.len(), stderr_bytes = out.stderr.len(), "ran");
            } else {
                let stderr: String = out.stderr_lossy().chars().take(500).collect();
                tracing::warn!(target: "slurmdash::remote", host, argv = ?argv, exit = %exit, ms, stdin_bytes = stdin_len, stdout_bytes = out.stdout.len(), stderr_bytes = out.stderr.len(), stderr = ?stderr, "exited non-zero");
            }
        }
        Err(e) => {
            tracing::error!(target: "slurmdash::remote", host, argv = ?argv, ms, stdin_bytes = stdin_len, error = %e, "failed")
        }
    }
}

/// `64 MiB`, `512 KiB`, `100 bytes`.
pub(crate) fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// `argv` as a shell would show it, shortened for error messages.
pub fn display_argv(argv: &[String]) -> String {
    let joined = shlex::try_join(argv.iter().map(String::as_str))
        .unwrap_or_else(|_| argv.join(" ").replace('\0', "\\0"));
    const MAX: usize = 160;
    if joined.chars().count() > MAX {
        let cut: String = joined.chars().take(MAX).collect();
        format!("{cut}…")
    } else {
        joined
    }
}

/// Maps a failed read to the right error, or builds the chunk.
pub(crate) fn chunk_from_outcome(
    outcome: ReadOutcome,
    path: &str,
    host: &str,
    command: &str,
) -> Result<FileChunk, RemoteError> {
    let (path, host) = (path.to_string(), host.to_string());
    match outcome {
        ReadOutcome::Chunk(c) => Ok(c),
        ReadOutcome::NotFound => Err(RemoteError::NotFound { path, host }),
        ReadOutcome::Denied => Err(RemoteError::PermissionDenied { path, host }),
        ReadOutcome::NotRegular => Err(RemoteError::NotRegularFile { path, host }),
        ReadOutcome::Garbage(reason) => Err(RemoteError::Other {
            command: command.to_string(),
            host,
            reason,
        }),
    }
}

/// Runs the read script through `remote.run` and interprets what it printed.
pub(crate) async fn read_via_run<R: Remote + ?Sized>(
    remote: &R,
    host: &str,
    path: &str,
    pos: ReadPos,
    max_bytes: u64,
    timeout: Duration,
) -> Result<FileChunk, RemoteError> {
    let argv = read_file_argv(path, pos, max_bytes);
    let out = remote.run(&argv, None, timeout).await?;
    let command = format!("read {path}");
    let outcome = parse_read_output(&out.stdout, max_bytes);
    if let ReadOutcome::Garbage(reason) = &outcome {
        let reason = format!(
            "{reason}; exit code {:?}; stderr: {}",
            out.code,
            out.stderr_lossy().trim()
        );
        return Err(RemoteError::Other {
            command,
            host: host.to_string(),
            reason,
        });
    }
    chunk_from_outcome(outcome, path, host, &command)
}

/// The first port from `want` on (within 100) that nothing on this machine listens on at
/// 127.0.0.1, for a forward's local end.
pub fn free_local_port(want: u16) -> Option<u16> {
    (want..=want.saturating_add(100))
        .find(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_argv_quotes_and_shortens() {
        let argv = vec!["echo".to_string(), "a b".to_string()];
        assert_eq!(display_argv(&argv), "echo 'a b'");
        let long = vec!["x".repeat(500)];
        assert!(display_argv(&long).ends_with('…'));
    }

    #[test]
    fn errors_name_host_and_next_step() {
        let e = RemoteError::Connect {
            host: "login1".into(),
            reason: "Connection refused".into(),
        };
        let s = e.to_string();
        assert!(s.contains("login1") && s.contains("slurmdash login"), "{s}");
        let t = RemoteError::Timeout {
            command: "squeue -u me".into(),
            host: "login2".into(),
            secs: 5.0,
        };
        assert!(t.to_string().contains("`squeue -u me` on login2"));
        assert!(t.is_transient());
    }

    #[test]
    fn chunk_helpers() {
        let c = FileChunk {
            offset: 10,
            data: b"abc".to_vec(),
            size: 13,
        };
        assert_eq!(c.next_offset(), 13);
        assert!(!c.truncated());
        let t = FileChunk {
            offset: 100,
            data: vec![],
            size: 5,
        };
        assert!(t.truncated());
    }
}
