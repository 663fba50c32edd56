//! `:history` driven through messages, and snapshots of the view and of a finished job's
//! efficiency in the detail pane.

use crate::action::{JobMsg, PollMsg};
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::super::tests::{app, jobs, loaded, now};
use super::*;
use crate::action::Msg;
use crate::slurm::eff::parse_eff;

fn fixture() -> Vec<JobUse> {
    parse_eff(include_str!(
        "../../tests/fixtures/slurm/22.05/sacct_eff.out"
    ))
    .unwrap()
}

fn page(generation: u64, steps: bool, last: bool) -> Msg {
    let mut jobs = fixture();
    if !steps {
        jobs.iter_mut().for_each(|u| u.steps.clear());
    }
    Msg::Job(JobMsg::History {
        generation,
        result: Box::new(Ok(Page {
            generation,
            steps,
            jobs,
            problems: Vec::new(),
            last,
        })),
    })
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

fn history_reads(cmds: &[Cmd]) -> Vec<&Request> {
    cmds.iter()
        .filter_map(|c| match c {
            Cmd::History(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// The app with the queue loaded and the history open and read (list, then use).
fn opened() -> (App, Vec<Cmd>) {
    let mut a = app();
    a.size = (150, 36);
    a.update(loaded(jobs()));
    let cmds = a.run_command("history");
    a.update(page(1, false, false));
    a.update(page(1, true, true));
    (a, cmds)
}

#[test]
fn opening_reads_seven_days_in_windows_ending_a_minute_from_now() {
    let (a, cmds) = opened();
    let reads = history_reads(&cmds);
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].windows, eff::windows(0, 7, WINDOW_DAYS));
    assert_eq!(reads[0].windows[0].1, eff::NEWEST_END);
    assert!(a.history.open);
    assert!(a
        .queue
        .shown()
        .rows()
        .any(|r| r.job.name == "burn two|cores"));
    assert!(
        cmds.contains(&Cmd::FetchLimits(0)),
        "partitions for the verdicts"
    );
}

#[test]
fn the_list_shows_before_the_use_figures_fill_in() {
    let mut a = app();
    a.run_command("history");
    a.update(page(1, false, false));
    let id: JobId = "2".parse().unwrap();
    assert_eq!(
        a.queue.shown().fact_text(&id, Column::CpuEff).as_deref(),
        Some("…")
    );
    assert!(a.history.report(&id).is_none());
    a.update(page(1, true, true));
    assert_eq!(
        a.queue.shown().fact_text(&id, Column::CpuEff).as_deref(),
        Some("30%")
    );
    assert_eq!(
        a.queue.shown().fact_text(&id, Column::Triage).as_deref(),
        Some("COMPLETE")
    );
    // A page of an older read is dropped.
    a.update(page(0, true, true));
}

/// The queue keeps its own rows, filter and selection while the history's are on screen.
#[test]
fn the_queue_keeps_its_rows_and_selection_while_the_history_shows() {
    let mut a = app();
    a.size = (150, 36);
    a.update(loaded(jobs()));
    a.queue.shown_mut().select_id(&"248".parse().unwrap());
    let (before, total) = (
        a.queue.shown().selected_id().cloned(),
        a.queue.shown().total(),
    );
    a.run_command("history");
    a.update(page(1, true, true));
    assert!(a
        .queue
        .shown()
        .rows()
        .any(|r| r.job.name == "burn two|cores"));
    a.update(key(KeyCode::Down));
    a.queue.shown_mut().set_filter("burn");
    assert_eq!(
        a.queue.jobs.total(),
        total,
        "the queue's rows are where they were"
    );
    assert_eq!(a.queue.jobs.selected_id(), before.as_ref());
    assert_eq!(a.queue.jobs.filter(), "");
    a.update(key(KeyCode::Esc));
    a.update(key(KeyCode::Esc));
    assert!(!a.history.open);
    assert_eq!(
        a.queue.shown().selected_id(),
        before.as_ref(),
        "the queue's selection is back"
    );
}

#[test]
fn queue_refreshes_land_in_the_queue_s_rows_while_the_history_shows() {
    let (mut a, _) = opened();
    let shown = a.queue.shown().total();
    let later = now() + chrono::Duration::seconds(10);
    a.update(Msg::queue(Ok(jobs()), later, Duration::from_millis(5)));
    assert_eq!(
        a.queue.shown().total(),
        shown,
        "the history's rows stay on screen"
    );
    assert_eq!(
        a.clusters[0].status.last_ok,
        Some(later),
        "the refresh is applied at once, to the queue's rows"
    );
    assert_eq!(a.queue.jobs.total(), jobs().len());
    a.update(key(KeyCode::Esc));
    assert!(!a.history.open);
    assert_eq!(
        a.queue.shown().total(),
        jobs().len(),
        "esc shows the queue's rows"
    );
    assert!(a
        .queue
        .shown()
        .rows()
        .all(|r| r.job.name != "burn two|cores"));
    // Opening again reads only what ended since the newest end seen.
    let cmds = a.run_command("history");
    let reads = history_reads(&cmds);
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].windows.len(), 1);
    assert!(matches!(reads[0].windows[0].0, Edge::At(_)));
}

#[test]
fn brackets_page_a_week_further_and_less_back() {
    let (mut a, _) = opened();
    let cmds = a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('['),
        KeyModifiers::NONE,
    )));
    let reads = history_reads(&cmds);
    assert_eq!(reads[0].windows, eff::windows(7, 7, 7));
    assert_eq!(a.history.days, 14);
    let cmds = a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char(']'),
        KeyModifiers::NONE,
    )));
    assert_eq!(history_reads(&cmds)[0].windows, eff::windows(0, 7, 7));
    assert_eq!(a.history.days, 7);
}

#[test]
fn a_history_row_shows_its_detail_without_a_remote_command() {
    let (mut a, _) = opened();
    let i = a
        .queue
        .shown()
        .rows()
        .position(|r| r.job.name == "tmo")
        .unwrap();
    a.queue.shown_mut().select_index(i);
    let cmds = a.selection_changed();
    assert!(
        !cmds.iter().any(|c| matches!(c, Cmd::FetchDetail(_))),
        "{cmds:?}"
    );
    assert_eq!(
        a.detail.detail.as_ref().map(|d| d.name.as_str()),
        Some("tmo")
    );
}

#[test]
fn history_view() {
    let (a, _) = opened();
    let s = screen(&a);
    assert!(s.contains("history, 7 days"), "{s}");
    assert_snapshot!(s);
}

#[test]
fn efficiency_in_the_detail_pane() {
    let (mut a, _) = opened();
    let i = a
        .queue
        .shown()
        .rows()
        .position(|r| r.job.name == "burn two|cores")
        .unwrap();
    a.queue.shown_mut().select_index(i);
    a.selection_changed();
    let s = screen(&a);
    assert!(s.contains("Efficiency"), "{s}");
    assert!(s.contains("asked 1G, peaked 310M: 400M would do"), "{s}");
    assert_snapshot!(s);
}

#[test]
fn a_finished_queue_job_gets_its_report_from_the_detail_read() {
    let mut a = app();
    let u = fixture()
        .into_iter()
        .find(|u| u.detail.name == "tmo")
        .unwrap();
    let cmds = a.update(Msg::Job(JobMsg::JobUse {
        id: "4".parse().unwrap(),
        result: Box::new(u),
    }));
    assert_eq!(
        cmds,
        vec![Cmd::FetchLimits(0)],
        "a timeout's verdict wants partitions"
    );
    let r = a.history.report(&"4".parse().unwrap()).unwrap();
    assert!(
        r.verdict.starts_with("ran out of time at 1:00"),
        "{}",
        r.verdict
    );
}

/// The refresh pace follows the queue's jobs while the history's rows are on screen: a
/// start about to happen keeps it fastest.
#[test]
fn the_queue_s_jobs_set_the_refresh_pace_while_the_history_shows() {
    use crate::app::insight::PollBounds;
    use crate::slurm::model::Status;
    let mut a = app();
    a.size = (150, 36);
    let secs = Duration::from_secs;
    a.clusters[0].insight.bounds = PollBounds::new(secs(5), secs(2), secs(30));
    let q: Vec<_> = jobs()
        .into_iter()
        .filter(|j| j.status() == Status::Pending)
        .enumerate()
        .map(|(i, mut j)| {
            j.reason = Some("Resources".into());
            j.start_time = (i == 0).then(|| now() + chrono::Duration::seconds(40));
            j
        })
        .collect();
    for _ in 0..8 {
        a.update(Msg::Poll(PollMsg::PollDue));
        a.update(loaded(q.clone()));
    }
    assert_eq!(a.clusters[0].status.poll_interval, Duration::from_secs(2));
    a.run_command("history");
    a.update(page(1, true, true));
    a.update(Msg::Tick(now() + chrono::Duration::seconds(1)));
    assert_eq!(
        a.clusters[0].status.poll_interval,
        Duration::from_secs(2),
        "a start about to happen in the queue"
    );
}
