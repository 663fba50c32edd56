//! One SSH master per (cluster, user, host), shared by every slurmdash process and by plain
//! `ssh -S`, at a stable socket in the user's runtime directory; it outlives slurmdash by
//! `persist_secs`. The real binary against the dev cluster, each test with a runtime
//! directory of its own (`XDG_RUNTIME_DIR`) whose masters are ended when the test ends.
//! Times are printed, never asserted.

use crate::common;

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use slurmdash::remote::{Remote, SharedMasters, SshOptions, SshRemote};

const LIMIT: Duration = Duration::from_secs(30);

/// `slurmdash ARGS` with the test's runtime and state directories; fails the test if it fails.
fn run_ok(cfg: &Path, rt: &RuntimeDir, state: &Path, args: &[&str]) -> (Output, Duration) {
    let t0 = Instant::now();
    let out = slurmdash_env(
        cfg,
        args,
        &[
            ("XDG_RUNTIME_DIR", &rt.env()),
            ("SLURMDASH_STATE_DIR", &state.display().to_string()),
        ],
    );
    let took = t0.elapsed();
    assert!(
        out.status.success(),
        "slurmdash {args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    (out, took)
}

fn only_socket(rt: &RuntimeDir) -> PathBuf {
    let socks = rt.sockets();
    assert_eq!(socks.len(), 1, "one master socket: {socks:?}");
    socks[0].clone()
}

#[test]
fn a_second_command_reuses_the_first_ones_master_and_so_can_plain_ssh() {
    let rt = RuntimeDir::new();
    let state = tempfile::tempdir().expect("state");
    let cfg = dev_config_persist(600);
    let (out, cold) = run_ok(&cfg, &rt, state.path(), &["jobs", "--json"]);
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json");
    // slurmdash has exited; its master has not.
    let sock = only_socket(&rt);
    let pid = master_pid(&sock).expect("the master outlives the command");
    assert_eq!(rt.masters(), [pid], "exactly one master");
    let mode = std::fs::metadata(rt.slurmdash_dir()).expect("dir");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(mode.permissions().mode() & 0o777, 0o700);

    let (_, warm) = run_ok(&cfg, &rt, state.path(), &["jobs", "--json"]);
    assert_eq!(
        master_pid(&sock),
        Some(pid),
        "the second command logged in again"
    );
    assert_eq!(rt.masters(), [pid]);
    let (_, cancel) = run_ok(&cfg, &rt, state.path(), &["cancel", "999999999"]);
    assert_eq!(master_pid(&sock), Some(pid), "cancel logged in again");

    // doctor names the socket, and plain ssh runs through the same master.
    let (out, _) = run_ok(&cfg, &rt, state.path(), &["doctor"]);
    let said = text(&out.stdout);
    let line = format!("ssh -S {} slurmdash-dev", sock.display());
    assert!(
        said.contains(&line),
        "doctor does not print `{line}`:\n{said}"
    );
    assert!(said.contains("an open connection answered"), "{said}");
    let out = Command::new("ssh")
        .arg("-S")
        .arg(&sock)
        .args(["-o", "ControlMaster=no", "-o", "BatchMode=yes"])
        .args(["slurmdash-dev", "echo", "through-the-master"])
        .stdin(Stdio::null())
        .output()
        .expect("ssh -S");
    // (Plain ssh shows what the login prints before it too: the welcome of a .cshrc on 24.11.)
    assert!(
        out.status.success() && text(&out.stdout).ends_with("\nthrough-the-master\n")
            || text(&out.stdout) == "through-the-master\n",
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(rt.masters(), [pid]);
    println!(
        "slurmdash jobs: first (new connection) {:.3}s, second (shared master) {:.3}s; cancel {:.3}s",
        cold.as_secs_f64(),
        warm.as_secs_f64(),
        cancel.as_secs_f64()
    );
}

#[test]
fn with_persist_secs_0_nothing_is_left_once_slurmdash_exits() {
    let rt = RuntimeDir::new();
    let state = tempfile::tempdir().expect("state");
    run_ok(&dev_config_persist(0), &rt, state.path(), &["jobs"]);
    wait_until("the master ends after slurmdash", LIMIT, || {
        rt.masters().is_empty() && rt.sockets().is_empty()
    });
}

#[test]
fn processes_starting_at_once_make_one_master() {
    let rt = RuntimeDir::new();
    let state = tempfile::tempdir().expect("state");
    let cfg = dev_config_persist(600);
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_slurmdash"))
                .arg("--config")
                .arg(&cfg)
                .args(["jobs", "--json"])
                .env("XDG_RUNTIME_DIR", rt.env())
                .env("SLURMDASH_STATE_DIR", state.path())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn slurmdash")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().expect("wait");
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let sock = only_socket(&rt);
    let pid = master_pid(&sock).expect("the shared master");
    assert_eq!(rt.masters(), [pid], "more than one master was started");
}

#[test]
fn a_dead_or_hung_socket_is_replaced() {
    let rt = RuntimeDir::new();
    let state = tempfile::tempdir().expect("state");
    let cfg = dev_config_persist(600);
    run_ok(&cfg, &rt, state.path(), &["jobs"]);
    let sock = only_socket(&rt);
    master_exit(&sock);
    wait_until("the master exits", LIMIT, || master_pid(&sock).is_none());

    // A master that died without cleaning up: its socket file, and nothing listening.
    let _ = std::fs::remove_file(&sock);
    drop(UnixListener::bind(&sock).expect("bind"));
    assert!(sock.exists());
    let (_, dead) = run_ok(&cfg, &rt, state.path(), &["jobs"]);
    let pid = master_pid(&sock).expect("a new master on the same socket");
    master_exit(&sock);
    wait_until("the master exits", LIMIT, || rt.masters().is_empty());

    // A master that hangs: connections are accepted and never answered.
    let _ = std::fs::remove_file(&sock);
    let hung = UnixListener::bind(&sock).expect("bind");
    let accepted = Arc::new(AtomicUsize::new(0));
    let seen = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in hung.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            held.push(s);
        }
    });
    let (_, hung_took) = run_ok(&cfg, &rt, state.path(), &["jobs"]);
    assert!(
        accepted.load(Ordering::SeqCst) >= 1,
        "the hung socket was never tried"
    );
    let new_pid = master_pid(&sock).expect("a new master in place of the hung socket");
    assert_ne!(new_pid, pid);
    assert_eq!(rt.masters(), [new_pid]);
    println!(
        "a dead socket cost {:.3}s in all, a hung one {:.3}s (one check timeout)",
        dead.as_secs_f64(),
        hung_took.as_secs_f64()
    );
}

/// An ssh config with the dev hosts and `silent`: a local port that accepts connections and
/// never says a word (a login node whose sshd hangs, or a firewall that drops the traffic).
fn silent_host(dir: &Path) -> (PathBuf, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let seen = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut s in l.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            let _ = s.set_read_timeout(Some(Duration::from_millis(10)));
            let _ = s.read(&mut [0u8; 64]);
            held.push(s);
        }
    });
    let mut cfg = std::fs::read_to_string(ssh_config()).expect("dev ssh config");
    cfg.push_str(&format!(
        "\nHost silent\n  HostName 127.0.0.1\n  Port {port}\n  User sduser\n  BatchMode yes\n"
    ));
    let p = dir.join("ssh_config");
    std::fs::write(&p, cfg).expect("write ssh config");
    (p, accepted)
}

#[test]
fn a_silent_first_host_does_not_hold_up_the_next_and_the_one_that_worked_goes_first() {
    let rt = RuntimeDir::new();
    let state = tempfile::tempdir().expect("state");
    let dir = tempfile::tempdir().expect("tmp");
    let (ssh, accepted) = silent_host(dir.path());
    let cfg = dir.path().join("slurmdash.toml");
    std::fs::write(
        &cfg,
        format!(
            "[clusters.f]\nhosts = [\"silent\", \"slurmdash-dev\"]\nssh_config = {:?}\nconnect_timeout_secs = 10\npersist_secs = 0\n",
            ssh.display().to_string()
        ),
    )
    .expect("write config");
    let (out, first) = run_ok(&cfg, &rt, state.path(), &["jobs", "--json"]);
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json");
    assert!(
        accepted.load(Ordering::SeqCst) >= 1,
        "the silent host was never tried"
    );
    // The attempt on the silent host was cancelled: no ssh for it is left running.
    wait_until("no ssh left for the silent host", LIMIT, || {
        ssh_processes_naming("@silent-").is_empty()
    });
    wait_until("nothing left (persist_secs = 0)", LIMIT, || {
        rt.masters().is_empty()
    });

    // The next run starts with the host that worked. The silent one waits out that host's
    // head start (1 s): on a loaded machine a login may take longer, and then it is tried
    // beside it, but never first (the order is in the debug log).
    let before = accepted.load(Ordering::SeqCst);
    let log = dir.path().join("second.log");
    let log_arg = log.display().to_string();
    let (_, second) = run_ok(
        &cfg,
        &rt,
        state.path(),
        &["--log", &log_arg, "jobs", "--json"],
    );
    let logged = std::fs::read_to_string(&log).expect("debug log");
    let tried: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("connecting: starting a login"))
        .filter_map(|l| l.split("host=").nth(1))
        .collect();
    assert_eq!(
        tried.first().copied(),
        Some("slurmdash-dev"),
        "the host that worked is not tried first:\n{logged}"
    );
    // (a login cancelled early may end before its TCP connection: at most one each)
    let again = accepted.load(Ordering::SeqCst) - before;
    assert!(
        again <= tried.iter().filter(|h| **h == "silent").count(),
        "{again} connection(s) to the silent host that no login of the log accounts for:\n{logged}"
    );
    let memory =
        std::fs::read_to_string(state.path().join("last-hosts.json")).expect("last-hosts.json");
    assert!(memory.contains("\"f\": \"slurmdash-dev\""), "{memory}");
    println!(
        "silent host first, connect_timeout_secs = 10: connected in {:.3}s; the next run (the host that worked first) {:.3}s, the silent host tried {again} time(s) beside it",
        first.as_secs_f64(),
        second.as_secs_f64()
    );
}

/// Every host gets a master started at once (no head start): one wins, and a master started
/// for another (if its login finished) is closed, even with persist_secs: none is in excess.
#[tokio::test]
async fn a_master_started_for_a_host_that_lost_the_race_is_closed() {
    for round in 0..3 {
        let rt = RuntimeDir::new();
        let mut o = SshOptions::new(vec![
            "slurmdash-dev".into(),
            format!("slurmdash-dev-{}", dev_slurm()),
        ]);
        o.ssh_config = Some(ssh_config());
        o.connect_timeout = Duration::from_secs(10);
        o.persist = Duration::from_secs(600);
        o.head_start = Duration::ZERO;
        std::fs::create_dir(rt.slurmdash_dir()).expect("mkdir");
        o.shared = Some(SharedMasters {
            dir: rt.slurmdash_dir(),
            cluster: "race".into(),
            state_dir: None,
        });
        let r = SshRemote::new(o.clone()).expect("remote");
        let out = run(&r, &["hostname"]).await;
        assert!(out.success());
        let winner = r.host().expect("connected");
        let ctl = r.control_path().expect("socket");
        let pid = master_pid(&ctl).expect("the winner's master");
        let loser = o.hosts.iter().find(|h| **h != winner).expect("other host");
        let loser_sock = o.socket_for(loser).expect("socket");
        // The loser's master is closed once the winner is chosen, on a task of its own:
        // on a loaded machine it may take a moment after the first command returns.
        wait_until(
            &format!("round {round}: the loser's master closed"),
            LIMIT,
            || master_pid(&loser_sock).is_none(),
        );
        wait_until("only the winner's master is left", LIMIT, || {
            rt.masters() == [pid]
        });
        println!("round {round}: {winner} won");
        drop(r);
    }
}
