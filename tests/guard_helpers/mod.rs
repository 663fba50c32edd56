//! Helpers of the retry guard tests (`retry_guard.rs`, `retry_guard_node.rs`) and the
//! resume tests (`resume_cluster.rs`).
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::launch::{no_secret, retry_check};
use crate::common::*;
use slurmdash::launch::guard::{self, ChainLine};
use slurmdash::registry::Registry;
use slurmdash::remote::Remote;
use slurmdash::retry::{Chain, RetryPolicy};

pub const WAIT: Duration = Duration::from_secs(240);

/// A launch submitted by the binary (which then exits).
pub struct Launch {
    pub job: u64,
    pub dir: String,
    pub state: tempfile::TempDir,
    /// How long `slurmdash submit` took and how many remote commands it ran.
    pub took: Duration,
    pub commands: usize,
}

pub fn tag(s: &str) -> String {
    format!("g{s}{}", std::process::id() % 10000)
}

pub fn submit(name: &str, command: &str, extra: &[&str]) -> Launch {
    submit_env(name, command, extra, &[])
}

/// [`submit`] with environment variables for slurmdash (e.g. the one `--webhook-env` names).
pub fn submit_env(name: &str, command: &str, extra: &[&str], env: &[(&str, &str)]) -> Launch {
    submit_with(&dev_config(), name, command, extra, env)
}

/// The dev config with `[retry] webhook_plain_http = true`: the test's webhook receiver
/// listens on the nodes' gateway over plain http (no certificate the nodes would trust).
/// The config is `slurmdash.toml` in the directory returned.
pub fn dev_config_plain_http_webhook() -> tempfile::TempDir {
    let text = std::fs::read_to_string(dev_config()).expect("dev config");
    let dir = tempfile::tempdir().expect("config dir");
    std::fs::write(
        dir.path().join("slurmdash.toml"),
        format!("{text}\n[retry]\nwebhook_plain_http = true\n"),
    )
    .expect("write config");
    dir
}

/// [`submit_env`] with another slurmdash config (another account).
pub fn submit_with(
    config: &std::path::Path,
    name: &str,
    command: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Launch {
    let state = tempfile::tempdir().expect("state dir");
    let log = state.path().join("debug.log");
    let mut args = vec![
        "--log",
        log.to_str().expect("utf-8 path"),
        "submit",
        "--set",
        "gpus=0",
        "--set",
        "cpus_per_task=1",
        "--set",
        "mem=50M",
        "--set",
        "time=5m",
        "--set",
        "requeue=false",
    ];
    let name_set = format!("name={name}");
    args.extend(["--set", &name_set]);
    args.extend_from_slice(extra);
    args.extend(["--", "sh", "-c", command]);
    let start = Instant::now();
    let mut all_env = vec![("SLURMDASH_STATE_DIR", state.path().to_str().expect("utf-8"))];
    all_env.extend_from_slice(env);
    let out = slurmdash_env(config, &args, &all_env);
    let took = start.elapsed();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("by a guard job on the cluster (sdguard-"),
        "{stdout}"
    );
    let (job, dir) = submitted_job_and_dir(&stdout);
    let commands = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("slurmdash::remote: ran "))
        .count();
    Launch {
        job,
        dir,
        state,
        took,
        commands,
    }
}

pub async fn chain(r: &dyn Remote, dir: &str) -> Vec<ChainLine> {
    let out = run(r, &["cat", &guard::chain_path(dir)]).await;
    guard::parse_chain(&out.stdout_lossy())
}

pub async fn decision_for(r: &dyn Remote, dir: &str, job: u64) -> ChainLine {
    wait_for(
        &format!("the guard's decision on job {job}"),
        WAIT,
        || async {
            chain(r, dir)
                .await
                .into_iter()
                .find(|l| l.is_decision() && l.job_id() == Some(job))
        },
    )
    .await
}

pub fn guard_of(lines: &[ChainLine], job: u64) -> u64 {
    lines
        .iter()
        .find(|l| l.event == "armed" && l.job_id() == Some(job))
        .and_then(|l| l.guard.as_deref()?.parse().ok())
        .unwrap_or_else(|| panic!("no guard armed for {job}: {lines:?}"))
}

/// Jobs of this launch (its attempts and its guards, which all run in its job directory)
/// still queued or running.
pub async fn live_of(r: &dyn Remote, dir: &str) -> Vec<String> {
    let out = run(
        r,
        &["squeue", "--me", "--noheader", "--format=%i|%j|%T|%Z|%o"],
    )
    .await;
    out.stdout_lossy()
        .lines()
        .filter(|l| l.contains(dir))
        .map(str::to_string)
        .collect()
}

/// The dashboard's retry check, as a dashboard opened now runs it at start.
pub async fn dashboard_check(r: &dyn Remote, l: &Launch) -> Vec<(u64, Chain)> {
    let registry = Registry::open(l.state.path());
    let (_, entries) = retry_check(r, &registry, true, &no_secret).await;
    Chain::index(&entries, &RetryPolicy::default())
}

/// A tiny HTTP server on the nodes' gateway address: records each POST body.
pub async fn listener() -> (String, Arc<Mutex<Vec<(String, String)>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let major = dev_slurm().split('.').next().unwrap_or("22").to_string();
    let addr = format!("10.220.{major}.1");
    let l = tokio::net::TcpListener::bind(format!("{addr}:0"))
        .await
        .expect("bind the webhook listener on the nodes' gateway");
    let port = l.local_addr().expect("addr").port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let g = g.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = s.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let t = String::from_utf8_lossy(&buf).to_string();
                    if let Some((head, body)) = t.split_once("\r\n\r\n") {
                        let len = head
                            .lines()
                            .find_map(|h| {
                                let (k, v) = h.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if body.len() >= len {
                            let first = head.lines().next().unwrap_or("").to_string();
                            g.lock().expect("lock").push((first, body.to_string()));
                            break;
                        }
                    }
                }
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    (format!("http://{addr}:{port}"), got)
}

pub async fn wait_running(r: &dyn Remote, id: u64) {
    wait_job_running(r, id, &format!("job {id} to run"), WAIT).await;
}

/// Waits until nothing of this launch (attempt or guard) is queued or running.
pub async fn wait_quiet(r: &dyn Remote, dir: &str) {
    wait_for("nothing of the launch queued or running", WAIT, || async {
        live_of(r, dir).await.is_empty().then_some(())
    })
    .await;
}

/// Waits until the attempt has run its command's first line (the `ran-once` mark): RUNNING in
/// squeue comes before the batch script starts, and a node taken down before the mark is
/// written makes the next attempt sleep as the first one did.
pub async fn wait_started(r: &dyn Remote, l: &Launch) {
    wait_running(r, l.job).await;
    let mark = format!("{}/ran-once", l.dir);
    wait_for("the attempt to mark its first run", WAIT, || async {
        run(r, &["test", "-e", &mark]).await.success().then_some(())
    })
    .await;
}

/// Sets `node` DOWN under attempt `job` (which kills every job on it: a node of partition
/// `spare` only, in test group `spare-nodes`), waits for the attempt to leave it, and brings
/// the node back in service.
pub async fn take_down_and_resume(r: &dyn Remote, node: &str, job: u64) {
    let out = scontrol_node(node, &["state=down", "reason=slurmdash guard test"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Slurm kills the attempt at once (slurmd may bring the node back by re-registering).
    wait_for(
        "the attempt off the node",
        Duration::from_secs(90),
        || async { (job_nodes(r, job).await != node).then_some(()) },
    )
    .await;
    let _ = scontrol_node(node, &["state=resume"]);
    let mut kicked = false;
    wait_for("the node back in service", Duration::from_secs(120), || {
        let node = node.to_string();
        let again = !kicked;
        kicked = true;
        async move {
            let st = node_state(r, &node).await;
            if st.contains("comp") && again {
                tokio::time::sleep(Duration::from_secs(20)).await;
                let _ = scontrol_node(&node, &["state=down", "reason=stuck completing"]);
                let _ = scontrol_node(&node, &["state=resume"]);
            } else if st.contains("down") || st.contains("drain") {
                let _ = scontrol_node(&node, &["state=resume"]);
            }
            (in_service(&st) && !st.contains("comp")).then_some(())
        }
    })
    .await;
}
