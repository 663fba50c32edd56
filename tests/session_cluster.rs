//! Work sessions on the dev cluster, as a user drives them from the command line:
//! `slurmdash session --wait` starts one and says where it runs, a shell in it runs on that
//! node, a tunnel reaches a server the session started, `--ssh-config` names the node
//! behind the login host, and `--end` cancels it. The dashboard's `:session` is driven in
//! tmux: the form opens prefilled for a session and submits it.

use crate::common;

use std::io::BufReader;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::launch::LaunchSetup;
use common::tmux::{rand_suffix, Tmux};
use common::{final_state, remote, run, text, wait_for, CancelOnDrop};

const LIMIT: Duration = Duration::from_secs(90);

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
    let _cancel = CancelOnDrop(id);
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
    let (local, _said) = common::forwarding_port(&mut child, &mut lines);
    common::page_through_forward(local, &marker, LIMIT);
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
    let _cancel_other = CancelOnDrop(other);
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

/// slurmdash in tmux with the setup's config, a 2 s refresh and `[launch]` on the cpu
/// partition with one CPU (sessions start from `[launch]`); the dashboard is on screen.
fn dashboard(s: &LaunchSetup) -> Tmux {
    let cfg = std::fs::read_to_string(&s.config).expect("config");
    let cfg = format!(
        "{cfg}\npoll_interval_secs = 2\n\n[launch]\npartition = \"cpu\"\ncpus_per_task = 1\n"
    );
    std::fs::write(&s.config, cfg).expect("config");
    let state = s.state.path().display().to_string();
    let t = Tmux::start_with(&s.config, &[], &[("SLURMDASH_STATE_DIR", &state)]);
    t.wait("the dashboard", Duration::from_secs(20), |sc| {
        sc.contains("jobs")
    });
    t
}

#[tokio::test]
async fn colon_session_launches_from_the_form_and_d_ends_it() {
    let tag = rand_suffix();
    let s = LaunchSetup::new(&format!("session-ui-{tag}")).await;
    let t = dashboard(&s);
    let label = format!("ui{tag}");
    t.keys(&[":"]);
    t.type_text(&format!("session {label}"));
    t.keys(&["Enter"]);
    t.wait("the form prefilled for a session", LIMIT, |sc| {
        sc.contains("launch a job on dev")
            && sc.contains(&format!("session-{label}"))
            && sc.contains(&format!("→ session-{label} on dev"))
    });
    t.keys(&["C-s"]);
    let id = t.submitted_job(LIMIT);
    let _cancel = CancelOnDrop(id);
    // The session's own line in its log: it runs, on the cpu partition's node.
    t.wait("the session's line in the log pane", LIMIT, |sc| {
        sc.contains(&format!("slurmdash work session: job {id} on"))
    });
    let r = remote();
    let squeue = run(
        &r,
        &["squeue", "-h", "-o", "%T %j %P", "-j", &id.to_string()],
    )
    .await;
    assert_eq!(
        squeue.stdout_lossy().trim(),
        format!("RUNNING session-{label} cpu")
    );
    // Its start was news, saying what a session offers.
    t.keys(&[":"]);
    t.type_text("events");
    t.keys(&["Enter"]);
    t.wait("the start in the event log", LIMIT, |sc| {
        sc.contains(&format!("job {id} session-{label} started on"))
            && sc.contains("work session ready (x: shell, F: tunnel, :ssh-config)")
    });
    t.keys(&["Escape"]);
    // D ends it (quick_cancel: no question), like any job.
    t.filter(&format!("session-{label}"), Duration::from_secs(30));
    t.wait("only the session", LIMIT, |sc| {
        common::tmux::row(sc, id).is_some() && sc.contains("jobs 1")
    });
    t.keys(&["D"]);
    let state = final_state(&r, id, LIMIT).await;
    assert!(state.starts_with("CANCELLED"), "sacct says {state}");
    t.keys(&["q"]);
}

#[tokio::test]
async fn ten_minutes_before_its_end_the_dashboard_offers_to_extend_and_says_why_it_cannot() {
    let tag = rand_suffix();
    let s = LaunchSetup::new(&format!("session-warn-{tag}")).await;
    let label = format!("w{tag}");
    // 11 minutes: a minute after it starts, 10 are left. It serves a page, whose URL the
    // dashboard offers for a tunnel.
    let port = 20000 + (tag % 20000) as u16;
    let serve = format!("cd $(mktemp -d) && exec python3 -u -m http.server {port}");
    let out = session(
        &s,
        &[
            "--partition",
            "cpu",
            "--cpus",
            "1",
            "--time",
            "11m",
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
    let v: serde_json::Value = serde_json::from_str(ok(&out).trim()).expect("JSON");
    let id = v["job_id"].as_u64().expect("job_id");
    let _cancel = CancelOnDrop(id);
    let t = dashboard(&s);
    t.filter(&format!("session-{label}"), Duration::from_secs(30));
    // A minute and a half at most, and the refreshes' own lag.
    let sc = t.wait("the warning's question", Duration::from_secs(150), |sc| {
        sc.contains(&format!(
            "session {id} (session-{label}) ends in 10 minutes: extend it?"
        ))
    });
    assert!(
        sc.contains("+: 30 more minutes · !: end it now… · any other key: no"),
        "{sc}"
    );
    t.keys(&["+"]);
    // The dev cluster, like most sites, lets users only lower a limit.
    t.wait("the refusal, in those words", LIMIT, |sc| {
        sc.contains(&format!(
            "{id}: the cluster refused to extend: only an operator can raise a time limit here"
        ))
    });
    let limit = run(
        &remote(),
        &["squeue", "-h", "-o", "%l", "-j", &id.to_string()],
    )
    .await;
    assert_eq!(
        limit.stdout_lossy().trim(),
        "11:00",
        "the limit is unchanged"
    );
    // F offers the port the session's server printed in its log.
    t.wait("the server's line in the log pane", LIMIT, |sc| {
        sc.contains(&format!("port {port}"))
    });
    t.keys(&["F"]);
    t.wait("the printed URL offered", LIMIT, |sc| {
        sc.contains(&format!("job {id} printed http://…:{port}/"))
    });
    t.keys(&["Escape", "q"]);
    let ended = ok(&session(&s, &["--end", &id.to_string()]));
    assert!(ended.contains(&format!("{id}: cancelled")), "{ended}");
}

/// `slurmdash session --gpus 1 --time 5m --partition spare` on 4-CPU nodes with 2 GPUs:
/// the built-in default of 16 CPUs per task, which no node there has, is fitted to the GPU's
/// share of a node (2) and said; Slurm takes what comes out (`sbatch --test-only`, which
/// holds no node). The same 16 asked for with `--cpus` is refused, naming the limit.
#[tokio::test]
async fn a_default_too_big_for_the_partition_is_fitted_and_slurm_takes_it() {
    let s = LaunchSetup::new(&format!("session-fit-{}", rand_suffix())).await;
    let ask = ["--gpus", "1", "--time", "5m", "--partition", "spare"];
    let out = session(&s, &[&ask[..], &["--dry-run"]].concat());
    let script = ok(&out);
    let said = text(&out.stderr);
    assert!(
        said.contains("slurmdash: CPUs per task: 2, not the default 16 (more than the largest node in spare has): its share for 1 GPU of a node with 4 CPUs, 2 GPUs and 4G; --cpus sets it"),
        "{said}"
    );
    assert!(script.contains("#SBATCH --cpus-per-task=2\n"), "{script}");
    let r = remote();
    let dir = common::scratch(&r, "session-fit").await;
    let path = format!("{dir}/session.sbatch");
    common::put(&r, &path, &script).await;
    let test = run(&r, &["sbatch", "--test-only", "-D", &dir, &path]).await;
    let answer = test.stderr_lossy();
    assert!(
        test.success() && answer.contains("to start at") && answer.contains("partition spare"),
        "sbatch --test-only: {answer}"
    );
    run(&r, &["rm", "-rf", &dir]).await;

    let out = session(&s, &[&ask[..], &["--cpus", "16", "--dry-run"]].concat());
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let said = text(&out.stderr);
    assert!(
        said.contains("16 CPUs per task, but the largest node in spare has 4"),
        "{said}"
    );
}
