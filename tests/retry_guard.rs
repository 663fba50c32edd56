//! Retries with the laptop closed, on the dev cluster over real SSH: `slurmdash submit`
//! leaves a guard job (`sdguard-<name>`, afternotok on the attempt) and exits; no slurmdash
//! process runs afterwards. The guard re-runs an NCCL failure once (the second attempt
//! completes), records why an `exit 1` is not retried, is removed by Slurm after a success,
//! ends the chain on `slurmdash cancel` and on a plain scancel, and posts each decision to a
//! webhook whose token stays in a 0600 file. The dashboard's retry check run afterwards reads
//! the chain into the registry and shows it. Node failures: see `guard_node_down`.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use slurmdash::launch::guard::{self, ChainLine};
use slurmdash::registry::Registry;
use slurmdash::remote::Remote;
use slurmdash::retry::{Chain, RetryPolicy};
use slurmdash::triage::Patterns;
use slurmdash::worker::retry::{check, RetryCheck};

const WAIT: Duration = Duration::from_secs(240);

/// A launch submitted by the binary (which then exits).
struct Launch {
    job: u64,
    dir: String,
    state: tempfile::TempDir,
    /// How long `slurmdash submit` took and how many remote commands it ran.
    took: Duration,
    commands: usize,
}

fn tag(s: &str) -> String {
    format!("g{s}{}", std::process::id() % 10000)
}

fn submit(name: &str, command: &str, extra: &[&str]) -> Launch {
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
    let out = slurmdash_env(
        &dev_config(),
        &args,
        &[("SLURMDASH_STATE_DIR", state.path().to_str().expect("utf-8"))],
    );
    let took = start.elapsed();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("by a guard job on the cluster (sdguard-"),
        "{stdout}"
    );
    let job = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Submitted job "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|j| j.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    let dir = stdout
        .lines()
        .find_map(|l| l.strip_prefix("job dir: "))
        .unwrap_or_else(|| panic!("{stdout}"))
        .trim()
        .to_string();
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

async fn chain(r: &dyn Remote, dir: &str) -> Vec<ChainLine> {
    let out = run(r, &["cat", &guard::chain_path(dir)]).await;
    guard::parse_chain(&out.stdout_lossy())
}

async fn decision_for(r: &dyn Remote, dir: &str, job: u64) -> ChainLine {
    wait_for(&format!("the guard's decision on job {job}"), WAIT, || async {
        chain(r, dir)
            .await
            .into_iter()
            .find(|l| l.is_decision() && l.job_id() == Some(job))
    })
    .await
}

fn guard_of(lines: &[ChainLine], job: u64) -> u64 {
    lines
        .iter()
        .find(|l| l.event == "armed" && l.job_id() == Some(job))
        .and_then(|l| l.guard.as_deref()?.parse().ok())
        .unwrap_or_else(|| panic!("no guard armed for {job}: {lines:?}"))
}

async fn final_state(r: &dyn Remote, id: u64) -> String {
    wait_for(&format!("job {id} to end"), WAIT, || async {
        let s = sacct_state(r, id).await;
        let done = !s.is_empty()
            && !["PENDING", "RUNNING", "REQUEUED", "COMPLETING"]
                .iter()
                .any(|p| s.starts_with(p));
        done.then_some(s)
    })
    .await
}

/// Jobs of this launch (its script or its guards) still queued or running.
async fn live_of(r: &dyn Remote, dir: &str) -> Vec<String> {
    let out = run(r, &["squeue", "--me", "--noheader", "--format=%i|%j|%T|%o"]).await;
    out.stdout_lossy()
        .lines()
        .filter(|l| l.contains(dir))
        .map(str::to_string)
        .collect()
}

/// The dashboard's retry check, as a dashboard opened now runs it at start.
async fn dashboard_check(r: &dyn Remote, l: &Launch) -> Vec<(u64, Chain)> {
    let registry = Registry::open(l.state.path());
    let patterns = Patterns::builtin();
    let secret = |_: &str| None;
    let c = RetryCheck {
        remote: r,
        registry: &registry,
        cluster: "dev",
        policy: RetryPolicy::default(),
        patterns: &patterns,
        timeout: T,
        secret: &secret,
        allow_submit: true,
    };
    let (_, entries) = check(&c).await.expect("retry check");
    Chain::index(&entries, &RetryPolicy::default())
}

/// A tiny HTTP server on the nodes' gateway address: records each POST body.
async fn listener() -> (String, Arc<Mutex<Vec<(String, String)>>>) {
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

#[tokio::test(flavor = "multi_thread")]
async fn nccl_failure_is_retried_once_by_the_guard_and_the_webhook_hears_it() {
    let r = remote();
    let (base, posts) = listener().await;
    let token = format!("t0k3n{}", std::process::id());
    let hook = format!("{base}/hook/{token}");
    let name = tag("nccl");
    let l = submit(
        &name,
        "if [ -e \"$SLURMDASH_JOB_DIR/once\" ]; then echo second attempt ok; else touch \"$SLURMDASH_JOB_DIR/once\"; echo 'gpu01:1:1 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12' >&2; exit 1; fi",
        &["--webhook", &hook],
    );
    println!(
        "guarded submit: {:.2} s, {} remote commands",
        l.took.as_secs_f64(),
        l.commands
    );
    let d = decision_for(&r, &l.dir, l.job).await;
    assert_eq!(d.class.as_deref(), Some("ERR_INFRA"), "{d:?}");
    assert!(
        d.evidence.as_deref().unwrap_or("").contains("NCCL WARN NET/IB"),
        "{d:?}"
    );
    let second = d.next_id().unwrap_or_else(|| panic!("not retried: {d:?}"));
    assert_eq!(d.decision.as_deref(), Some(&*format!("retried as {second}")));
    assert_eq!(final_state(&r, second).await, "COMPLETED");
    let lines = chain(&r, &l.dir).await;
    let g2 = guard_of(&lines, second);
    // Slurm removes the second attempt's guard after its success; it never decides anything.
    let g2_state = final_state(&r, g2).await;
    assert!(g2_state.starts_with("CANCELLED"), "{g2_state}");
    assert!(
        !lines.iter().any(|x| x.is_decision() && x.job_id() == Some(second)),
        "{lines:?}"
    );
    assert!(live_of(&r, &l.dir).await.is_empty());
    let out = run(&r, &["cat", &format!("{}/slurm-logs/{name}-{second}/main.out", l.dir)]).await;
    assert!(out.stdout_lossy().contains("second attempt ok"));

    // One POST per decision, with the job and class; the token only in the 0600 file.
    let got = wait_for("the webhook POST", Duration::from_secs(60), || async {
        let g = posts.lock().expect("lock").clone();
        (!g.is_empty()).then_some(g)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got_now = posts.lock().expect("lock").clone();
    assert_eq!(got_now.len(), 1, "{got_now:?}");
    let (line, body) = &got[0];
    assert_eq!(line, &format!("POST /hook/{token} HTTP/1.1"));
    let v: serde_json::Value = serde_json::from_str(body).expect("JSON body");
    assert_eq!(v["job"], l.job.to_string());
    assert_eq!(v["class"], "ERR_INFRA");
    assert_eq!(v["decision"], format!("retried as {second}"));
    let mode = run(&r, &["stat", "-c", "%a", &format!("{}/meta/webhook.curl", l.dir)]).await;
    assert_eq!(mode.stdout_lossy().trim(), "600");
    let grep = run(&r, &["grep", "-rl", &token, &l.dir]).await;
    assert_eq!(
        grep.stdout_lossy().trim(),
        format!("{}/meta/webhook.curl", l.dir),
        "the token is only in webhook.curl"
    );

    // A dashboard opened afterwards shows the chain.
    let chains = dashboard_check(&r, &l).await;
    let (_, c) = chains
        .iter()
        .find(|(id, _)| *id == second)
        .unwrap_or_else(|| panic!("{chains:?}"));
    assert_eq!(c.badge().as_deref(), Some("↻2/11"));
    let text = c.describe();
    assert!(
        text.contains(&format!("earlier: {} FAILED ERR_INFRA", l.job))
            && text.contains(&format!("cluster guard: attempt 1 (job {}): retried as {second}", l.job)),
        "{text}"
    );
    println!("dashboard afterwards: {text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_1_is_not_retried_and_the_chain_says_why() {
    let r = remote();
    let l = submit(&tag("exit"), "echo plain failure >&2; exit 1", &[]);
    let d = decision_for(&r, &l.dir, l.job).await;
    assert_eq!(
        d.decision.as_deref(),
        Some("not retried: ERR_PROGRAM (exit code 1)"),
        "{d:?}"
    );
    assert!(d.next.is_none());
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(live_of(&r, &l.dir).await.is_empty());
    let chains = dashboard_check(&r, &l).await;
    assert_eq!(chains.len(), 1, "{chains:?}");
    let entries = Registry::open(l.state.path()).load().expect("registry");
    assert_eq!(
        entries[0].attempts[0].state.as_deref(),
        Some("FAILED ERR_PROGRAM")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_guard_is_gone_after_a_success() {
    let r = remote();
    let l = submit(&tag("ok"), "echo fine", &[]);
    assert_eq!(final_state(&r, l.job).await, "COMPLETED");
    let lines = chain(&r, &l.dir).await;
    let g = guard_of(&lines, l.job);
    let st = final_state(&r, g).await;
    let reason = run(
        &r,
        &["sacct", "-n", "-X", "-P", "-o", "Reason", "-j", &g.to_string()],
    )
    .await;
    println!(
        "Slurm {}: guard after a success: {st}, reason {}",
        dev_slurm(),
        reason.stdout_lossy().trim()
    );
    assert!(st.starts_with("CANCELLED"), "{st}");
    assert!(!chain(&r, &l.dir).await.iter().any(ChainLine::is_decision));
    // The guard never ran: no log of its own.
    let ls = run(&r, &["ls", &format!("{}/meta", l.dir)]).await;
    assert!(!ls.stdout_lossy().contains("guard-"), "{}", ls.stdout_lossy());
    let chains = dashboard_check(&r, &l).await;
    assert_eq!(chains.len(), 1);
    let entries = Registry::open(l.state.path()).load().expect("registry");
    assert_eq!(
        entries[0].attempts[0].state.as_deref(),
        Some("COMPLETED COMPLETE")
    );
}

async fn wait_running(r: &dyn Remote, id: u64) {
    wait_for(&format!("job {id} to run"), WAIT, || async {
        let out = run(r, &["squeue", "--noheader", "-j", &id.to_string(), "-o", "%T"]).await;
        (out.stdout_lossy().trim() == "RUNNING").then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_from_slurmdash_ends_the_chain() {
    let r = remote();
    let l = submit(&tag("cx"), "sleep 300", &[]);
    wait_running(&r, l.job).await;
    let g = guard_of(&chain(&r, &l.dir).await, l.job);
    let out = slurmdash(&["cancel", &l.job.to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(final_state(&r, g).await.starts_with("CANCELLED"));
    assert!(final_state(&r, l.job).await.starts_with("CANCELLED"));
    let d = decision_for(&r, &l.dir, l.job).await;
    assert_eq!(d.decision.as_deref(), Some("cancelled"));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(live_of(&r, &l.dir).await.is_empty());
    let ls = run(&r, &["ls", &format!("{}/meta", l.dir)]).await;
    assert!(!ls.stdout_lossy().contains("guard-"), "the guard never ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_scancel_starts_nothing() {
    let r = remote();
    let l = submit(&tag("sc"), "sleep 300", &[]);
    wait_running(&r, l.job).await;
    let out = run(&r, &["scancel", &l.job.to_string()]).await;
    assert!(out.success());
    let d = decision_for(&r, &l.dir, l.job).await;
    assert_eq!(d.decision.as_deref(), Some("cancelled"), "{d:?}");
    assert_eq!(d.class.as_deref(), Some("ERR_CANCELLED"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(live_of(&r, &l.dir).await.is_empty());
    assert_eq!(chain(&r, &l.dir).await.iter().filter(|x| x.event == "armed").count(), 1);
}
