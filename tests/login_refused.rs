//! A login that waiting will not fix (here a host key that is not the one pinned, as after a
//! reinstall or a man in the middle) is tried once, not every few seconds: a laptop that
//! keeps knocking gets its address banned by fail2ban on the login node. The real binary in
//! tmux against the dev cluster's sshd, with a known_hosts file of the test's own that pins a
//! wrong key for the dev host. Each `ssh` slurmdash starts goes through a wrapper first in
//! PATH that logs its arguments: the logins are counted on the client side, since sshd's log
//! cannot tell this test's connections from those of the tests running beside it.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::tmux::Tmux;
use common::*;

/// How long the dashboard is watched with the wrong key pinned.
const WATCH: Duration = Duration::from_secs(120);

/// A directory holding `ssh`, a wrapper that appends its arguments (one line per run) to
/// `log` and then runs the real ssh.
fn ssh_wrapper(dir: &Path, log: &Path) -> PathBuf {
    let out = Command::new("sh")
        .args(["-c", "command -v ssh"])
        .output()
        .expect("sh");
    let real = text(&out.stdout).trim().to_string();
    assert!(real.starts_with('/'), "no ssh in PATH: {real:?}");
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).expect("mkdir bin");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{real}' \"$@\"\n",
        log.display()
    );
    let ssh = bin.join("ssh");
    std::fs::write(&ssh, script).expect("write wrapper");
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

/// The dev config, its ssh config pointing every host at `known_hosts`, which pins a fresh
/// key of the test's own (not the dev sshd's) for the dev host's address.
fn config_with_wrong_host_key(dir: &Path) -> PathBuf {
    let key = dir.join("wrong");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .expect("ssh-keygen");
    assert!(made.success());
    let wrong = std::fs::read_to_string(key.with_extension("pub")).expect("wrong.pub");
    let wrong: Vec<&str> = wrong.split_whitespace().take(2).collect();
    let dev_kh = std::fs::read_to_string(dev_dir().join("ssh/known_hosts")).expect("known_hosts");
    let pinned: String = dev_kh
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|host| format!("{host} {} {}\n", wrong[0], wrong[1]))
        .collect();
    assert!(!pinned.is_empty(), "the dev known_hosts names no host");
    let known_hosts = dir.join("known_hosts");
    std::fs::write(&known_hosts, pinned).expect("write known_hosts");

    let dev_ssh = std::fs::read_to_string(dev_dir().join("ssh/config")).expect("ssh config");
    let ssh: String = dev_ssh
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("UserKnownHostsFile") {
                format!("    UserKnownHostsFile {}\n", known_hosts.display())
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert!(ssh.contains("StrictHostKeyChecking yes"), "{ssh}");
    let ssh_config = dir.join("ssh_config");
    std::fs::write(&ssh_config, ssh).expect("write ssh config");

    let dev = std::fs::read_to_string(dev_config()).expect("dev config");
    let cfg: String = dev
        .lines()
        .map(|l| {
            if l.starts_with("ssh_config") {
                format!("ssh_config = {:?}\n", ssh_config.display().to_string())
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let p = dir.join("slurmdash.toml");
    std::fs::write(&p, cfg).expect("write config");
    p
}

/// Runs of ssh that may open a connection to the login node (everything but `-O` requests
/// to a master on its socket), from the wrapper's log.
fn logins(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.split_whitespace().any(|w| w == "-O"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_changed_host_key_is_tried_once_and_the_screen_says_why_and_what_to_do() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("ssh-runs.log");
    let bin = ssh_wrapper(dir.path(), &log);
    let cfg = config_with_wrong_host_key(dir.path());
    // A runtime directory of its own: no master another test opened is found and reused.
    let rt = RuntimeDir::new();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let xdg = rt.env();
    let t = Tmux::start_with(&cfg, &[], &[("PATH", &path), ("XDG_RUNTIME_DIR", &xdg)]);

    let said = t.wait("the refused login on the screen", T, |s| {
        s.contains("Host key verification failed")
    });
    assert!(
        said.contains("not retried (r: try again)") && said.contains("ssh-keygen -R"),
        "the status bar does not say what to do:\n{said}"
    );
    let start = Instant::now();
    let mut shown = 0;
    let mut looks = 0;
    while start.elapsed() < WATCH {
        std::thread::sleep(Duration::from_secs(2));
        let s = t.screen();
        assert!(!s.contains("panicked"), "{s}");
        looks += 1;
        if s.contains("Host key verification failed") {
            shown += 1;
        }
    }
    let runs = logins(&log);
    println!(
        "wrong host key pinned: {} ssh login(s) in {}s of dashboard ({shown} of {looks} looks at the screen showed the reason)",
        runs.len(),
        WATCH.as_secs()
    );
    assert!(
        !runs.is_empty(),
        "slurmdash never ran ssh: the wrapper was not used"
    );
    assert!(
        runs.len() <= 3,
        "{} logins with a host key that cannot change by waiting:\n{}",
        runs.len(),
        runs.join("\n")
    );
    assert_eq!(shown, looks, "the reason left the screen:\n{}", t.screen());

    // `r` is the user saying "fixed, try again": exactly one more login.
    let before = runs.len();
    t.keys(&["r"]);
    wait_until("one more login after r", T, || logins(&log).len() > before);
    std::thread::sleep(Duration::from_secs(10));
    assert_eq!(
        logins(&log).len(),
        before + 1,
        "r started more than one login:\n{}",
        logins(&log).join("\n")
    );
    let s = t.screen();
    assert!(s.contains("Host key verification failed"), "{s}");
}
