//! Options of an SSH connection: what a cluster's config sets (the login fields, shared with
//! `config::ClusterConfig`) and what slurmdash adds; and what every `ssh` it starts shares:
//! the environment that never prompts and how its error log is read.

use std::path::PathBuf;
use std::time::Duration;

use super::failover;

/// Masters shared by every slurmdash process, and by plain `ssh -S PATH HOST`: one per
/// (cluster, user, host), at a stable socket in `dir`.
#[derive(Debug, Clone)]
pub struct SharedMasters {
    /// A private directory of the user's ([`runtime_dir`](super::runtime_dir)).
    pub dir: PathBuf,
    /// The cluster's name, the first part of each socket's name.
    pub cluster: String,
    /// Where the host that last worked is remembered (the state directory); `None`: nowhere.
    pub state_dir: Option<PathBuf>,
}

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

/// Declares `pub struct NAME` with the login fields first, then its own: where and as whom to
/// log in, the fields `SshOptions` shares with a `[clusters.NAME]` table of the config
/// (`config::ClusterConfig`, whose keys they are), written once for both. Each own field
/// gives its default (`pub x: T = default,`) and the macro writes `impl Default` (the login
/// fields: empty, no interactive login).
macro_rules! with_login_fields {
    ($(#[$meta:meta])* pub struct $name:ident {
        $($(#[$fm:meta])* pub $f:ident: $t:ty = $d:expr,)*
    }) => {
        $(#[$meta])*
        pub struct $name {
            /// Login hosts (or ~/.ssh/config aliases), tried in order.
            pub hosts: Vec<String>,
            pub user: Option<String>,
            pub port: Option<u16>,
            /// Use only this key (`-i KEY -o IdentitiesOnly=yes`); otherwise ssh's own choice,
            /// agent included.
            pub key_path: Option<std::path::PathBuf>,
            /// An ssh config file used instead of ~/.ssh/config (`ssh -F`).
            pub ssh_config: Option<std::path::PathBuf>,
            /// Attach to (or start) the ControlMaster at this socket, whatever the host (made by
            /// `interactive_login` or by hand).
            pub control_path: Option<std::path::PathBuf>,
            /// A person logs in (password or one-time code): the master is opened in the
            /// terminal first, and when it is gone slurmdash waits for a new login instead of
            /// trying one in BatchMode.
            pub interactive_login: bool,
            $($(#[$fm])* pub $f: $t,)*
        }

        impl Default for $name {
            fn default() -> Self {
                Self {
                    hosts: Vec::new(),
                    user: None,
                    port: None,
                    key_path: None,
                    ssh_config: None,
                    control_path: None,
                    interactive_login: false,
                    $($f: $d,)*
                }
            }
        }
    };
}
pub(crate) use with_login_fields;

with_login_fields! {
    #[derive(Debug, Clone)]
    pub struct SshOptions {
        /// Share masters with other slurmdash processes (see [`SharedMasters`]). `None`: this
        /// remote's masters are its own, in a private temporary directory, and end with it.
        pub shared: Option<SharedMasters> = None,
        /// Per host: TCP connect plus SSH banner (`ConnectTimeout`).
        pub connect_timeout: Duration = Duration::from_secs(10),
        pub host_key_check: HostKeyCheck = HostKeyCheck::default(),
        /// Keepalive of the master; a dead network ends it after three silent intervals.
        pub server_alive_interval: Duration = Duration::from_secs(15),
        /// How long a master lingers once no slurmdash holds it any more (ssh's `ControlPersist`;
        /// see [`hold`](super::hold)). Zero: it ends a second after the last one lets go.
        pub persist: Duration = Duration::ZERO,
        /// A host that has not connected within this no longer keeps the next one waiting
        /// ([`try_staggered`](super::try_staggered)).
        pub head_start: Duration = failover::HEAD_START,
        /// Timeout of the remote command behind `read_file`.
        pub read_timeout: Duration = Duration::from_secs(20),
        /// Run commands under the login node's `timeout` so that one we give up on also stops
        /// there (used only if `timeout --version` works on the node).
        pub kill_remote_on_timeout: bool = true,
        /// At most this many bytes are read from a command's stdout (and as many from its
        /// stderr); past that the command is ended and the call fails with `TooMuchOutput`.
        pub max_output: u64 = super::MAX_OUTPUT,
    }
}

impl SshOptions {
    pub fn new(hosts: Vec<String>) -> Self {
        Self {
            hosts,
            ..Self::default()
        }
    }
}

/// The last few meaningful lines of an ssh error log.
pub(crate) fn tail_of_log(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Warning: Permanently added"))
        .collect();
    let start = lines.len().saturating_sub(3);
    lines[start..].join(" / ")
}

/// The environment of an ssh that must never prompt, its jump hosts' ssh included.
pub(crate) const NO_PROMPT: [(&str, &str); 2] = [
    ("SSH_ASKPASS", "/bin/false"),
    ("SSH_ASKPASS_REQUIRE", "force"),
];
