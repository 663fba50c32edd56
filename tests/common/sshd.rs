//! A private sshd for tests that stop and start the login node: a copy of the dev cluster's
//! sshd (same users, host key and Slurm) on a port of its own, so the shared one on 22022
//! is never touched. Include with `#[path = "common/sshd.rs"] mod sshd;`.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The ssh alias of the private sshd in [`OwnSshd::ssh_config`].
pub const ALIAS: &str = "own-sshd";

pub struct OwnSshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// A client config with the alias [`ALIAS`] (key, pinned host key, BatchMode).
    pub ssh_config: PathBuf,
    sshd_config: PathBuf,
    child: Option<Child>,
}

fn dev_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".dev-cluster")
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("addr").port()
}

impl OwnSshd {
    /// Starts it and waits until it accepts connections.
    pub fn start() -> OwnSshd {
        let dev = dev_dir();
        let dir = tempfile::Builder::new()
            .prefix("sdtest-sshd")
            .tempdir()
            .expect("tempdir");
        let port = free_port();
        let key = dir.path().join("host_key");
        std::fs::copy(dev.join("sshd/ssh_host_ed25519_key"), &key).expect("copy host key");
        let template = std::fs::read_to_string(dev.join("sshd/sshd_config"))
            .expect("dev sshd_config (scripts/dev-cluster up)");
        let mut cfg = String::new();
        for line in template.lines() {
            let word = line.split_whitespace().next().unwrap_or("");
            match word {
                "Port" => cfg.push_str(&format!("Port {port}\n")),
                "HostKey" => cfg.push_str(&format!("HostKey {}\n", key.display())),
                "PidFile" => cfg.push_str(&format!(
                    "PidFile {}\n",
                    dir.path().join("sshd.pid").display()
                )),
                _ => {
                    cfg.push_str(line);
                    cfg.push('\n');
                }
            }
        }
        let sshd_config = dir.path().join("sshd_config");
        std::fs::write(&sshd_config, cfg).expect("write sshd_config");

        let pubkey =
            std::fs::read_to_string(dev.join("sshd/ssh_host_ed25519_key.pub")).expect("host pub");
        let pubkey: Vec<&str> = pubkey.split_whitespace().take(2).collect();
        let known = dir.path().join("known_hosts");
        std::fs::write(&known, format!("[127.0.0.1]:{port} {}\n", pubkey.join(" ")))
            .expect("known_hosts");
        let client = format!(
            "Host {ALIAS}\n    HostName 127.0.0.1\n    Port {port}\n    User sduser\n    IdentityFile {}\n    IdentitiesOnly yes\n    UserKnownHostsFile {}\n    StrictHostKeyChecking yes\n    BatchMode yes\n    ConnectTimeout 5\n",
            dev.join("ssh/id_ed25519").display(),
            known.display()
        );
        let ssh_config = dir.path().join("ssh_config");
        std::fs::write(&ssh_config, client).expect("ssh_config");
        let mut s = OwnSshd {
            dir,
            port,
            ssh_config,
            sshd_config,
            child: None,
        };
        s.spawn();
        s
    }

    fn spawn(&mut self) {
        let log = self.dir.path().join("sshd.log");
        let child = Command::new("/usr/sbin/sshd")
            .arg("-D")
            .arg("-f")
            .arg(&self.sshd_config)
            .arg("-E")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start /usr/sbin/sshd");
        self.child = Some(child);
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "own sshd did not listen on {}: {}",
                self.port,
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The login node goes away: the listener and every connection it serves are killed,
    /// so open masters see their connection drop and new ones are refused.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id();
        for p in descendants(pid) {
            // SAFETY: kill() has no memory-safety preconditions.
            unsafe {
                libc::kill(p as i32, libc::SIGKILL);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "sshd still listens"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The login node is back, on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for OwnSshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Parent pid of `pid` from /proc/PID/stat (the field after the parenthesised name).
fn ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Every live process below `root`.
pub fn descendants(root: u32) -> Vec<u32> {
    let all: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter_map(|p| Some((p, ppid(p)?)))
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (child, parent) in &all {
            if *parent == p && !out.contains(child) {
                out.push(*child);
                frontier.push(*child);
            }
        }
    }
    out
}
