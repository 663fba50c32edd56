//! The SSH transport against the dev cluster's real sshd (`scripts/dev-cluster up`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use slurmdash::remote::{
    control_master_pid, ConnState, HostKeyCheck, ReadPos, Remote, RemoteError, SshOptions,
    SshRemote,
};

const T: Duration = Duration::from_secs(20);

fn dev_config() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".dev-cluster/ssh/config");
    assert!(
        p.is_file(),
        "{} is missing: run `scripts/dev-cluster up` first (these tests need the dev cluster's sshd)",
        p.display()
    );
    p
}

/// The user's default connect timeout (10 s): tests about the timeout itself set their own.
fn opts(hosts: &[&str], config: &Path) -> SshOptions {
    let mut o = SshOptions::new(hosts.iter().map(|s| s.to_string()).collect());
    o.ssh_config = Some(config.to_path_buf());
    o
}

fn dev() -> SshRemote {
    SshRemote::new(opts(&["slurmdash-dev"], &dev_config())).expect("remote")
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

async fn ok(r: &SshRemote, argv: &[&str], stdin: Option<&[u8]>) -> slurmdash::remote::RunOutput {
    r.run(&s(argv), stdin, T)
        .await
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
}

/// A scratch directory on the cluster, removed at the end by the caller.
async fn remote_tmpdir(r: &SshRemote) -> String {
    let out = ok(r, &["mktemp", "-d", "/tmp/sdtransport.XXXXXX"], None).await;
    assert!(out.success(), "mktemp: {}", out.stderr_lossy());
    out.stdout_lossy().trim().to_string()
}

/// TCP connections from `pid` to the dev sshd, as `ss` lists them.
fn ssh_connections_of(pid: u32) -> usize {
    let out = Command::new("ss")
        .args(["-Htnp", "state", "established", "dport", "= :22022"])
        .output()
        .expect("ss");
    let needle = format!("pid={pid},");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(&needle))
        .count()
}

#[tokio::test]
async fn hostile_arguments_round_trip_byte_exact() {
    let r = dev();
    let marker = format!("/tmp/sd-pwned-{}", std::process::id());
    let hostile = [
        "a b",
        &format!("$(touch {marker})"),
        &format!("`touch {marker}`"),
        ";",
        "; touch x &&",
        "'",
        "\"",
        "it's \"quoted\"",
        "ünïcødé ✓ 日本",
        "line1\nline2",
        "",
        "*",
        "!event",
        "$HOME",
        "--",
        "-n",
        "back\\slash",
        "tab\there",
    ];
    let mut argv = vec!["printf", "%s\\0"];
    argv.extend(hostile.iter().copied());
    let out = ok(&r, &argv, None).await;
    let mut want = Vec::new();
    for h in hostile {
        want.extend_from_slice(h.as_bytes());
        want.push(0);
    }
    assert_eq!(out.stdout, want, "stderr: {}", out.stderr_lossy());
    assert!(out.success());
    assert!(
        !Path::new(&marker).exists(),
        "an argument was executed by the remote shell"
    );
}

#[tokio::test]
async fn stdin_reaches_the_command_binary_intact() {
    let r = dev();
    let data: Vec<u8> = (0..(1 << 20)).map(|i| (i % 251) as u8).collect();
    let out = ok(&r, &["cat"], Some(&data)).await;
    assert_eq!(out.stdout.len(), data.len());
    assert!(out.stdout == data, "stdin came back altered");
    let out = ok(&r, &["wc", "-c"], Some(b"\xff\xfe\0x")).await;
    assert_eq!(out.stdout_lossy().trim(), "4");
    let st = r.stats();
    assert!(st.bytes_out >= data.len() as u64 && st.bytes_in >= data.len() as u64);
    assert!(st.last_rtt.is_some());
}

#[tokio::test]
async fn exit_codes_are_not_transport_errors() {
    let r = dev();
    let out = ok(&r, &["sh", "-c", "echo out; echo err >&2; exit 3"], None).await;
    assert_eq!(
        (
            out.code,
            out.stdout_lossy().as_str(),
            out.stderr_lossy().as_str()
        ),
        (Some(3), "out\n", "err\n")
    );
    assert!(!out.success());
    // 255 is also ssh's own failure code: with a healthy master it is the command's.
    assert_eq!(
        ok(&r, &["sh", "-c", "exit 255"], None).await.code,
        Some(255)
    );
    let out = ok(&r, &["no-such-command-xyz"], None).await;
    assert_eq!(out.code, Some(127), "{}", out.stderr_lossy());
    assert_eq!(r.stats().connects, 1);
}

#[tokio::test]
async fn timeout_abandons_the_command_and_the_session_survives() {
    let r = dev();
    ok(&r, &["true"], None).await;
    let t0 = Instant::now();
    let e = r
        .run(&s(&["sleep", "31.7"]), None, Duration::from_secs(1))
        .await
        .expect_err("must time out");
    let took = t0.elapsed();
    assert!(matches!(e, RemoteError::Timeout { .. }), "{e}");
    assert!(e.to_string().contains("sleep 31.7") && e.to_string().contains("slurmdash-dev"));
    // Generous (expected ~1 s): a command that were not abandoned would take 31.7 s.
    assert!(took < Duration::from_secs(20), "timeout took {took:?}");
    assert_eq!(
        ok(&r, &["echo", "still"], None).await.stdout_lossy(),
        "still\n"
    );
    assert_eq!(r.stats().connects, 1);
    // The abandoned command does not linger on the login node.
    let mut gone = false;
    for _ in 0..50 {
        let ps = ok(&r, &["ps", "-u", "sduser", "-o", "args="], None).await;
        if !ps.stdout_lossy().lines().any(|l| l.trim() == "sleep 31.7") {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the timed-out command still runs on the cluster");
    println!(
        "timeout returned after {took:?}; remote process ended after ~{:?}",
        t0.elapsed()
    );
}

#[tokio::test]
async fn read_file_offset_tail_truncation_and_errors() {
    let r = dev();
    let dir = remote_tmpdir(&r).await;
    let path = format!("{dir}/log $(touch x); 'q'");
    let mut content = b"line one\n".to_vec();
    content.extend_from_slice(&[0xff, 0xfe, 0x00, 0x80, b'\n']);
    content.extend_from_slice("héllo\n".as_bytes());
    let w = ok(
        &r,
        &["sh", "-c", "cat > \"$1\"", "sh", &path],
        Some(&content),
    )
    .await;
    assert!(w.success(), "{}", w.stderr_lossy());
    let size = content.len() as u64;

    let c = r
        .read_file(&path, ReadPos::Offset(0), 1 << 20)
        .await
        .expect("all");
    assert_eq!((c.offset, c.size), (0, size));
    assert!(c.data == content, "binary content altered");

    let c = r
        .read_file(&path, ReadPos::Offset(5), 4)
        .await
        .expect("slice");
    assert_eq!((c.offset, c.data.as_slice()), (5, &b"one\n"[..]));
    assert_eq!(c.next_offset(), 9);

    let c = r
        .read_file(&path, ReadPos::Tail(7), 1 << 20)
        .await
        .expect("tail");
    assert_eq!(
        (c.offset, c.data.as_slice()),
        (size - 7, "héllo\n".as_bytes())
    );

    let c = r
        .read_file(&path, ReadPos::Offset(size), 100)
        .await
        .expect("at end");
    assert!(c.data.is_empty() && !c.truncated());

    // The log was rotated/truncated behind the reader: size < offset is visible.
    ok(&r, &["sh", "-c", "printf new > \"$1\"", "sh", &path], None).await;
    let c = r
        .read_file(&path, ReadPos::Offset(size), 100)
        .await
        .expect("truncated");
    assert!(c.truncated(), "{c:?}");
    assert_eq!(c.size, 3);

    let e = r
        .read_file(&format!("{dir}/missing"), ReadPos::Offset(0), 10)
        .await
        .expect_err("missing");
    assert!(matches!(e, RemoteError::NotFound { .. }), "{e}");

    let secret = format!("{dir}/secret");
    ok(
        &r,
        &[
            "sh",
            "-c",
            "echo s > \"$1\" && chmod 000 \"$1\"",
            "sh",
            &secret,
        ],
        None,
    )
    .await;
    let e = r
        .read_file(&secret, ReadPos::Offset(0), 10)
        .await
        .expect_err("denied");
    assert!(matches!(e, RemoteError::PermissionDenied { .. }), "{e}");

    let closed = format!("{dir}/closed");
    ok(
        &r,
        &[
            "sh",
            "-c",
            "mkdir \"$1\" && echo s > \"$1/f\" && chmod 000 \"$1\"",
            "sh",
            &closed,
        ],
        None,
    )
    .await;
    let e = r
        .read_file(&format!("{closed}/f"), ReadPos::Offset(0), 10)
        .await
        .expect_err("dir denied");
    assert!(matches!(e, RemoteError::PermissionDenied { .. }), "{e}");

    let e = r
        .read_file(&dir, ReadPos::Offset(0), 10)
        .await
        .expect_err("dir");
    assert!(matches!(e, RemoteError::NotRegularFile { .. }), "{e}");
    assert!(e.to_string().contains(&dir));

    ok(&r, &["chmod", "-R", "u+rwx", &dir], None).await;
    ok(&r, &["rm", "-rf", &dir], None).await;
}

#[tokio::test]
async fn tail_of_a_1gb_file_reads_only_the_end() {
    let r = dev();
    let dir = remote_tmpdir(&r).await;
    let big = format!("{dir}/big");
    let mk = ok(
        &r,
        &[
            "sh",
            "-c",
            "truncate -s 1G \"$1\" && printf END >> \"$1\"",
            "sh",
            &big,
        ],
        None,
    )
    .await;
    assert!(mk.success(), "{}", mk.stderr_lossy());
    let t0 = Instant::now();
    let c = r
        .read_file(&big, ReadPos::Tail(3), 1 << 20)
        .await
        .expect("tail");
    let took = t0.elapsed();
    assert_eq!(
        (c.offset, c.data.as_slice(), c.size),
        ((1 << 30), &b"END"[..], (1 << 30) + 3)
    );
    let c = r
        .read_file(&big, ReadPos::Offset(1 << 30), 2)
        .await
        .expect("offset");
    assert_eq!(c.data, b"EN");
    println!("tail of a 1 GiB file: {took:?}");
    ok(&r, &["rm", "-rf", &dir], None).await;
}

/// Execs a new connection may spend on probes of the login node before any command.
const MAX_PROBES: u64 = 3;

#[tokio::test]
async fn many_commands_share_one_master_and_one_tcp_connection() {
    let r = dev();
    let t0 = Instant::now();
    ok(&r, &["true"], None).await;
    let first = t0.elapsed();
    // What connecting cost beyond the command itself: the probes a new connection runs.
    let setup = r.stats().execs - 1;
    let ctl = r.control_path().expect("control path");
    let pid = control_master_pid(&ctl).await.expect("master pid");
    assert_eq!(ssh_connections_of(pid), 1);
    let t1 = Instant::now();
    for i in 0..30 {
        let out = ok(&r, &["echo", &i.to_string()], None).await;
        assert_eq!(out.stdout_lossy(), format!("{i}\n"));
    }
    let per = t1.elapsed() / 30;
    let shared = std::sync::Arc::new(r);
    let mut set = tokio::task::JoinSet::new();
    for i in 0..10 {
        let r = shared.clone();
        set.spawn(async move { r.run(&s(&["echo", &i.to_string()]), None, T).await });
    }
    while let Some(out) = set.join_next().await {
        assert!(out.expect("task").expect("concurrent run").success());
    }
    let r = shared;
    assert_eq!(
        control_master_pid(&ctl).await,
        Some(pid),
        "master was replaced"
    );
    assert_eq!(ssh_connections_of(pid), 1, "more than one TCP connection");
    let st = r.stats();
    // One connection served all 41 commands: a second would mean a command reconnected
    // (a new master, another TCP handshake and login on the cluster).
    assert_eq!(st.connects, 1, "{st:?}");
    // Connecting runs a few probes (`timeout --version` today), not one per command.
    assert!(setup <= MAX_PROBES, "{setup} execs to set up a connection");
    // Beyond those, each of the 41 commands was exactly one exec through it: fewer would
    // mean a command did not go through (or was not counted in :stats), more that a command
    // ran twice (a retry of one that had succeeded) or cost an extra round trip.
    const COMMANDS: u64 = 41;
    assert_eq!(st.execs - st.connects * setup, COMMANDS, "{st:?}");
    assert_eq!(
        r.state(),
        ConnState::Connected {
            host: "slurmdash-dev".into()
        }
    );
    println!("first command (connect + exec): {first:?}; later commands: {per:?} each");
}

/// An ssh config with the dev hosts plus a refusing and a silent host.
fn failover_config(dir: &Path, silent_port: u16) -> PathBuf {
    let cfg = dir.join("config");
    let text = format!(
        "Include {dev}\n\nHost sd-refuse\n  HostName 127.0.0.1\n  Port 1\n\n\
         Host sd-silent\n  HostName 127.0.0.1\n  Port {silent_port}\n\n\
         Host sd-unknown-key\n  HostName 127.0.0.1\n  Port 22022\n  User sduser\n  UserKnownHostsFile {kh}\n  BatchMode yes\n",
        kh = dir.join("empty_known_hosts").display(),
        dev = dev_config().display()
    );
    std::fs::write(dir.join("empty_known_hosts"), "").expect("known_hosts");
    std::fs::write(&cfg, text).expect("config");
    cfg
}

/// Accepts TCP connections and never says a word; counts the connections.
async fn silent_listener() -> (
    u16,
    tokio::task::JoinHandle<()>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = l.local_addr().expect("addr").port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = accepted.clone();
    let h = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = l.accept().await {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(sock);
        }
    });
    (port, h, accepted)
}

#[tokio::test]
async fn failover_skips_refusing_and_silent_hosts() {
    dev_config();
    let tmp = tempfile::tempdir().expect("tmp");
    let (port, listener, accepted) = silent_listener().await;
    let cfg = failover_config(tmp.path(), port);
    // The default connect timeout: the good host logs in within its limit (22 s) on a
    // loaded machine. That the silent host costs only its head start is the unit test
    // `remote::failover::tests::a_silent_host_costs_its_head_start_not_the_connect_timeout`.
    let o = opts(&["sd-refuse", "sd-silent", "slurmdash-dev"], &cfg);
    let silent_limit = o.connect_timeout * 2 + Duration::from_secs(2);
    let r = SshRemote::new(o).expect("remote");
    let t0 = Instant::now();
    let out = ok(&r, &["hostname"], None).await;
    let took = t0.elapsed();
    assert!(out.success());
    assert_eq!(r.host().as_deref(), Some("slurmdash-dev"));
    // Expected ~1.3 s (the silent host's head start, then the good one beside it); a silent
    // host waited on without a limit would hang for good.
    assert!(
        took < silent_limit,
        "failover took {took:?}, more than a host's whole login limit ({silent_limit:?})"
    );
    assert!(
        accepted.load(std::sync::atomic::Ordering::SeqCst) >= 1,
        "the silent host was not tried"
    );
    println!("failover refuse+silent+good (head start 1 s, connect timeout 10 s): {took:?}");

    // Refusing host alone: fails at once with a message naming it; next try backs off.
    // A long connect timeout, so that "at once" is told from "after the timeout" with room
    // to spare on a loaded machine.
    let mut o = opts(&["sd-refuse"], &cfg);
    o.connect_timeout = Duration::from_secs(30);
    let r = SshRemote::new(o).expect("remote");
    let t0 = Instant::now();
    let e = r.run(&s(&["true"]), None, T).await.expect_err("refused");
    println!("refused host failed after {:?}", t0.elapsed());
    assert!(t0.elapsed() < Duration::from_secs(15));
    assert!(
        matches!(e, RemoteError::Connect { .. }) && e.to_string().contains("sd-refuse"),
        "{e}"
    );
    assert!(
        matches!(r.state(), ConnState::Reconnecting { attempt: 1, .. }),
        "{:?}",
        r.state()
    );
    // The next command waits out the backoff (0.5 s) before trying again.
    let t0 = Instant::now();
    r.run(&s(&["true"]), None, T)
        .await
        .expect_err("still refused");
    assert!(
        t0.elapsed() >= Duration::from_millis(400),
        "{:?}",
        t0.elapsed()
    );
    assert!(
        matches!(r.state(), ConnState::Reconnecting { attempt: 2, .. }),
        "{:?}",
        r.state()
    );
    // A caller that cannot wait that long gets an error at once, saying when the next try is.
    let e = r
        .run(&s(&["true"]), None, Duration::from_millis(10))
        .await
        .expect_err("backing off");
    assert!(e.to_string().contains("next attempt in"), "{e}");
    listener.abort();
}

#[tokio::test]
async fn unknown_host_key_is_refused_not_accepted() {
    dev_config();
    let tmp = tempfile::tempdir().expect("tmp");
    let cfg = failover_config(tmp.path(), 1);
    let mut o = opts(&["sd-unknown-key"], &cfg);
    o.host_key_check = HostKeyCheck::Strict;
    let r = SshRemote::new(o).expect("remote");
    let e = r
        .run(&s(&["true"]), None, T)
        .await
        .expect_err("must refuse");
    assert!(
        e.to_string().contains("Host key verification failed"),
        "{e}"
    );
    assert!(
        matches!(r.state(), ConnState::Failed { .. }),
        "{:?}",
        r.state()
    );
    let kh = std::fs::read_to_string(tmp.path().join("empty_known_hosts")).expect("kh");
    assert!(kh.is_empty(), "a host key was learnt silently");
}

#[tokio::test]
async fn killed_master_is_replaced_on_the_next_command() {
    let r = dev();
    ok(&r, &["true"], None).await;
    let ctl = r.control_path().expect("ctl");
    let pid = control_master_pid(&ctl).await.expect("pid");
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let out = ok(&r, &["echo", "back"], None).await;
    assert_eq!(out.stdout_lossy(), "back\n");
    assert_eq!(r.stats().connects, 2);
    let new_pid = control_master_pid(&r.control_path().expect("ctl"))
        .await
        .expect("pid");
    assert_ne!(new_pid, pid);

    // A master told to exit (`ssh -O exit`) is replaced the same way.
    let ctl = r.control_path().expect("ctl");
    let st = Command::new("ssh")
        .arg("-S")
        .arg(&ctl)
        .args(["-O", "exit", "none"])
        .output()
        .expect("ssh -O exit");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(
        ok(&r, &["echo", "again"], None).await.stdout_lossy(),
        "again\n"
    );
    assert_eq!(r.stats().connects, 3);
    assert_eq!(
        r.state(),
        ConnState::Connected {
            host: "slurmdash-dev".into()
        }
    );
}

#[tokio::test]
async fn attaches_to_a_master_started_outside() {
    let cfg = dev_config();
    let tmp = tempfile::tempdir().expect("tmp");
    let sock = tmp.path().join("login.sock");
    // What `slurmdash login` does in the user's terminal, minus the prompts.
    let st = Command::new("ssh")
        .args(["-M", "-N", "-f", "-o", "ControlPersist=yes", "-S"])
        .arg(&sock)
        .arg("-F")
        .arg(&cfg)
        .arg("slurmdash-dev")
        .status()
        .expect("ssh -M");
    assert!(st.success());
    let pid = control_master_pid(&sock).await.expect("master pid");

    let mut o = opts(&["slurmdash-dev"], &cfg);
    o.control_path = Some(sock.clone());
    let r = SshRemote::new(o.clone()).expect("remote");
    for _ in 0..5 {
        ok(&r, &["true"], None).await;
    }
    assert_eq!(r.control_path(), Some(sock.clone()));
    assert_eq!(
        control_master_pid(&sock).await,
        Some(pid),
        "did not reuse the user's master"
    );
    assert_eq!(ssh_connections_of(pid), 1);
    drop(r);
    assert_eq!(
        control_master_pid(&sock).await,
        Some(pid),
        "dropping the remote closed the user's master"
    );

    // The user's master dies: a key-based login can stand in at the same socket.
    Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = SshRemote::new(o).expect("remote");
    assert_eq!(ok(&r, &["echo", "x"], None).await.stdout_lossy(), "x\n");
    let new_pid = control_master_pid(&sock).await.expect("replacement master");
    assert_ne!(new_pid, pid);
    Command::new("ssh")
        .arg("-S")
        .arg(&sock)
        .args(["-O", "exit", "none"])
        .output()
        .expect("exit");
}

#[tokio::test]
async fn connection_dropped_mid_command_then_recovered() {
    let r = std::sync::Arc::new(dev());
    ok(&r, &["true"], None).await;
    let ctl = r.control_path().expect("ctl");
    let pid = control_master_pid(&ctl).await.expect("pid");
    let in_flight = {
        let r = r.clone();
        tokio::spawn(async move { r.run(&s(&["sleep", "5"]), None, T).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The server side of our connection goes away (as on an sshd restart or network drop).
    let port = master_local_port(pid).expect("master's local port");
    let out = Command::new("ss")
        .args(["-K", "-tn", "state", "established", "dport", "= :22022"])
        .args(["sport", &format!("= :{port}")])
        .output()
        .expect("ss -K");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e = in_flight.await.expect("task").expect_err("dropped");
    assert!(matches!(e, RemoteError::Disconnected { .. }), "{e}");
    assert!(e.to_string().contains("may or may not have run"), "{e}");
    assert!(
        matches!(r.state(), ConnState::Reconnecting { .. }),
        "{:?}",
        r.state()
    );
    assert_eq!(ok(&r, &["echo", "up"], None).await.stdout_lossy(), "up\n");
    assert_eq!(r.stats().connects, 2);
}

/// Local port of the master's TCP connection to the dev sshd.
fn master_local_port(pid: u32) -> Option<u16> {
    let out = Command::new("ss")
        .args(["-Htnp", "state", "established", "dport", "= :22022"])
        .output()
        .ok()?;
    let needle = format!("pid={pid},");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains(&needle))?;
    let local = line.split_whitespace().nth(2)?;
    local.rsplit(':').next()?.parse().ok()
}

#[tokio::test]
async fn interactive_login_starts_a_reusable_master() {
    dev_config();
    let tmp = tempfile::tempdir().expect("tmp");
    let mut o = opts(
        &["sd-refuse", "slurmdash-dev"],
        &failover_config(tmp.path(), 1),
    );
    o.control_path = Some(tmp.path().join("c.sock"));
    // The dev host needs no prompt, so this runs unattended; a real user answers here.
    let login = o.clone();
    let first = tokio::task::spawn_blocking(move || slurmdash::remote::interactive_login(&login))
        .await
        .expect("join")
        .expect("login");
    let ctl = first.socket.clone();
    assert_eq!(Some(&ctl), o.control_path.as_ref());
    assert_eq!(first.host, "slurmdash-dev");
    let pid = control_master_pid(&ctl).await.expect("master after login");
    let again = o.clone();
    let second = tokio::task::spawn_blocking(move || slurmdash::remote::interactive_login(&again))
        .await
        .expect("join")
        .expect("second login");
    assert_eq!(
        control_master_pid(&ctl).await,
        Some(pid),
        "login was not reused"
    );
    drop(second);
    let r = SshRemote::new(o).expect("remote");
    r.keep(first);
    assert_eq!(ok(&r, &["echo", "hi"], None).await.stdout_lossy(), "hi\n");
    assert_eq!(control_master_pid(&ctl).await, Some(pid));
    assert!(r.reused(), "the remote started a master of its own");
    drop(r);
    Command::new("ssh")
        .arg("-S")
        .arg(&ctl)
        .args(["-O", "exit", "none"])
        .output()
        .expect("exit");
}

#[tokio::test]
async fn output_past_the_cap_ends_the_remote_command_with_a_clear_error() {
    let mut o = opts(&["slurmdash-dev"], &dev_config());
    o.max_output = 1 << 20;
    let r = SshRemote::new(o).expect("remote");
    let marker = format!("sdcap-{}", std::process::id());
    // Endless output on the login node: ended at the cap, well before the timeout.
    let e = r
        .run(&s(&["sh", "-c", &format!("exec yes {marker}")]), None, T)
        .await
        .expect_err("capped");
    assert!(
        matches!(e, RemoteError::TooMuchOutput { limit, .. } if limit == 1 << 20),
        "{e}"
    );
    let msg = e.to_string();
    assert!(msg.contains("printed more than 1 MiB"), "{msg}");
    assert!(msg.contains("yes sdcap-"), "names the command: {msg}");
    // The command does not run on: `yes` gets SIGPIPE once the channel is gone.
    let start = Instant::now();
    loop {
        let out = ok(&r, &["pgrep", "-f", &format!("^yes {marker}")], None).await;
        if !out.success() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "`yes {marker}` still runs on the login node"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The connection is fine, and exactly the cap is accepted.
    let out = ok(&r, &["head", "-c", "1048576", "/dev/zero"], None).await;
    assert_eq!(out.stdout.len(), 1 << 20);
    assert_eq!(r.stats().connects, 1, "the master survived");
}

/// `run_into` hands a large stdout on in pieces as it arrives: together exactly what `run`
/// gathers, without what the account's `.bashrc` prints around every command; and endless
/// output ends at the cap as it does for `run`.
#[tokio::test]
async fn streamed_output_arrives_in_pieces_without_the_logins_lines_and_is_capped() {
    let mut o = opts(&["slurmdash-dev-bashrc"], &dev_config());
    o.max_output = 4 << 20;
    let r = SshRemote::new(o).expect("remote");
    let argv = s(&["seq", "1", "400000"]);
    let whole = r.run(&argv, None, T).await.expect("run");
    assert!(whole.success());
    assert!(whole.stdout.len() > 2 << 20, "{}", whole.stdout.len());
    let (mut got, mut pieces) = (Vec::new(), 0);
    let out = r
        .run_into(&argv, T, &mut |p: &[u8]| {
            got.extend_from_slice(p);
            pieces += 1;
        })
        .await
        .expect("run_into");
    assert!(out.success(), "{}", out.stderr_lossy());
    assert!(out.stdout.is_empty());
    assert!(got == whole.stdout, "the streamed bytes differ from run's");
    assert!(pieces > 4, "{pieces} pieces");
    assert!(String::from_utf8_lossy(&got).starts_with("1\n2\n"));

    let mut given = 0usize;
    let e = r
        .run_into(
            &s(&["sh", "-c", "exec yes sdstream"]),
            T,
            &mut |p: &[u8]| given += p.len(),
        )
        .await
        .expect_err("capped");
    assert!(
        matches!(e, RemoteError::TooMuchOutput { limit, .. } if limit == 4 << 20),
        "{e}"
    );
    assert!(given <= (4 << 20) + (64 << 10), "{given} bytes handed on");
}
