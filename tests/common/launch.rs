//! Launching on the dev cluster from tests: a config with a results root of the test's own
//! for `slurmdash submit`, the library path the form and `submit` take, and the dashboard's
//! retry check over a registry of the test's own.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use slurmdash::io::facts;
use slurmdash::io::retry::{check, RetryCheck, RetryEvent};
use slurmdash::io::submit::Target;
use slurmdash::launch::submit::{self, Submitted};
use slurmdash::launch::LaunchSpec;
use slurmdash::registry::{Entry, Registry};
use slurmdash::remote::Remote;
use slurmdash::retry::RetryPolicy;
use slurmdash::triage::Patterns;

use super::{dev_config, remote, scratch, slurmdash_command, T};

/// A config like the dev cluster's with its own results root (under a fresh scratch
/// directory, `base`), and a private state dir (the registry of launches).
pub struct LaunchSetup {
    pub config: PathBuf,
    pub state: tempfile::TempDir,
    _dir: tempfile::TempDir,
    pub base: String,
    pub root: String,
}

impl LaunchSetup {
    /// With a scratch directory named after `tag`.
    pub async fn new(tag: &str) -> LaunchSetup {
        LaunchSetup::under(scratch(&remote(), tag).await)
    }

    /// With results under `base` (which the test made).
    pub fn under(base: String) -> LaunchSetup {
        let root = format!("{base}/results");
        let dir = tempfile::tempdir().expect("tempdir");
        let text = std::fs::read_to_string(dev_config()).expect("dev config");
        let text = text
            .lines()
            .filter(|l| !l.starts_with("results_root"))
            .collect::<Vec<_>>()
            .join("\n");
        let text = text.replacen(
            "[clusters.dev]",
            &format!("[clusters.dev]\nresults_root = \"{root}\""),
            1,
        );
        let config = dir.path().join("slurmdash.toml");
        std::fs::write(&config, text).expect("write config");
        LaunchSetup {
            config,
            state: tempfile::tempdir().expect("state dir"),
            _dir: dir,
            base,
            root,
        }
    }

    /// `slurmdash submit` with this config and state dir, stdin closed; the arguments
    /// follow.
    pub fn submit_command(&self) -> Command {
        let mut c = slurmdash_command(&self.config);
        c.arg("submit")
            .env("SLURMDASH_STATE_DIR", self.state.path())
            .stdin(Stdio::null());
        c
    }

    pub fn registry(&self) -> Registry {
        Registry::open(self.state.path())
    }
}

/// Launches `spec` through the path the form and `slurmdash submit` take (the cluster's
/// facts, prepare, submit), results under `root`, recorded in `registry`. Returns the
/// submission and the launch's local id.
pub async fn launch(
    r: &dyn Remote,
    registry: &Registry,
    root: &str,
    spec: &LaunchSpec,
    secrets: &[(String, String)],
) -> (Submitted, String) {
    let facts = facts::fetch(r, T).await.expect("cluster facts");
    let local = submit::new_local_id();
    let p = submit::prepare(spec, &facts, root, &local).expect("valid launch");
    let target = Target {
        remote: r,
        cluster: "dev",
        registry,
        timeout: T,
        convert_timeout: T,
    };
    let s = slurmdash::io::submit::submit(&target, &p, secrets)
        .await
        .expect("submitted");
    (s, local)
}

/// One retry check of the launches in `registry`, as the dashboard runs it; `secret`
/// stands for this machine's environment. Returns the events and the launches.
pub async fn retry_check(
    r: &dyn Remote,
    registry: &Registry,
    allow_submit: bool,
    secret: &(dyn Fn(&str) -> Option<String> + Sync),
) -> (Vec<RetryEvent>, Vec<Entry>) {
    let patterns = Patterns::builtin();
    let c = RetryCheck {
        remote: r,
        registry,
        cluster: "dev",
        policy: RetryPolicy::default(),
        patterns: &patterns,
        timeout: T,
        secret,
        allow_submit,
    };
    check(&c).await.expect("retry check")
}

/// No secret on this machine.
pub fn no_secret(_: &str) -> Option<String> {
    None
}
