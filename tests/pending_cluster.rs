//! "Why is my job pending" against the dev cluster over real SSH: the one-exec refresh,
//! reasons in plain words, start estimates, rank, sprio/sshare figures, partition limits,
//! held jobs, finished jobs from sacct, partition data.

use crate::common;

use std::time::Duration;

use common::limits;
use common::*;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use slurmdash::io::{partitions, pending, poll};
use slurmdash::queue::{Column, QueueRow, RowKind};
use slurmdash::remote::{Remote, SshOptions, SshRemote};
use slurmdash::slurm::command::SqueueQuery;
use slurmdash::slurm::model::{Job, JobState};
use slurmdash::slurm::pending::PendingInfo;
use slurmdash::ui::detail::{DetailWidget, PendingView};
use slurmdash::ui::theme::Theme;

fn other_remote() -> SshRemote {
    let mut o = SshOptions::new(vec!["slurmdash-dev-other".into()]);
    o.ssh_config = Some(ssh_config());
    SshRemote::new(o).expect("ssh remote")
}

async fn scancel(r: &dyn Remote, ids: &[u64]) {
    if ids.is_empty() {
        return;
    }
    let mut argv = vec!["scancel".to_string()];
    argv.extend(ids.iter().map(u64::to_string));
    let _ = r.run(&argv, None, T).await;
}

async fn own_jobs(r: &dyn Remote) -> Vec<Job> {
    let (jobs, _) = poll::poll(r, &SqueueQuery::default(), &[], T)
        .await
        .expect("refresh");
    jobs
}

async fn job(r: &dyn Remote, id: u64) -> Option<Job> {
    own_jobs(r)
        .await
        .into_iter()
        .find(|j| j.id.as_str() == id.to_string())
}

/// The detail pane's text for `job` with the pending info, as the user sees it.
fn detail_text(job: &Job, info: Option<&PendingInfo>) -> String {
    let theme = Theme::new(false);
    let mut buf = Buffer::empty(Rect::new(0, 0, 100, 60));
    let now = chrono::Local::now().naive_local();
    DetailWidget {
        job: Some(job),
        detail: None,
        loading: false,
        held: None,
        error: None,
        theme: &theme,
        now,
        focused: true,
        triage: None,
        chain: None,
        sweep: None,
        pending: PendingView {
            info,
            loading: false,
            error: None,
            edit_key: Some("E"),
            waited: None,
            as_of: None,
            maintenance: None,
            sooner: &[],
        },
        efficiency: None,
        live: Default::default(),
        deps: None,
        listed_at: None,
        progress: None,
    }
    .render(buf.area, &mut buf);
    let mut s = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            s.push_str(buf[(x, y)].symbol());
        }
        s.push('\n');
    }
    // Join wrapped lines so sentences can be matched whole.
    s.lines()
        .map(|l| l.trim_matches(|c| c == '│' || c == ' '))
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn one_refresh_of_a_500_job_queue_is_one_remote_exec() {
    // A separate user, so the 500 held jobs never show in other tests' own queues, and
    // polar, so they do not count in the rank test's partition (long) while both run.
    let r = other_remote();
    let out = run(
        &r,
        &[
            "sh",
            "-c",
            "for i in $(seq 1 500); do sbatch --parsable --hold -p polar -t 1 -c 1 -o /dev/null \
             -J \"sd-500 |$i\" --wrap true || exit 1; done",
        ],
    )
    .await;
    let ids: Vec<u64> = out
        .stdout_lossy()
        .lines()
        .filter_map(|l| l.split(';').next()?.trim().parse().ok())
        .collect();
    let submitted_ok = out.success() && ids.len() == 500;
    let before = r.stats().execs;
    let result = poll::poll(&r, &SqueueQuery::default(), &[], T).await;
    let after = r.stats().execs;
    // Also with sacct for two departed ids: still one exec.
    let gone: Vec<_> = ids[..2.min(ids.len())]
        .iter()
        .map(|i| i.to_string().parse().expect("id"))
        .collect();
    let with_sacct = poll::poll(&r, &SqueueQuery::default(), &gone, T).await;
    let after2 = r.stats().execs;
    scancel(&r, &ids).await;

    assert!(submitted_ok, "sbatch loop: {}", out.stderr_lossy());
    let (jobs, extra) = result.expect("refresh");
    let mine = jobs
        .iter()
        .filter(|j| ids.iter().any(|i| j.id.as_str() == i.to_string()))
        .count();
    assert_eq!(mine, 500, "all 500 held jobs in one refresh");
    assert!(jobs.iter().any(|j| j.name.starts_with("sd-500 |")));
    assert_eq!(after - before, 1, "one refresh = one remote exec");
    assert!(extra.problems.is_empty(), "{:?}", extra.problems);
    let (_, extra2) = with_sacct.expect("refresh with sacct");
    assert_eq!(after2 - after, 1, "refresh with sacct = one remote exec");
    assert_eq!(extra2.asked.len(), 2);
    assert!(extra2.problems.is_empty(), "{:?}", extra2.problems);
}

/// Resources and Priority on purpose: a job holding all 8 GPUs of both GPU nodes for a minute
/// or two, then two more 8-GPU jobs behind it. Other tests share the nodes, so every wait is
/// generous.
#[tokio::test]
async fn resources_and_priority_explained_with_estimate_rank_sprio_and_sshare() {
    let r = remote();
    let dir = scratch(&r, "pending").await;
    let gpu_nodes = gpu_nodes().len().to_string();
    let sub = |name: &'static str, nodes: &str, secs: &'static str| {
        let dir = dir.clone();
        let nodes = format!("--nodes={nodes}");
        let r = &r;
        async move {
            sbatch(
                r,
                &[
                    "-J",
                    name,
                    "-p",
                    "long",
                    &nodes,
                    "-t",
                    "2",
                    "-c",
                    "1",
                    "--gres=gpu:8",
                    "-D",
                    &dir,
                    "--wrap",
                    secs,
                ],
            )
            .await
        }
    };
    let blocker = sub("sd-gpu-blocker", &gpu_nodes, "sleep 75").await;
    let a = sub("sd-gpu-first", "1", "true").await;
    let b = sub("sd-gpu-second", "1", "true").await;
    let ids = [blocker, a, b];
    let outcome = async {
        wait_for("the blocker to run", Duration::from_secs(240), || async {
            job(&r, blocker)
                .await
                .filter(|j| j.state == JobState::Running)
                .map(|_| ())
        })
        .await;
        // Backfill (bf_interval=5) gives estimates; reasons settle to Resources/Priority.
        let (ja, jb, starts) = wait_for(
            "Resources/Priority with start estimates",
            Duration::from_secs(90),
            || async {
                let (jobs, _) = poll::poll(&r, &SqueueQuery::default(), &[], T).await.ok()?;
                let find = |id: u64| {
                    jobs.iter()
                        .find(|j| j.id.as_str() == id.to_string())
                        .cloned()
                };
                let (ja, jb) = (find(a)?, find(b)?);
                // squeue's %S: the estimate, in the refresh itself (no squeue --start).
                let starts = (ja.start_time?, jb.start_time?);
                (ja.reason.as_deref() == Some("Resources")
                    && jb.reason.as_deref() == Some("Priority"))
                .then_some((ja, jb, starts))
            },
        )
        .await;
        let info_b = pending::fetch(&r, &jb, T).await.expect("pending info");
        let sprio_cmd = run(
            &r,
            &[
                "sprio",
                "-n",
                "-j",
                &b.to_string(),
                "-o",
                "%i %r %Y %A %F %J %P %Q",
            ],
        )
        .await
        .stdout_lossy();
        let sshare_cmd = run(
            &r,
            &[
                "sshare",
                "-n",
                "-P",
                "-A",
                "research",
                "-u",
                "sduser",
                "-o",
                "Account,User,FairShare,NormShares,EffectvUsage",
            ],
        )
        .await
        .stdout_lossy();
        let ranks = run(
            &r,
            &[
                "squeue", "-h", "-a", "-p", "long", "-t", "PD", "-o", "%i %Q",
            ],
        )
        .await
        .stdout_lossy();
        (ja, jb, starts, info_b, sprio_cmd, sshare_cmd, ranks)
    }
    .await;
    scancel(&r, &ids).await;
    let (ja, jb, (sa, sb), info, sprio_cmd, sshare_cmd, ranks) = outcome;

    let ta = detail_text(&ja, None);
    assert!(
        ta.contains("Reason Resources: it is next in line and waits for enough CPUs/GPUs/memory to become free"),
        "{ta}"
    );
    // detail_text joins the pane into one line: the estimate is the date, time and
    // "(in …)" or "(now)" right after the label.
    let est: String = ta
        .split("Est. start ")
        .nth(1)
        .unwrap_or_else(|| panic!("no Est. start: {ta}"))
        .chars()
        .take(40)
        .collect();
    assert!(
        est.contains("(in ") || est.contains("(now)"),
        "{est:?} in {ta}"
    );
    let tb = detail_text(&jb, Some(&info));
    assert!(
        tb.contains("Reason Priority: jobs with higher priority are ahead of it in the queue"),
        "{tb}"
    );
    assert!(sb >= sa, "second starts no earlier than first");

    // Rank: as many pending jobs in long as squeue lists, and at least the first one ahead.
    let rank = info.rank.clone().expect("rank");
    let pending_in_long = ranks.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(
        rank.of >= 2 && rank.of <= pending_in_long + 1,
        "{rank:?} vs {ranks}"
    );
    assert!(rank.position >= 2, "the first 8-GPU job is ahead: {rank:?}");
    assert!(tb.contains(&format!("Rank {}", rank.text())), "{tb}");

    // sprio: the same figures as sprio prints.
    let row = info
        .sprio
        .iter()
        .find(|s| s.partition == "long")
        .expect("sprio row for long");
    let fields: Vec<&str> = sprio_cmd
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("long"))
        .expect("sprio output")
        .split_whitespace()
        .collect();
    assert_eq!(fields[0], b.to_string());
    assert_eq!(fields[2].parse::<u64>().unwrap(), row.priority);
    assert_eq!(fields[3].parse::<f64>().unwrap(), row.age);
    assert_eq!(fields[4].parse::<f64>().unwrap(), row.fairshare);
    assert_eq!(fields[5].parse::<f64>().unwrap(), row.job_size);
    assert_eq!(fields[6].parse::<f64>().unwrap(), row.partition_factor);
    assert!(tb.contains(&format!("Factors {} =", row.priority)), "{tb}");
    assert!(tb.contains("weighs most"), "{tb}");

    // sshare: the user's FairShare and the account's share as sshare prints them.
    let user_line = sshare_cmd
        .lines()
        .find(|l| l.trim_start().starts_with("research|sduser|"))
        .expect("sshare user row");
    let fs: f64 = user_line.split('|').nth(2).unwrap().parse().unwrap();
    let mine = info
        .sshare
        .iter()
        .find(|s| s.user.as_deref() == Some("sduser"))
        .expect("sshare row");
    assert_eq!(mine.fairshare, Some(fs));
    assert!(tb.contains(&format!("Fair-share you {fs:.3}")), "{tb}");
    // No limits are set on the dev cluster, and the pane says so.
    assert!(info.limits.is_empty(), "{:?}", info.limits);
    assert!(tb.contains("no association or QOS limits set"), "{tb}");
    // Two minutes, one CPU and 8 GPUs fit every partition of the dev cluster.
    // The list runs until the next label (the text is joined into one line).
    let after = tb
        .split("Fits in ")
        .nth(1)
        .unwrap_or_else(|| panic!("no Fits in: {tb}"));
    let mut names = Vec::new();
    for item in after.split(", ") {
        names.push(item.split(' ').next().unwrap_or(""));
        if item.contains(' ') {
            break;
        }
    }
    for p in ["short", "polar", "long"] {
        assert!(names.contains(&p), "{p} missing from {names:?} in {tb}");
    }
    assert!(info.problems.is_empty(), "{:?}", info.problems);
}

#[tokio::test]
async fn over_maxtime_shows_partition_time_limit_with_the_fix() {
    let r = remote();
    let dir = scratch(&r, "maxtime").await;
    let id = sbatch_too_long(&r, "sd-too-long", &dir).await;
    let outcome = async {
        let j = wait_for("PartitionTimeLimit", Duration::from_secs(60), || async {
            job(&r, id)
                .await
                .filter(|j| j.reason.as_deref() == Some("PartitionTimeLimit"))
        })
        .await;
        let info = pending::fetch(&r, &j, T).await.expect("pending info");
        (j, info)
    }
    .await;
    scancel(&r, &[id]).await;
    let (j, info) = outcome;
    let t = detail_text(&j, Some(&info));
    assert!(
        t.contains("PartitionTimeLimit: time limit 10:00:00 exceeds polar's MaxTime 4:00:00"),
        "{t}"
    );
    assert!(
        t.contains("To do E to edit the time limit or partition, or resubmit"),
        "{t}"
    );
    assert!(
        t.contains("Est. start none: it cannot start as it is (PartitionTimeLimit)"),
        "{t}"
    );
    assert!(t.contains("Fits in long"), "{t}");
    assert!(t.contains("polar (time 10:00:00 > MaxTime 4:00:00)"), "{t}");
}

#[tokio::test]
async fn held_job_shows_job_held_user_and_how_to_release() {
    let r = remote();
    let dir = scratch(&r, "held").await;
    let id = sbatch(
        &r,
        &[
            "--hold", "-J", "sd-held", "-t", "1", "-D", &dir, "--wrap", "true",
        ],
    )
    .await;
    let j = wait_for("JobHeldUser", Duration::from_secs(30), || async {
        job(&r, id)
            .await
            .filter(|j| j.reason.as_deref() == Some("JobHeldUser"))
    })
    .await;
    scancel(&r, &[id]).await;
    let t = detail_text(&j, None);
    assert!(
        t.contains("Reason JobHeldUser: you (or another user of the job) put it on hold"),
        "{t}"
    );
    assert!(
        t.contains("To do release it (scontrol release) to let it run"),
        "{t}"
    );
    assert!(t.contains("Est. start none while held"), "{t}");
    assert_eq!(
        slurmdash::slurm::reason::compact("JobHeldUser"),
        "JobHeldUser (you)"
    );
}

/// The queue's GPUS column of held jobs that asked for GPUs each way Slurm offers. The row
/// once read only `%b` (GPUs per node), so `--gpus` and `--gpus-per-task` showed `-`.
#[tokio::test]
async fn the_gpus_column_counts_the_gpus_however_the_job_asked() {
    let r = remote();
    let dir = scratch(&r, "gpus").await;
    let asks: [(&str, &[&str], &str); 6] = [
        ("sd-gpus", &["--gpus=2"], "2"),
        ("sd-gpus-per-task", &["-n", "3", "--gpus-per-task=1"], "3"),
        ("sd-gpus-per-node", &["-N", "2", "--gpus-per-node=2"], "4"),
        ("sd-gres", &["-N", "2", "--gres=gpu:1"], "2"),
        ("sd-gpus-array", &["--array=0-3", "--gpus=1"], "1"),
        ("sd-no-gpus", &["-c", "2"], "-"),
    ];
    let mut ids = Vec::new();
    for (name, ask, _) in &asks {
        let mut argv = vec!["--hold", "-J", name, "-t", "1", "-p", "short", "-D", &dir];
        argv.extend_from_slice(ask);
        argv.extend(["--wrap", "true"]);
        ids.push(sbatch(&r, &argv).await);
    }
    let jobs = own_jobs(&r).await;
    scancel(&r, &ids).await;
    let now = chrono::Local::now().naive_local();
    for ((name, _, want), id) in asks.iter().zip(&ids) {
        let j = jobs
            .iter()
            .find(|j| j.id.as_str().split('_').next() == Some(id.to_string().as_str()))
            .unwrap_or_else(|| panic!("{name} ({id}) not in the queue"));
        let row = QueueRow {
            job: j,
            kind: RowKind::Job,
        };
        assert_eq!(Column::Gpus.text(&row, now), *want, "{name}: {j:?}");
    }
}

#[tokio::test]
async fn a_job_that_left_squeue_comes_back_from_sacct_with_its_final_state() {
    let r = remote();
    let dir = scratch(&r, "departed").await;
    let id = sbatch_true(&r, "sd-departs", &["-D", &dir]).await;
    wait_for(
        "the job to leave squeue",
        Duration::from_secs(180),
        || async { job(&r, id).await.is_none().then_some(()) },
    )
    .await;
    let gone = vec![id.to_string().parse().expect("id")];
    // slurmdbd may not have the job's end yet when it leaves squeue (sacct still says
    // PENDING or RUNNING for a moment, more so on a loaded machine): the dashboard asks again
    // at its next refreshes, and so does this test, refresh by refresh, until the record is
    // final.
    let rec = wait_for(
        "sacct's final record of the departed job",
        Duration::from_secs(60),
        || async {
            let (jobs, extra) = poll::poll(&r, &SqueueQuery::default(), &gone, T)
                .await
                .expect("refresh with sacct");
            assert!(!jobs.iter().any(|j| j.id.as_str() == id.to_string()));
            let rec = extra
                .finished
                .into_iter()
                .find(|d| d.id.as_ref().map(|i| i.as_str().to_string()) == Some(id.to_string()))?;
            rec.state
                .as_ref()
                .is_some_and(JobState::is_finished)
                .then_some(rec)
        },
    )
    .await;
    assert_eq!(rec.state, Some(JobState::Completed));
}

#[tokio::test]
async fn partitions_match_sinfo() {
    let r = remote();
    let rows = partitions::fetch(&r, T).await.expect("partitions");
    let names: Vec<&str> = rows.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["short", "polar", "long", "cpu", SPARE]);
    let sinfo = run(&r, &["sinfo", "-h", "-o", "%P %l"])
        .await
        .stdout_lossy();
    assert!(sinfo.contains("polar 4:00:00"), "{sinfo}");
    let polar = &rows[1];
    assert_eq!(polar.max_time.to_slurm(), "4:00:00");
    // polar is the GPU nodes (8 GPUs each); cpu is the CPU-only node(s), without GPUs.
    assert_eq!(polar.gpus_total, 8 * gpu_nodes().len() as u32);
    assert!(rows[0].is_default);
    assert_eq!(
        polar.idle + polar.mixed + polar.allocated + polar.down + polar.drained + polar.other,
        gpu_nodes().len() as u32
    );
    let cpu = &rows[3];
    assert_eq!(cpu.gpus_total, 0);
    assert_eq!(
        cpu.idle + cpu.mixed + cpu.allocated + cpu.down + cpu.drained + cpu.other,
        cpu_nodes().len() as u32
    );
}

/// A job waiting for a QOS's per-user GPU limit: the pane names that limit and slurmctld's
/// count (`scontrol show assoc_mgr`), as the reason it waits. Where the cluster does not
/// enforce limits, slurmctld counts nothing and the pane says so instead.
///
/// As the second test user, with no other test beside it (.config/nextest.toml): the RPCs
/// the daemons count for that user around the fetch are the fetch's alone (jobs and
/// dashboards that other tests leave winding down as sduser once added 2).
#[tokio::test]
async fn a_job_waiting_for_a_qos_gpu_limit_is_told_the_limit_and_slurmctlds_count() {
    let enforced = limits::enforced();
    let limits = limits::OwnLimits::add_for("sdlimits", OTHER_USER);
    let r = remote_as(OTHER_ALIAS);
    let dir = scratch_of(&r, OTHER_USER, "limits").await;
    let args = ["-A", "sdlimits", "--qos=sdlimits", "-c", "1", "-D", &dir];
    // slurmctld hears of the new QOS and account from slurmdbd within seconds.
    let holder = wait_for(
        "sbatch with the new QOS",
        Duration::from_secs(60),
        || async {
            let mut argv = vec!["sbatch", "--parsable", "-J", "sd-lim-holder"];
            argv.extend_from_slice(&["--gres=gpu:2", "-t", "3"]);
            argv.extend_from_slice(&args);
            argv.extend_from_slice(&["--wrap", "sleep 150"]);
            let out = run(&r, &argv).await;
            out.success()
                .then(|| out.stdout_lossy().trim().split(';').next()?.parse().ok())
                .flatten()
        },
    )
    .await;
    let mut argv = vec!["-J", "sd-lim-waits", "--gres=gpu:1", "-t", "1"];
    argv.extend_from_slice(&args);
    argv.extend_from_slice(&["--wrap", "true"]);
    let target = sbatch(&r, &argv).await;
    let mut argv = vec!["--hold", "-J", "sd-lim-held", "-t", "1"];
    argv.extend_from_slice(&args);
    argv.extend_from_slice(&["--wrap", "true"]);
    let held = sbatch(&r, &argv).await;
    let outcome = async {
        wait_for("the holder to run", Duration::from_secs(240), || async {
            job(&r, holder)
                .await
                .filter(|j| j.state == JobState::Running)
                .map(|_| ())
        })
        .await;
        let j = if enforced {
            wait_for("QOSMaxGRESPerUser", Duration::from_secs(60), || async {
                job(&r, target)
                    .await
                    .filter(|j| j.reason.as_deref() == Some("QOSMaxGRESPerUser"))
            })
            .await
        } else {
            job(&r, held).await.expect("the held job in the queue")
        };
        // What the daemons count for the user around the fetch.
        let user = OTHER_USER;
        let before = (r.stats(), rpcs_of(user));
        let info = pending::fetch(&r, &j, T).await.expect("pending info");
        let after = (r.stats(), rpcs_of(user));
        let counted = (after.1 .0 - before.1 .0, after.1 .1 - before.1 .1);
        let table = (
            after.0.rpcs.ctld - before.0.rpcs.ctld,
            after.0.rpcs.dbd - before.0.rpcs.dbd,
        );
        (j, info, after.0.execs - before.0.execs, counted, table)
    }
    .await;
    scancel(&r, &[holder, target, held]).await;
    drop(limits);
    let (j, info, execs, counted, table) = outcome;
    assert!(info.problems.is_empty(), "{:?}", info.problems);
    println!(
        "pending insight of one job: {execs} exec, slurmctld/slurmdbd RPCs by sdiag {counted:?}, by slurmdash's cost table {table:?}"
    );
    assert_eq!(execs, 1, "one remote command");
    // sdiag and `sacctmgr show stats` count what the fetch cost; slurmdash's cost table
    // (what `:stats` shows and the poll budget plans with) must say the same.
    assert_eq!(
        table, counted,
        "slurmdash's cost table (slurmctld, slurmdbd) against what the daemons counted"
    );
    assert_eq!(counted.1, 0, "no slurmdbd RPC for a pending job's insight");
    assert!(
        counted.0 <= 4,
        "at most 4 slurmctld RPCs (sprio, sshare, assoc_mgr, partition), for every pending job of the user: {counted:?}"
    );
    let t = detail_text(&j, Some(&info));
    let texts: Vec<&str> = info.headroom.iter().map(|h| h.text.as_str()).collect();
    if !enforced {
        assert!(
            texts[0].starts_with("slurmctld counts no usage"),
            "{texts:?}"
        );
        assert!(info.limit_hit(j.reason.as_deref()).is_none());
        assert!(
            t.contains("slurmctld counts no usage against these limits"),
            "{t}"
        );
        eprintln!("this cluster does not enforce limits: checked that the pane says so");
        return;
    }
    let hit = info
        .limit_hit(j.reason.as_deref())
        .unwrap_or_else(|| panic!("no limit named for QOSMaxGRESPerUser in {texts:?}"));
    assert_eq!(
        hit.text,
        "you hold 2 of the 2 GPUs QOS sdlimits allows per user"
    );
    assert!(hit.full);
    // The account's limit, with the same count.
    assert!(
        texts.contains(&"account sdlimits holds 2 of the 4 GPUs it allows"),
        "{texts:?}"
    );
    assert!(
        t.contains(
            "Limit hit you hold 2 of the 2 GPUs QOS sdlimits allows per user (QOSMaxGRESPerUser)"
        ),
        "{t}"
    );
}
