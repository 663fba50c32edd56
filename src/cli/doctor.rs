//! `slurmdash doctor`: a preflight that says, one line per failure, what to do.

use std::process::ExitCode;
use std::time::Instant;

use color_eyre::eyre::Result;

use super::connect::ssh_options;
use super::{check_output, connect};
use crate::config::Cluster;
use crate::remote::{Remote, SshOptions, SshRemote};
use crate::slurm::command;
use crate::slurm::parse::parse_sinfo;

/// The Slurm commands slurmdash runs on the login node.
pub const SLURM_COMMANDS: [&str; 6] = ["squeue", "sbatch", "sacct", "scancel", "scontrol", "sinfo"];

/// Prints `command -v` failures, one missing command per line. The script is ours; the
/// command names are passed as arguments.
const MISSING_SCRIPT: &str =
    r#"for c in "$@"; do command -v "$c" >/dev/null 2>&1 || echo "$c"; done"#;

/// Creates and removes a file in the results root (created if missing).
const WRITABLE_SCRIPT: &str =
    r#"mkdir -p -- "$1" && t=$(mktemp -p "$1" .slurmdash-doctor.XXXXXX) && rm -f -- "$t""#;

struct Report {
    failed: bool,
}

impl Report {
    fn ok(&mut self, what: &str, detail: &str) {
        println!("[ok]   {what}: {detail}");
    }
    fn fail(&mut self, what: &str, detail: &str, advice: &str) {
        self.failed = true;
        println!("[FAIL] {what}: {detail}\n       -> {advice}");
    }
    fn warn(&mut self, what: &str, detail: &str, advice: &str) {
        println!("[warn] {what}: {detail}\n       -> {advice}");
    }
}

/// What to do about an SSH failure, from what ssh said.
pub fn ssh_advice(reason: &str) -> &'static str {
    let r = reason.to_lowercase();
    if r.contains("host key verification failed") || r.contains("host key") {
        "the host key is unknown or has changed: run `ssh HOST` once in a terminal, check the fingerprint with your admins and accept it"
    } else if r.contains("permission denied") || r.contains("authentication") {
        "the server refused your key: set SSH_KEY_PATH (or key_path), load the key with `ssh-add`, or, for password/2FA logins, run `slurmdash login` or set interactive_login = true"
    } else if r.contains("could not resolve") || r.contains("name or service not known") {
        "the host name does not resolve: check `hosts` in the config (or SLURM_HOSTNAME) and your VPN"
    } else if r.contains("connection refused") {
        "nothing listens for SSH there: check the host name and port"
    } else if r.contains("timed out") || r.contains("timeout") {
        "the host did not answer within connect_timeout_secs: check your network/VPN, or list another login host"
    } else {
        "check that `ssh HOST` works in a terminal without prompting"
    }
}

pub async fn run(cluster: &Cluster) -> Result<ExitCode> {
    let mut report = Report { failed: false };
    println!("slurmdash doctor: cluster `{}`", cluster.name);
    if !cluster.settings.local {
        let base = ssh_options(cluster);
        let mut reachable = 0;
        for host in &base.hosts {
            let opts = SshOptions {
                hosts: vec![host.clone()],
                ..base.clone()
            };
            let started = Instant::now();
            let result = match SshRemote::new(opts) {
                Ok(r) => r.connect().await,
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => {
                    reachable += 1;
                    report.ok(
                        &format!("ssh {host}"),
                        &format!(
                            "connected without a prompt in {:.1}s",
                            started.elapsed().as_secs_f64()
                        ),
                    );
                }
                Err(e) => {
                    let msg = e.to_string();
                    let advice = ssh_advice(&msg).replace("HOST", host);
                    if base.hosts.len() > 1 {
                        report.warn(&format!("ssh {host}"), &msg, &advice);
                    } else {
                        report.fail(&format!("ssh {host}"), &msg, &advice);
                    }
                }
            }
        }
        if reachable == 0 {
            if base.hosts.len() > 1 {
                report.fail(
                    "ssh",
                    "no login host could be reached",
                    "see the lines above for each host",
                );
            }
            return Ok(ExitCode::FAILURE);
        }
    }
    let remote = connect(cluster)?;
    let remote = remote.as_ref();
    check_commands(remote, &mut report).await;
    check_version(remote, &mut report).await;
    check_partitions(remote, cluster, &mut report).await;
    check_results_root(remote, cluster, &mut report).await;
    check_pyxis(remote, cluster, &mut report).await;
    if report.failed {
        println!("some checks failed");
        Ok(ExitCode::FAILURE)
    } else {
        println!("all checks passed");
        Ok(ExitCode::SUCCESS)
    }
}

fn sh(script: &str, args: &[&str]) -> Vec<String> {
    let mut argv = vec!["sh".to_string(), "-c".into(), script.into(), "sh".into()];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv
}

async fn check_commands(remote: &dyn Remote, report: &mut Report) {
    let argv = sh(MISSING_SCRIPT, &SLURM_COMMANDS);
    match remote
        .run(&argv, None, std::time::Duration::from_secs(30))
        .await
    {
        Ok(out) if out.success() => {
            let missing: Vec<String> = out
                .stdout_lossy()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
            if missing.is_empty() {
                report.ok("slurm commands", &SLURM_COMMANDS.join(", "));
            } else {
                report.fail(
                    "slurm commands",
                    &format!("not on the remote PATH: {}", missing.join(", ")),
                    "non-interactive ssh sessions read no login profile: ask your admins where Slurm is installed, or add it to PATH in ~/.bashrc before any `return` for non-interactive shells",
                );
            }
        }
        Ok(out) => report.fail(
            "slurm commands",
            &format!("`sh` failed: {}", out.stderr_lossy().trim()),
            "the login shell cannot run commands non-interactively",
        ),
        Err(e) => report.fail("slurm commands", &e.to_string(), "see the ssh checks above"),
    }
}

/// The oldest Slurm the dev cluster tests against (`scripts/dev-cluster --slurm 22.05`).
const OLDEST_SUPPORTED: (u32, u32) = (22, 5);

/// Major and minor of `sinfo --version` output such as `slurm-wlm 22.05.8` or `slurm 24.11.5`.
fn slurm_version(text: &str) -> Option<(u32, u32)> {
    let v = text.split_whitespace().last()?;
    let mut parts = v.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

async fn check_version(remote: &dyn Remote, report: &mut Report) {
    let argv = vec!["sinfo".to_string(), "--version".into()];
    match remote
        .run(&argv, None, std::time::Duration::from_secs(30))
        .await
    {
        Ok(out) if out.success() => {
            let text = out.stdout_lossy();
            let text = text.trim();
            match slurm_version(text) {
                Some(v) if v < OLDEST_SUPPORTED => report.warn(
                    "slurm version",
                    &format!(
                        "{text}: older than Slurm {}.{:02}, the oldest slurmdash is tested with",
                        OLDEST_SUPPORTED.0, OLDEST_SUPPORTED.1
                    ),
                    "some views may miss data or show errors; tell us what breaks",
                ),
                Some((major, minor)) => {
                    report.ok("slurm version", &format!("{major}.{minor:02} ({text})"))
                }
                None => report.warn(
                    "slurm version",
                    &format!("cannot read a version in `sinfo --version`: {text}"),
                    "slurmdash is tested with Slurm 22.05 to 26.05",
                ),
            }
        }
        Ok(out) => report.fail(
            "slurm version",
            &format!("`sinfo --version` failed: {}", out.stderr_lossy().trim()),
            "check that the Slurm client commands work on the login node",
        ),
        Err(e) => report.fail("slurm version", &e.to_string(), "see the ssh checks above"),
    }
}

async fn check_partitions(remote: &dyn Remote, cluster: &Cluster, report: &mut Report) {
    let argv = command::sinfo();
    let text = match remote
        .run(&argv, None, cluster.settings.command_timeout())
        .await
    {
        Ok(out) => check_output(remote, &argv, out),
        Err(e) => Err(e.into()),
    };
    let parsed = text.and_then(|t| parse_sinfo(&t).map_err(Into::into));
    match parsed {
        Ok(parts) if parts.is_empty() => report.fail(
            "partitions",
            "sinfo lists no partition",
            "slurmctld may be down or your account sees no partition: ask your admins",
        ),
        Ok(parts) => {
            let mut names: Vec<&str> = parts.iter().map(|p| p.partition.as_str()).collect();
            names.dedup();
            report.ok("partitions", &names.join(", "));
            if let Some(want) = &cluster.settings.partition {
                if !names.contains(&want.as_str()) {
                    report.fail(
                        "default partition",
                        &format!("`{want}` is not among the partitions sinfo lists"),
                        "fix `partition` in the config (or SLURM_PARTITION)",
                    );
                }
            }
        }
        Err(e) => report.fail(
            "partitions",
            &format!("{e:#}"),
            "check that slurmctld answers (`sinfo` on the login node)",
        ),
    }
}

async fn check_results_root(remote: &dyn Remote, cluster: &Cluster, report: &mut Report) {
    let Some(root) = &cluster.settings.results_root else {
        report.warn(
            "results root",
            "not configured",
            "set results_root (or SLURM_BASE_RESULTS_DIR) to launch jobs from slurmdash",
        );
        return;
    };
    let argv = sh(WRITABLE_SCRIPT, &[root]);
    match remote.run(&argv, None, cluster.settings.command_timeout()).await {
        Ok(out) if out.success() => report.ok("results root", &format!("{root} is writable")),
        Ok(out) => report.fail(
            "results root",
            &format!("{root} is not writable: {}", out.stderr_lossy().trim()),
            "set results_root (or SLURM_BASE_RESULTS_DIR) to a directory your cluster user can write, e.g. /lustre/fsw/<you>/results",
        ),
        Err(e) => report.fail("results root", &e.to_string(), "see the ssh checks above"),
    }
}

/// Pyxis adds `--container-image` to srun: without it, container launches would fail at start.
async fn check_pyxis(remote: &dyn Remote, cluster: &Cluster, report: &mut Report) {
    let argv = crate::launch::facts::srun_help_argv();
    match remote.run(&argv, None, cluster.settings.command_timeout()).await {
        Ok(out) if crate::launch::facts::pyxis_in_srun_help(&out.stdout_lossy()) => {
            report.ok("pyxis", "srun --help lists --container-image: container launches work")
        }
        Ok(_) => report.warn(
            "pyxis",
            "srun --help does not list --container-image (no Pyxis/Enroot)",
            "launch jobs without a container image here; slurmdash refuses container launches on this cluster",
        ),
        Err(e) => report.warn("pyxis", &e.to_string(), "see the ssh checks above"),
    }
}
