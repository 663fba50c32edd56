//! The way ssh reaches a login host: straight, or through jump hosts (`ProxyJump`) or a
//! `ProxyCommand`, as `ssh -G` resolves the user's ssh config. An interactive login through
//! a jump host must not bound the banner exchange (the login node's banner comes only after
//! every jump host's prompts are answered); doctor names the jump hosts and the one that
//! asks for a code.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::SshOptions;

/// How ssh reaches a host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Route {
    /// Jump hosts in the order they are passed, outermost first (`ProxyJump a,b`, and the
    /// first one's own `ProxyJump` before it).
    pub jumps: Vec<String>,
    /// A `ProxyCommand` other than the one ssh makes for `ProxyJump`.
    pub proxy_command: Option<String>,
}

impl Route {
    /// Reached through something that may ask a person before the host's banner arrives.
    pub fn is_proxied(&self) -> bool {
        !self.jumps.is_empty() || self.proxy_command.is_some()
    }

    /// " (through jump host bastion)", or "" for a direct route.
    pub fn through(&self) -> String {
        match (self.jumps.as_slice(), &self.proxy_command) {
            ([], None) => String::new(),
            ([], Some(c)) => format!(" (through ProxyCommand `{c}`)"),
            ([one], _) => format!(" (through jump host {one})"),
            (many, _) => format!(" (through jump hosts {})", many.join(" then ")),
        }
    }
}

/// The most nested jump hosts followed (a config where a jump host jumps through itself
/// would otherwise never end).
const MAX_DEPTH: usize = 8;

/// How long `ssh -G` may take: it only reads config files (and runs `Match exec` commands).
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The proxy settings in `ssh -G` output: (ProxyJump hosts, ProxyCommand). Pure.
pub fn parse_ssh_g(text: &str) -> (Vec<String>, Option<String>) {
    let mut jumps = Vec::new();
    let mut command = None;
    for line in text.lines() {
        let Some((key, value)) = line.trim().split_once(' ') else {
            continue;
        };
        let value = value.trim();
        if value.is_empty() || value.eq_ignore_ascii_case("none") {
            continue;
        }
        match key.to_ascii_lowercase().as_str() {
            "proxyjump" => {
                jumps = value
                    .split(',')
                    .map(str::trim)
                    .filter(|j| !j.is_empty())
                    .map(str::to_string)
                    .collect();
            }
            "proxycommand" => command = Some(value.to_string()),
            _ => {}
        }
    }
    (jumps, command)
}

/// A jump host as `ProxyJump` writes it (`[user@]host[:port]` or
/// `ssh://[user@]host[:port]`): (user, host, port). Pure.
pub fn split_jump(spec: &str) -> (Option<&str>, &str, Option<u16>) {
    let rest = spec.strip_prefix("ssh://").unwrap_or(spec);
    let (user, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    // [v6addr]:port, or host:port, or a bare host (an IPv6 address has several colons).
    if let Some(inner) = hostport.strip_prefix('[') {
        if let Some((h, after)) = inner.split_once(']') {
            let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
            return (user, h, port);
        }
    }
    match hostport.split_once(':') {
        Some((h, p)) if !p.contains(':') => match p.parse() {
            Ok(port) => (user, h, Some(port)),
            Err(_) => (user, hostport, None),
        },
        _ => (user, hostport, None),
    }
}

/// Arguments of `ssh -G` for `host` as slurmdash connects to it (its -F, -p and -l).
pub fn resolve_args(opts: &SshOptions, host: &str) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec!["-G".into()];
    if let Some(f) = &opts.ssh_config {
        a.extend(["-F".into(), f.into()]);
    }
    if let Some(p) = opts.port {
        a.extend(["-p".into(), p.to_string().into()]);
    }
    if let Some(u) = &opts.user {
        a.extend(["-l".into(), u.into()]);
    }
    a.push("--".into());
    a.push(host.into());
    a
}

/// Arguments of `ssh -G` for a jump host: ssh gives a jump host only the config file (-F)
/// and the user and port written in the jump spec, never slurmdash's -l, -p or -i.
fn jump_resolve_args(config: Option<&Path>, spec: &str) -> Vec<OsString> {
    let (user, host, port) = split_jump(spec);
    let mut a: Vec<OsString> = vec!["-G".into()];
    if let Some(f) = config {
        a.extend(["-F".into(), f.into()]);
    }
    if let Some(p) = port {
        a.extend(["-p".into(), p.to_string().into()]);
    }
    if let Some(u) = user {
        a.extend(["-l".into(), u.into()]);
    }
    a.push("--".into());
    a.push(host.into());
    a
}

/// Runs `ssh ARGS` (a local call that only reads config) within [`RESOLVE_TIMEOUT`].
fn ssh_g(args: &[OsString]) -> Result<String, String> {
    let mut child = Command::new("ssh")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run ssh -G: {e}"))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < RESOLVE_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "ssh -G took over {}s (a `Match exec` in the ssh config?)",
                    RESOLVE_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("waiting for ssh -G: {e}")),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("reading ssh -G: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ssh -G failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// How ssh reaches `host` with `opts` (blocking, a local call: `ssh -G`, once per jump
/// host whose own config may add an earlier one).
pub fn resolve(opts: &SshOptions, host: &str) -> Result<Route, String> {
    let (jumps, proxy_command) = parse_ssh_g(&ssh_g(&resolve_args(opts, host))?);
    if jumps.is_empty() {
        return Ok(Route {
            jumps,
            proxy_command,
        });
    }
    // `ProxyJump a,b`: ssh reaches b through a (b's own ProxyJump is overridden), and a by
    // its own config, which may name a jump host of its own.
    let mut chain = jumps;
    for _ in 0..MAX_DEPTH {
        let first = &chain[0];
        let (before, _) = parse_ssh_g(&ssh_g(&jump_resolve_args(
            opts.ssh_config.as_deref(),
            first,
        ))?);
        if before.is_empty() || before.iter().any(|b| chain.contains(b)) {
            break;
        }
        chain.splice(0..0, before);
    }
    Ok(Route {
        jumps: chain,
        proxy_command: None,
    })
}

/// What a BatchMode login attempt to one hop showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HopCheck {
    /// Logged in without a prompt.
    NoPrompt,
    /// The key was accepted (or not needed) and the server then wanted a keyboard answer:
    /// a one-time code or a password (`keyboard-interactive`, or `password`).
    AsksForCode(String),
    /// Anything else: ssh's last words.
    Failed(String),
}

/// Reads a failed BatchMode login's stderr. Pure.
pub fn classify_batch_failure(stderr: &str) -> HopCheck {
    let line = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.contains("Permission denied ("));
    if let Some(l) = line {
        let methods = l
            .split_once("Permission denied (")
            .and_then(|(_, m)| m.split_once(')'))
            .map(|(m, _)| m)
            .unwrap_or_default();
        let asks: Vec<&str> = methods
            .split(',')
            .filter(|m| matches!(*m, "keyboard-interactive" | "password"))
            .collect();
        if !asks.is_empty() {
            return HopCheck::AsksForCode(asks.join(","));
        }
    }
    HopCheck::Failed(super::options::tail_of_log(stderr))
}

/// Tries each hop of `route` to `host` in BatchMode, outermost first, until one does not
/// let a BatchMode login in: (hop, what it showed) for each hop tried. No hop can prompt:
/// BatchMode on the hop itself, and an askpass that always fails for the jump hosts ssh
/// starts on the way (they do not get -o options). Blocking; `timeout` bounds each try.
pub fn check_hops(
    opts: &SshOptions,
    host: &str,
    route: &Route,
    timeout: Duration,
) -> Vec<(String, HopCheck)> {
    let mut seen = Vec::new();
    let hops: Vec<&String> = route.jumps.iter().collect();
    for (i, hop) in hops.iter().enumerate() {
        let (user, name, port) = split_jump(hop);
        let mut a: Vec<OsString> = batch_probe_options(timeout);
        if let Some(f) = &opts.ssh_config {
            a.extend(["-F".into(), f.into()]);
        }
        if i > 0 {
            let before: Vec<&str> = hops[..i].iter().map(|s| s.as_str()).collect();
            a.extend(["-J".into(), before.join(",").into()]);
        }
        if let Some(p) = port {
            a.extend(["-p".into(), p.to_string().into()]);
        }
        if let Some(u) = user {
            a.extend(["-l".into(), u.into()]);
        }
        a.extend(["--".into(), name.into(), "true".into()]);
        let check = probe(&a, timeout);
        let go_on = check == HopCheck::NoPrompt;
        seen.push((hop.to_string(), check));
        if !go_on {
            return seen;
        }
    }
    // Every jump host let a BatchMode login in: the login host itself, by its own route.
    let mut a = batch_probe_options(timeout);
    a.extend(resolve_args(opts, host).into_iter().skip(1));
    if let Some(k) = &opts.key_path {
        let end = a.len() - 2;
        a.splice(
            end..end,
            [
                "-i".into(),
                k.into(),
                "-o".into(),
                "IdentitiesOnly=yes".into(),
            ],
        );
    }
    a.push("true".into());
    seen.push((host.to_string(), probe(&a, timeout)));
    seen
}

fn batch_probe_options(timeout: Duration) -> Vec<OsString> {
    let secs = timeout.as_secs().max(1);
    [
        "-o",
        "BatchMode=yes",
        "-o",
        &format!("ConnectTimeout={secs}"),
        "-o",
        "ControlPath=none",
        "-T",
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

fn probe(args: &[OsString], timeout: Duration) -> HopCheck {
    // ssh gives -o options to none of the jump hosts it starts: a forced askpass that fails
    // keeps them from ever asking on the terminal.
    let child = Command::new("ssh")
        .args(args)
        .envs(super::options::NO_PROMPT)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return HopCheck::Failed(format!("cannot run ssh: {e}")),
    };
    let limit = timeout * 3;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return HopCheck::Failed(format!("no answer within {}s", limit.as_secs()));
            }
        }
    }
    match child.wait_with_output() {
        Ok(out) if out.status.success() => HopCheck::NoPrompt,
        Ok(out) => classify_batch_failure(&String::from_utf8_lossy(&out.stderr)),
        Err(e) => HopCheck::Failed(format!("reading ssh: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_g_proxy_settings() {
        let text = "user sduser\nhostname 10.0.0.2\nproxyjump bastion,u@mid:2222\nport 22\n";
        assert_eq!(
            parse_ssh_g(text),
            (vec!["bastion".into(), "u@mid:2222".into()], None)
        );
        assert_eq!(parse_ssh_g("hostname h\nport 22\n"), (vec![], None));
        assert_eq!(
            parse_ssh_g("proxycommand nc -X 5 -x socks:1080 %h %p\n"),
            (vec![], Some("nc -X 5 -x socks:1080 %h %p".into()))
        );
        assert_eq!(parse_ssh_g("proxyjump none\n"), (vec![], None));
    }

    #[test]
    fn jump_specs() {
        assert_eq!(split_jump("bastion"), (None, "bastion", None));
        assert_eq!(split_jump("me@gw:2222"), (Some("me"), "gw", Some(2222)));
        assert_eq!(
            split_jump("ssh://me@gw.example.org:22"),
            (Some("me"), "gw.example.org", Some(22))
        );
        assert_eq!(split_jump("[fd00::1]:22"), (None, "fd00::1", Some(22)));
        assert_eq!(split_jump("fd00::1"), (None, "fd00::1", None));
    }

    #[test]
    fn which_hop_asks() {
        assert_eq!(
            classify_batch_failure(
                "Warning: x\r\nsduser@10.220.22.201: Permission denied (keyboard-interactive).\r\n"
            ),
            HopCheck::AsksForCode("keyboard-interactive".into())
        );
        assert_eq!(
            classify_batch_failure("me@h: Permission denied (publickey,password)."),
            HopCheck::AsksForCode("password".into())
        );
        assert!(matches!(
            classify_batch_failure("me@h: Permission denied (publickey)."),
            HopCheck::Failed(_)
        ));
        assert!(matches!(
            classify_batch_failure("ssh: connect to host h port 22: Connection refused"),
            HopCheck::Failed(m) if m.contains("Connection refused")
        ));
    }

    #[test]
    fn routes_say_how() {
        assert_eq!(Route::default().through(), "");
        let r = Route {
            jumps: vec!["bastion".into()],
            proxy_command: None,
        };
        assert!(r.is_proxied());
        assert_eq!(r.through(), " (through jump host bastion)");
        let r = Route {
            jumps: vec!["a".into(), "b".into()],
            proxy_command: None,
        };
        assert_eq!(r.through(), " (through jump hosts a then b)");
    }
}
