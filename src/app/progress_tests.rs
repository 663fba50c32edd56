//! Progress read from the open log, driven through App messages and seen on the screen.

use crate::action::JobMsg;
use insta::assert_snapshot;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::super::tests::{app, jobs, loaded, now};
use super::*;
use crate::action::Msg;
use crate::app::App;
use crate::logview::{Stream, TailEvent, TailKind};

fn screen(a: &App) -> String {
    let mut t = Terminal::new(TestBackend::new(a.size.0, a.size.1)).unwrap();
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

fn log(job: &JobId, stream: Stream, text: &str) -> Msg {
    Msg::Job(JobMsg::Tail(TailEvent {
        job: job.clone(),
        stream,
        path: "/logs/main.out".into(),
        kind: TailKind::Data {
            bytes: text.as_bytes().to_vec(),
            size: 0,
        },
        credit: Default::default(),
    }))
}

fn at(secs: i64) -> Msg {
    Msg::Tick(now() + chrono::Duration::seconds(secs))
}

/// The fixture's queue with the first row (job 237, RUNNING, 0:12 of a 20-minute limit)
/// selected and its log open.
fn opened() -> (App, JobId) {
    let mut a = app();
    a.size = (150, 40);
    a.update(loaded(jobs()));
    let id = a.queue.shown().selected_id().cloned().unwrap();
    assert_eq!(id.as_str(), "237");
    a.logs.stdout.set_path("/logs/main.out");
    (a, id)
}

fn line_with<'a>(s: &'a str, what: &str) -> &'a str {
    s.lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no line with {what:?} in\n{s}"))
}

#[test]
fn step_lines_give_the_percent_then_an_eta_from_the_observed_rate() {
    let (mut a, id) = opened();
    // Before any progress: no PROGRESS column at all.
    assert!(!screen(&a).contains("PROGRESS"));
    a.update(log(
        &id,
        Stream::Stdout,
        "loading data\nstep 100/1000 loss 2.3\n",
    ));
    let s = screen(&a);
    assert!(s.contains("PROGRESS"), "{s}");
    assert!(
        line_with(&s, "Progress").contains("10 % · ETA after the next change"),
        "{s}"
    );
    a.update(at(60));
    a.update(log(&id, Stream::Stdout, "step 200/1000 loss 2.1\n"));
    a.update(at(120));
    a.update(log(&id, Stream::Stdout, "step 300/1000 loss 2.0\n"));
    // 100 steps a minute: 700 left, 7 minutes; 19 m 48 s of the limit were left at the
    // refresh, two minutes ago.
    let s = screen(&a);
    assert!(
        line_with(&s, "Progress").contains("30 % · ETA 7 m · limit in 17 m 48 s"),
        "{s}"
    );
    assert!(line_with(&s, "gpu-polar").contains("30% 7m"), "{s}");
    assert!(!s.contains("reaches its time limit first"), "{s}");
    assert_snapshot!(s);
}

#[test]
fn a_bar_that_ends_after_the_limit_warns_and_says_what_to_do() {
    let (mut a, id) = opened();
    a.update(log(
        &id,
        Stream::Stderr,
        "\r 62%|██████▏   | 6200/10000 [5:05:00<1:00:00,  2.95s/it]",
    ));
    let s = screen(&a);
    assert!(
        line_with(&s, "Progress").contains("62 % · ETA 1 h · limit in 19 m 48 s"),
        "{s}"
    );
    assert!(
        line_with(&s, "Warning").contains("reaches its time limit first"),
        "{s}"
    );
    assert!(line_with(&s, "To do").contains("auto-resume"), "{s}");
    assert!(line_with(&s, "gpu-polar").contains("62% 1h!"), "{s}");
    assert_snapshot!(s);
}

#[test]
fn progress_stays_in_the_queue_after_the_selection_moves() {
    let (mut a, id) = opened();
    a.update(log(&id, Stream::Stdout, "Epoch 3/10\n"));
    a.update(super::super::tests::key('j'));
    assert_ne!(a.queue.shown().selected_id(), Some(&id));
    // A stopped tail's last event for the old job is not taken in.
    a.update(log(&id, Stream::Stdout, "Epoch 9/10\n"));
    assert_eq!(a.queue.jobs.progress(&id).map(|s| s.percent()), Some(20));
    let s = screen(&a);
    assert!(line_with(&s, "gpu-polar").contains("20%"), "{s}");
}

#[test]
fn jobs_that_left_the_queue_are_forgotten_but_the_open_one() {
    let (mut a, id) = opened();
    a.update(log(&id, Stream::Stdout, "step 5/10\n"));
    let all = jobs();
    let mut cells = a.progress.cells(&all, None, |_| Some(now()));
    assert_eq!(cells.remove(&id).map(|s| s.percent()), Some(50));
    let rest: Vec<_> = all.iter().filter(|j| j.id != id).cloned().collect();
    // The job whose log is open is kept (its row may come back with its final state).
    assert!(a.progress.cells(&rest, Some(&id), |_| None).is_empty());
    assert!(a.progress.tracker(&id).is_some());
    assert!(a.progress.cells(&rest, None, |_| None).is_empty());
    assert!(a.progress.tracker(&id).is_none());
}

#[test]
fn a_log_without_progress_costs_nothing_and_keeps_the_screen() {
    let (mut a, id) = opened();
    let before = screen(&a);
    a.update(log(&id, Stream::Stdout, "hello\nloss 0.2\n"));
    assert!(a.progress.tracker(&id).is_none());
    let after = screen(&a);
    assert_eq!(
        before.lines().take(12).collect::<Vec<_>>(),
        after.lines().take(12).collect::<Vec<_>>()
    );
}

#[test]
fn sessions_are_told_to_extend() {
    let mut j = jobs()[0].clone();
    j.name = "session-notebook".into();
    assert!(advice(&j, None).contains(":extend"));
    let j = jobs()[0].clone();
    assert!(advice(&j, None).contains("signal = USR1@120"));
}

#[test]
fn a_narrow_queue_drops_the_progress_column_first_and_the_detail_keeps_it() {
    let (mut a, id) = opened();
    a.update(log(&id, Stream::Stdout, "step 5/10\n"));
    a.size = (100, 40);
    let s = screen(&a);
    assert!(!s.contains("PROGRESS"), "{s}");
    assert!(line_with(&s, "Progress").contains("50 %"), "{s}");
    a.size = (150, 40);
    assert!(screen(&a).contains("PROGRESS"));
}

/// The job whose progress was read ends: a newer read of it (its detail, before the next
/// refresh) says COMPLETED, and its queue cell says `done` at once rather than keeping the
/// last bar's percent and an ETA beside a COMPLETED state.
#[test]
fn a_job_that_completed_shows_done_in_the_queue_not_its_last_percent() {
    let (mut a, id) = opened();
    a.update(log(&id, Stream::Stdout, "step 900/1000\n"));
    a.update(at(60));
    a.update(log(&id, Stream::Stdout, "step 980/1000\n"));
    let cell = |a: &App| a.queue.jobs.progress(&id).map(|p| p.cell(a.now));
    assert_eq!(cell(&a).as_deref(), Some("98%"));
    let detail = crate::slurm::model::JobDetail {
        id: Some(id.clone()),
        state: Some(crate::slurm::model::JobState::Completed),
        ..Default::default()
    };
    a.update(Msg::Job(JobMsg::Detail {
        id: id.clone(),
        result: Box::new(Ok((detail, crate::payload::DetailSource::Sacct))),
    }));
    assert_eq!(cell(&a).as_deref(), Some("done"));
    let s = screen(&a);
    assert!(line_with(&s, "COMPLETED").contains("done"), "{s}");
    assert!(
        line_with(&s, "Progress").contains("98 % · the job completed"),
        "{s}"
    );
}
