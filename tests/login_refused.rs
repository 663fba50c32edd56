//! A login that waiting will not fix (here a host key that is not the one pinned, as after a
//! reinstall or a man in the middle) is tried once, not every few seconds: a laptop that
//! keeps knocking gets its address banned by fail2ban on the login node. The real binary in
//! tmux against the dev cluster's sshd, with a known_hosts file of the test's own that pins a
//! wrong key for the dev host. The attempts are counted where fail2ban counts them, in
//! sshd's own log: this test's ssh binds a loopback address of its own (`BindAddress
//! 127.77.x.y`), so its connections are told apart from those of the tests beside it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::tmux::Tmux;
use common::*;

/// How long the dashboard is watched with the wrong key pinned.
const WATCH: Duration = Duration::from_secs(120);

/// The dev config, its ssh config pointing every host at `known_hosts`, which pins a fresh
/// key of the test's own (not the dev sshd's) for the dev host's address.
fn config_with_wrong_host_key(dir: &Path, bind: &str) -> PathBuf {
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
                format!(
                    "    UserKnownHostsFile {}\n    BindAddress {bind}\n",
                    known_hosts.display()
                )
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

/// A loopback address of this test's own (all of 127/8 reaches the local sshd).
fn own_address() -> String {
    let p = std::process::id();
    format!("127.77.{}.{}", (p / 250) % 250 + 1, p % 250 + 1)
}

/// The log of the sshd slurmdash logs in to, for this Slurm version.
fn sshd_log() -> PathBuf {
    let d = dev_dir();
    let host_side = d.join("log/sshd.log");
    if host_side.is_file() {
        host_side
    } else {
        d.join("root/dc/log/sshd.log")
    }
}

/// Connections sshd logged from `addr` after byte `from` of its log (`LogLevel VERBOSE`
/// writes "Connection from ADDR port N on …" for each).
fn logins(log: &Path, from: u64, addr: &str) -> Vec<String> {
    let bytes = std::fs::read(log).unwrap_or_default();
    let start = usize::try_from(from).unwrap_or(usize::MAX).min(bytes.len());
    let needle = format!("Connection from {addr} port ");
    String::from_utf8_lossy(&bytes[start..])
        .lines()
        .filter(|l| l.contains(&needle))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_changed_host_key_is_tried_once_and_the_screen_says_why_and_what_to_do() {
    let dir = tempfile::tempdir().expect("tmp");
    let addr = own_address();
    let cfg = config_with_wrong_host_key(dir.path(), &addr);
    let log = sshd_log();
    let from = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    // A runtime directory of its own: no master another test opened is found and reused.
    let rt = RuntimeDir::new();
    let xdg = rt.env();
    let t = Tmux::start_with(&cfg, &[], &[("XDG_RUNTIME_DIR", &xdg)]);

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
    let runs = logins(&log, from, &addr);
    println!(
        "wrong host key pinned: sshd logged {} connection(s) from {addr} in {}s of dashboard ({shown} of {looks} looks at the screen showed the reason)",
        runs.len(),
        WATCH.as_secs()
    );
    assert!(
        !runs.is_empty(),
        "sshd logged no connection from {addr} in {}: the test's address was not used",
        log.display()
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
    wait_until("one more login after r", T, || {
        logins(&log, from, &addr).len() > before
    });
    std::thread::sleep(Duration::from_secs(10));
    assert_eq!(
        logins(&log, from, &addr).len(),
        before + 1,
        "r started more than one login:\n{}",
        logins(&log, from, &addr).join("\n")
    );
    let s = t.screen();
    assert!(s.contains("Host key verification failed"), "{s}");
}
