//! Shared helpers for tests that use the dev cluster (`scripts/dev-cluster up`).
#![allow(dead_code)]

pub mod tmux;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use slurmdash::remote::{Remote, RunOutput, SshOptions, SshRemote};

pub const T: Duration = Duration::from_secs(30);

pub fn dev_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join(".dev-cluster");
    assert!(
        d.join("slurmdash.toml").is_file() && d.join("ssh/config").is_file(),
        "{} is incomplete: run `scripts/dev-cluster up` first (these tests need the dev cluster)",
        d.display()
    );
    d
}

/// The slurmdash config `scripts/dev-cluster up` writes for the dev cluster.
pub fn dev_config() -> PathBuf {
    dev_dir().join("slurmdash.toml")
}

pub fn ssh_config() -> PathBuf {
    dev_dir().join("ssh/config")
}

pub fn remote() -> SshRemote {
    let mut o = SshOptions::new(vec!["slurmdash-dev".into()]);
    o.ssh_config = Some(ssh_config());
    o.connect_timeout = Duration::from_secs(5);
    SshRemote::new(o).expect("ssh remote")
}

pub fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

pub async fn run(r: &dyn Remote, argv: &[&str]) -> RunOutput {
    r.run(&s(argv), None, T)
        .await
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
}

/// A fresh directory for one test under the test user's scratch tree.
pub async fn scratch(r: &dyn Remote, tag: &str) -> String {
    let out = run(
        r,
        &[
            "mktemp",
            "-d",
            &format!("/lustre/fsw/sduser/test-{tag}.XXXXXX"),
        ],
    )
    .await;
    assert!(out.success(), "mktemp: {}", out.stderr_lossy());
    out.stdout_lossy().trim().to_string()
}

/// Submits with sbatch (argv as given, `--parsable` added) and returns the job id.
pub async fn sbatch(r: &dyn Remote, args: &[&str]) -> u64 {
    let mut argv = vec!["sbatch", "--parsable"];
    argv.extend_from_slice(args);
    let out = run(r, &argv).await;
    assert!(out.success(), "sbatch {args:?}: {}", out.stderr_lossy());
    let text = out.stdout_lossy();
    text.trim()
        .split(';')
        .next()
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("sbatch printed {text:?}"))
}

/// The job's state as sacct records it (e.g. `COMPLETED`, `CANCELLED by 1001`).
pub async fn sacct_state(r: &dyn Remote, id: u64) -> String {
    let out = run(
        r,
        &[
            "sacct",
            "-n",
            "-X",
            "-P",
            "-o",
            "State",
            "-j",
            &id.to_string(),
        ],
    )
    .await;
    assert!(
        out.success(),
        "sacct -j {id} failed ({:?}): {}",
        out.code,
        out.stderr_lossy()
    );
    out.stdout_lossy().trim().to_string()
}

/// Polls `f` every 500 ms until it returns Some, or panics after `limit` with `what`.
pub async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Runs the slurmdash binary with the dev cluster's config.
pub fn slurmdash(args: &[&str]) -> Output {
    slurmdash_with(&dev_config(), args)
}

pub fn slurmdash_with(config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(config)
        .args(args)
        .env_remove("SLURM_HOSTNAME")
        .env_remove("SLURM_USER")
        .env_remove("SLURM_PARTITION")
        .env_remove("SLURM_ACCOUNT")
        .env_remove("SSH_KEY_PATH")
        .env_remove("SLURM_BASE_RESULTS_DIR")
        .output()
        .expect("run slurmdash")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
