//! Live use of a running job on the real dev cluster: sstat of its steps and nvidia-smi (the
//! dev cluster's stand-in, scripts/dev-cluster.d/fake-nvidia-smi) on its nodes through
//! `srun --overlap`, in one remote command; App sampling through the real worker hub; the
//! real binary's detail pane in tmux. The machine is shared: figures are compared with what
//! the job measures itself, never with what it asked for.
#![allow(clippy::unwrap_used)]

use crate::common;

use slurmdash::action::PollMsg;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::app_driver::Driver;
use common::{put, run, scratch, ssh_config, wait_for, T};
use slurmdash::action::Msg;
use slurmdash::remote::Remote;
use slurmdash::slurm::hostlist;
use slurmdash::slurm::live::{GpuProbe, LiveTarget};
use slurmdash::slurm::model::JobId;

/// Cancels the test's jobs and removes their fake GPU loads however it ends.
struct CancelOnDrop(Vec<u64>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let ids: Vec<String> = self.0.iter().map(u64::to_string).collect();
        let mut cancel = vec!["slurmdash-dev".to_string(), "scancel".into()];
        cancel.extend(ids.iter().cloned());
        let mut clean = vec!["slurmdash-dev".to_string(), "rm".into(), "-rf".into()];
        clean.extend(ids.iter().map(|i| format!("/tmp/fake-gpu/{i}")));
        for argv in [cancel, clean] {
            let _ = Command::new("ssh")
                .arg("-F")
                .arg(ssh_config())
                .args(argv)
                .stdin(Stdio::null())
                .output();
        }
    }
}

fn tag() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        common::tmux::rand_suffix() % 100_000
    )
}

/// Puts the test's job ahead of the queue (as root on the cluster's host): other tests on
/// the shared cluster may have thousands of jobs waiting for the same node.
fn hurry(id: u64) {
    let out = common::slurm_admin(&[
        "scontrol",
        "update",
        &format!("jobid={id}"),
        "priority=100000000",
    ]);
    assert!(
        out.status.success(),
        "scontrol update jobid={id} priority=...: {}",
        common::text(&out.stderr)
    );
}

/// Submits `wrap` as job `name` for 10 minutes (output discarded) with `args` (partition
/// and size); returns its id.
async fn submit(r: &dyn Remote, name: &str, args: &[&str], wrap: &str) -> u64 {
    let mut argv = args.to_vec();
    argv.extend(["-t", "10", "-J", name, "-o", "/dev/null", "--wrap", wrap]);
    common::sbatch(r, &argv).await
}

/// The real binary in tmux with `config`, once job `id` shows in its queue, with the job
/// selected (searched for by its `name`).
fn select_in_tmux(config: &std::path::Path, id: u64, name: &str) -> common::tmux::Tmux {
    let t = common::tmux::Tmux::start(config, &[]);
    t.wait("the queue", Duration::from_secs(60), |s| {
        common::tmux::row(s, id).is_some()
    });
    t.keys(&["/"]);
    t.keys(&[name, "Enter"]);
    t
}

/// Prints the lines of `screen` that hold any of `keys`.
fn print_lines(screen: &str, keys: &[&str]) {
    let lines: Vec<&str> = screen
        .lines()
        .filter(|l| keys.iter().any(|k| l.contains(k)))
        .collect();
    println!("{}", lines.join("\n"));
}

async fn wait_running(r: &dyn Remote, id: u64) -> String {
    hurry(id);
    wait_for(
        &format!("job {id} to run (the shared nodes may be busy)"),
        Duration::from_secs(240),
        || async {
            let out = run(r, &["squeue", "-h", "-j", &id.to_string(), "-o", "%T|%N"]).await;
            let text = out.stdout_lossy();
            let (state, nodes) = text.trim().split_once('|')?;
            (state == "RUNNING").then(|| nodes.to_string())
        },
    )
    .await
}

/// Each node of the job and the GPU indices Slurm gave it there, from `scontrol show job -d`
/// (`Nodes=gpu01 CPU_IDs=0-1 Mem=100 GRES=gpu:2(IDX:3,5)`).
async fn gpus_by_node(r: &dyn Remote, id: u64) -> Vec<(String, Vec<u32>)> {
    let out = run(r, &["scontrol", "show", "job", "-d", &id.to_string()]).await;
    let text = out.stdout_lossy();
    let mut v = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("Nodes=") else {
            continue;
        };
        let nodes = rest.split_whitespace().next().unwrap_or("");
        let Some(idx) = line.split("IDX:").nth(1) else {
            continue;
        };
        let idx = idx.split(')').next().unwrap_or("");
        let mut list = Vec::new();
        for part in idx.split(',') {
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b): (u32, u32) = (a.parse().unwrap(), b.parse().unwrap());
                    list.extend(a..=b);
                }
                None => list.push(part.parse().unwrap()),
            }
        }
        for n in hostlist::expand(nodes) {
            v.push((n, list.clone()));
        }
    }
    assert!(
        !v.is_empty(),
        "no GPU indices in scontrol show job -d:\n{text}"
    );
    v
}

/// A job step that holds ~300 MB and keeps two processes busy, and writes what it measures
/// of itself every second to `measure`: `epoch cpu_seconds rss_bytes` of its processes.
const BURN: &str = r#"import os, subprocess, sys, time
x = bytearray(300 << 20)
for i in range(0, len(x), 4096):
    x[i] = 1
kids = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
tck = os.sysconf("SC_CLK_TCK")
def cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tck
def rss(pid):
    for l in open("/proc/%d/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1]) * 1024
    return 0
pids = [os.getpid()] + [k.pid for k in kids]
out = open(sys.argv[1], "a")
while True:
    out.write("%.3f %.2f %d\n" % (time.time(), sum(cpu(p) for p in pids), sum(rss(p) for p in pids)))
    out.flush()
    time.sleep(1)
"#;

/// (epoch, cpu seconds, rss bytes) lines the job wrote.
async fn measured(r: &dyn Remote, path: &str) -> Vec<(f64, f64, u64)> {
    let out = run(r, &["cat", path]).await;
    out.stdout_lossy()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((
                f.next()?.parse().ok()?,
                f.next()?.parse().ok()?,
                f.next()?.parse().ok()?,
            ))
        })
        .collect()
}

/// The job's own CPU seconds at time `t`, interpolated between its lines.
fn cpu_at(m: &[(f64, f64, u64)], t: f64) -> Option<f64> {
    let i = m.iter().position(|(ts, ..)| *ts >= t)?;
    if i == 0 {
        return None;
    }
    let ((t0, c0, _), (t1, c1, _)) = (m[i - 1], m[i]);
    Some(c0 + (c1 - c0) * (t - t0) / (t1 - t0).max(1e-6))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_burning_two_cores_and_holding_300_mb_shows_what_it_measures_itself() {
    let remote: Arc<dyn Remote> = Arc::new(common::remote());
    let r = remote.as_ref();
    let dir = scratch(r, "live").await;
    let script = format!("{dir}/burn.py");
    let measure = format!("{dir}/measure.txt");
    put(r, &script, BURN).await;
    let name = format!("live-burn-{}", tag());
    let id = submit(
        r,
        &name,
        &["-p", "short", "-c", "2", "--mem=1G"],
        &format!("srun python3 {script} {measure}"),
    )
    .await;
    let _cancel = CancelOnDrop(vec![id]);
    wait_running(r, id).await;
    let jid: JobId = id.to_string().parse().unwrap();

    // The dashboard's App and its real workers: a refresh every 2 s, the job selected.
    let mut d = Driver::new(&remote);
    d.pending.push(Msg::Poll(PollMsg::PollDue));
    let start = Instant::now();
    let mut refreshes = 0;
    let mut samples_asked = 0;
    loop {
        d.update_seeing(
            |msg| refreshes += usize::from(matches!(msg, Msg::Poll(PollMsg::PollDue))),
            |cmd| {
                if matches!(cmd, slurmdash::action::Cmd::SampleLive(_)) {
                    samples_asked += 1;
                }
            },
        );
        let app = &mut d.app;
        if app.queue.shown().selected_id() != Some(&jid) {
            app.queue.shown_mut().select_id(&jid);
        }
        let done = app.live.job(&jid).is_some_and(|j| {
            let busy = j.points.iter().filter(|p| p.cores_busy.is_some()).count();
            let span = j
                .points
                .front()
                .zip(j.points.back())
                .map_or(0, |(a, b)| (b.at - a.at).num_seconds());
            busy >= 3 && span >= 16
        });
        if done {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "no live figures after 3 minutes: {:?}",
            app.live.job(&jid).map(|j| (&j.error, j.points.len()))
        );
        d.next().await;
    }
    d.hub.stop();
    let app = &d.app;
    assert!(
        samples_asked <= refreshes + 1,
        "{samples_asked} samples for {refreshes} refreshes (at most one each, plus the selection)"
    );
    let j = app.live.job(&jid).unwrap();
    let latest = j.latest.as_ref().unwrap();
    let busy = j.points.back().and_then(|p| p.cores_busy).unwrap();
    let rss = j.points.back().and_then(|p| p.rss).unwrap();
    let clock = latest.clock.expect("the sample's clock");
    let m = measured(r, &measure).await;
    // The App measures over the newest kept sample at least 10 s back (10-14 s here).
    let own = (cpu_at(&m, clock).unwrap_or(m.last().unwrap().1)
        - cpu_at(&m, clock - 12.0).expect("the job measured 12 s before the sample"))
        / 12.0;
    let own_rss = m
        .iter()
        .min_by(|a, b| (a.0 - clock).abs().total_cmp(&(b.0 - clock).abs()))
        .unwrap()
        .2;
    println!(
        "live figures of job {id}: {busy:.2} cores busy of 2 (the job measured {own:.2}), {:.1} MiB resident (the job measured {:.1} MiB), peak {:.1} MiB, {} samples",
        rss as f64 / 1048576.0,
        own_rss as f64 / 1048576.0,
        j.peak_rss as f64 / 1048576.0,
        j.points.len()
    );
    // On a loaded machine the job may get far less than its 2 cores: what counts is that
    // the figure is what the job itself saw (sstat counts whole CPU seconds).
    assert!(own > 0.05, "the job burns CPU: it measured {own:.2} cores");
    assert!(
        (busy - own).abs() <= 0.3 + own * 0.15,
        "cores busy {busy:.2}, the job measured {own:.2}"
    );
    assert!(
        (250 << 20..450 << 20).contains(&own_rss),
        "the job holds ~300 MB: {own_rss}"
    );
    let diff = (rss as f64 - own_rss as f64).abs();
    assert!(
        diff <= own_rss as f64 * 0.1 + 30.0 * 1048576.0,
        "resident {rss} vs the job's own {own_rss}"
    );
    assert!(j.peak_rss >= rss);
    // No GPU asked: no node was asked for GPUs.
    assert!(latest.gpus.is_empty());
}

/// Writes the fake GPU load of job `id` on `node`: `INDEX UTIL MEM_MIB` lines.
async fn gpu_load(r: &dyn Remote, id: u64, node: &str, lines: &str) {
    put(r, &format!("/tmp/fake-gpu/{id}/{node}"), lines).await;
}

async fn sample(
    r: &dyn Remote,
    id: u64,
    nodes: &[String],
) -> (slurmdash::slurm::live::LiveSample, u64, Duration) {
    let t = LiveTarget {
        id: id.to_string().parse().unwrap(),
        gpu_nodes: nodes.to_vec(),
        nodes_skipped: 0,
        timeout_secs: 0,
    };
    let before = r.stats().execs;
    let started = Instant::now();
    let s = slurmdash::io::live::sample(r, &t, T)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (s, r.stats().execs - before, started.elapsed())
}

fn gpus_of<'a>(
    s: &'a slurmdash::slurm::live::LiveSample,
    node: &str,
) -> &'a [slurmdash::slurm::live::GpuUsage] {
    let n = s
        .gpus
        .iter()
        .find(|n| n.node == node)
        .expect("node answered");
    match &n.probe {
        GpuProbe::Gpus(g) => g,
        p => panic!("{node}: {p:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_gpu_job_shows_the_load_written_for_its_own_node_and_gpus() {
    let remote: Arc<dyn Remote> = Arc::new(common::remote());
    let r = remote.as_ref();
    let id = submit(
        r,
        &format!("live-gpu-{}", tag()),
        &[
            "-p",
            "short",
            "-N",
            "1",
            "-c",
            "1",
            "--mem=200M",
            "--gres=gpu:2",
        ],
        "srun sleep 600",
    )
    .await;
    let cpu = submit(
        r,
        &format!("live-cpu-{}", tag()),
        &["-p", "cpu", "-c", "1", "--mem=100M"],
        "sleep 600",
    )
    .await;
    let _cancel = CancelOnDrop(vec![id, cpu]);
    let node = wait_running(r, id).await;
    let by_node = gpus_by_node(r, id).await;
    assert_eq!(by_node.len(), 1);
    let (n, idx) = &by_node[0];
    assert_eq!(n, &node);
    assert_eq!(idx.len(), 2, "gres gpu:2 gave {idx:?}");
    gpu_load(
        r,
        id,
        &node,
        &format!("{} 61 2048\n{} 0 10\n", idx[0], idx[1]),
    )
    .await;
    let (s, execs, took) = sample(r, id, std::slice::from_ref(&node)).await;
    println!("one live sample of a 1-node job with 2 GPUs: {execs} remote command, {took:.2?}");
    assert_eq!(execs, 1, "one remote command per sample");
    let g = gpus_of(&s, &node);
    let shown: Vec<u32> = g.iter().map(|g| g.index).collect();
    assert_eq!(&shown, idx, "the GPUs Slurm gave the job, by their indices");
    assert_eq!(g[0].util, Some(61));
    assert_eq!(g[0].mem_used_mib, Some(2048));
    assert_eq!(g[1].util, Some(0));
    assert!(
        s.steps.as_ref().is_ok_and(|st| !st.is_empty()),
        "{:?}",
        s.steps
    );

    // A node without GPUs: its nvidia-smi has no driver to talk to.
    let cpu_node = wait_running(r, cpu).await;
    let (s, ..) = sample(r, cpu, std::slice::from_ref(&cpu_node)).await;
    match &s.gpus[0].probe {
        GpuProbe::NoTelemetry(w) => assert!(w.contains("NVIDIA driver"), "{w}"),
        p => panic!("{cpu_node}: {p:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_node_job_shows_the_gpus_of_each_node() {
    let remote: Arc<dyn Remote> = Arc::new(common::remote());
    let r = remote.as_ref();
    let id = submit(
        r,
        &format!("live-two-{}", tag()),
        &[
            "-p",
            "short",
            "-N",
            "2",
            "--ntasks-per-node=1",
            "-c",
            "1",
            "--mem=100M",
            "--gres=gpu:1",
        ],
        "srun sleep 600",
    )
    .await;
    let _cancel = CancelOnDrop(vec![id]);
    let nodes = hostlist::expand(&wait_running(r, id).await);
    assert_eq!(nodes.len(), 2);
    let by_node = gpus_by_node(r, id).await;
    for (i, (node, idx)) in by_node.iter().enumerate() {
        gpu_load(
            r,
            id,
            node,
            &format!("{} {} {}\n", idx[0], 20 + i, 100 * (i + 1)),
        )
        .await;
    }
    let (s, execs, took) = sample(r, id, &nodes).await;
    println!("one live sample of a 2-node job, 1 GPU each: {execs} remote command, {took:.2?}");
    assert_eq!(execs, 1);
    for (i, (node, idx)) in by_node.iter().enumerate() {
        let g = gpus_of(&s, node);
        assert_eq!(g.len(), 1, "{node}");
        assert_eq!(g[0].index, idx[0], "{node}");
        assert_eq!(g[0].util, Some(20 + i as u32), "{node}");
        assert_eq!(g[0].mem_used_mib, Some(100 * (i as u64 + 1)), "{node}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_the_live_figures_of_the_selected_running_job() {
    let remote: Arc<dyn Remote> = Arc::new(common::remote());
    let r = remote.as_ref();
    let name = format!("live-dash-{}", tag());
    let id = submit(
        r,
        &name,
        &[
            "-p",
            "short",
            "-N",
            "1",
            "-c",
            "1",
            "--mem=300M",
            "--gres=gpu:2",
        ],
        "srun sh -c 'while :; do :; done'",
    )
    .await;
    let _cancel = CancelOnDrop(vec![id]);
    let node = wait_running(r, id).await;
    let by_node = gpus_by_node(r, id).await;
    let idx = &by_node[0].1;
    gpu_load(r, id, &node, &format!("{} 73 4096\n", idx[0])).await;

    // Right after a job starts, sstat's CPU time is 0 until the first accounting gather
    // (30 s in). A user who selects a job that has run a while sees its busy core in the
    // first sample, the one the dashboard takes at once as the user's read; later samples
    // wait for the default budget's room beside the refresh (one every few minutes at 4
    // RPCs a minute). So the job is selected once sstat counts its CPU time.
    wait_for(
        &format!("sstat to count job {id}'s CPU time (its first accounting gather)"),
        Duration::from_secs(120),
        || async {
            let (s, _, _) = sample(r, id, std::slice::from_ref(&node)).await;
            s.steps
                .is_ok_and(|steps| steps.iter().any(|st| st.cpu_secs > 0.0))
                .then_some(())
        },
    )
    .await;
    // The settings a user gets (the default RPC budget): the sample is the user's read.
    let t = select_in_tmux(&common::dev_config_default(), id, &name);
    let gpu = format!("GPU {node}:{}", idx[0]);
    let screen = t.wait(
        "the live figures in the detail pane",
        Duration::from_secs(90),
        |s| {
            s.contains(&gpu)
                && s.contains("73%")
                && s.contains(" of 1 core busy")
                && !s.contains("0.0 of 1 core busy")
                && s.contains("resident")
        },
    );
    print_lines(&screen, &["Live use", "CPU ", "Memory", "GPU "]);
    assert!(
        screen.contains(&format!("GPU {node}:{}", idx[1])),
        "{screen}"
    );
}

/// A job sleeping on 2 cores with 1 GiB, selected in the real binary with `[ui]
/// idle_gpu_minutes = 1`: after a minute of samples its row gets a `u` on the queue's
/// left border and the detail pane says why, with the sampled figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_sleeping_on_two_cores_is_marked_u_and_the_detail_says_why() {
    let remote: Arc<dyn Remote> = Arc::new(common::remote());
    let r = remote.as_ref();
    let name = format!("live-low-{}", tag());
    let id = submit(
        r,
        &name,
        &["-p", "short", "-N", "1", "-c", "2", "--mem=1G"],
        "srun sleep 600",
    )
    .await;
    let _cancel = CancelOnDrop(vec![id]);
    wait_running(r, id).await;

    let dir = tempfile::tempdir().unwrap();
    let config = common::tmux::fast_config(dir.path());
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[ui]\nidle_gpu_minutes = 1\nlive_sample_secs = 5\n");
    std::fs::write(&config, text).unwrap();
    let t = select_in_tmux(&config, id, &name);
    let marked = |s: &str| {
        s.lines().any(|l| {
            l.starts_with('u')
                && l[1..]
                    .trim_start_matches(['│', ' '])
                    .starts_with(&id.to_string())
        })
    };
    let screen = t.wait(
        "a u on the job's row and the reason in the detail pane",
        Duration::from_secs(240),
        |s| {
            let detail = common::tmux::left_pane_text(s);
            // How long it has been low grows while the screen is read (a loaded machine
            // can take a minute more): any number of minutes says it.
            let low = |what: &str| {
                detail.lines().any(|l| {
                    l.split_once(what).is_some_and(|(_, rest)| {
                        rest.trim_start()
                            .split_once(" min (u in the queue)")
                            .is_some_and(|(n, _)| n.parse::<u32>().is_ok_and(|n| n >= 1))
                    })
                })
            };
            marked(s) && low("of 2 cores busy for") && low("of 1.0 GiB asked over")
        },
    );
    print_lines(
        &screen,
        &["Live use", "CPU ", "Memory", "Low use", &id.to_string()],
    );
    let detail = common::tmux::left_pane_text(&screen);
    // A sleeping job: well under a tenth of a core.
    let busy: f64 = detail
        .split("Low use ")
        .nth(1)
        .and_then(|s| s.split(" of 2 cores").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("cores busy in {detail}"));
    assert!(busy < 0.5, "{detail}");
}
