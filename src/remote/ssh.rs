//! [`SshRemote`]: every command goes over one SSH ControlMaster per cluster.
//!
//! The master is a system `ssh -M -N -f` process that slurmdash starts itself (BatchMode, a
//! socket in a private 0700 directory) or one the user started interactively with
//! [`interactive_login`] and that we attach to by its socket path. Commands run through the
//! openssh crate's process mux (`Session::resume` + `command(..).arg(..)`), so each poll is
//! one `ssh -S socket` client on the laptop and one new channel on the existing connection:
//! no TCP connect, no key exchange, no authentication.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use openssh::{Session, Stdio};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::failover::{backoff_delay, summarize, try_in_order};
use super::{
    display_argv, read_via_run, ConnState, FileChunk, ReadPos, Remote, RemoteError, RemoteStats,
    RunOutput,
};

/// How host keys are checked. Checking is never switched off by slurmdash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostKeyCheck {
    /// Whatever the user's ssh config says; in BatchMode an unknown host is refused.
    #[default]
    FromSshConfig,
    /// `StrictHostKeyChecking=yes`: the key must already be in known_hosts.
    Strict,
    /// `StrictHostKeyChecking=accept-new`: learn unknown hosts, refuse changed keys.
    AcceptNew,
}

#[derive(Debug, Clone)]
pub struct SshOptions {
    /// Login hosts or ~/.ssh/config aliases, tried in order.
    pub hosts: Vec<String>,
    pub user: Option<String>,
    pub port: Option<u16>,
    /// Use only this key (`-i KEY -o IdentitiesOnly=yes`); otherwise ssh's own choice, agent included.
    pub key_path: Option<PathBuf>,
    /// An ssh config file used instead of ~/.ssh/config (`ssh -F`).
    pub ssh_config: Option<PathBuf>,
    /// Attach to the ControlMaster at this socket (made by [`interactive_login`] or by hand).
    pub control_path: Option<PathBuf>,
    /// Per host: TCP connect plus SSH banner (`ConnectTimeout`).
    pub connect_timeout: Duration,
    pub host_key_check: HostKeyCheck,
    /// Keepalive of the master; a dead network ends it after three silent intervals.
    pub server_alive_interval: Duration,
    /// How long a master started by slurmdash lingers after its last command (it outlives a crash,
    /// not forever).
    pub control_persist: Duration,
    /// Timeout of the remote command behind `read_file`.
    pub read_timeout: Duration,
}

impl Default for SshOptions {
    fn default() -> Self {
        Self {
            hosts: Vec::new(),
            user: None,
            port: None,
            key_path: None,
            ssh_config: None,
            control_path: None,
            connect_timeout: Duration::from_secs(10),
            host_key_check: HostKeyCheck::default(),
            server_alive_interval: Duration::from_secs(15),
            control_persist: Duration::from_secs(600),
            read_timeout: Duration::from_secs(20),
        }
    }
}

impl SshOptions {
    pub fn new(hosts: Vec<String>) -> Self {
        Self {
            hosts,
            ..Self::default()
        }
    }

    /// Arguments of `ssh` that start a ControlMaster for `host` at `ctl`. `log` is given for
    /// background masters (BatchMode, errors to that file); `None` means an interactive login
    /// whose prompts and errors go to the terminal.
    pub fn master_args(&self, host: &str, ctl: &Path, log: Option<&Path>) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut opt = |s: String| {
            a.push("-o".into());
            a.push(s.into());
        };
        let persist = match log {
            Some(_) => format!("{}s", self.control_persist.as_secs().max(1)),
            None => "yes".to_string(),
        };
        opt(format!("ControlPersist={persist}"));
        let secs = self.connect_timeout.as_secs_f64().ceil().max(1.0) as u64;
        opt(format!("ConnectTimeout={secs}"));
        let alive = self.server_alive_interval.as_secs().max(1);
        opt(format!("ServerAliveInterval={alive}"));
        opt("ServerAliveCountMax=3".into());
        match self.host_key_check {
            HostKeyCheck::FromSshConfig => {}
            HostKeyCheck::Strict => opt("StrictHostKeyChecking=yes".into()),
            HostKeyCheck::AcceptNew => opt("StrictHostKeyChecking=accept-new".into()),
        }
        if log.is_some() {
            opt("BatchMode=yes".into());
        }
        if self.key_path.is_some() {
            opt("IdentitiesOnly=yes".into());
        }
        let mut out: Vec<OsString> = ["-M", "-N", "-f", "-S"].map(OsString::from).into();
        out.push(ctl.into());
        if let Some(log) = log {
            out.push("-E".into());
            out.push(log.into());
        }
        out.extend(a);
        if let Some(f) = &self.ssh_config {
            out.extend(["-F".into(), f.into()]);
        }
        if let Some(p) = self.port {
            out.extend(["-p".into(), p.to_string().into()]);
        }
        if let Some(u) = &self.user {
            out.extend(["-l".into(), u.into()]);
        }
        if let Some(k) = &self.key_path {
            out.extend(["-i".into(), k.into()]);
        }
        out.push("--".into());
        out.push(host.into());
        out
    }
}

/// Where [`interactive_login`] puts the socket for `host` unless told otherwise:
/// `~/.ssh/slurmdash-<host>.sock`.
pub fn default_control_path(host: &str) -> PathBuf {
    let safe: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-@".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".ssh"))
        .unwrap_or_else(std::env::temp_dir);
    base.join(format!("slurmdash-{safe}.sock"))
}

fn check_args(ctl: &Path) -> [OsString; 5] {
    [
        "-S".into(),
        ctl.into(),
        "-O".into(),
        "check".into(),
        "none".into(),
    ]
}

/// True if a ControlMaster answers on `ctl` (`ssh -O check`). Blocking; for use before the TUI.
pub fn control_master_alive(ctl: &Path) -> bool {
    std::process::Command::new("ssh")
        .args(check_args(ctl))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Process id of the ControlMaster on `ctl`, from `ssh -O check` ("Master running (pid=N)").
pub async fn control_master_pid(ctl: &Path) -> Option<u32> {
    let out = tokio::process::Command::new("ssh")
        .args(check_args(ctl))
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let rest = &text[text.find("pid=")? + 4..];
    rest[..rest.find(')')?].trim().parse().ok()
}

/// Starts a ControlMaster in the user's terminal, before the TUI takes the screen, so that
/// password, OTP and host-key prompts can be answered. Hosts are tried in order. Returns the
/// socket to put in `SshOptions::control_path`. A master already alive there is reused.
pub fn interactive_login(opts: &SshOptions) -> Result<PathBuf, RemoteError> {
    let first = opts.hosts.first().ok_or_else(no_hosts_error)?;
    let ctl = opts
        .control_path
        .clone()
        .unwrap_or_else(|| default_control_path(first));
    if control_master_alive(&ctl) {
        return Ok(ctl);
    }
    if let Some(dir) = ctl.parent() {
        make_private_dir(dir).map_err(|e| connect_err(first, e))?;
    }
    let _ = std::fs::remove_file(&ctl);
    let mut errors = Vec::new();
    for host in &opts.hosts {
        let status = std::process::Command::new("ssh")
            .args(opts.master_args(host, &ctl, None))
            .status();
        match status {
            Ok(s) if s.success() && control_master_alive(&ctl) => return Ok(ctl),
            Ok(s) => errors.push(format!("{host}: ssh exited with {s}")),
            Err(e) => errors.push(format!("{host}: cannot run ssh: {e}")),
        }
    }
    Err(RemoteError::Connect {
        host: opts.hosts.join(","),
        reason: errors.join("; "),
    })
}

fn no_hosts_error() -> RemoteError {
    RemoteError::Connect {
        host: "(none)".into(),
        reason: "no login host configured".into(),
    }
}

fn connect_err(host: &str, e: impl std::fmt::Display) -> RemoteError {
    RemoteError::Connect {
        host: host.into(),
        reason: e.to_string(),
    }
}

fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// A fresh 0700 directory for our sockets and master logs (short path: sockets are
/// limited to ~100 bytes).
fn new_private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir();
    loop {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("sd-{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The last few meaningful lines of an ssh error log.
fn tail_of_log(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Warning: Permanently added"))
        .collect();
    let start = lines.len().saturating_sub(3);
    lines[start..].join(" / ")
}

/// Errors that waiting will not fix (the state shows Failed instead of Reconnecting).
fn looks_permanent(reason: &str) -> bool {
    [
        "Permission denied",
        "Host key verification failed",
        "IDENTIFICATION HAS CHANGED",
    ]
    .iter()
    .any(|s| reason.contains(s))
}

/// stderr of a mux client that never reached the master: nothing ran on the cluster.
fn mux_never_connected(stderr: &[u8]) -> bool {
    let s = String::from_utf8_lossy(stderr);
    s.contains("Control socket connect(") || s.contains("Could not resolve hostname none")
}

struct Live {
    session: Session,
    host: String,
    ctl: PathBuf,
    /// Started by us: closed when the SshRemote is dropped.
    owned: bool,
}

#[derive(Default)]
struct Slot {
    live: Option<Arc<Live>>,
    failures: u32,
    next_try: Option<Instant>,
    last_error: String,
}

#[derive(Default)]
struct Shared {
    state: ConnState,
    stats: RemoteStats,
    host: Option<String>,
    ctl: Option<PathBuf>,
}

enum Exec {
    Done(RunOutput),
    Timeout,
    MasterGone { ran: bool, reason: String },
    Failed(String),
}

pub struct SshRemote {
    opts: SshOptions,
    dir: PathBuf,
    seq: AtomicU64,
    slot: tokio::sync::Mutex<Slot>,
    shared: Mutex<Shared>,
}

impl SshRemote {
    /// Prepares the remote; nothing connects until the first command or [`SshRemote::connect`].
    pub fn new(opts: SshOptions) -> Result<Self, RemoteError> {
        if opts.hosts.is_empty() {
            return Err(no_hosts_error());
        }
        let dir = new_private_dir().map_err(|e| {
            connect_err(
                &opts.hosts[0],
                format!("cannot create a socket directory: {e}"),
            )
        })?;
        Ok(Self {
            opts,
            dir,
            seq: AtomicU64::new(0),
            slot: tokio::sync::Mutex::new(Slot::default()),
            shared: Mutex::new(Shared::default()),
        })
    }

    /// Connects now (instead of on the first command).
    pub async fn connect(&self) -> Result<(), RemoteError> {
        self.ensure(Duration::MAX).await.map(|_| ())
    }

    /// Socket of the master in use, if connected.
    pub fn control_path(&self) -> Option<PathBuf> {
        self.shared().ctl.clone()
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_state(&self, state: ConnState) {
        self.shared().state = state;
    }

    async fn ensure(&self, max_wait: Duration) -> Result<Arc<Live>, RemoteError> {
        let mut slot = self.slot.lock().await;
        if let Some(live) = &slot.live {
            return Ok(live.clone());
        }
        if let Some(at) = slot.next_try {
            let wait = at.saturating_duration_since(Instant::now());
            if wait > max_wait {
                return Err(RemoteError::Connect {
                    host: self.opts.hosts.join(","),
                    reason: format!(
                        "{}; next attempt in {:.1}s",
                        slot.last_error,
                        wait.as_secs_f64()
                    ),
                });
            }
            tokio::time::sleep(wait).await;
        }
        let attempt = slot.failures + 1;
        let was_connected = self.shared().stats.connects > 0;
        if was_connected || slot.failures > 0 {
            self.set_state(ConnState::Reconnecting {
                attempt,
                last_error: slot.last_error.clone(),
            });
        }
        match self
            .open(attempt, !was_connected && slot.failures == 0)
            .await
        {
            Ok(live) => {
                let live = Arc::new(live);
                slot.live = Some(live.clone());
                slot.failures = 0;
                slot.next_try = None;
                let mut sh = self.shared();
                sh.stats.connects += 1;
                sh.host = Some(live.host.clone());
                sh.ctl = Some(live.ctl.clone());
                sh.state = ConnState::Connected {
                    host: live.host.clone(),
                };
                Ok(live)
            }
            Err(reason) => {
                slot.failures = attempt;
                slot.next_try = Some(Instant::now() + backoff_delay(attempt));
                slot.last_error = reason.clone();
                self.set_state(if looks_permanent(&reason) {
                    ConnState::Failed {
                        reason: reason.clone(),
                    }
                } else {
                    ConnState::Reconnecting {
                        attempt,
                        last_error: reason.clone(),
                    }
                });
                Err(RemoteError::Connect {
                    host: self.opts.hosts.join(","),
                    reason,
                })
            }
        }
    }

    /// Attaches to the configured socket if a master answers there; otherwise starts a
    /// BatchMode master, trying each host in order.
    async fn open(&self, attempt: u32, first: bool) -> Result<Live, String> {
        if let Some(ctl) = &self.opts.control_path {
            if master_alive(ctl).await {
                return Ok(Live {
                    session: Session::resume(ctl.clone().into_boxed_path(), None),
                    host: self.opts.hosts[0].clone(),
                    ctl: ctl.clone(),
                    owned: false,
                });
            }
        }
        let r = try_in_order(&self.opts.hosts, |_, host| async move {
            if first {
                self.set_state(ConnState::Connecting {
                    host: host.clone(),
                    attempt,
                });
            }
            self.launch(&host).await.map(|(ctl, log, owned)| Live {
                session: Session::resume(ctl.clone().into_boxed_path(), Some(log.into())),
                host,
                ctl,
                owned,
            })
        })
        .await;
        match r {
            Ok((_, live, _)) => Ok(live),
            Err(failed) => {
                let mut reason = summarize(&failed);
                if self.opts.control_path.is_some() {
                    reason.push_str("; the login master is gone and a non-interactive login failed: run `slurmdash login` again");
                }
                Err(reason)
            }
        }
    }

    /// Runs `ssh -M -N -f` in BatchMode and waits until it has authenticated and forked.
    async fn launch(&self, host: &str) -> Result<(PathBuf, PathBuf, bool), String> {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let (ctl, owned) = match &self.opts.control_path {
            Some(p) => (p.clone(), false),
            None => (self.dir.join(format!("m{n}")), true),
        };
        let log = self.dir.join(format!("m{n}.log"));
        let _ = std::fs::remove_file(&ctl);
        let mut child = tokio::process::Command::new("ssh")
            .args(self.opts.master_args(host, &ctl, Some(&log)))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        // ConnectTimeout bounds TCP and banner; this also bounds a stuck key exchange or auth.
        let limit = self.opts.connect_timeout * 2 + Duration::from_secs(2);
        let status = match tokio::time::timeout(limit, child.wait()).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(format!("waiting for ssh: {e}")),
            Err(_) => {
                let _ = child.kill().await;
                return Err(format!("no login within {:.0}s", limit.as_secs_f64()));
            }
        };
        if status.success() {
            return Ok((ctl, log, owned));
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let msg = tail_of_log(&text);
        Err(if msg.is_empty() {
            format!("ssh exited with {status}")
        } else {
            msg
        })
    }

    /// Forgets a dead master so the next command reconnects.
    async fn invalidate(&self, live: &Arc<Live>, reason: &str) {
        let mut slot = self.slot.lock().await;
        if slot.live.as_ref().is_some_and(|l| Arc::ptr_eq(l, live)) {
            slot.live = None;
            slot.last_error = reason.to_string();
            self.set_state(ConnState::Reconnecting {
                attempt: 1,
                last_error: reason.to_string(),
            });
            if live.owned {
                let exit = tokio::process::Command::new("ssh")
                    .args(["-S".as_ref(), live.ctl.as_os_str(), "-O".as_ref()])
                    .args(["exit", "none"])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .kill_on_drop(true)
                    .status();
                let _ = tokio::time::timeout(Duration::from_secs(2), exit).await;
                let _ = std::fs::remove_file(&live.ctl);
            }
        }
    }

    async fn exec(
        &self,
        live: &Live,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Exec {
        let mut cmd = live.session.command(argv[0].as_str());
        cmd.args(&argv[1..])
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let work = async {
            let mut child = cmd.spawn().await.map_err(|e| e.to_string())?;
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
            let read_out = async move {
                let mut v = Vec::new();
                if let Some(mut r) = sout {
                    r.read_to_end(&mut v).await.map(|_| v)
                } else {
                    Ok(v)
                }
            };
            let read_err = async move {
                let mut v = Vec::new();
                if let Some(mut r) = serr {
                    r.read_to_end(&mut v).await.map(|_| v)
                } else {
                    Ok(v)
                }
            };
            let ((), out, err) = tokio::join!(write, read_out, read_err);
            let status = child.wait().await;
            Ok::<_, String>((
                out.map_err(|e| e.to_string())?,
                err.map_err(|e| e.to_string())?,
                status,
            ))
        };
        let (stdout, stderr, status) = match tokio::time::timeout(timeout, work).await {
            Err(_) => return Exec::Timeout,
            Ok(Err(e)) => return Exec::Failed(e),
            Ok(Ok(v)) => v,
        };
        let code = match status {
            Ok(s) => s.code(),
            Err(openssh::Error::Remote(e)) if e.kind() == std::io::ErrorKind::NotFound => Some(127),
            Err(openssh::Error::RemoteProcessTerminated) => {
                // 255 is both "ssh failed" and a real exit code: ask the master.
                if let Err(e) = live.session.check().await {
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
        Exec::Done(RunOutput {
            stdout,
            stderr,
            code,
        })
    }
}

async fn master_alive(ctl: &Path) -> bool {
    tokio::process::Command::new("ssh")
        .args(check_args(ctl))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .status()
        .await
        .is_ok_and(|s| s.success())
}

#[async_trait::async_trait]
impl Remote for SshRemote {
    async fn run(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
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
        // One transparent retry, only when the command provably never reached the cluster.
        for round in 0..2 {
            let live = self.ensure(timeout).await?;
            let t0 = Instant::now();
            let result = self.exec(&live, argv, stdin, timeout).await;
            {
                let mut sh = self.shared();
                sh.stats.execs += 1;
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

    async fn read_file(
        &self,
        path: &str,
        pos: ReadPos,
        max_bytes: u64,
    ) -> Result<FileChunk, RemoteError> {
        let host = self.host().unwrap_or_else(|| self.opts.hosts.join(","));
        read_via_run(self, &host, path, pos, max_bytes, self.opts.read_timeout).await
    }

    fn host(&self) -> Option<String> {
        self.shared().host.clone()
    }

    fn state(&self) -> ConnState {
        self.shared().state.clone()
    }

    fn stats(&self) -> RemoteStats {
        self.shared().stats.clone()
    }
}

impl Drop for SshRemote {
    fn drop(&mut self) {
        if let Some(live) = self.slot.get_mut().live.take() {
            if live.owned {
                let _ = std::process::Command::new("ssh")
                    .args(["-S".as_ref(), live.ctl.as_os_str(), "-O".as_ref()])
                    .args(["exit", "none"])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[OsString]) -> Vec<String> {
        v.iter().map(|s| s.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn batch_master_args() {
        let mut o = SshOptions::new(vec!["login1".into()]);
        o.user = Some("me".into());
        o.port = Some(2222);
        o.key_path = Some("/k/id".into());
        o.ssh_config = Some("/c/config".into());
        o.host_key_check = HostKeyCheck::Strict;
        o.connect_timeout = Duration::from_millis(1500);
        let a = strs(&o.master_args("login1", Path::new("/s/m0"), Some(Path::new("/s/l"))));
        let s = a.join(" ");
        assert!(s.starts_with("-M -N -f -S /s/m0 -E /s/l "), "{s}");
        for want in [
            "-o BatchMode=yes",
            "-o ConnectTimeout=2",
            "-o StrictHostKeyChecking=yes",
            "-o IdentitiesOnly=yes",
            "-F /c/config",
            "-p 2222",
            "-l me",
            "-i /k/id",
            "-o ControlPersist=600s",
        ] {
            assert!(s.contains(want), "missing {want} in {s}");
        }
        assert_eq!(&a[a.len() - 2..], ["--", "login1"]);
    }

    #[test]
    fn interactive_master_args_allow_prompts() {
        let o = SshOptions::new(vec!["h".into()]);
        let s = strs(&o.master_args("h", Path::new("/s/c"), None)).join(" ");
        assert!(!s.contains("BatchMode"), "{s}");
        assert!(!s.contains("StrictHostKeyChecking"), "{s}");
        assert!(s.contains("ControlPersist=yes"));
        assert!(!s.contains("-E "));
    }

    #[test]
    fn control_path_is_sanitized() {
        let p = default_control_path("me@login/1 x");
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        assert_eq!(name, "slurmdash-me@login_1_x.sock");
    }

    #[test]
    fn classifies_errors() {
        assert!(looks_permanent("sduser@h: Permission denied (publickey)."));
        assert!(!looks_permanent(
            "connect to host h port 22: Connection refused"
        ));
        assert!(mux_never_connected(
            b"Control socket connect(/x): No such file or directory\r\nssh: Could not resolve hostname none"
        ));
        assert!(!mux_never_connected(b"some remote stderr"));
        assert_eq!(
            tail_of_log("Warning: Permanently added x\n\na\nb\nc\nd\n"),
            "b / c / d"
        );
    }

    #[test]
    fn new_needs_a_host() {
        assert!(SshRemote::new(SshOptions::default()).is_err());
    }
}
