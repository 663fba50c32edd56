//! Snapshots of the pending part of the detail pane, `:partitions` and `:stats`, from
//! fixtures captured on the dev cluster (limits added by hand where the cluster has none).
//! The detail pane is drawn from one capture ([`CAPTURE`]): the job, its rank listing,
//! sprio, sshare and the partitions as slurmctld gave them at one moment.

use crate::action::{InsightMsg, PollMsg};
use std::time::Duration;

use chrono::NaiveDateTime;
use insta::assert_snapshot;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use super::detail::{DetailWidget, PendingView};
use super::partitions::{sparkline, PartitionsWidget};
use super::queue::tests::{now, text};
use super::stats::StatsWidget;
use super::theme::Theme;
use crate::action::Msg;
use crate::app::insight::View;
use crate::app::App;
use crate::payload::RemoteStats;
use crate::slurm::batch::Section;
use crate::slurm::command::RpcCost;
use crate::slurm::model::Job;
use crate::slurm::parse::parse_squeue;
use crate::slurm::partview;
use crate::slurm::pending;

const ME: &str = include_str!("../../tests/fixtures/slurm/squeue_me.out");
/// slurmctld's limits and usage for sduser, account research, QOS normal (captured on
/// 26.05, where none are set).
const ASSOC_MGR: &str = include_str!("../../tests/fixtures/slurm/26.05/scontrol_assoc_mgr.out");

/// [`ASSOC_MGR`] with a limit of 8 GPUs per user on QOS normal, all 8 held by sduser in a
/// running job, and the selected job counted among the queued ones.
fn assoc_mgr_gpu8() -> String {
    let mut out = String::new();
    let mut in_user = false;
    for line in ASSOC_MGR.lines() {
        let t = line.trim();
        if t == "sduser(1001)" {
            in_user = true;
        } else if !t.starts_with("Max") {
            in_user = false;
        }
        let mut l = line.replace("GrpSubmitJobs=N(0)", "GrpSubmitJobs=N(2)");
        if in_user && t.starts_with("MaxTRESPU=") {
            l = l.replace("gres/gpu=N(0)", "gres/gpu=8(8)");
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

fn fixture(n: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/slurm/{n}.out",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn ok(s: &str) -> Section {
    Section {
        stdout: s.to_string(),
        stderr: String::new(),
        code: Some(0),
    }
}

/// The capture the detail pane's pending part is drawn from: `scripts/capture-fixtures`
/// took its queue, rank listing, sprio, sshare and partitions together, and
/// [`ASSOC_MGR`] from the same cluster.
const CAPTURE: &str = "26.05";

fn captured(n: &str) -> String {
    fixture(&format!("{CAPTURE}/{n}"))
}

/// When the capture's squeue ran: its running jobs, started at 15:53:12, had run 0:13.
fn captured_at() -> NaiveDateTime {
    NaiveDateTime::parse_from_str("2026-11-23T15:53:25", "%Y-%m-%dT%H:%M:%S").unwrap()
}

/// The capture's job called `name`, as the queue poll (`squeue --me`) listed it.
fn job(name: &str) -> Job {
    parse_squeue(&captured("squeue_me"))
        .unwrap()
        .into_iter()
        .find(|j| j.name == name)
        .unwrap()
}

/// What one read says of `job`, from the capture's own output, with `assoc_mgr` as
/// slurmctld's limits (the capture's sprio lists every pending job of the partition).
fn info(job: &Job, assoc_mgr: &str) -> pending::PendingInfo {
    let sections = vec![
        ok(&captured("sprio")),
        ok(&captured("sshare_acct_user")),
        ok(assoc_mgr),
        ok(&captured("scontrol_partition")),
    ];
    let ask = pending::Ask::of(job.user.as_str(), [job], true).expect("a pending job");
    pending::parse(&ask, &sections).info_for(job)
}

fn detail(job: &Job, info: Option<&pending::PendingInfo>, w: u16, h: u16) -> String {
    detail_with(job, info, None, w, h)
}

fn detail_with(
    job: &Job,
    info: Option<&pending::PendingInfo>,
    maintenance: Option<String>,
    w: u16,
    h: u16,
) -> String {
    let theme = Theme::new(false);
    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
    DetailWidget {
        job: Some(job),
        focused: true,
        pending: PendingView {
            info,
            loading: false,
            error: None,
            edit_key: Some("E"),
            waited: None,
            as_of: None,
            maintenance: maintenance.as_deref(),
            sooner: &[],
        },
        ..DetailWidget::blank(&theme, captured_at())
    }
    .render(buf.area, &mut buf);
    text(&buf)
}

#[test]
fn detail_pending_with_rank_factors_fairshare_and_limits() {
    let j = job("cpu hog 3");
    let i = info(&j, &assoc_mgr_gpu8());
    let s = detail(&j, Some(&i), 80, 40);
    // Behind `cpu hog 2`: the same priority, submitted first (a lower id). The capture's
    // sprio lists the user's own five pending jobs (the program asks for everyone's: the
    // real cluster's tests check that rank).
    assert!(
        s.contains("Rank         2nd of 5 in short (1 job ahead, 1 of equal priority"),
        "{s}"
    );
    assert!(
        s.contains("you hold 8 of the 8 GPUs QOS normal allows per user"),
        "{s}"
    );
    assert_snapshot!(s);
}

/// A maintenance window on every node of the job's partition, starting before its time
/// limit would end: the pane names the window and the longest limit that starts the job
/// before it (worked out on the captured partitions, on the cluster's clock).
#[test]
fn detail_names_the_maintenance_window_a_pending_job_runs_into() {
    use crate::app::maintenance::{explain, MaintenanceState};
    use crate::slurm::reservation::{parse_reservations, Reservations};
    let j = job("cpu hog 3");
    let i = info(&j, &assoc_mgr_gpu8());
    let nodes = i
        .partition(j.partition.as_str())
        .expect("its partition")
        .nodes
        .clone();
    let limit = j.time_limit.known().expect("a time limit").as_secs();
    let now = captured_at();
    // The cluster's clock is an hour behind this machine's.
    let cnow = now - chrono::Duration::hours(1);
    let start = cnow + chrono::Duration::seconds(i64::try_from(limit / 2).unwrap());
    let end = start + chrono::Duration::hours(2);
    let text = format!(
        "ReservationName=maint StartTime={} EndTime={} Duration=02:00:00\n   Nodes={nodes} NodeCnt=2 CoreCnt=8 Features=(null) PartitionName=(null) Flags=MAINT,SPEC_NODES\n   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a\n",
        start.format("%Y-%m-%dT%H:%M:%S"),
        end.format("%Y-%m-%dT%H:%M:%S"),
    );
    let mut m = MaintenanceState::default();
    m.on_read(
        Ok(Reservations {
            now: cnow,
            items: parse_reservations(&text).expect("parses"),
        }),
        now,
    );
    let hit = m
        .hit(&j, &i.partitions, now)
        .expect("its limit runs into the window");
    let longest = hit.longest.expect("a shorter limit fits before it");
    // Strictly before the window, in whole minutes: a limit ending as it starts is too long.
    assert_eq!(
        longest.known().expect("known").as_secs(),
        (limit / 2 - 1) / 60 * 60,
        "whole minutes, ending before the window"
    );
    let line = explain(&hit, &j, m.cluster_now(now).expect("read"), Some("E"));
    let s = detail_with(&j, Some(&i), Some(line), 100, 40);
    assert!(s.contains("Maintenance  maintenance "), "{s}");
    assert!(s.contains("(in 10m): its 20m limit runs into"), "{s}");
    assert!(s.contains("a limit of 9m or less starts before it"), "{s}");
}

/// A job waiting for QOSMaxGRESPerUser: the pane names the limit and slurmctld's count.
#[test]
fn detail_names_the_limit_a_job_waits_for() {
    let mut j = job("cpu hog 3");
    j.reason = Some("QOSMaxGRESPerUser".into());
    j.tres_per_node = Some("gres:gpu:1".into());
    let i = info(&j, &assoc_mgr_gpu8());
    assert!(
        i.limit_hit(j.reason.as_deref()).is_some(),
        "{:?}",
        i.headroom
    );
    let s = detail(&j, Some(&i), 120, 40);
    assert!(
        s.contains(
            "Limit hit    you hold 8 of the 8 GPUs QOS normal allows per user (QOSMaxGRESPerUser)"
        ),
        "{s}"
    );
    assert_snapshot!(s);
    // Without slurmctld's counts (limits not enforced) nothing is named.
    let i = info(
        &j,
        &assoc_mgr_gpu8().replace("GrpSubmitJobs=N(2)", "GrpSubmitJobs=N(0)"),
    );
    let s = detail(&j, Some(&i), 120, 40);
    assert!(!s.contains("Limit hit"), "{s}");
    assert!(
        s.contains("slurmctld counts no usage against these limits"),
        "{s}"
    );
}

#[test]
fn detail_over_partition_maxtime_names_numbers_and_fix() {
    let j = job("over-maxtime");
    let i = info(&j, ASSOC_MGR);
    let s = detail(&j, Some(&i), 100, 34);
    assert!(
        s.contains("time limit 2:00:00 exceeds short's MaxTime 30:00"),
        "{s}"
    );
    assert!(s.contains("E to edit"), "{s}");
    assert_snapshot!(s);
}

fn app() -> App {
    let mut a = App::fixture(now());
    a.update(Msg::queue(
        Ok(parse_squeue(ME).unwrap()),
        now(),
        Duration::from_millis(10),
    ));
    a
}

#[test]
fn partitions_view_with_a_pending_job_selected() {
    let mut a = app();
    let demand = "short\x1fRUNNING\x1fgres:gpu:2\x1f1\x1e\n\
                  short\x1fPENDING\x1fgres:gpu:8\x1f1\x1e\n\
                  short,polar\x1fPENDING\x1fN/A\x1f1\x1e\n\
                  polar\x1fRUNNING\x1fgres:gpu:1\x1f1\x1e\n";
    let rows = partview::parse(&fixture("sinfo"), &fixture("scontrol_partition"), demand).unwrap();
    a.update(Msg::Insight(InsightMsg::Partitions {
        result: Ok(rows),
        at: now(),
    }));
    a.run_command("partitions");
    assert_eq!(a.overlays.view, Some(View::Partitions));
    let i = a
        .queue
        .shown()
        .rows()
        .position(|r| r.job.id.as_str() == "242")
        .unwrap();
    a.queue.shown_mut().select_index(i);
    for (p, r) in [(3, 1), (4, 1), (6, 2), (6, 3), (2, 5), (0, 7)] {
        a.clusters[0].insight.history.push_back((p, r));
    }
    let mut buf = Buffer::empty(Rect::new(0, 0, 100, 24));
    PartitionsWidget { app: &a }.render(buf.area, &mut buf);
    let s = text(&buf);
    assert!(s.contains("polar        could start now"), "{s}");
    assert!(
        s.contains("short        cannot run it: time 2:00:00 > MaxTime 30:00"),
        "{s}"
    );
    assert_snapshot!(s);
}

/// What counting a few real commands gives, per command.
fn by_command() -> std::collections::BTreeMap<String, crate::payload::CommandCount> {
    let mut st = RemoteStats::default();
    let job: crate::slurm::model::JobId = "812".parse().expect("job id");
    for _ in 0..3 {
        st.count(&crate::slurm::command::squeue(&Default::default()));
    }
    st.count(&crate::slurm::command::scontrol_show_job(&job, false));
    st.count(&crate::slurm::live::argv(
        &crate::slurm::live::LiveTarget {
            id: job,
            gpu_nodes: vec!["gpu01".into()],
            nodes_skipped: 0,
            timeout_secs: 10,
        },
        "M",
    ));
    st.count(&["sacct".to_string(), "-j".into(), "700".into()]);
    st.count(&["tail".to_string(), "-c".into(), "10".into()]);
    st.by_command
}

#[test]
fn stats_view_rates_bytes_and_round_trip() {
    let mut a = app();
    let t0 = now();
    for (i, execs) in [(0i64, 10u64), (60, 22), (120, 34)] {
        a.update(Msg::Poll(PollMsg::RemoteStats {
            stats: RemoteStats {
                execs,
                bytes_in: execs * 2048,
                bytes_out: execs * 600,
                last_rtt: Some(Duration::from_millis(12)),
                connects: 1,
                rpcs: RpcCost {
                    ctld: execs * 2,
                    dbd: execs / 10,
                },
                by_command: by_command(),
            },
            at: t0 + chrono::Duration::seconds(i),
        }));
    }
    a.run_command("stats");
    let mut buf = Buffer::empty(Rect::new(0, 0, 90, 26));
    StatsWidget { app: &a }.render(buf.area, &mut buf);
    let s = text(&buf);
    assert!(
        s.contains("slurmctld RPCs per minute 24.0 (last 5 min; 68 in all)"),
        "{s}"
    );
    assert!(
        s.contains("slurmdbd RPCs per minute  1.0 (3 in all)"),
        "{s}"
    );
    assert!(
        s.contains("round trips per minute    12.0 (SSH execs; 34 in all)"),
        "{s}"
    );
    // Per command, the costliest first; tail costs nothing and is not named.
    assert!(
        s.contains("by command                squeue: 3 runs, 6 RPCs"),
        "{s}"
    );
    for l in [
        "sstat: 1 run, 3 RPCs",
        "srun: 1 run, 2 RPCs",
        "scontrol show job: 1 run, 1 RPC",
        "sacct: 1 run, 3 RPCs to slurmdbd",
    ] {
        assert!(s.contains(l), "{l}: {s}");
    }
    assert!(!s.contains("tail"), "{s}");
    assert_snapshot!(s);
}

#[test]
fn sparkline_scales_to_the_largest() {
    assert_eq!(sparkline(&[0, 1, 2, 4, 8], 10), " ▁▂▄█");
    assert_eq!(sparkline(&[5, 5], 1), "█");
    assert_eq!(sparkline(&[], 4), "");
}

/// An App with the default budget (4 RPCs a minute), driven through `handle` as the
/// dashboard does: a refresh at connect, its answer, then the timer's refreshes at 30 and
/// 40 s (the second held: the minute is spent), a key that moves to a pending job.
/// Four rows walked in one second (40 s in): the first row passed is read at once, the
/// one walked to waits for the next second.
fn app_on_a_budget_walking() -> App {
    let mut a = app_on_a_budget_at(None);
    for _ in 0..4 {
        a.handle(Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('j'),
            crossterm::event::KeyModifiers::NONE,
        )));
    }
    a
}

fn app_on_a_budget() -> App {
    app_on_a_budget_at(Some(48))
}

fn app_on_a_budget_at(end: Option<i64>) -> App {
    use crate::app::budget::Budget;
    let mut a = App::fixture(now());
    a.clusters[0].budget = Budget::new(4);
    let at = |s: i64| now() + chrono::Duration::seconds(s);
    let hub = |m: Msg| Msg::Cluster(0, Box::new(m));
    let answer = |a: &mut App, s: i64| {
        a.handle(hub(Msg::queue(
            Ok(parse_squeue(ME).unwrap()),
            at(s),
            Duration::from_millis(10),
        )))
    };
    a.handle(hub(Msg::Poll(PollMsg::PollDue)));
    answer(&mut a, 0);
    a.handle(Msg::Tick(at(1)));
    a.handle(Msg::Tick(at(30)));
    a.handle(hub(Msg::Poll(PollMsg::PollDue)));
    answer(&mut a, 30);
    a.handle(Msg::Tick(at(40)));
    a.handle(hub(Msg::Poll(PollMsg::PollDue)));
    let Some(end) = end else {
        return a;
    };
    for _ in 0..4 {
        a.handle(Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('j'),
            crossterm::event::KeyModifiers::NONE,
        )));
    }
    a.handle(Msg::Tick(at(end)));
    a
}

#[test]
fn the_status_bar_says_when_the_next_refresh_comes_and_the_budget() {
    let a = app_on_a_budget();
    let mut buf = Buffer::empty(Rect::new(0, 0, 120, 2));
    super::status::StatusWidget { app: &a }.render(buf.area, &mut buf);
    let s = text(&buf);
    assert!(
        s.contains("(every 50s · next in 13s, held by the budget of 4/min)"),
        "{s}"
    );
    assert_snapshot!(s);
}

#[test]
fn stats_show_the_budget_what_it_buys_and_what_waits() {
    let mut a = app_on_a_budget();
    // The site limits too, more loosely than the budget (Slurm's defaults).
    a.handle(Msg::Cluster(
        0,
        Box::new(Msg::Poll(PollMsg::SiteLimit(Ok(Some(
            crate::slurm::ratelimit::RateLimit {
                bucket: 30,
                refill_rate: 2,
                refill_period_secs: 1,
            },
        ))))),
    ));
    a.handle(Msg::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char(':'),
        crossterm::event::KeyModifiers::NONE,
    )));
    a.run_command("stats");
    let mut buf = Buffer::empty(Rect::new(0, 0, 100, 24));
    StatsWidget { app: &a }.render(buf.area, &mut buf);
    let s = text(&buf);
    assert!(
        s.contains("RPC budget                4/min averaged over 5 min"),
        "{s}"
    );
    assert!(s.contains("a refresh at least every 50 s"), "{s}");
    assert!(
        s.contains("site limit                rl_enable: bucket 30, 2 per 1 s (120 RPCs/min), above the budget"),
        "{s}"
    );
    assert!(
        s.contains("held                      refresh (2 RPCs): goes in 13 s"),
        "{s}"
    );
    assert_snapshot!(s);
}

#[test]
fn with_several_clusters_a_refresh_held_by_the_budget_is_named_on_its_cluster() {
    let mut a = app_on_a_budget();
    a.add_cluster(crate::app::ClusterState::new(
        "beta",
        "your jobs",
        Duration::from_secs(5),
        now(),
    ));
    let mut buf = Buffer::empty(Rect::new(0, 0, 160, 2));
    super::status::StatusWidget { app: &a }.render(buf.area, &mut buf);
    let s = text(&buf);
    let first = s.lines().next().unwrap();
    let (dev, beta) = first.split_once(" beta ").unwrap();
    assert!(
        dev.contains("· next in 13s, held by the budget of 4/min"),
        "{s}"
    );
    assert!(!beta.contains("budget"), "{s}");
}

/// In the first minute the rates are what was spent so far, not extrapolated: two RPCs
/// ten seconds in are 2 a minute, not 12.
#[test]
fn stats_rates_in_the_first_minute_are_not_extrapolated() {
    let mut a = app();
    let t0 = now();
    for (i, execs) in [(0i64, 0u64), (10, 1)] {
        a.update(Msg::Poll(PollMsg::RemoteStats {
            stats: RemoteStats {
                execs,
                bytes_in: 0,
                bytes_out: 0,
                last_rtt: None,
                connects: 1,
                rpcs: RpcCost {
                    ctld: execs * 2,
                    dbd: 0,
                },
                ..Default::default()
            },
            at: t0 + chrono::Duration::seconds(i),
        }));
    }
    let r = super::stats::rates(&a, 300).expect("rates");
    assert_eq!((r.ctld, r.execs), (2.0, 1.0));
}

#[test]
fn a_detail_walked_past_goes_at_the_next_second_and_says_loading_meanwhile() {
    use ratatui::{backend::TestBackend, Terminal};
    let mut a = app_on_a_budget_walking();
    assert!(
        a.detail.loading,
        "the walked-to job's detail is not read yet"
    );
    let mut t = Terminal::new(TestBackend::new(160, 40)).unwrap();
    t.draw(|f| super::draw(f, &a)).unwrap();
    let s = text(t.backend().buffer());
    assert!(s.contains("loading details…"), "{s}");
    assert!(!s.contains("wait for the RPC budget"), "{s}");
    let selected = a.queue.shown().selected_id().cloned().unwrap();
    let out = a.handle(Msg::Tick(now() + chrono::Duration::seconds(41)));
    assert!(
        out.iter()
            .any(|(_, c)| *c == crate::action::Cmd::FetchDetail(selected.clone())),
        "{out:?}"
    );
}

#[test]
fn stats_say_what_state_checks_buy_on_a_cluster_that_answers_them() {
    let mut a = app_on_a_budget();
    a.handle(Msg::Cluster(
        0,
        Box::new(Msg::Poll(PollMsg::SlurmVersion(
            crate::slurm::statecheck::Version(24, 11, 5),
        ))),
    ));
    a.overlays.view = Some(crate::app::insight::View::Stats);
    let mut buf = Buffer::empty(Rect::new(0, 0, 130, 24));
    StatsWidget { app: &a }.render(buf.area, &mut buf);
    let s = text(&buf);
    assert!(
        s.contains("a state check every 29 s and a full read every 58 s"),
        "{s}"
    );
    assert!(s.contains("every other one a state check"), "{s}");
    assert!(
        s.contains("state checks              Slurm 24.11.5: 0 sent, 0 saw a change"),
        "{s}"
    );
    // 22.05: full reads only, as before, and :stats says why.
    let mut a = app_on_a_budget();
    a.handle(Msg::Cluster(
        0,
        Box::new(Msg::Poll(PollMsg::SlurmVersion(
            crate::slurm::statecheck::Version(22, 5, 8),
        ))),
    ));
    let mut buf = Buffer::empty(Rect::new(0, 0, 130, 24));
    StatsWidget { app: &a }.render(buf.area, &mut buf);
    let s = text(&buf);
    assert!(s.contains("a refresh at least every 50 s"), "{s}");
    assert!(
        s.contains("none: Slurm 22.05.8 has no squeue --only-job-state (23.11.5+)"),
        "{s}"
    );
}

/// A kept answer shows its age while a newer one is read, and on its own once a minute old.
#[test]
fn a_kept_pending_answer_says_how_old_it_is() {
    let j = job("cpu hog 3");
    let i = info(&j, ASSOC_MGR);
    let theme = Theme::new(false);
    let draw = |loading: bool, secs: i64| {
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 30));
        DetailWidget {
            job: Some(&j),
            focused: true,
            pending: PendingView {
                info: Some(&i),
                loading,
                as_of: Some(captured_at() - chrono::Duration::seconds(secs)),
                ..PendingView::default()
            },
            ..DetailWidget::blank(&theme, captured_at())
        }
        .render(buf.area, &mut buf);
        text(&buf)
    };
    let s = draw(true, 130);
    assert!(
        s.contains("Queue info   read 2m10s ago, reading again…"),
        "{s}"
    );
    assert!(
        s.contains("Rank         2nd of 5 in short"),
        "shown meanwhile: {s}"
    );
    assert!(draw(false, 90).contains("Queue info   read 1m30s ago"));
    assert!(
        !draw(false, 20).contains("Queue info"),
        "fresh: nothing to say"
    );
}
