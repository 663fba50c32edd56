//! Work sessions on the dev cluster, as a user drives them from the command line:
//! `slurmdash session --wait` starts one and says where it runs, a shell in it runs on that
//! node, a tunnel reaches a server the session started, `--ssh-config` names the node
//! behind the login host, and `--end` cancels it. The dashboard's `:session` is driven in
//! tmux: the form opens prefilled for a session and submits it.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::launch::LaunchSetup;
use common::tmux::{rand_suffix, Tmux};
use common::{final_state, remote, run, text, wait_for};

const LIMIT: Duration = Duration::from_secs(90);

/// `GET /` on 127.0.0.1:`port`; the whole answer, or why not.
fn get(port: u16) -> Result<String, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut body = String::new();
    s.read_to_string(&mut body).map_err(|e| e.to_string())?;
    Ok(body)
}

/// `slurmdash session ARGS` with the setup's config and state dir.
fn session(s: &LaunchSetup, args: &[&str]) -> Output {
    let mut c = common::slurmdash_command(&s.config);
    c.arg("session")
        .args(args)
        .env("SLURMDASH_STATE_DIR", s.state.path())
        .stdin(Stdio::null())
        .output()
        .expect("run slurmdash session")
}

fn ok(out: &Output) -> String {
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "slurmdash failed: {stdout}{}",
        text(&out.stderr)
    );
    stdout
}

#[tokio::test]
async fn a_session_runs_takes_a_shell_and_a_tunnel_and_ends_cancelled() {
    let tag = rand_suffix();
    let s = LaunchSetup::new(&format!("session-{tag}")).await;
    let port = 20000 + (tag % 20000) as u16;
    let marker = format!("served-in-session-{tag}");
    // The session starts a small web server beside the allocation it keeps.
    let serve = format!(
        "d=$(mktemp -d) && cd $d && echo {marker} > index.html && exec python3 -u -m http.server {port}"
    );
    let label = format!("t{tag}");
    let out = session(
        &s,
        &[
            "--partition",
            "cpu",
            "--cpus",
            "1",
            "--time",
            "5m",
            "--name",
            &label,
            "--wait",
            "--json",
            "--",
            "sh",
            "-c",
            &serve,
        ],
    );
    let printed = ok(&out);
    let v: serde_json::Value = serde_json::from_str(printed.trim()).expect("one JSON object");
    let id = v["job_id"].as_u64().expect("job_id");
    assert_eq!(v["state"], "RUNNING", "{printed}");
    assert_eq!(v["name"], format!("session-{label}"));
    let node = v["node"].as_str().expect("node").to_string();
    let r = remote();
    let squeue = run(
        &r,
        &["squeue", "-h", "-o", "%T %N %j %P", "-j", &id.to_string()],
    )
    .await;
    assert_eq!(
        squeue.stdout_lossy().trim(),
        format!("RUNNING {node} session-{label} cpu"),
        "squeue agrees with what session printed"
    );
    let registry = s.registry().load().expect("registry");
    assert!(
        registry.iter().any(|e| e.job_id == id),
        "the session is recorded like any launch"
    );

    // A shell in it runs on the session's node (a terminal: srun --pty wants one).
    let bin = env!("CARGO_BIN_EXE_slurmdash");
    let t = Tmux::spawn(
        format!("sdsession-{tag}"),
        120,
        20,
        &format!(
            "{bin} --config {} shell {id} -- hostname; echo EXITED:$?; sleep 60",
            s.config.display()
        ),
    );
    let screen = t.wait("the shell's hostname", LIMIT, |sc| sc.contains("EXITED:"));
    assert!(screen.contains("EXITED:0"), "{screen}");
    assert!(
        screen.lines().any(|l| l.trim() == node),
        "hostname in the session prints {node}:\n{screen}"
    );
    drop(t);

    // The ssh config reaches that node through the login alias.
    let cfg = ok(&session(&s, &["--ssh-config", &id.to_string()]));
    assert!(
        cfg.starts_with(&format!("Host slurmdash-dev-{id}\n")),
        "{cfg}"
    );
    assert!(cfg.contains(&format!("\n    HostName {node}\n")), "{cfg}");
    assert!(
        cfg.contains("\n    ProxyJump sduser@slurmdash-dev\n"),
        "{cfg}"
    );

    // A tunnel reaches the server the session started.
    let mut child = common::slurmdash_command(&s.config)
        .args(["forward", &id.to_string(), &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("slurmdash forward");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout"));
    let mut said = String::new();
    let local = loop {
        let mut line = String::new();
        if lines.read_line(&mut line).expect("read") == 0 {
            let mut err = String::new();
            let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
            panic!("slurmdash forward ended early:\n{said}\n{err}");
        }
        said.push_str(&line);
        if let Some(rest) = line.strip_prefix("forwarding http://127.0.0.1:") {
            break rest
                .split('/')
                .next()
                .and_then(|p| p.parse::<u16>().ok())
                .expect("local port");
        }
    };
    let start = Instant::now();
    loop {
        match get(local) {
            Ok(p) if p.contains(&marker) => break,
            other => assert!(
                start.elapsed() < LIMIT,
                "no page through the forward: {other:?}"
            ),
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();

    // The server's URL is in the session's log, where the dashboard offers it (F).
    let log = wait_for("the server's line in the session's log", LIMIT, || async {
        let out = run(
            &r,
            &[
                "sh",
                "-c",
                &format!("cat {}/*/slurm-logs/session-{label}-{id}/main.*", s.root),
            ],
        )
        .await;
        let text = out.stdout_lossy();
        text.contains(&format!("port {port}")).then_some(text)
    })
    .await;
    assert!(log.contains(&format!("job {id} on {node}")), "{log}");

    // --end refuses a job that is not a session.
    let other = common::sbatch(
        &r,
        &[
            "-J",
            &format!("plain-{tag}"),
            "-c",
            "1",
            "-t",
            "2",
            "--wrap",
            "sleep 100",
        ],
    )
    .await;
    let refused = session(&s, &["--end", &other.to_string()]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("is not a session"),
        "{}",
        text(&refused.stderr)
    );
    run(&r, &["scancel", &other.to_string()]).await;

    // --end cancels it, and sacct says so.
    let ended = ok(&session(&s, &["--end", &id.to_string()]));
    assert!(ended.contains(&format!("{id}: cancelled")), "{ended}");
    let state = final_state(&r, id, LIMIT).await;
    assert!(state.starts_with("CANCELLED"), "sacct says {state}");
}
