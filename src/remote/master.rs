//! The system `ssh` processes around an SSH connection (its options: `options.rs`):
//! starting a ControlMaster (in BatchMode for slurmdash, in the terminal for [`interactive_login`]),
//! finding, checking and stopping one by its socket.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::hold::{hold_blocking, Hold};
use super::options::{tail_of_log, HostKeyCheck, SharedMasters, SshOptions, NO_PROMPT};
use super::sockets::{socket_path, Identity};
use super::{lasthost, RemoteError};

/// The ssh arguments and sockets these options make.
impl SshOptions {
    /// The socket of `host`'s master: the configured `control_path`, else the stable one in
    /// the shared directory. `None` when masters are private (a new socket per master).
    pub fn socket_for(&self, host: &str) -> Option<PathBuf> {
        if let Some(p) = &self.control_path {
            return Some(p.clone());
        }
        let s = self.shared.as_ref()?;
        socket_path(
            &s.dir,
            &Identity {
                cluster: &s.cluster,
                user: self.user.as_deref(),
                host,
                port: self.port,
                ssh_config: self.ssh_config.as_deref(),
                key_path: self.key_path.as_deref(),
            },
        )
    }

    /// The hosts to try: the one that last worked first, then the others in their order.
    pub fn hosts_in_order(&self) -> Vec<String> {
        let last = match &self.shared {
            Some(SharedMasters {
                cluster,
                state_dir: Some(dir),
                ..
            }) if self.hosts.len() > 1 => lasthost::last_host(dir, cluster),
            _ => None,
        };
        lasthost::ordered(&self.hosts, last.as_deref())
    }

    /// Remembers `host` as the one that worked (only where there is a choice to make).
    pub(crate) fn remember_host(&self, host: &str) {
        if let Some(SharedMasters {
            cluster,
            state_dir: Some(dir),
            ..
        }) = &self.shared
        {
            if self.hosts.len() > 1 {
                if let Err(e) = lasthost::remember(dir, cluster, host) {
                    tracing::warn!(target: "slurmdash::remote", dir = %dir.display(), error = %e, "cannot record the last host that worked");
                }
            }
        }
    }

    /// Arguments of `ssh` that start a ControlMaster for `host` at `ctl`. `log` is given for
    /// background masters (BatchMode, errors to that file); `None` means an interactive login
    /// whose prompts and errors go to the terminal.
    pub fn master_args(&self, host: &str, ctl: &Path, log: Option<&Path>) -> Vec<OsString> {
        self.args(host, ctl, log, true)
    }

    /// [`master_args`](Self::master_args) of a login in the terminal to `host`, reached by
    /// `route`. Through a jump host (or a ProxyCommand) the login node's banner arrives only
    /// once every prompt on the way has been answered, and ssh's `ConnectTimeout` covers that
    /// banner: it would cut the person off while they type the jump host's code. There the
    /// timeout is left to the user's ssh config, as with plain `ssh`; straight to the host,
    /// the banner comes before any prompt, so a silent host is still found out quickly.
    pub fn interactive_master_args(
        &self,
        host: &str,
        ctl: &Path,
        route: &super::route::Route,
    ) -> Vec<OsString> {
        self.args(host, ctl, None, !route.is_proxied())
    }

    fn args(
        &self,
        host: &str,
        ctl: &Path,
        log: Option<&Path>,
        bound_banner: bool,
    ) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut opt = |s: String| {
            a.push("-o".into());
            a.push(s.into());
        };
        // `ControlPersist=0` would mean "for ever" to ssh: a second is the shortest linger.
        opt(format!("ControlPersist={}s", self.persist.as_secs().max(1)));
        if bound_banner {
            let secs = self.connect_timeout.as_secs_f64().ceil().max(1.0) as u64;
            opt(format!("ConnectTimeout={secs}"));
        }
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

fn check_args(ctl: &Path) -> [OsString; 5] {
    [
        "-S".into(),
        ctl.into(),
        "-O".into(),
        "check".into(),
        "none".into(),
    ]
}

/// How long `ssh -O check` may take: a master answers in milliseconds, and a socket whose
/// owner hangs must not hang slurmdash.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// True if a ControlMaster answers on `ctl` (`ssh -O check`) within [`CHECK_TIMEOUT`].
/// Blocking: for the command line before the TUI starts, never on the UI task (use
/// [`master_answers`] there).
pub fn control_master_alive(ctl: &Path) -> bool {
    let Ok(mut child) = std::process::Command::new("ssh")
        .args(check_args(ctl))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let start = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if start.elapsed() < CHECK_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

/// Process id of the ControlMaster on `ctl`, from `ssh -O check` ("Master running (pid=N)").
pub async fn control_master_pid(ctl: &Path) -> Option<u32> {
    let out = tokio::process::Command::new("ssh")
        .args(check_args(ctl))
        .stdin(Stdio::null())
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

/// A master opened by a person ([`interactive_login`]), or found alive, and held open (see
/// [`hold`](super::hold)) until handed to the remote that works through it.
#[derive(Debug)]
pub struct Login {
    /// Its socket: `ssh -S SOCKET HOST` uses it too.
    pub socket: PathBuf,
    pub host: String,
    pub(crate) hold: Hold,
}

/// Each host's socket, hosts in the order to try them.
fn login_sockets(opts: &SshOptions) -> Result<Vec<(String, PathBuf)>, RemoteError> {
    let hosts = opts.hosts_in_order();
    if hosts.is_empty() {
        return Err(no_hosts_error());
    }
    hosts
        .into_iter()
        .map(|h| match opts.socket_for(&h) {
            Some(ctl) => Ok((h, ctl)),
            None => Err(connect_err(
                &h,
                "a login needs a socket to keep: set control_path or share masters",
            )),
        })
        .collect()
}

/// The master of the first host (in [`SshOptions::hosts_in_order`]) that has one answering
/// on its socket, held. Blocking, at most [`CHECK_TIMEOUT`] per socket.
pub fn running_login(opts: &SshOptions) -> Option<Login> {
    let sockets = login_sockets(opts).ok()?;
    sockets.into_iter().find_map(|(host, socket)| {
        let hold = hold_blocking(&socket, CHECK_TIMEOUT).ok()?;
        Some(Login { socket, host, hold })
    })
}

/// Starts a ControlMaster in the user's terminal, before the TUI takes the screen, so that
/// password, OTP and host-key prompts can be answered. A master already answering on a
/// host's socket is reused; otherwise hosts are tried in order (the last that worked first).
pub fn interactive_login(opts: &SshOptions) -> Result<Login, RemoteError> {
    if let Some(login) = running_login(opts) {
        return Ok(login);
    }
    let sockets = login_sockets(opts)?;
    // ssh asks its questions through slurmdash (see `askpass`), which can then say when an
    // answer was refused. Without a private directory for its state, ssh asks by itself.
    let askdir = new_private_dir().ok();
    let askenv = askdir
        .as_ref()
        .and_then(|d| super::askpass::env_for_ssh(&d.join("prompt")))
        .unwrap_or_default();
    let mut errors = Vec::new();
    let mut done = None;
    for (host, ctl) in sockets {
        if let Some(dir) = ctl.parent() {
            if let Err(e) = make_private_dir(dir) {
                errors.push(format!("{host}: cannot create {}: {e}", dir.display()));
                continue;
            }
        }
        // Nothing answered there: what is left is the socket of a master that died.
        let _ = std::fs::remove_file(&ctl);
        let route = super::route::resolve(opts, &host).unwrap_or_else(|e| {
            tracing::warn!(target: "slurmdash::remote", %host, error = %e, "cannot read the route to the host; connecting as if straight");
            super::route::Route::default()
        });
        let status = std::process::Command::new("ssh")
            .args(opts.interactive_master_args(&host, &ctl, &route))
            .envs(askenv.iter().map(|(k, v)| (k, v)))
            .status();
        match status {
            Ok(s) if s.success() => match hold_blocking(&ctl, CHECK_TIMEOUT) {
                Ok(hold) => {
                    opts.remember_host(&host);
                    done = Some(Login {
                        socket: ctl,
                        host,
                        hold,
                    });
                    break;
                }
                Err(e) => errors.push(format!("{host}: logged in, but then {e}")),
            },
            Ok(s) => errors.push(not_completed(&host, &route, s)),
            Err(e) => errors.push(format!("{host}: cannot run ssh: {e}")),
        }
    }
    if let Some(d) = askdir {
        let _ = std::fs::remove_dir_all(d);
    }
    done.ok_or_else(|| RemoteError::Connect {
        host: opts.hosts.join(","),
        reason: errors.join("; "),
    })
}

/// Why an interactive login to `host` failed once ssh gave up: a person's answer was
/// refused or came after the server (or a jump host) stopped waiting, or they closed the
/// prompt. ssh's own words are above it on the terminal.
fn not_completed(
    host: &str,
    route: &super::route::Route,
    status: std::process::ExitStatus,
) -> String {
    format!(
        "{host}{}: the login was not completed: a one-time code or password was refused or typed too late (a server stops waiting after a while, often 2 minutes), or the prompt was closed (ssh {status}); run `slurmdash login` to try again, and type a fresh code when it is asked",
        route.through()
    )
}

pub(crate) fn no_hosts_error() -> RemoteError {
    RemoteError::Connect {
        host: "(none)".into(),
        reason: "no login host configured".into(),
    }
}

pub(crate) fn connect_err(host: &str, e: impl std::fmt::Display) -> RemoteError {
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
pub(crate) fn new_private_dir() -> std::io::Result<PathBuf> {
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

/// stderr of a mux client that never reached the master: nothing ran on the cluster.
pub(crate) fn mux_never_connected(stderr: &[u8]) -> bool {
    let s = String::from_utf8_lossy(stderr);
    s.contains("Control socket connect(") || s.contains("Could not resolve hostname none")
}

/// True if a ControlMaster answers on `ctl` (`ssh -O check`) within [`CHECK_TIMEOUT`].
pub async fn master_answers(ctl: &Path) -> bool {
    let check = tokio::process::Command::new("ssh")
        .args(check_args(ctl))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .status();
    matches!(tokio::time::timeout(CHECK_TIMEOUT, check).await, Ok(Ok(s)) if s.success())
}

/// Runs `ssh -M -N -f` in BatchMode for `host` at `ctl` and waits until it has authenticated
/// and forked into the background. Errors are the last lines of the master's log.
pub(crate) async fn launch_batch_master(
    opts: &SshOptions,
    host: &str,
    ctl: &Path,
    log: &Path,
) -> Result<(), String> {
    let _ = std::fs::remove_file(ctl);
    let mut child = tokio::process::Command::new("ssh")
        .args(opts.master_args(host, ctl, Some(log)))
        // BatchMode reaches no jump host (ssh passes them no -o options): one that asks for a
        // code or a passphrase would ask on the terminal the dashboard is drawing on. An
        // askpass that always fails makes it give up instead, as BatchMode would.
        .envs(NO_PROMPT)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run ssh: {e}"))?;
    // ConnectTimeout bounds TCP and banner; this also bounds a stuck key exchange or auth.
    let limit = opts.connect_timeout * 2 + Duration::from_secs(2);
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(format!("waiting for ssh: {e}")),
        Err(_) => {
            let _ = child.kill().await;
            return Err(format!("no login within {:.0}s", limit.as_secs_f64()));
        }
    };
    if status.success() {
        return Ok(());
    }
    let msg = tail_of_log(&std::fs::read_to_string(log).unwrap_or_default());
    Err(if msg.is_empty() {
        format!("ssh exited with {status}")
    } else {
        msg
    })
}

fn exit_args(ctl: &Path) -> [OsString; 5] {
    [
        "-S".into(),
        ctl.into(),
        "-O".into(),
        "exit".into(),
        "none".into(),
    ]
}

/// Asks the master on `ctl` to exit (at most 2 s).
pub(crate) async fn exit_master(ctl: &Path) {
    let exit = tokio::process::Command::new("ssh")
        .args(exit_args(ctl))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .status();
    let _ = tokio::time::timeout(Duration::from_secs(2), exit).await;
}

/// [`exit_master`] for `Drop`.
pub(crate) fn exit_master_blocking(ctl: &Path) {
    let _ = std::process::Command::new("ssh")
        .args(exit_args(ctl))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::failover;

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
            "-o ControlPersist=1s",
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
        assert!(!s.contains("-E "));
        // A person's login lingers as long as any master of the cluster.
        let o = SshOptions {
            persist: Duration::from_secs(600),
            ..o
        };
        let s = strs(&o.master_args("h", Path::new("/s/c"), None)).join(" ");
        assert!(s.contains("ControlPersist=600s"), "{s}");
    }

    #[test]
    fn only_a_login_through_a_jump_host_leaves_the_banner_unbounded() {
        use crate::remote::route::Route;
        let o = SshOptions::new(vec!["inner".into()]);
        let straight =
            strs(&o.interactive_master_args("inner", Path::new("/s/c"), &Route::default()));
        assert!(
            straight.join(" ").contains("-o ConnectTimeout=10"),
            "{straight:?}"
        );
        let jumped = Route {
            jumps: vec!["bastion".into()],
            proxy_command: None,
        };
        let s = strs(&o.interactive_master_args("inner", Path::new("/s/c"), &jumped)).join(" ");
        assert!(!s.contains("ConnectTimeout"), "{s}");
        assert!(!s.contains("BatchMode"), "{s}");
        // A batch master keeps its short timeout whatever the route.
        let b = strs(&o.master_args("inner", Path::new("/s/c"), Some(Path::new("/s/l")))).join(" ");
        assert!(b.contains("-o ConnectTimeout=10"), "{b}");
    }

    #[test]
    fn each_host_has_its_own_stable_socket_unless_one_is_configured() {
        let mut o = SshOptions::new(vec!["login1".into(), "login2".into()]);
        assert_eq!(
            o.socket_for("login1"),
            None,
            "private masters: no stable socket"
        );
        o.shared = Some(SharedMasters {
            dir: "/run/user/1000/slurmdash".into(),
            cluster: "polar".into(),
            state_dir: None,
        });
        o.user = Some("alice".into());
        let a = o.socket_for("login1").expect("shared socket");
        let name = a.to_string_lossy();
        assert!(
            name.starts_with("/run/user/1000/slurmdash/polar-alice@login1-"),
            "{name}"
        );
        assert_eq!(o.socket_for("login1"), Some(a.clone()));
        assert_ne!(o.socket_for("login2"), Some(a));
        o.control_path = Some("/home/alice/.ssh/cm".into());
        assert_eq!(
            o.socket_for("login2"),
            Some(PathBuf::from("/home/alice/.ssh/cm"))
        );
    }

    #[test]
    fn the_host_that_last_worked_is_tried_first() {
        let t = tempfile::tempdir().expect("tempdir");
        let mut o = SshOptions::new(vec!["a".into(), "b".into(), "c".into()]);
        o.shared = Some(SharedMasters {
            dir: t.path().into(),
            cluster: "polar".into(),
            state_dir: Some(t.path().join("state")),
        });
        assert_eq!(o.hosts_in_order(), ["a", "b", "c"]);
        o.remember_host("c");
        assert_eq!(o.hosts_in_order(), ["c", "a", "b"]);
        // One host: nothing to choose, nothing written.
        let one = SshOptions {
            hosts: vec!["x".into()],
            shared: Some(SharedMasters {
                dir: t.path().into(),
                cluster: "solo".into(),
                state_dir: Some(t.path().join("state1")),
            }),
            ..SshOptions::default()
        };
        one.remember_host("x");
        assert!(!t.path().join("state1").exists());
    }

    #[test]
    fn classifies_errors() {
        assert!(failover::permanent_hint("sduser@h: Permission denied (publickey).").is_some());
        assert!(
            failover::permanent_hint("connect to host h port 22: Connection refused").is_none()
        );
        assert!(mux_never_connected(
            b"Control socket connect(/x): No such file or directory\r\nssh: Could not resolve hostname none"
        ));
        assert!(!mux_never_connected(b"some remote stderr"));
        assert_eq!(
            tail_of_log("Warning: Permanently added x\n\na\nb\nc\nd\n"),
            "b / c / d"
        );
    }
}
