//! A real multi-node launch on the dev cluster's GPU nodes: 16 GPUs become 2 whole nodes of 8
//! (`--exclusive`), each node gets WORLD_SIZE, MASTER_ADDR, MASTER_PORT, NODE_RANK and
//! NUM_GPU_PER_NODE, and a small rendezvous program (Python's socket module) on each node meets
//! rank 0 at MASTER_ADDR:MASTER_PORT. Launched through `slurmdash submit` and from the launch
//! form driven by App messages with the real workers.

mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Local;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::mpsc;

use common::*;
use slurmdash::action::Msg;
use slurmdash::app::{App, FormState, LaunchContext};
use slurmdash::keymap::Keymap;
use slurmdash::launch::LaunchSpec;
use slurmdash::queue::QueueView;
use slurmdash::remote::Remote;
use slurmdash::ui::theme::Theme;

/// Rank 0 listens on MASTER_PORT and waits for WORLD_SIZE-1 peers; every other rank connects
/// to MASTER_ADDR:MASTER_PORT (retrying until rank 0 listens, for at most 60 s) and sends
/// its rank and host. Each rank prints one line: `rank R of W on HOST gpus G master M:P`,
/// rank 0 after all peers arrived (with their `rank@host` list), the others after rank 0
/// answered.
const RENDEZVOUS: &str = r#"import os, socket, sys, time
rank = int(os.environ["NODE_RANK"])
world = int(os.environ["WORLD_SIZE"])
addr = os.environ["MASTER_ADDR"]
port = int(os.environ["MASTER_PORT"])
gpus = os.environ["NUM_GPU_PER_NODE"]
host = socket.gethostname()
head = f"rank {rank} of {world} on {host} gpus {gpus} master {addr}:{port}"
if rank == 0:
    srv = socket.create_server(("0.0.0.0", port), reuse_port=True)
    srv.settimeout(60)
    peers, conns = [], []
    while len(peers) < world - 1:
        c, _ = srv.accept()
        peers.append(c.recv(200).decode())
        conns.append(c)
    for c in conns:
        c.sendall(b"go")
        c.close()
    print(f"{head} peers {','.join(sorted(peers))}", flush=True)
else:
    deadline = time.time() + 60
    while True:
        try:
            s = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                sys.exit(f"rank {rank}: rank 0 at {addr}:{port} never answered")
            time.sleep(0.5)
    s.sendall(f"{rank}@{host}".encode())
    assert s.recv(10) == b"go"
    print(f"{head} joined", flush=True)
"#;

/// Writes the rendezvous program into a fresh scratch directory; returns its path.
async fn rendezvous_program(r: &dyn Remote, tag: &str) -> (String, String) {
    let dir = scratch(r, tag).await;
    let path = format!("{dir}/rendezvous.py");
    let out = r
        .run(
            &s(&["sh", "-c", "cat > \"$1\"", "sh", &path]),
            Some(RENDEZVOUS.as_bytes()),
            T,
        )
        .await
        .expect("write the rendezvous program");
    assert!(out.success(), "{}", out.stderr_lossy());
    (dir, path)
}

/// One parsed `rank R of W on HOST gpus G master M:P ...` line of main.out.
#[derive(Debug)]
struct Rank {
    rank: u32,
    world: u32,
    host: String,
    gpus: String,
    master: String,
    line: String,
}

fn ranks(main_out: &str) -> Vec<Rank> {
    main_out
        .lines()
        .filter(|l| l.starts_with("rank "))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert!(w.len() >= 10, "short rank line {l:?}");
            Rank {
                rank: w[1].parse().expect("rank"),
                world: w[3].parse().expect("world"),
                host: w[5].to_string(),
                gpus: w[7].to_string(),
                master: w[9].to_string(),
                line: l.to_string(),
            }
        })
        .collect()
}

/// Both ranks reported, from two different GPU nodes, and met at rank 0's host.
fn check_two_ranks(main_out: &str, port: u16) {
    let mut rs = ranks(main_out);
    rs.sort_by_key(|r| r.rank);
    assert_eq!(rs.len(), 2, "want two rank lines in main.out:\n{main_out}");
    let gpu_nodes = gpu_nodes();
    for (i, r) in rs.iter().enumerate() {
        assert_eq!(r.rank, i as u32, "{main_out}");
        assert_eq!(r.world, 2, "{}", r.line);
        assert_eq!(r.gpus, "8", "{}", r.line);
        assert!(gpu_nodes.contains(&r.host), "{} is not a GPU node", r.host);
        assert_eq!(r.master, format!("{}:{port}", rs[0].host), "{}", r.line);
    }
    assert_ne!(
        rs[0].host, rs[1].host,
        "both ranks on one host:\n{main_out}"
    );
    assert!(
        rs[0].line.ends_with(&format!("peers 1@{}", rs[1].host)),
        "rank 0 was not joined by rank 1: {}",
        rs[0].line
    );
}

/// Cancels the job however the test ends (a 2-node exclusive job left pending would hold
/// both GPU nodes for every later test).
struct CancelOnDrop(u64);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("ssh")
            .arg("-F")
            .arg(ssh_config())
            .args(["slurmdash-dev", "scancel", &self.0.to_string()])
            .stdin(Stdio::null())
            .output();
    }
}

async fn wait_done(r: &dyn Remote, id: u64) -> String {
    wait_for("the job to end", Duration::from_secs(180), || async {
        let s = sacct_state(r, id).await;
        (!s.is_empty() && !["PENDING", "RUNNING", "REQUEUED"].contains(&s.as_str())).then_some(s)
    })
    .await
}

async fn cat(r: &dyn Remote, path: &str) -> String {
    let out = run(r, &["cat", path]).await;
    assert!(out.success(), "cat {path}: {}", out.stderr_lossy());
    out.stdout_lossy()
}

fn field<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(label))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no `{label}` in {out}"))
}

#[tokio::test]
async fn a_two_node_sixteen_gpu_submit_meets_at_master_addr_on_two_hosts() {
    let r = remote();
    let (dir, program) = rendezvous_program(&r, "multinode-cli").await;
    let state = tempfile::tempdir().expect("state dir");
    let port = 29411;
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(dev_config())
        .args(["submit", "--set", "name=two-nodes", "--set", "gpus=16"])
        .args(["--set", "cpus_per_task=1", "--set", "time=3m"])
        .args(["--set", &format!("master_port={port}")])
        .args(["--", "python3", &program])
        .env("SLURMDASH_STATE_DIR", state.path())
        .env("SLURM_BASE_RESULTS_DIR", format!("{dir}/results"))
        .env_remove("SLURM_PARTITION")
        .env_remove("SLURM_HOSTNAME")
        .stdin(Stdio::null())
        .output()
        .expect("run slurmdash submit");
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "submit failed: {stdout}{}",
        text(&out.stderr)
    );
    let id: u64 = stdout
        .split_whitespace()
        .skip_while(|w| *w != "job")
        .nth(1)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no job id in {stdout}"));
    let _cancel = CancelOnDrop(id);
    let script = cat(&r, field(&stdout, "script:")).await;
    for line in [
        "#SBATCH --nodes=2",
        "#SBATCH --gres=gpu:8",
        "#SBATCH --exclusive",
    ] {
        assert!(
            script.lines().any(|l| l == line),
            "no {line:?} in\n{script}"
        );
    }
    let state = wait_done(&r, id).await;
    let main_out = cat(&r, field(&stdout, "stdout:")).await;
    let main_err = cat(&r, field(&stdout, "stderr:")).await;
    assert_eq!(
        state, "COMPLETED",
        "main.out:\n{main_out}\nmain.err:\n{main_err}"
    );
    check_two_ranks(&main_out, port);
    // Slurm agrees: two nodes, all 16 GPUs.
    let acct = run(
        &r,
        &[
            "sacct",
            "-n",
            "-X",
            "-P",
            "-o",
            "NNodes,AllocTRES",
            "-j",
            &id.to_string(),
        ],
    )
    .await
    .stdout_lossy();
    assert!(
        acct.starts_with("2|") && acct.contains("gres/gpu=16"),
        "{acct}"
    );
}

#[tokio::test]
async fn a_two_node_launch_from_the_form_meets_at_master_addr_on_two_hosts() {
    let r = remote();
    let (dir, program) = rendezvous_program(&r, "multinode-form").await;
    let state = tempfile::tempdir().expect("state");
    std::env::set_var("SLURMDASH_STATE_DIR", state.path());
    let remote: Arc<dyn Remote> = Arc::new(r);
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let mut app = App::new(
        "dev",
        "your jobs",
        Keymap::default(),
        Theme::new(false),
        QueueView::default(),
        Duration::from_secs(2),
        Local::now().naive_local(),
    );
    let port = 29412;
    app.cluster.launch = LaunchContext {
        defaults: LaunchSpec {
            name: "form-two-nodes".into(),
            partition: "short".into(),
            account: "research".into(),
            gpus: 16,
            cpus_per_task: 1,
            time: "3m".into(),
            master_port: port,
            command: format!("python3 {program}"),
            ..LaunchSpec::default()
        },
        results_root: Some(format!("{dir}/results")),
        ..LaunchContext::default()
    };
    let mut hub = common::app_driver::hub(&remote, &tx);
    let mut pending: Vec<Msg> = vec![
        Msg::PollDue,
        Msg::Key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE)),
    ];
    let start = Instant::now();
    let mut submitted = false;
    let job_id = loop {
        for msg in pending.drain(..) {
            for cmd in app.update(msg) {
                hub.run(cmd);
            }
        }
        if !submitted
            && app
                .form
                .as_ref()
                .is_some_and(|f| f.prepared.is_some() && f.busy.is_none())
        {
            if let Some(f) = app.form.as_mut() {
                f.row = FormState::submit_row();
            }
            pending.push(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
            submitted = true;
            continue;
        }
        if let Some(e) = app.form.as_ref().and_then(|f| f.error.clone()) {
            panic!("form error: {e}");
        }
        if submitted && app.form.is_none() {
            break app
                .queue
                .selected_id()
                .map(|i| i.as_str().to_string())
                .expect("the new job is selected at once");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "not submitted in time; note {:?}, form {:?}",
            app.note,
            app.form.as_ref().map(|f| (&f.error, &f.problems)),
        );
        tokio::select! {
            Some(m) = rx.recv() => pending.push(m),
            _ = tokio::time::sleep(Duration::from_secs(2)) => pending.push(Msg::PollDue),
        }
    };
    let id: u64 = job_id.parse().expect("numeric job id");
    let _cancel = CancelOnDrop(id);
    let r = remote.as_ref();
    let end = wait_done(r, id).await;
    let entries = slurmdash::registry::Registry::open(state.path())
        .load()
        .expect("registry");
    let entry = entries
        .iter()
        .find(|e| e.job_id == id)
        .unwrap_or_else(|| panic!("job {id} not in the registry: {entries:?}"));
    let main_out = format!("{}/slurm-logs/form-two-nodes-{id}/main.out", entry.job_dir);
    let out = cat(r, &main_out).await;
    assert_eq!(end, "COMPLETED", "{out}");
    check_two_ranks(&out, port);
}
