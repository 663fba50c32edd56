//! [`SshRemote`]: every command goes over one SSH ControlMaster per cluster.
//!
//! The master is a system `ssh -M -N -f` process. With [`SharedMasters`] (what the dashboard
//! and every command use) it sits at a stable socket per host in the user's private runtime
//! directory: a master already answering there (started by another slurmdash, by `slurmdash
//! login` or by hand) is attached to, and one is started (BatchMode, under a lock beside the
//! socket, so that two processes starting at once make one) only when none answers. Each
//! process holds the master it uses (see [`hold`](super::hold)), so it lives while any
//! slurmdash runs and `persist` after the last. Without, the masters are this remote's own, in
//! a private temporary directory, and end with it.
//!
//! Commands run through the openssh crate's native mux (`Session::resume_mux` +
//! `command(..).arg(..)`): each poll is one new channel opened by talking to the master's
//! socket directly (no `ssh -S` client process per command, so nothing to fork and no extra
//! memory), with no TCP connect, no key exchange and no authentication.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use openssh::{Session, Stdio};

use super::channel::Channel;
use super::failover::{
    backoff_delay, jitter_unit, permanent_hint, summarize, try_in_order, try_staggered, with_jitter,
};
use super::frame;
use super::hold::{hold, Hold, HoldError};
use super::master::{
    connect_err, exit_master, exit_master_blocking, launch_batch_master, new_private_dir,
    no_hosts_error, Login, CHECK_TIMEOUT,
};
use super::options::{SharedMasters, SshOptions};
use super::session::Live;
use super::sockets::{beside, lock};
use super::stream::FileStream;
#[path = "ssh_run.rs"]
mod run;

use super::{
    read_via_run, ConnState, FileChunk, ReadPos, Remote, RemoteError, RemoteStats, RunOutput,
};

#[derive(Default)]
struct Slot {
    live: Option<Arc<Live>>,
    failures: u32,
    next_try: Option<Instant>,
    last_error: String,
    /// The last attempt failed in a way waiting will not fix (a changed host key, a refused
    /// key): nothing is tried again until [`Remote::retry_now`].
    blocked: bool,
}

/// Why no connection was made.
struct OpenFailure {
    reason: String,
    /// For the status bar: the first host and the last line ssh printed for it.
    short: String,
    /// Every host failed in a way waiting will not fix: what the user must do.
    permanent: Option<&'static str>,
}

#[derive(Default)]
struct Shared {
    state: ConnState,
    stats: RemoteStats,
    host: Option<String>,
    ctl: Option<PathBuf>,
    /// The master in use was already running when this remote connected.
    reused: bool,
    /// When the next reconnect attempt is allowed (for the status bar's countdown).
    next_try: Option<Instant>,
}

pub struct SshRemote {
    opts: SshOptions,
    /// Private masters' sockets and logs (`None` when masters are shared).
    dir: Option<PathBuf>,
    /// The hold on a master a person logged in to before this remote was made.
    adopted: Mutex<Option<Hold>>,
    seq: AtomicU64,
    slot: tokio::sync::Mutex<Slot>,
    shared: Mutex<Shared>,
    /// Set by [`Remote::retry_now`]: the next attempt skips its backoff wait.
    skip_wait: AtomicBool,
    /// Set by [`Remote::close`]: no new connection is made.
    closed: AtomicBool,
    /// Wakes a command that waits for its reconnect attempt.
    wake: tokio::sync::Notify,
    /// Sessions (commands, log streams) this process runs at once over its master.
    sessions: Arc<tokio::sync::Semaphore>,
    /// Bytes received by streamed commands and followed files (`:stats`).
    streamed: Arc<AtomicU64>,
    /// Tunnels open through this remote; they end with it.
    tunnels: super::tunnel::Tunnels,
}

/// Sessions one process runs at once over its master. sshd allows `MaxSessions` (10 unless
/// configured) per connection, and a shared master carries every slurmdash's sessions: each
/// process keeps well under it, and a session the login node refuses anyway is tried again.
const SESSIONS_PER_PROCESS: usize = 6;

impl SshRemote {
    /// Prepares the remote; nothing connects until the first command or [`SshRemote::connect`].
    pub fn new(opts: SshOptions) -> Result<Self, RemoteError> {
        if opts.hosts.is_empty() {
            return Err(no_hosts_error());
        }
        let first = &opts.hosts[0];
        let dir = match &opts.shared {
            Some(SharedMasters { dir, .. }) => {
                if opts.socket_for(first).is_none() {
                    return Err(connect_err(
                        first,
                        format!("{} is too long a path for a socket", dir.display()),
                    ));
                }
                None
            }
            None => Some(new_private_dir().map_err(|e| {
                connect_err(first, format!("cannot create a socket directory: {e}"))
            })?),
        };
        Ok(Self {
            opts,
            dir,
            adopted: Mutex::new(None),
            seq: AtomicU64::new(0),
            slot: tokio::sync::Mutex::new(Slot::default()),
            shared: Mutex::new(Shared::default()),
            skip_wait: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            wake: tokio::sync::Notify::new(),
            sessions: Arc::new(tokio::sync::Semaphore::new(SESSIONS_PER_PROCESS)),
            streamed: Arc::new(AtomicU64::new(0)),
            tunnels: super::tunnel::Tunnels::default(),
        })
    }

    /// Connects now (instead of on the first command).
    pub async fn connect(&self) -> Result<(), RemoteError> {
        self.ensure(Duration::MAX).await.map(|_| ())
    }

    /// Keeps the master of a login made before this remote (see
    /// [`interactive_login`](super::interactive_login)) in use for as long as this remote
    /// lives; the first command attaches to it.
    pub fn keep(&self, login: Login) {
        *self.adopted.lock().unwrap_or_else(|p| p.into_inner()) = Some(login.hold);
    }

    /// Socket of the master in use, if connected.
    pub fn control_path(&self) -> Option<PathBuf> {
        self.shared().ctl.clone()
    }

    /// True if the master in use was already running (another slurmdash's, a login's) when
    /// this remote last connected, false if this remote started it.
    pub fn reused(&self) -> bool {
        self.shared().reused
    }

    /// A channel on the existing master (connecting first if there is none) for `argv`,
    /// counted by `count` and by the bytes it sends.
    async fn channel(
        &self,
        argv: &[String],
        count: impl FnOnce(&mut RemoteStats),
    ) -> Result<Channel, RemoteError> {
        let live = self.ensure(self.opts.read_timeout).await?;
        {
            let mut sh = self.shared();
            count(&mut sh.stats);
            sh.stats.bytes_out += argv.iter().map(|a| a.len() as u64 + 1).sum::<u64>();
        }
        Ok(Channel {
            live,
            sessions: self.sessions.clone(),
            wait: self.opts.read_timeout,
            received: self.streamed.clone(),
        })
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
        if self.closed.load(Ordering::Acquire) {
            return Err(self.closed_error());
        }
        if slot.blocked {
            // Only the user (`r`, `retry_now`) lets a refused login be tried again.
            if !self.skip_wait.swap(false, Ordering::AcqRel) {
                return Err(RemoteError::Connect {
                    host: self.opts.hosts.join(","),
                    reason: slot.last_error.clone(),
                });
            }
        } else if let Some(at) = slot.next_try {
            // Registered before the flag is read, so a `retry_now` in between is not lost.
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let wait = at.saturating_duration_since(Instant::now());
            if !self.skip_wait.swap(false, Ordering::AcqRel) {
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
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = woken => {}
                }
            }
        }
        self.skip_wait.store(false, Ordering::Release);
        let attempt = slot.failures + 1;
        let was_connected = self.shared().stats.connects > 0;
        {
            let mut sh = self.shared();
            sh.next_try = None;
            if was_connected || slot.failures > 0 {
                sh.state = ConnState::Reconnecting {
                    attempt,
                    last_error: slot.last_error.clone(),
                    retry_in: None,
                };
            }
        }
        match self
            .open(attempt, !was_connected && slot.failures == 0)
            .await
        {
            Ok(live) if self.closed.load(Ordering::Acquire) => {
                // Closed while this master was being opened: it must not outlive us.
                if live.owned {
                    exit_master(&live.ctl).await;
                }
                Err(self.closed_error())
            }
            Ok(live) => {
                let live = Arc::new(live);
                slot.live = Some(live.clone());
                slot.failures = 0;
                slot.next_try = None;
                slot.blocked = false;
                let mut sh = self.shared();
                sh.stats.connects += 1;
                sh.host = Some(live.host.clone());
                sh.ctl = Some(live.ctl.clone());
                sh.reused = !live.started;
                sh.state = ConnState::Connected {
                    host: live.host.clone(),
                };
                Ok(live)
            }
            Err(OpenFailure { reason, .. }) if reason == LOGIN_NEEDED => {
                // No backoff: the next command checks the socket again (a local call).
                slot.failures = 0;
                slot.next_try = None;
                slot.blocked = false;
                slot.last_error = reason.clone();
                let mut sh = self.shared();
                sh.next_try = None;
                sh.state = ConnState::LoginNeeded {
                    host: self.opts.hosts.join(","),
                };
                Err(RemoteError::Connect {
                    host: self.opts.hosts.join(","),
                    reason,
                })
            }
            Err(OpenFailure {
                reason,
                short,
                permanent: Some(what_to_do),
            }) => {
                let reason = format!("{reason}; not retried: {what_to_do}");
                let shown = format!("{short} · {what_to_do}");
                tracing::warn!(target: "slurmdash::remote", hosts = %self.opts.hosts.join(","), %reason, "a login that waiting will not fix: no retry until asked");
                slot.failures = attempt;
                slot.next_try = None;
                slot.blocked = true;
                slot.last_error = reason.clone();
                let mut sh = self.shared();
                sh.next_try = None;
                sh.state = ConnState::Failed { reason: shown };
                Err(RemoteError::Connect {
                    host: self.opts.hosts.join(","),
                    reason,
                })
            }
            Err(OpenFailure { reason, .. }) => {
                let next = Instant::now() + with_jitter(backoff_delay(attempt), jitter_unit());
                slot.failures = attempt;
                slot.next_try = Some(next);
                slot.blocked = false;
                slot.last_error = reason.clone();
                let mut sh = self.shared();
                sh.next_try = Some(next);
                sh.state = ConnState::Reconnecting {
                    attempt,
                    last_error: reason.clone(),
                    retry_in: None,
                };
                Err(RemoteError::Connect {
                    host: self.opts.hosts.join(","),
                    reason,
                })
            }
        }
    }

    fn closed_error(&self) -> RemoteError {
        RemoteError::Connect {
            host: self.opts.hosts.join(","),
            reason: "slurmdash is shutting down".into(),
        }
    }

    /// Sockets of the masters this remote started in its private directory.
    fn own_sockets(&self) -> Vec<PathBuf> {
        let Some(Ok(dir)) = self.dir.as_ref().map(std::fs::read_dir) else {
            return Vec::new();
        };
        dir.flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix('m'))
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .collect()
    }

    /// Attaches to a master already answering on a host's socket; otherwise starts a BatchMode
    /// master. Hosts go in [`SshOptions::hosts_in_order`]; each gets a head start before the
    /// next starts beside it, and the first to connect wins (one after the other instead when
    /// every host shares one configured socket).
    async fn open(&self, attempt: u32, first: bool) -> Result<Live, OpenFailure> {
        let hosts = self.opts.hosts_in_order();
        let looked = match self.running_master(&hosts).await {
            Ok((host, ctl, held)) => {
                let live = self.live(host, ctl, held, false, None).await;
                self.opts.remember_host(&live.host);
                return Ok(live);
            }
            Err(looked) => looked,
        };
        if self.opts.interactive_login {
            // A BatchMode login cannot answer a prompt; trying would only fail (and could
            // count against the account). Wait for `slurmdash login` to open a new master.
            return Err(OpenFailure {
                reason: LOGIN_NEEDED.to_string(),
                short: String::new(),
                permanent: None,
            });
        }
        // Sockets of the masters started below: those of hosts that lost the race are closed.
        let started = Mutex::new(Vec::new());
        let connect = |_, host: String| {
            let (started, looked) = (&started, &looked);
            async move {
                tracing::info!(target: "slurmdash::remote", %host, "connecting: starting a login");
                if first {
                    self.set_state(ConnState::Connecting {
                        host: host.clone(),
                        attempt,
                    });
                }
                self.start_master(host, looked, started).await
            }
        };
        let r = if self.opts.control_path.is_some() {
            try_in_order(&hosts, connect).await
        } else {
            try_staggered(&hosts, self.opts.head_start, connect).await
        };
        let winner = r.as_ref().ok().map(|(_, live, _)| live.ctl.clone());
        let started = std::mem::take(&mut *started.lock().unwrap_or_else(|p| p.into_inner()));
        for ctl in started {
            if Some(&ctl) != winner.as_ref() {
                exit_master(&ctl).await;
            }
        }
        match r {
            Ok((_, live, _)) => {
                self.opts.remember_host(&live.host);
                Ok(live)
            }
            Err(failed) => {
                let mut reason = summarize(&failed);
                // Only when no host may come back by itself.
                let permanent = failed
                    .iter()
                    .map(|a| permanent_hint(&a.error))
                    .collect::<Option<Vec<_>>>()
                    .and_then(|hints| hints.first().copied());
                if self.opts.control_path.is_some() {
                    reason.push_str("; the login master is gone and a non-interactive login failed: run `slurmdash login` again");
                }
                let short = failed
                    .first()
                    .map(|a| {
                        let last = a.error.rsplit(" / ").next().unwrap_or_default();
                        format!("{}: {last}", a.host)
                    })
                    .unwrap_or_default();
                Err(OpenFailure {
                    reason,
                    short,
                    permanent,
                })
            }
        }
    }

    /// The first host (in order) whose socket has a master answering, held; else the sockets
    /// looked at, each with the file found there then (see [`socket_file`]).
    async fn running_master(
        &self,
        hosts: &[String],
    ) -> Result<(String, PathBuf, Hold), Vec<(PathBuf, Option<(u64, u64)>)>> {
        let mut looked: Vec<(PathBuf, Option<(u64, u64)>)> = Vec::new();
        for host in hosts {
            let Some(ctl) = self.opts.socket_for(host) else {
                continue;
            };
            if looked.iter().any(|(c, _)| *c == ctl) {
                continue;
            }
            let file = socket_file(&ctl);
            match hold(&ctl, CHECK_TIMEOUT).await {
                Ok(held) => return Ok((host.clone(), ctl, held)),
                Err(HoldError::Silent) => {
                    tracing::warn!(target: "slurmdash::remote", socket = %ctl.display(), "a socket whose master does not answer: a new master takes its place")
                }
                Err(_) => {}
            }
            looked.push((ctl, file));
        }
        Err(looked)
    }

    /// A file of ours about the master on `ctl` (its lock, its log): beside the socket in the
    /// shared directory, in our private one for a socket elsewhere (`control_path`).
    fn aux_file(&self, ctl: &std::path::Path, ext: &str) -> PathBuf {
        let dir = match (&self.opts.shared, &self.dir) {
            (Some(s), _) => s.dir.as_path(),
            (None, Some(d)) => d.as_path(),
            (None, None) => ctl.parent().unwrap_or(std::path::Path::new(".")),
        };
        let name = ctl.file_name().unwrap_or(ctl.as_os_str());
        beside(&dir.join(name), ext)
    }

    /// Starts a BatchMode master for `host` and holds it. At a host's stable socket this
    /// happens under the lock beside it, and a master another process started meanwhile (the
    /// socket is not the one `looked` at) is attached to instead. Sockets of masters started
    /// are added to `started`.
    async fn start_master(
        &self,
        host: String,
        looked: &[(PathBuf, Option<(u64, u64)>)],
        started: &Mutex<Vec<PathBuf>>,
    ) -> Result<Live, String> {
        let (ctl, log, _lock, owned) = match self.opts.socket_for(&host) {
            Some(ctl) => {
                // Long enough for another process's login to finish or time out.
                let limit = self.opts.connect_timeout * 2 + Duration::from_secs(5);
                let taken = lock(&self.aux_file(&ctl, "lock"), limit).await?;
                let seen = looked.iter().find(|(c, _)| *c == ctl).map(|(_, f)| *f);
                if seen != Some(socket_file(&ctl)) {
                    if let Ok(held) = hold(&ctl, CHECK_TIMEOUT).await {
                        return Ok(self.live(host, ctl, held, false, None).await);
                    }
                }
                let log = self.aux_file(&ctl, "log");
                // The previous master's errors are not this one's.
                let _ = std::fs::remove_file(&log);
                (ctl, log, Some(taken), false)
            }
            None => {
                let dir = self.dir.as_ref().ok_or("no socket directory")?;
                let n = self.seq.fetch_add(1, Ordering::Relaxed);
                (
                    dir.join(format!("m{n}")),
                    dir.join(format!("m{n}.log")),
                    None,
                    true,
                )
            }
        };
        // A master with a short ControlPersist (`persist_secs = 0` lingers a second) can end
        // on its own before it is held, when the machine is busy: it is started again.
        //
        // The socket is registered before the login starts: a host that loses the race is
        // dropped wherever it is, and a master whose login finished just then (forked into
        // the background, its `ssh -f` parent not yet reaped) would otherwise never be
        // closed. A login that fails is unregistered, so that a master another process
        // starts there later is not closed by mistake.
        started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(ctl.clone());
        let mut tries = 0;
        let held = loop {
            tries += 1;
            if let Err(e) = launch_batch_master(&self.opts, &host, &ctl, &log).await {
                started
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .retain(|c| *c != ctl);
                return Err(e);
            }
            match hold(&ctl, CHECK_TIMEOUT).await {
                Ok(held) => break held,
                Err(e) if tries < 3 => {
                    tracing::warn!(target: "slurmdash::remote", socket = %ctl.display(), error = %e, "a new master ended before it was held: starting it again");
                }
                Err(e) => return Err(format!("the new master went away at once: {e}")),
            }
        };
        Ok(self.live(host, ctl, held, owned, Some(log)).await)
    }

    /// A connection through the master on `ctl`.
    async fn live(
        &self,
        host: String,
        ctl: PathBuf,
        held: Hold,
        owned: bool,
        log: Option<PathBuf>,
    ) -> Live {
        let started = log.is_some();
        let session = Session::resume_mux(ctl.clone().into_boxed_path(), log.map(Into::into));
        Live {
            started,
            remote_timeout: self.probe_timeout(&session).await,
            session,
            host,
            ctl,
            owned,
            _hold: held,
        }
    }

    /// Whether `timeout` exists on the login node (one exec per connection).
    async fn probe_timeout(&self, session: &Session) -> bool {
        if !self.opts.kill_remote_on_timeout {
            return false;
        }
        let mut cmd = session.command("timeout");
        cmd.arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let probe = tokio::time::timeout(self.opts.connect_timeout, cmd.status()).await;
        self.shared().stats.execs += 1;
        matches!(probe, Ok(Ok(s)) if s.success())
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
                retry_in: None,
            });
            if live.owned {
                exit_master(&live.ctl).await;
                let _ = std::fs::remove_file(&live.ctl);
            }
        }
    }
}

/// Which file is at `path` (device and inode), to tell a socket replaced since from the one
/// looked at before.
fn socket_file(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// The reason given while an interactive login's master is gone.
const LOGIN_NEEDED: &str =
    "login needed: the connection opened with a password or one-time code has ended; run `slurmdash login` (the dashboard resumes by itself)";

/// `d` rounded up to whole seconds, for a countdown that never shows 0 before it is due.
fn whole_secs_up(d: Duration) -> Duration {
    Duration::from_secs(d.as_millis().div_ceil(1000) as u64)
}

#[async_trait::async_trait]
impl Remote for SshRemote {
    /// A tunnel of this process's own (see [`tunnel`](super::tunnel)): 127.0.0.1:`local`
    /// carried over the master in use, ended with `cancel`, when this remote closes or is
    /// dropped, or with the process.
    async fn forward(
        &self,
        local: u16,
        host: &str,
        port: u16,
        cancel: bool,
    ) -> Result<(), RemoteError> {
        if cancel {
            if self.tunnels.close(local) {
                return Ok(());
            }
            return Err(RemoteError::Other {
                command: format!("closing the tunnel on 127.0.0.1:{local}"),
                host: self.host().unwrap_or_default(),
                reason: "no tunnel is open on that port".into(),
            });
        }
        let live = self.ensure(self.opts.connect_timeout).await?;
        self.tunnels
            .open(live.ctl.clone(), local, host, port)
            .await
            .map_err(|e| RemoteError::Other {
                command: format!("listening on 127.0.0.1:{local} for {host}:{port}"),
                host: live.host.clone(),
                reason: e.to_string(),
            })
    }

    /// `ssh -t -S SOCKET ... -- HOST COMMAND` through the master in use (the same user, port and
    /// ssh config, should ssh have to connect by itself).
    fn terminal_argv(&self, argv: &[String]) -> Option<Vec<String>> {
        let ctl = self.control_path()?;
        let host = self.host()?;
        let mut out: Vec<String> = vec!["ssh".into(), "-t".into(), "-S".into()];
        out.push(ctl.display().to_string());
        out.extend(["-o".into(), "ControlMaster=no".into()]);
        if let Some(cfg) = &self.opts.ssh_config {
            out.extend(["-F".into(), cfg.display().to_string()]);
        }
        if let Some(u) = &self.opts.user {
            out.extend(["-l".into(), u.clone()]);
        }
        if let Some(p) = self.opts.port {
            out.extend(["-p".into(), p.to_string()]);
        }
        // `--`: a host is never read as an option, whatever it starts with.
        out.push("--".into());
        out.push(host);
        // ssh hands the login shell one line: the sh program, whatever that shell is.
        out.push(frame::login_line_interactive(argv));
        Some(out)
    }

    async fn run(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<RunOutput, RemoteError> {
        let host = self.host().unwrap_or_else(|| self.opts.hosts.join(","));
        let run = self.run_unlogged(argv, stdin, timeout, None);
        super::run_logged(&host, argv, stdin, run).await
    }

    async fn run_into(
        &self,
        argv: &[String],
        timeout: Duration,
        sink: &mut (dyn for<'b> FnMut(&'b [u8]) + Send),
    ) -> Result<RunOutput, RemoteError> {
        let host = self.host().unwrap_or_else(|| self.opts.hosts.join(","));
        let run = self.run_unlogged(argv, None, timeout, Some(sink));
        super::run_logged(&host, argv, None, run).await
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

    /// One channel on the existing master; its stdout is forwarded as it arrives.
    async fn exec_stream(&self, argv: &[String]) -> Result<super::ExecStream, RemoteError> {
        if argv.is_empty() {
            return Err(RemoteError::Other {
                command: String::new(),
                host: self.host().unwrap_or_default(),
                reason: "empty command".into(),
            });
        }
        let channel = self.channel(argv, |s| s.count(argv)).await?;
        Ok(channel.exec_stream(argv.to_vec()))
    }

    /// One `tail -F` channel on the existing master; it lives as long as the returned stream.
    async fn stream_file(
        &self,
        path: &str,
        offset: u64,
    ) -> Result<Option<FileStream>, RemoteError> {
        let argv = super::stream::stream_argv(path, offset);
        let channel = self.channel(&argv, |s| s.execs += 1).await?;
        Ok(Some(channel.follow(argv)))
    }

    fn host(&self) -> Option<String> {
        self.shared().host.clone()
    }

    fn state(&self) -> ConnState {
        let sh = self.shared();
        match &sh.state {
            ConnState::Reconnecting {
                attempt,
                last_error,
                ..
            } => ConnState::Reconnecting {
                attempt: *attempt,
                last_error: last_error.clone(),
                retry_in: sh
                    .next_try
                    .map(|t| whole_secs_up(t.saturating_duration_since(Instant::now()))),
            },
            other => other.clone(),
        }
    }

    fn retry_now(&self) {
        self.skip_wait.store(true, Ordering::Release);
        self.wake.notify_waiters();
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.tunnels.close_all();
        // A connection attempt in progress finishes first (bounded by its own timeouts)
        // and then sees `closed`; do not wait for it longer than this.
        if let Ok(mut slot) = tokio::time::timeout(Duration::from_secs(3), self.slot.lock()).await {
            slot.live = None;
        }
        // A shared master is only let go of: it ends `persist` after the last process using it.
        self.adopted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        for ctl in self.own_sockets() {
            exit_master(&ctl).await;
        }
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        let mut sh = self.shared();
        sh.state = ConnState::NotConnected;
        sh.ctl = None;
    }

    fn stats(&self) -> RemoteStats {
        let mut s = self.shared().stats.clone();
        s.bytes_in += self.streamed.load(Ordering::Relaxed);
        s
    }
}

impl Drop for SshRemote {
    fn drop(&mut self) {
        self.slot.get_mut().live = None;
        for ctl in self.own_sockets() {
            exit_master_blocking(&ctl);
        }
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_needs_a_host() {
        assert!(SshRemote::new(SshOptions::default()).is_err());
    }

    /// The shell opened from the dashboard (`x`) runs system ssh: a host that starts with
    /// `-` must reach it as the host, after `--`, never as an option.
    #[test]
    fn the_terminals_ssh_reads_the_host_as_a_host() {
        let r = SshRemote::new(SshOptions {
            hosts: vec!["-oProxyCommand=touch /tmp/x".into()],
            ..SshOptions::default()
        })
        .unwrap();
        {
            let mut sh = r.shared();
            sh.host = Some("-oProxyCommand=touch /tmp/x".into());
            sh.ctl = Some(PathBuf::from("/tmp/ctl"));
        }
        let argv = r.terminal_argv(&["true".to_string()]).unwrap();
        let h = argv
            .iter()
            .position(|a| a == "-oProxyCommand=touch /tmp/x")
            .unwrap();
        assert_eq!(argv[h - 1], "--", "{argv:?}");
    }
}
