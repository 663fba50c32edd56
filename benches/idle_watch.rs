//! What an idle watch costs the cluster: the dashboard's App and workers run headless
//! against the dev cluster (as sdother, so other users' traffic stays out of the per-user
//! figures) for N seconds, then `watch -n 2 squeue --me` runs for the same time. For each,
//! prints remote execs per minute and slurmctld RPCs per minute for that user (sdiag
//! before/after). Figures, not assertions; not part of the tests.
//!
//! `cargo bench --bench idle_watch -- [SECONDS=600] [PENDING_JOBS=20]`
//!
//! Log tails of the selected job are not run here (a pending job has no log yet).

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::Local;

use slurmdash::action::{Cmd, Msg};
use slurmdash::app::insight::PollBounds;
use slurmdash::app::App;
use slurmdash::config::ClusterConfig;
use slurmdash::keymap::Keymap;
use slurmdash::queue::QueueView;
use slurmdash::remote::{Remote, SshOptions, SshRemote};
use slurmdash::slurm::command::SqueueQuery;
use slurmdash::ui::theme::Theme;
use slurmdash::worker::{fetch, partitions, pending, poll};

const T: Duration = Duration::from_secs(30);
const USER: &str = "sdother";

fn remote() -> SshRemote {
    let cfg = Path::new(env!("CARGO_MANIFEST_DIR")).join(".dev-cluster/ssh/config");
    let mut o = SshOptions::new(vec!["slurmdash-dev-other".into()]);
    o.ssh_config = Some(cfg);
    SshRemote::new(o).expect("ssh options")
}

async fn sh(r: &dyn Remote, script: &str) -> String {
    let argv = vec!["sh".to_string(), "-c".to_string(), script.to_string()];
    let out = r
        .run(&argv, None, Duration::from_secs(3600))
        .await
        .expect("remote sh");
    out.stdout_lossy()
}

/// slurmctld RPCs so far for `USER` (sdiag's per-user section).
async fn rpcs(r: &dyn Remote) -> u64 {
    let out = sh(r, "sdiag").await;
    let mut in_users = false;
    for l in out.lines() {
        if l.starts_with("Remote Procedure Call statistics by user") {
            in_users = true;
            continue;
        }
        if in_users && l.trim_start().starts_with(USER) {
            return l
                .split("count:")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
        }
    }
    0
}

async fn dashboard(r: &SshRemote, secs: u64) -> u64 {
    let c = ClusterConfig::default();
    let (base, min, max) = c.poll_bounds();
    let now = || Local::now().naive_local();
    let mut app = App::new(
        "dev",
        "your jobs",
        Keymap::default(),
        Theme::new(false),
        QueueView::default(),
        base,
        now(),
    );
    app.insight.bounds = PollBounds::new(base, min, max);
    let query = SqueueQuery::default();
    let start = Instant::now();
    let mut next_poll = Instant::now();
    let mut queue: std::collections::VecDeque<Msg> = std::collections::VecDeque::new();
    let mut polls = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        queue.push_back(Msg::Tick(now()));
        if Instant::now() >= next_poll {
            queue.push_back(Msg::PollDue);
            next_poll = Instant::now() + app.status.poll_interval;
        }
        while let Some(msg) = queue.pop_front() {
            for cmd in app.update(msg) {
                match cmd {
                    Cmd::PollQueue | Cmd::PollWith { .. } => {
                        let (gone, start) = match &cmd {
                            Cmd::PollWith { sacct, start } => (sacct.clone(), *start),
                            _ => (Vec::new(), true),
                        };
                        polls += 1;
                        let t0 = Instant::now();
                        let res = poll::poll(r, &query, &gone, start, T).await;
                        let result = res.map(|(jobs, extra)| {
                            queue.push_back(Msg::PollExtra(Box::new(extra)));
                            jobs
                        });
                        queue.push_back(Msg::Queue {
                            result,
                            at: now(),
                            took: t0.elapsed(),
                        });
                    }
                    Cmd::FetchDetail(id) => {
                        let result = fetch::detail(r, &id, T).await;
                        queue.push_back(Msg::Detail {
                            id,
                            result: Box::new(result),
                        });
                    }
                    Cmd::FetchPending(job) => {
                        let result = pending::fetch(r, &job, T).await;
                        queue.push_back(Msg::Pending {
                            id: job.id.clone(),
                            result: Box::new(result),
                        });
                    }
                    Cmd::FetchPartitions => {
                        let result = partitions::fetch(r, T).await;
                        queue.push_back(Msg::Partitions { result, at: now() });
                    }
                    _ => {}
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    println!(
        "  refreshes: {polls}, final interval {}s",
        app.status.poll_interval.as_secs()
    );
    r.stats().execs
}

#[tokio::main]
async fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let secs = args.first().copied().unwrap_or(600);
    let jobs = args.get(1).copied().unwrap_or(20);
    let r = remote();
    let ids = sh(
        &r,
        &format!(
            "for i in $(seq 1 {jobs}); do sbatch --parsable --hold -J idle-watch-$i -c 1 -t 1 \
             -o /dev/null --wrap true; done"
        ),
    )
    .await;
    let ids: Vec<String> = ids
        .lines()
        .filter_map(|l| l.split(';').next())
        .map(str::to_string)
        .collect();
    println!("{} held jobs of {USER}; {secs}s per run", ids.len());

    let mins = secs as f64 / 60.0;
    let e0 = r.stats().execs;
    let r0 = rpcs(&r).await;
    println!("slurmdash (adaptive interval, default bounds):");
    let e1 = dashboard(&r, secs).await;
    let r1 = rpcs(&r).await;
    // The two sdiag calls themselves are one RPC each and one exec each: not counted.
    let dash_execs = e1 - e0 - 1;
    let dash_rpcs = r1.saturating_sub(r0).saturating_sub(1);

    println!("watch -n 2 squeue --me:");
    let r2 = rpcs(&r).await;
    let runs = sh(
        &r,
        &format!(
            "n=0; end=$(( $(date +%s) + {secs} )); while [ $(date +%s) -lt $end ]; do \
             squeue --me >/dev/null; n=$((n+1)); sleep 2; done; echo $n"
        ),
    )
    .await;
    let r3 = rpcs(&r).await;
    let watch_cmds: u64 = runs.trim().parse().unwrap_or(0);
    let watch_rpcs = r3.saturating_sub(r2).saturating_sub(1);

    let mut argv = vec!["scancel".to_string()];
    argv.extend(ids);
    let _ = r.run(&argv, None, T).await;

    println!(
        "slurmdash: {:.1} remote execs/min, {:.1} slurmctld RPCs/min ({dash_execs} execs, {dash_rpcs} RPCs in {secs}s)",
        dash_execs as f64 / mins,
        dash_rpcs as f64 / mins
    );
    println!(
        "watch -n 2 squeue --me: {:.1} commands/min, {:.1} slurmctld RPCs/min ({watch_cmds} commands, {watch_rpcs} RPCs in {secs}s)",
        watch_cmds as f64 / mins,
        watch_rpcs as f64 / mins
    );
}
