//! `:cluster NAME` never blocks the UI: the new cluster's master is checked on a worker.
//! The check is made to hang (a control socket whose owner accepts and never answers) and
//! the dashboard must keep answering keys while that check is still waiting.

use crate::common;

use std::io::{ErrorKind, Read};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::mpsc;
use std::time::Duration;

use common::tmux::{refreshed, Tmux};
use common::{dev_config, ssh_config};

const LIMIT: Duration = Duration::from_secs(30);

/// True while the peer keeps the connection open (everything it sent is drained).
fn still_open(s: &mut UnixStream) -> bool {
    s.set_nonblocking(true).expect("nonblocking");
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return false,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn a_hanging_master_check_does_not_freeze_the_dashboard() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = dir.path().join("hang.sock");
    let listener = UnixListener::bind(&sock).expect("bind socket");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let _ = tx.send(s);
        }
    });
    let mut cfg = std::fs::read_to_string(dev_config()).expect("dev config");
    cfg.push_str(&format!(
        "\n[clusters.hang]\nhosts = [\"slurmdash-dev\"]\nssh_config = {:?}\ninteractive_login = true\ncontrol_path = {:?}\n",
        ssh_config().display().to_string(),
        sock.display().to_string()
    ));
    let cfg_path = dir.path().join("slurmdash.toml");
    std::fs::write(&cfg_path, cfg).expect("write config");

    let t = Tmux::start(&cfg_path, &[]);
    t.wait("the first refresh", LIMIT, |s| {
        s.contains("slurmdash-dev connected") && refreshed(s)
    });
    t.keys(&[":", "cluster hang", "Enter"]);
    // `ssh -O check` is now talking to a socket that never answers.
    let mut held = rx.recv_timeout(LIMIT).expect("the master check connects");
    t.keys(&["?"]);
    t.wait("the help overlay while the check hangs", LIMIT, |s| {
        s.contains("keys in the queue pane")
    });
    assert!(
        still_open(&mut held),
        "the check had already given up: this proves nothing about blocking"
    );
    t.keys(&["Escape"]);
    let s = t.wait("the switch refused with what to do", LIMIT, |s| {
        s.contains("needs an interactive login")
    });
    assert!(s.contains("slurmdash --cluster hang login"), "{s}");
    assert!(s.contains(" dev "), "still on the dev cluster:\n{s}");
}
