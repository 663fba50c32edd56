//! `slurmdash doctor`: a preflight that says, one line per failure, what to do.

use std::process::ExitCode;
use std::time::Instant;

use color_eyre::eyre::Result;

use super::output::check_output;
use crate::config::{Cluster, Config, Loaded};
use crate::io::connect::connect;
use crate::io::connect::ssh_options;
use crate::remote::route::{self, HopCheck};
use crate::remote::{runtime_dir, Remote, SshOptions, SshRemote};
use crate::slurm::command;
use crate::slurm::parse::parse_sinfo;

/// The Slurm commands slurmdash runs on the login node.
pub const SLURM_COMMANDS: [&str; 6] = ["squeue", "sbatch", "sacct", "scancel", "scontrol", "sinfo"];

/// Prints `command -v` failures, one missing command per line. The script is ours; the
/// command names are passed as arguments.
const MISSING_SCRIPT: &str =
    r#"for c in "$@"; do command -v "$c" >/dev/null 2>&1 || echo "$c"; done"#;

/// Creates and removes a file in the results root (created if missing).
const WRITABLE_SCRIPT: &str = r#"umask 077 && mkdir -p -- "$1" && t=$(mktemp -p "$1" .slurmdash-doctor.XXXXXX) && rm -f -- "$t""#;

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

/// What to do about an SSH failure, from what ssh said (`{host}` stands for the host).
pub fn ssh_advice(reason: &str) -> &'static str {
    let r = reason.to_lowercase();
    if r.contains("login needed") {
        "run `slurmdash login` in a terminal (it asks for the code or password once), then doctor again: it checks the rest through that login"
    } else if r.contains("host key verification failed") || r.contains("host key") {
        "the host key is unknown or has changed: run `ssh {host}` once in a terminal, check the fingerprint with your admins and accept it"
    } else if r.contains("permission denied") || r.contains("authentication") {
        "the server refused your key: set SSH_KEY_PATH (or key_path), load the key with `ssh-add`, or, for password/2FA logins, run `slurmdash login` or set interactive_login = true"
    } else if r.contains("could not resolve") || r.contains("name or service not known") {
        "the host name does not resolve: check `hosts` in the config (or SLURM_HOSTNAME) and your VPN"
    } else if r.contains("connection refused") {
        "nothing listens for SSH there: check the host name and port"
    } else if r.contains("timed out") || r.contains("timeout") {
        "the host did not answer within connect_timeout_secs: check your network/VPN, or list another login host"
    } else {
        "check that `ssh {host}` works in a terminal without prompting"
    }
}

pub async fn run(loaded: &Loaded, cluster: &Cluster) -> Result<ExitCode> {
    let mut report = Report { failed: false };
    println!("slurmdash doctor: cluster `{}`", cluster.name);
    // Each host's connection stays open until the end, for the checks below to reuse.
    let mut connected = Vec::new();
    if !cluster.settings.local {
        let dir = match runtime_dir() {
            Ok(dir) => dir,
            Err(e) => {
                report.fail(
                    "connection directory",
                    &e,
                    "slurmdash keeps its SSH connections there, shared by every command; fix it and run doctor again",
                );
                return Ok(ExitCode::FAILURE);
            }
        };
        report.ok(
            "connection directory",
            &format!("{} (yours, mode 0700)", dir.display()),
        );
        let base = ssh_options(cluster)?;
        let mut reachable = 0;
        for host in &base.hosts {
            let opts = SshOptions {
                hosts: vec![host.clone()],
                ..base.clone()
            };
            check_route(&opts, host, cluster, &mut report).await;
            let started = Instant::now();
            let remote = SshRemote::new(opts);
            let result = match &remote {
                Ok(r) => r.connect().await,
                Err(e) => Err(e.clone()),
            };
            match (result, remote) {
                (Ok(()), Ok(remote)) => {
                    reachable += 1;
                    let took = started.elapsed().as_secs_f64();
                    report.ok(
                        &format!("ssh {host}"),
                        &if remote.reused() {
                            format!("an open connection answered in {took:.2}s")
                        } else {
                            format!("connected without a prompt in {took:.1}s")
                        },
                    );
                    if let Some(ctl) = remote.control_path() {
                        let ctl = ctl.to_string_lossy();
                        let kept = match cluster.settings.persist_secs {
                            0 => "closed when slurmdash exits (persist_secs = 0)".to_string(),
                            n => format!("kept {n} s after the last slurmdash using it exits"),
                        };
                        report.ok(
                            &format!("shared connection to {host}"),
                            &format!(
                                "ssh -S {} {host} ({kept})",
                                shlex::try_quote(&ctl).unwrap_or(ctl.clone())
                            ),
                        );
                    }
                    connected.push(remote);
                }
                (Err(e), _) | (_, Err(e)) => {
                    let msg = e.to_string();
                    let advice = ssh_advice(&msg).replace("{host}", host);
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
    if !cluster.settings.local {
        check_login(remote, &mut report).await;
    }
    check_commands(remote, &mut report).await;
    check_version(remote, &mut report).await;
    check_partitions(remote, cluster, &mut report).await;
    check_results_root(remote, cluster, &mut report).await;
    check_job_dir_mode(&loaded.config, &mut report);
    check_pyxis(remote, cluster, &mut report).await;
    check_registry_credentials(remote, cluster, &loaded.config, &mut report).await;
    if report.failed {
        println!("some checks failed");
        Ok(ExitCode::FAILURE)
    } else {
        println!("all checks passed");
        Ok(ExitCode::SUCCESS)
    }
}

/// A host reached through jump hosts: names them, and which hop asks for a one-time code
/// (each hop is tried in BatchMode, outermost first, and never prompts).
async fn check_route(opts: &SshOptions, host: &str, cluster: &Cluster, report: &mut Report) {
    let (o, h) = (opts.clone(), host.to_string());
    let route = match tokio::task::spawn_blocking(move || route::resolve(&o, &h)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            return report.warn(
                &format!("route to {host}"),
                &e,
                "check the ssh config (`ssh -G HOST` shows what ssh reads)",
            )
        }
        Err(e) => {
            return report.warn(
                &format!("route to {host}"),
                &e.to_string(),
                "run doctor again",
            )
        }
    };
    if !route.is_proxied() {
        return;
    }
    let from = match &opts.ssh_config {
        Some(f) => f.display().to_string(),
        None => "~/.ssh/config".into(),
    };
    if route.jumps.is_empty() {
        // A ProxyCommand says nothing about its hops.
        return report.ok(
            &format!("route to {host}"),
            &format!(
                "{} ({from})",
                route.through().trim().trim_matches(['(', ')'])
            ),
        );
    }
    let mut hops = route.jumps.clone();
    hops.push(host.to_string());
    report.ok(
        &format!("route to {host}"),
        &format!(
            "through jump host{} {} (ProxyJump in {from}): {}",
            if route.jumps.len() == 1 { "" } else { "s" },
            route.jumps.join(", "),
            hops.join(" -> ")
        ),
    );
    let (o, h, r) = (opts.clone(), host.to_string(), route.clone());
    let timeout = opts.connect_timeout;
    let Ok(checks) =
        tokio::task::spawn_blocking(move || route::check_hops(&o, &h, &r, timeout)).await
    else {
        return;
    };
    let n = hops.len();
    for (i, (hop, check)) in checks.iter().enumerate() {
        let what = if i + 1 < n {
            format!("jump host {hop} (hop {} of {n})", i + 1)
        } else {
            format!("login host {hop} (hop {n} of {n})")
        };
        match check {
            HopCheck::NoPrompt => report.ok(&what, "logs in with the key alone, no prompt"),
            HopCheck::AsksForCode(methods) => {
                let detail = format!(
                    "{what} asks for a one-time code or password ({methods}){}",
                    if i + 1 < n {
                        format!("; {host} is reached only through it, so every login to {host} starts with that prompt")
                    } else {
                        String::new()
                    }
                );
                if cluster.settings.interactive_login {
                    report.ok(
                        "one-time code",
                        &format!("{detail}; `slurmdash login` asks for it once and every command shares that login"),
                    );
                } else {
                    report.fail(
                        "one-time code",
                        &detail,
                        "set interactive_login = true for this cluster, then run `slurmdash login` (or start the dashboard) in a terminal",
                    );
                }
            }
            HopCheck::Failed(e) => report.fail(&what, e, &ssh_advice(e).replace("{host}", hop)),
        }
    }
}

fn sh(script: &str, args: &[&str]) -> Vec<String> {
    let mut argv = vec!["sh".to_string(), "-c".into(), script.into(), "sh".into()];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv
}

/// The login shell, and what it and its dotfiles print around every command: slurmdash
/// reads only its commands' own output (remote/frame.rs), so this never fails; other ssh
/// tools (scp, rsync) may break on it, which is worth a word.
async fn check_login(remote: &dyn Remote, report: &mut Report) {
    let argv = ["printenv".to_string(), "SHELL".into()];
    match remote
        .run(&argv, None, std::time::Duration::from_secs(30))
        .await
    {
        Ok(out) => {
            let shell = out.stdout_lossy().trim().to_string();
            let shell = if shell.is_empty() {
                "unknown".into()
            } else {
                shell
            };
            match out.login_lines {
                (0, 0) => report.ok(
                    "login shell",
                    &format!("{shell}; it prints nothing around commands"),
                ),
                (o, e) => report.warn(
                    "login shell",
                    &format!(
                        "{shell}; your login prints {o} line{} to stdout and {e} to stderr before each command: slurmdash ignores them",
                        if o == 1 { "" } else { "s" }
                    ),
                    "scp and rsync may not: print from a dotfile only in interactive shells",
                ),
            }
        }
        Err(e) => report.warn("login shell", &e.to_string(), "see the ssh checks above"),
    }
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

/// What doctor says of `sinfo --version`'s output.
#[derive(Debug, PartialEq)]
enum Verdict {
    Ok(String),
    /// What is wrong, and what to do.
    Warn(String, &'static str),
}

fn version_verdict(text: &str) -> Verdict {
    match slurm_version(text) {
        Some(v) if v < OLDEST_SUPPORTED => Verdict::Warn(
            format!(
                "{text}: older than Slurm {}.{:02}, the oldest slurmdash is tested with",
                OLDEST_SUPPORTED.0, OLDEST_SUPPORTED.1
            ),
            "some views may miss data or show errors; tell us what breaks",
        ),
        Some((major, minor)) => Verdict::Ok(format!("{major}.{minor:02} ({text})")),
        None => Verdict::Warn(
            format!("cannot read a version in `sinfo --version`: {text}"),
            "slurmdash is tested with Slurm 22.05 to 26.05",
        ),
    }
}

async fn check_version(remote: &dyn Remote, report: &mut Report) {
    let argv = vec!["sinfo".to_string(), "--version".into()];
    match remote
        .run(&argv, None, std::time::Duration::from_secs(30))
        .await
    {
        Ok(out) if out.success() => {
            let text = out.stdout_lossy();
            match version_verdict(text.trim()) {
                Verdict::Ok(detail) => report.ok("slurm version", &detail),
                Verdict::Warn(detail, advice) => report.warn("slurm version", &detail, advice),
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
    let script = format!(
        "{}{WRITABLE_SCRIPT} && unsafe_dirs \"$1\"",
        crate::launch::stage::UNSAFE_DIRS_SH
    );
    let argv = sh(&script, &[root]);
    match remote.run(&argv, None, cluster.settings.command_timeout()).await {
        Ok(out) if out.success() && out.stdout_lossy().trim().is_empty() => report.ok(
            "results root",
            &format!("{root} is writable, and by no other user on the way to it"),
        ),
        Ok(out) if out.success() => {
            let dirs: Vec<String> = out
                .stdout_lossy()
                .lines()
                .filter_map(|l| l.split_once('\t'))
                .map(|(p, why)| format!("{p} is {why}"))
                .collect();
            report.fail(
                "results root",
                &format!(
                    "another user could replace the scripts of your jobs under {root} and run them as you: {}",
                    dirs.join("; ")
                ),
                "`chmod +t` or `chmod go-w` each directory named (or ask its owner), or set results_root to a directory only you can write; slurmdash submits nothing there until then",
            );
        }
        Ok(out) => report.fail(
            "results root",
            &format!("{root} is not writable: {}", out.stderr_lossy().trim()),
            "set results_root (or SLURM_BASE_RESULTS_DIR) to a directory your cluster user can write, e.g. /lustre/fsw/<you>/results",
        ),
        Err(e) => report.fail("results root", &e.to_string(), "see the ssh checks above"),
    }
}

/// `[launch] job_dir_mode`: submit refuses one that lets other users write a job directory.
fn check_job_dir_mode(config: &Config, report: &mut Report) {
    let Ok(spec) = config.launch_spec(None) else {
        return;
    };
    match crate::launch::validate::parse_mode(&spec.job_dir_mode) {
        Ok(m) => report.ok("job directories", &format!("mode {m:04o} (job_dir_mode)")),
        Err(e) => report.fail(
            "job directories",
            &e,
            "set [launch] job_dir_mode = \"0700\" (or \"0750\") in the config",
        ),
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

/// The registry hosts (without port) that the config's images name: `[launch]` and every
/// template. Docker Hub images (no registry host) are left out: Enroot pulls those
/// anonymously unless told otherwise.
pub fn registry_hosts(config: &Config) -> Vec<String> {
    let mut images = vec![config.launch.image.clone()];
    for t in config.templates.values() {
        images.extend(t.get("image").and_then(|v| v.as_str()).map(str::to_string));
        // Each step of a multi-step template may name its own.
        let steps = t.get("steps").and_then(|v| v.as_array());
        images.extend(
            steps
                .into_iter()
                .flatten()
                .filter_map(|s| s.get("image").and_then(|v| v.as_str()).map(str::to_string)),
        );
    }
    let mut hosts: Vec<String> = images
        .iter()
        .filter(|i| !i.trim().is_empty())
        .filter_map(|i| match crate::launch::container::parse_image(i) {
            Ok(crate::launch::container::Image::Remote(r)) => r
                .split_once('#')
                .map(|(host, _)| host.split(':').next().unwrap_or(host).to_string()),
            _ => None,
        })
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// Prints `missing`, or `mode NNN` and one `machine HOST` line per entry of Enroot's
/// credentials file: never the logins or passwords.
const CREDENTIALS_SCRIPT: &str = r#"f="${ENROOT_CONFIG_PATH:-${XDG_CONFIG_HOME:-$HOME/.config}/enroot}/.credentials"
[ -e "$f" ] || { echo missing; exit 0; }
stat -c 'mode %a' -- "$f" && awk '{ for (i = 1; i < NF; i++) if ($i == "machine") print "machine", $(i + 1) }' "$f""#;

/// What the credentials script printed: None when the file is missing, else its mode and
/// the hosts it has logins for.
pub fn parse_credentials_listing(out: &str) -> Option<(String, Vec<String>)> {
    if out.trim() == "missing" {
        return None;
    }
    let mut mode = String::new();
    let mut hosts = Vec::new();
    for line in out.lines() {
        if let Some(m) = line.strip_prefix("mode ") {
            mode = m.trim().to_string();
        } else if let Some(h) = line.strip_prefix("machine ") {
            hosts.push(h.trim().to_string());
        }
    }
    Some((mode, hosts))
}

/// Enroot reads registry logins from `~/.config/enroot/.credentials` on the node (`machine
/// HOST login USER password PASSWORD`, HOST without the port); a private image without one
/// fails at job start. Checked for each registry the config's images name.
async fn check_registry_credentials(
    remote: &dyn Remote,
    cluster: &Cluster,
    config: &Config,
    report: &mut Report,
) {
    let hosts = registry_hosts(config);
    if hosts.is_empty() {
        return;
    }
    const WHAT: &str = "registry credentials";
    const FILE: &str = "~/.config/enroot/.credentials";
    let fix = "write `machine HOST login USER password PASSWORD` lines there (chmod 600); never put registry passwords into a job's environment";
    let argv = sh(CREDENTIALS_SCRIPT, &[]);
    let out = match remote
        .run(&argv, None, cluster.settings.command_timeout())
        .await
    {
        Ok(out) if out.success() => out.stdout_lossy(),
        Ok(out) => {
            let e = crate::io::fetch::failure(remote, &argv, &out);
            return report.warn(WHAT, &e, "see the ssh checks above");
        }
        Err(e) => return report.warn(WHAT, &e.to_string(), "see the ssh checks above"),
    };
    let Some((mode, have)) = parse_credentials_listing(&out) else {
        return report.warn(
            WHAT,
            &format!(
                "{FILE} does not exist on the cluster; images from {} need a login there if the registry is private",
                hosts.join(", ")
            ),
            fix,
        );
    };
    let missing: Vec<&str> = hosts
        .iter()
        .filter(|h| !have.contains(h))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        report.warn(
            WHAT,
            &format!("{FILE} has no login for {}", missing.join(", ")),
            &fix.replace("HOST", missing[0]),
        );
    } else if !matches!(mode.as_str(), "600" | "400") {
        report.warn(
            WHAT,
            &format!(
                "{FILE} is mode {mode}: others on the cluster may read your registry passwords"
            ),
            "chmod 600 ~/.config/enroot/.credentials",
        );
    } else {
        report.ok(
            WHAT,
            &format!("{FILE} has a login for {}", hosts.join(", ")),
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod credential_tests {
    use super::*;

    #[test]
    fn registries_come_from_launch_and_templates_without_ports() {
        let text = "[launch]\nimage = \"10.1.2.3:5001#private/tiny:1.0\"\n[templates.a]\nimage = \"nvcr.io/nvidia/pytorch:24.01-py3\"\n[templates.b]\nimage = \"docker://nvcr.io#nvidia/tao:5\"\n[templates.c]\nimage = \"ubuntu:22.04\"\n[templates.d]\nimage = \"/lustre/x.sqsh\"\n[templates.e]\n[[templates.e.steps]]\nname = \"model\"\nimage = \"registry.example.org/srv:1\"\ncommand = \"serve\"\n[[templates.e.steps]]\nname = \"eval\"\ncommand = \"eval\"\n";
        let cfg = crate::config::parse(text, std::path::Path::new("c.toml")).unwrap();
        assert_eq!(
            registry_hosts(&cfg),
            ["10.1.2.3", "nvcr.io", "registry.example.org"]
        );
        let none = crate::config::parse("", std::path::Path::new("c.toml")).unwrap();
        assert!(registry_hosts(&none).is_empty());
    }

    #[test]
    fn the_listing_has_hosts_and_mode_never_secrets() {
        assert_eq!(parse_credentials_listing("missing\n"), None);
        assert_eq!(
            parse_credentials_listing("mode 600\nmachine nvcr.io\nmachine 10.1.2.3\n"),
            Some(("600".into(), vec!["nvcr.io".into(), "10.1.2.3".into()]))
        );
    }

    #[test]
    fn the_version_verdict_accepts_22_05_to_26_05_and_names_older_ones() {
        assert_eq!(
            version_verdict("slurm-wlm 22.05.8"),
            Verdict::Ok("22.05 (slurm-wlm 22.05.8)".into())
        );
        assert_eq!(
            version_verdict("slurm 26.05.5"),
            Verdict::Ok("26.05 (slurm 26.05.5)".into())
        );
        for old in ["slurm 21.08.8", "slurm-wlm 20.11.9"] {
            match version_verdict(old) {
                Verdict::Warn(d, _) => assert!(
                    d.contains("older than Slurm 22.05, the oldest slurmdash is tested with"),
                    "{d}"
                ),
                v => panic!("{old}: {v:?}"),
            }
        }
        match version_verdict("bash: sinfo: command not found") {
            Verdict::Warn(d, advice) => {
                assert!(d.starts_with("cannot read a version"), "{d}");
                assert!(advice.contains("22.05 to 26.05"), "{advice}");
            }
            v => panic!("{v:?}"),
        }
    }
}

#[cfg(test)]
mod advice_tests {
    use super::ssh_advice;

    #[test]
    fn the_host_goes_where_the_advice_names_it_and_nowhere_else() {
        let a = ssh_advice("ssh: Could not resolve hostname badhost: Name or service not known")
            .replace("{host}", "badhost");
        assert!(a.contains("(or SLURM_HOSTNAME)"), "{a}");
        let a = ssh_advice("Host key verification failed.").replace("{host}", "badhost");
        assert!(a.contains("run `ssh badhost` once"), "{a}");
        // A login that needs a person: what to run, not "ssh without prompting".
        let a = ssh_advice("cannot connect to h: login needed: the connection opened with a password or one-time code has ended; run `slurmdash login` (... known_hosts; for password or 2FA logins ...)");
        assert!(a.starts_with("run `slurmdash login` in a terminal"), "{a}");
    }
}
