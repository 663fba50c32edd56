//! `:history` with two clusters: each read through its own cluster's workers, the rows
//! merged with a CLUSTER column, a failing cluster named while the other's rows stay, pages
//! of one cluster never taken for the other's, and a row's work sent to its own cluster.

use crate::action::JobMsg;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::super::tests::{app, jobs, now};
use super::super::ClusterState;
use super::*;
use crate::action::Msg;
use crate::slurm::eff::parse_eff;

fn fixture() -> Vec<JobUse> {
    parse_eff(include_str!(
        "../../tests/fixtures/slurm/22.05/sacct_eff.out"
    ))
    .unwrap()
}

/// A page of the fixture's jobs (those `keep` lets through) for cluster `ix`.
fn page(ix: u16, generation: u64, steps: bool, keep: fn(&JobUse) -> bool) -> Msg {
    let mut jobs: Vec<JobUse> = fixture().into_iter().filter(keep).collect();
    if !steps {
        jobs.iter_mut().for_each(|u| u.steps.clear());
    }
    Msg::Cluster(
        ix,
        Box::new(Msg::Job(JobMsg::History {
            generation,
            result: Box::new(Ok(Page {
                generation,
                steps,
                jobs,
                problems: Vec::new(),
                last: steps,
            })),
        })),
    )
}

fn all(_: &JobUse) -> bool {
    true
}

/// Everything but the job that ended last (oom, 12:51:59).
fn older(u: &JobUse) -> bool {
    u.detail.name != "oom"
}

fn failed(ix: u16, generation: u64, e: &str) -> Msg {
    Msg::Cluster(
        ix,
        Box::new(Msg::Job(JobMsg::History {
            generation,
            result: Box::new(Err(e.to_string())),
        })),
    )
}

fn key(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn screen(a: &App) -> String {
    let mut t = Terminal::new(TestBackend::new(150, 36)).unwrap();
    t.draw(|f| crate::ui::draw(f, a)).unwrap();
    let buf = t.backend().buffer().clone();
    let mut s = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            s.push_str(buf[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}

/// "dev" (0) and "polar" (1), both with the queue fixture loaded.
fn two() -> App {
    let mut a = app();
    a.add_cluster(ClusterState::new(
        "polar",
        "your jobs",
        Duration::from_secs(5),
        now(),
    ));
    for ix in [0, 1] {
        a.handle(Msg::Cluster(
            ix,
            Box::new(Msg::queue(Ok(jobs()), now(), Duration::from_millis(5))),
        ));
    }
    a.handle(Msg::Resize(150, 36));
    a
}

/// The history reads in `cmds`, by the cluster they were routed to.
fn reads(cmds: &[(u16, Cmd)]) -> Vec<(u16, Request)> {
    cmds.iter()
        .filter_map(|(ix, c)| match c {
            Cmd::History(r) => Some((*ix, r.clone())),
            _ => None,
        })
        .collect()
}

fn gen_of(rs: &[(u16, Request)], ix: u16) -> u64 {
    rs.iter()
        .find(|(i, _)| *i == ix)
        .map(|(_, r)| r.generation)
        .unwrap()
}

/// `:history` typed into the dashboard.
fn type_history(a: &mut App) -> Vec<(u16, Cmd)> {
    let mut cmds = a.handle(Msg::Key(KeyEvent::new(
        KeyCode::Char(':'),
        KeyModifiers::NONE,
    )));
    for c in "history".chars() {
        cmds.extend(a.handle(Msg::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        ))));
    }
    cmds.extend(a.handle(key(KeyCode::Enter)));
    cmds
}

fn clusters_of(a: &App, name: &str) -> Vec<u16> {
    let mut v: Vec<u16> = a
        .queue
        .shown()
        .rows()
        .filter(|r| r.job.name == name)
        .map(|r| r.job.id.cluster())
        .collect();
    v.sort();
    v
}

/// Both clusters read (list, then use).
fn opened() -> (App, Vec<(u16, Request)>) {
    let mut a = two();
    let rs = reads(&type_history(&mut a));
    for (ix, keep) in [(0u16, all as fn(&JobUse) -> bool), (1, older)] {
        let g = gen_of(&rs, ix);
        a.handle(page(ix, g, false, keep));
        a.handle(page(ix, g, true, keep));
    }
    (a, rs)
}

#[test]
fn opening_reads_each_cluster_through_its_own_workers() {
    let mut a = two();
    let cmds = type_history(&mut a);
    let rs = reads(&cmds);
    assert_eq!(rs.len(), 2, "{cmds:?}");
    assert_eq!(
        rs.iter().map(|(ix, _)| *ix).collect::<Vec<_>>(),
        [0, 1],
        "one read per cluster"
    );
    assert_ne!(rs[0].1.generation, rs[1].1.generation);
    for (_, r) in &rs {
        assert_eq!(r.windows, eff::windows(0, 7, WINDOW_DAYS));
    }
    for ix in [0, 1] {
        assert!(
            cmds.contains(&(ix, Cmd::FetchLimits(ix))),
            "each cluster's partitions, for its verdicts: {cmds:?}"
        );
    }
    assert!(a.queue.shown().rows().next().is_none());
    let (title, empty) = a.queue.shown().caption().unwrap().clone();
    assert_eq!(title, "history, 7 days, reading dev, polar…:");
    assert!(empty.contains("reading"), "{empty}");
}

#[test]
fn pages_of_both_clusters_are_merged_with_a_cluster_column() {
    let (a, _) = opened();
    assert_eq!(clusters_of(&a, "tmo"), [0, 1]);
    assert_eq!(clusters_of(&a, "oom"), [0], "polar's page had no oom");
    assert!(a.queue.shown().shown_columns().contains(&Column::Cluster));
    let polar_tmo = a
        .queue
        .shown()
        .rows()
        .find(|r| r.job.name == "tmo" && r.job.id.cluster() == 1)
        .unwrap();
    assert_eq!(&*polar_tmo.job.cluster, "polar");
    // Each cluster's use figures are its own.
    let id: JobId = "2".parse::<JobId>().unwrap().on(1);
    assert_eq!(
        a.queue.shown().fact_text(&id, Column::CpuEff).as_deref(),
        Some("30%")
    );
    assert_eq!(a.queue.shown().caption().unwrap().0, "history, 7 days:");
}

#[test]
fn filter_and_sort_by_cluster_work_on_the_history() {
    let (mut a, _) = opened();
    a.queue.shown_mut().set_filter("polar");
    assert!(a.queue.shown().rows().count() > 0);
    assert!(a.queue.shown().rows().all(|r| r.job.id.cluster() == 1));
    a.queue.shown_mut().set_filter("");
    while a.queue.shown().sort().column != Some(Column::Cluster) {
        a.queue.shown_mut().cycle_sort();
    }
    let order: Vec<u16> = a.queue.shown().rows().map(|r| r.job.id.cluster()).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
}

#[test]
fn a_failing_cluster_is_named_while_the_others_rows_stay() {
    let mut a = two();
    let rs = reads(&type_history(&mut a));
    let (g0, g1) = (gen_of(&rs, 0), gen_of(&rs, 1));
    a.handle(page(0, g0, false, all));
    // Polar has not answered: dev's rows are shown all the same.
    assert_eq!(clusters_of(&a, "tmo"), [0]);
    assert_eq!(
        a.queue.shown().caption().unwrap().0,
        "history, 7 days, reading dev, polar…:"
    );
    a.handle(page(0, g0, true, all));
    assert_eq!(
        a.queue.shown().caption().unwrap().0,
        "history, 7 days, reading polar…:"
    );
    let e = "`sacct --allocations …` on login.polar failed (exit 1): slurmdbd down";
    a.handle(failed(1, g1, e));
    assert_eq!(clusters_of(&a, "tmo"), [0]);
    let title = a.queue.shown().caption().unwrap().0.clone();
    assert_eq!(title, format!("history, 7 days [polar: {e}]:"));
    assert_eq!(
        a.note.as_deref(),
        Some(format!("history on polar: {e}").as_str())
    );
    // Reading again (`:history`) clears polar's error once its rows come.
    let rs = reads(&type_history(&mut a));
    assert_eq!(rs.len(), 2);
    let g1 = gen_of(&rs, 1);
    a.handle(page(1, g1, false, all));
    a.handle(page(1, g1, true, all));
    assert_eq!(clusters_of(&a, "tmo"), [0, 1]);
    assert!(!a.queue.shown().caption().unwrap().0.contains("polar:"));
}

#[test]
fn a_failed_read_with_rows_shown_marks_that_clusters_rows_stale() {
    let (mut a, _) = opened();
    a.handle(key(KeyCode::Esc));
    let rs = reads(&type_history(&mut a));
    a.handle(failed(1, gen_of(&rs, 1), "`sacct` on polar timed out"));
    let polar_row = a
        .queue
        .shown()
        .rows()
        .find(|r| r.job.id.cluster() == 1)
        .unwrap()
        .job
        .clone();
    assert!(a.queue.shown().is_stale(&polar_row));
    let dev_row = a
        .queue
        .shown()
        .rows()
        .find(|r| r.job.id.cluster() == 0)
        .unwrap()
        .job
        .clone();
    assert!(!a.queue.shown().is_stale(&dev_row));
}

#[test]
fn one_clusters_pages_are_never_taken_for_the_others() {
    let mut a = two();
    let rs = reads(&type_history(&mut a));
    let (g0, g1) = (gen_of(&rs, 0), gen_of(&rs, 1));
    // Dev's generation arriving from polar, and polar's from dev: both dropped.
    a.handle(page(1, g0, true, all));
    a.handle(page(0, g1, true, all));
    assert!(a.queue.shown().rows().next().is_none());
    assert!(a.history.reading(0) && a.history.reading(1));
    // Each cluster's own: taken.
    a.handle(page(0, g0, true, all));
    assert!(!a.history.reading(0) && a.history.reading(1));
    assert_eq!(clusters_of(&a, "oom"), [0]);
}

#[test]
fn reopening_reads_each_cluster_from_its_own_newest_end() {
    let (mut a, first) = opened();
    a.handle(key(KeyCode::Esc));
    assert!(!a.history.open);
    let rs = reads(&type_history(&mut a));
    assert_eq!(rs.len(), 2);
    let start = |ix: u16| match rs.iter().find(|(i, _)| *i == ix).unwrap().1.windows[..] {
        [(Edge::At(t), _)] => t,
        ref w => panic!("{w:?}"),
    };
    let t = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap();
    let five = chrono::Duration::seconds(OVERLAP_SECS);
    assert_eq!(
        start(0),
        t("2026-11-24T12:51:59") - five,
        "dev's newest: oom"
    );
    assert_eq!(
        start(1),
        t("2026-11-24T12:50:45") - five,
        "polar's newest: tmo"
    );
    // The generations stay (an incremental read adds to the rows).
    assert_eq!(gen_of(&rs, 0), gen_of(&first, 0));
    assert_eq!(gen_of(&rs, 1), gen_of(&first, 1));
}

#[test]
fn brackets_widen_and_narrow_every_cluster() {
    let (mut a, _) = opened();
    let rs = reads(&a.handle(key(KeyCode::Char('['))));
    assert_eq!(rs.len(), 2);
    for (_, r) in &rs {
        assert_eq!(r.windows, eff::windows(7, 7, 7));
    }
    assert_eq!(a.history.days, 14);
    let rs = reads(&a.handle(key(KeyCode::Char(']'))));
    assert_eq!(rs.len(), 2);
    for (_, r) in &rs {
        assert_eq!(r.windows, eff::windows(0, 7, 7));
    }
    assert_ne!(rs[0].1.generation, rs[1].1.generation);
    assert_eq!(a.history.days, 7);
}

#[test]
fn a_history_row_of_the_second_cluster_has_its_work_sent_there() {
    let (mut a, _) = opened();
    // Select dev's tmo, then move to polar's (the rows are newest first; same end times
    // sit together).
    let dev = a
        .queue
        .shown()
        .rows()
        .position(|r| r.job.name == "tmo" && r.job.id.cluster() == 0)
        .unwrap();
    a.queue.shown_mut().select_index(dev);
    a.handle(Msg::Resize(150, 36));
    let mut cmds = Vec::new();
    for _ in 0..a.queue.shown().len() {
        if a.queue
            .shown()
            .selected_job()
            .is_some_and(|j| j.id.cluster() == 1)
        {
            break;
        }
        cmds = a.handle(key(KeyCode::Down));
    }
    let sel = a.queue.shown().selected_job().unwrap().clone();
    assert_eq!(sel.id.cluster(), 1, "a polar row is selected");
    assert_eq!(a.shown().ix, 1, "polar is the cluster on screen");
    assert!(
        !cmds.iter().any(|(_, c)| matches!(c, Cmd::FetchDetail(_))),
        "the detail is known: {cmds:?}"
    );
    let mut named = 0;
    for (ix, c) in &mut cmds {
        if let Cmd::Tail(targets) = c {
            assert!(targets.iter().all(|(id, ..)| id.cluster() == *ix));
            continue;
        }
        if let Some(k) = c.cluster_of_ids() {
            named += 1;
            assert_eq!((k, *ix), (1, 1), "{c:?}");
        }
    }
    assert!(named > 0, "the row's triage goes to polar: {cmds:?}");
    assert_eq!(
        a.detail.detail.as_ref().map(|d| d.name.clone()),
        Some(sel.name.to_string())
    );
}

#[test]
fn history_view_of_two_clusters() {
    let (a, _) = opened();
    let s = screen(&a);
    assert!(s.contains("CLUSTER"), "{s}");
    assert_snapshot!(s);
}

#[test]
fn history_view_with_one_cluster_failing() {
    let mut a = two();
    let rs = reads(&type_history(&mut a));
    a.handle(page(0, gen_of(&rs, 0), false, all));
    a.handle(page(0, gen_of(&rs, 0), true, all));
    a.handle(failed(
        1,
        gen_of(&rs, 1),
        "`sacct --allocations …` on login.polar failed (exit 1): slurmdbd down",
    ));
    let s = screen(&a);
    assert!(s.contains("polar: `sacct"), "{s}");
    assert_snapshot!(s);
}

#[test]
fn a_cluster_added_while_the_history_shows_names_the_queues_rows() {
    let mut a = app();
    a.handle(Msg::queue(Ok(jobs()), now(), Duration::from_millis(5)));
    type_history(&mut a);
    a.add_cluster(ClusterState::new(
        "polar",
        "your jobs",
        Duration::from_secs(5),
        now(),
    ));
    assert!(
        a.queue.shown().shown_columns().contains(&Column::Cluster),
        "the history's"
    );
    a.handle(key(KeyCode::Esc));
    assert!(!a.history.open);
    assert!(
        a.queue.shown().shown_columns().contains(&Column::Cluster),
        "the queue's"
    );
    assert!(a.queue.shown().rows().all(|r| &*r.job.cluster == "dev"));
    // `:history` again reads the new cluster too.
    let rs = reads(&type_history(&mut a));
    assert!(rs.iter().any(|(ix, _)| *ix == 1), "{rs:?}");
}
