//! A real multi-node launch on the dev cluster's GPU nodes: 16 GPUs become 2 whole nodes of 8
//! (`--exclusive`), each node gets WORLD_SIZE, MASTER_ADDR, MASTER_PORT, NODE_RANK and
//! NUM_GPU_PER_NODE, and a small rendezvous program (Python's socket module) on each node meets
//! rank 0 at MASTER_ADDR:MASTER_PORT. Launched through `slurmdash submit` and from the launch
//! form driven by App messages with the real workers.

use crate::common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::app_driver::Driver;
use common::*;
use slurmdash::launch::LaunchSpec;
use slurmdash::remote::Remote;

/// How long a two-node job may take to end (both GPU nodes whole).
const JOB_LIMIT: Duration = Duration::from_secs(180);

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
    put(r, &path, RENDEZVOUS).await;
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

#[tokio::test]
async fn a_two_node_sixteen_gpu_submit_meets_at_master_addr_on_two_hosts() {
    let r = remote();
    let (dir, program) = rendezvous_program(&r, "multinode-cli").await;
    let state = tempfile::tempdir().expect("state dir");
    let port = 29411;
    let out = slurmdash_command(&dev_config())
        .args(["submit", "--set", "name=two-nodes", "--set", "gpus=16"])
        .args(["--set", "cpus_per_task=1", "--set", "time=3m"])
        .args(["--set", &format!("master_port={port}")])
        .args(["--", "python3", &program])
        .env("SLURMDASH_STATE_DIR", state.path())
        .env("SLURM_BASE_RESULTS_DIR", format!("{dir}/results"))
        .stdin(Stdio::null())
        .output()
        .expect("run slurmdash submit");
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "submit failed: {stdout}{}",
        text(&out.stderr)
    );
    let id = printed_job_id(&stdout);
    let _cancel = CancelOnDrop(id);
    let script = cat(&r, printed_field(&stdout, "script:")).await;
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
    let state = final_state(&r, id, JOB_LIMIT).await;
    let main_out = cat(&r, printed_field(&stdout, "stdout:")).await;
    let main_err = cat(&r, printed_field(&stdout, "stderr:")).await;
    assert_eq!(
        state, "COMPLETED",
        "main.out:\n{main_out}\nmain.err:\n{main_err}"
    );
    check_two_ranks(&main_out, port);
    // Slurm agrees: two nodes, all 16 GPUs.
    let acct = sacct_fields(&r, id, "NNodes,AllocTRES")
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
    let remote: Arc<dyn Remote> = Arc::new(r);
    // The launch is recorded in a registry of this test's own.
    let mut d = Driver::with_registry(&remote, state.path());
    let port = 29412;
    d.open_form(
        LaunchSpec {
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
        format!("{dir}/results"),
    );
    let job_id = d
        .submit_form(Instant::now(), Duration::from_secs(60), |_| {})
        .await;
    let id: u64 = job_id.parse().expect("numeric job id");
    let _cancel = CancelOnDrop(id);
    let r = remote.as_ref();
    let end = final_state(r, id, JOB_LIMIT).await;
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
