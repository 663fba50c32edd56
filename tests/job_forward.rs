//! A local port to what a running job serves on its node: `slurmdash forward` over the open
//! SSH connection, checked with a real HTTP server in a job on the dev cluster.

use crate::common;

use std::io::{BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::tmux::rand_suffix;
use common::{
    dev_config, forwarding_port, http_get, page_through_forward, remote, run, sbatch,
    wait_job_running,
};
use slurmdash::remote::Remote;

const LIMIT: Duration = Duration::from_secs(60);

/// A 3-minute job named `tag` that serves an index.html holding `marker` on `port` with
/// Python's http.server (`python`: the interpreter and its flags); returns its id.
async fn serve(r: &dyn Remote, tag: &str, marker: &str, port: u16, python: &str) -> u64 {
    let wrap = format!(
        "d=$(mktemp -d) && cd $d && echo {marker} > index.html && exec {python} -m http.server {port}"
    );
    sbatch(r, &["-J", tag, "-c", "1", "-t", "3", "--wrap", &wrap]).await
}

#[tokio::test]
async fn a_job_s_web_server_is_reached_through_the_forward_until_ctrl_c() {
    let tag = format!("fwd-{}", rand_suffix());
    let marker = format!("served-by-{tag}");
    let port = 20000 + (rand_suffix() % 20000) as u16;
    let r = remote();
    let id = serve(&r, &tag, &marker, port, "python3").await;
    wait_job_running(&r, id, "the server job to run", LIMIT).await;

    // A local port already taken: the next free one is used, and that is said.
    let taken = TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let busy = taken.local_addr().expect("addr").port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(dev_config())
        .args(["forward", &id.to_string(), &port.to_string(), "--local"])
        .arg(busy.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("slurmdash forward");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let (local, said) = forwarding_port(&mut child, &mut out);
    assert_ne!(local, busy);
    assert!(
        said.contains(&format!(
            "port {busy} is in use on this machine: using {local}"
        )),
        "{said}"
    );
    drop(taken);

    // The job's page through the forward (the server may still be starting).
    let start = Instant::now();
    let page = page_through_forward(local, &marker, LIMIT);
    assert!(page.starts_with("HTTP/1."), "{page}");
    println!(
        "job {id}'s server answered through 127.0.0.1:{local} {:.2} s after the forward opened",
        start.elapsed().as_secs_f64()
    );

    // ctrl-c closes the forward.
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(ok.success());
    let status = child.wait().expect("wait");
    let mut rest = String::new();
    out.read_to_string(&mut rest).expect("read");
    assert!(status.success(), "{said}{rest}");
    assert!(
        rest.contains(&format!("forward of port {local} closed")),
        "{rest}"
    );
    assert!(
        http_get(local).is_err(),
        "nothing listens on {local} any more"
    );
    run(&r, &["scancel", &id.to_string()]).await;
}

#[tokio::test]
async fn f_in_the_dashboard_forwards_the_port_the_job_printed_and_its_end_closes_it() {
    use common::tmux::{fast_config, row, Tmux};
    let tag = format!("fwdui-{}", rand_suffix());
    let marker = format!("served-by-{tag}");
    let port = 20000 + (rand_suffix() % 20000) as u16;
    let r = remote();
    let id = serve(&r, &tag, &marker, port, "python3 -u").await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = fast_config(tmp.path());
    let t = Tmux::start(&cfg, &[]);
    t.wait("the job", LIMIT, |s| row(s, id).is_some());
    t.filter(&tag, Duration::from_secs(30));
    t.wait(
        "the server's line in the log pane, its row running",
        LIMIT,
        |s| {
            s.contains(&format!("(http://0.0.0.0:{port}/)"))
                && row(s, id).is_some_and(|r| r.contains("RUNNING"))
        },
    );
    t.keys(&["F"]);
    t.wait("the port it printed, offered", LIMIT, |s| {
        s.contains(&format!(":forward {port}")) && s.contains("printed http://")
    });
    t.keys(&["Enter"]);
    let s = t.wait("the tunnel open", LIMIT, |s| {
        s.contains("tunnel open: http://127.0.0.1:")
    });
    let local: u16 = s
        .split("tunnel open: http://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .expect("local port");
    page_through_forward(local, &marker, LIMIT);
    // The job ends: its tunnel goes with it.
    run(&r, &["scancel", &id.to_string()]).await;
    t.wait("the tunnel closed with the job", LIMIT, |s| {
        s.contains(&format!("job {id} ended: tunnel 127.0.0.1:{local}"))
    });
    let start = Instant::now();
    while http_get(local).is_ok() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "port {local} still forwarded"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    t.keys(&["q"]);
    t.wait("the dashboard exits", LIMIT, |s| s.contains("EXITED:0"));
}

/// A tunnel lives in the process that opened it, not on the SSH master: `slurmdash forward`
/// killed with SIGKILL (no cleanup runs) leaves nothing listening, while the shared master
/// it used (persist_secs = 600) is still there for the next slurmdash.
#[tokio::test]
async fn a_tunnel_ends_with_its_process_even_on_kill_9_while_the_master_stays() {
    let tag = format!("fwk-{}", rand_suffix());
    let marker = format!("served-by-{tag}");
    let port = 20000 + (rand_suffix() % 20000) as u16;
    let r = remote();
    let id = serve(&r, &tag, &marker, port, "python3").await;
    wait_job_running(&r, id, "the server job to run", LIMIT).await;
    let rt = common::RuntimeDir::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(common::dev_config_persist(600))
        .args(["forward", &id.to_string(), &port.to_string()])
        .env("XDG_RUNTIME_DIR", rt.env())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("slurmdash forward");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let (local, _) = forwarding_port(&mut child, &mut out);
    page_through_forward(local, &marker, LIMIT);
    let socks = rt.sockets();
    assert_eq!(socks.len(), 1, "{socks:?}");
    let master = common::master_pid(&socks[0]).expect("the shared master");

    child.kill().expect("kill -9");
    child.wait().expect("wait");
    common::wait_until("nothing listens on the tunnel's port", LIMIT, || {
        TcpStream::connect(("127.0.0.1", local)).is_err()
    });
    assert_eq!(
        common::master_pid(&socks[0]),
        Some(master),
        "the master went away too: this test no longer shows the tunnel was the process's"
    );
    run(&r, &["scancel", &id.to_string()]).await;
}
