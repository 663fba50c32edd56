//! App::update driven through messages only: no terminal, no cluster.

use crate::action::{JobMsg, PollMsg};
use std::time::Duration;

use chrono::NaiveDate;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::logview::{Stream, TailEvent, TailKind};
use crate::slurm::model::JobState;
use crate::slurm::parse::{parse_scontrol_jobs, parse_squeue};

const SQUEUE: &str = include_str!("../../tests/fixtures/slurm/squeue_me.out");
const SCONTROL_RUNNING: &str = include_str!("../../tests/fixtures/slurm/scontrol_job_running.out");

pub(super) fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 23)
        .and_then(|d| d.and_hms_opt(12, 0, 0))
        .expect("valid time")
}

pub(super) fn app() -> App {
    App::fixture(now())
}

pub(super) fn jobs() -> Vec<Job> {
    parse_squeue(SQUEUE).expect("fixture parses")
}

pub(super) fn loaded(jobs: Vec<Job>) -> Msg {
    Msg::queue(Ok(jobs), now(), Duration::from_millis(20))
}

pub(super) fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

pub(super) fn code(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

pub(super) fn id(s: &str) -> JobId {
    s.parse().expect("job id")
}

fn fetches(cmds: &[Cmd]) -> Vec<JobId> {
    cmds.iter()
        .filter_map(|c| match c {
            Cmd::FetchDetail(id) => Some(id.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn only_one_queue_poll_is_in_flight() {
    let mut a = app();
    assert_eq!(a.update(Msg::Poll(PollMsg::PollDue)), vec![Cmd::PollQueue]);
    assert!(
        a.update(Msg::Poll(PollMsg::PollDue)).is_empty(),
        "second poll while one runs"
    );
    assert!(a.update(key('r')).is_empty(), "refresh key while one runs");
    a.update(loaded(jobs()));
    assert_eq!(a.update(key('r')), vec![Cmd::PollQueue]);
}

/// A detail read that failed while the login was gone (the pane says "could not load
/// details: ... login needed") is read again when a refresh works again: the pane does not
/// keep an error that no longer holds. A read that fails again is not retried on every
/// refresh.
#[test]
fn a_failed_detail_is_read_again_once_the_cluster_answers() {
    let mut a = app();
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(loaded(jobs()));
    let selected = a
        .queue
        .shown()
        .selected_id()
        .cloned()
        .expect("a job is selected");
    a.update(Msg::Job(JobMsg::Detail {
        id: selected.clone(),
        result: Box::new(Err("cannot connect: login needed".into())),
    }));
    assert!(a.detail.error.is_some());
    a.update(Msg::Poll(PollMsg::PollDue));
    let cmds = a.update(loaded(jobs()));
    assert_eq!(fetches(&cmds), vec![selected.clone()], "{cmds:?}");
    assert!(a.detail.loading);
    a.update(Msg::Job(JobMsg::Detail {
        id: selected.clone(),
        result: Box::new(Err("scontrol: error: something else".into())),
    }));
    a.update(Msg::Poll(PollMsg::PollDue));
    let cmds = a.update(loaded(jobs()));
    assert!(
        fetches(&cmds).is_empty(),
        "tried once, not every refresh: {cmds:?}"
    );
}

/// A job that ended between two refreshes: its detail (read after the list) says FAILED,
/// and its row says so too instead of PENDING until the next full read.
#[test]
fn the_row_of_a_job_whose_detail_is_newer_says_what_the_detail_says() {
    let mut a = app();
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(loaded(jobs()));
    let selected = a.queue.shown().selected_id().cloned().expect("selected");
    let row = |a: &App| {
        let j = a
            .queue
            .jobs
            .jobs()
            .iter()
            .find(|j| j.id == selected)
            .cloned();
        j.expect("row")
    };
    assert_ne!(row(&a).state, JobState::Failed);
    let pending_before = a.queue.jobs.jobs().len();
    let detail = crate::slurm::model::JobDetail {
        id: Some(selected.clone()),
        state: Some(JobState::Failed),
        reason: Some("NonZeroExitCode".into()),
        node_list: Some("cpu01".into()),
        ..Default::default()
    };
    a.update(Msg::Job(JobMsg::Detail {
        id: selected.clone(),
        result: Box::new(Ok((detail, crate::payload::DetailSource::Sacct))),
    }));
    let r = row(&a);
    assert_eq!(r.state, JobState::Failed);
    assert_eq!(r.reason.as_deref(), Some("NonZeroExitCode"));
    assert_eq!(r.node_list.as_deref(), Some("cpu01"));
    assert_eq!(a.queue.jobs.jobs().len(), pending_before);
    assert_eq!(
        a.queue.shown().selected_id(),
        Some(&selected),
        "still selected"
    );
}

#[test]
fn first_queue_selects_a_job_and_asks_for_its_detail() {
    let mut a = app();
    a.update(Msg::Poll(PollMsg::PollDue));
    let cmds = a.update(loaded(jobs()));
    let selected = a
        .queue
        .shown()
        .selected_id()
        .cloned()
        .expect("a job is selected");
    assert_eq!(fetches(&cmds), vec![selected.clone()]);
    assert!(a.detail.loading);
    assert_eq!(a.clusters[0].status.last_ok, Some(now()));
    assert_eq!(a.logs.job, Some(selected));
}

#[test]
fn selection_follows_the_job_id_across_refreshes() {
    let mut a = app();
    a.update(loaded(jobs()));
    a.update(key('j'));
    a.update(key('j'));
    let chosen = a.queue.shown().selected_id().cloned().expect("selected");
    let mut reordered = jobs();
    reordered.reverse();
    let cmds = a.update(loaded(reordered));
    assert_eq!(a.queue.shown().selected_id(), Some(&chosen));
    assert!(fetches(&cmds).is_empty(), "same job, no new detail fetch");
}

#[test]
fn a_failed_refresh_keeps_the_jobs_and_shows_the_error() {
    let mut a = app();
    a.update(loaded(jobs()));
    let before = a.queue.shown().len();
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(Msg::queue(
        Err("`squeue` on login1 failed (exit 1): slurm_load_jobs error".into()),
        now(),
        Duration::from_secs(1),
    ));
    assert_eq!(a.queue.shown().len(), before);
    assert!(a.clusters[0]
        .status
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("squeue")));
    assert!(!a.clusters[0].status.polling);
    a.update(loaded(jobs()));
    assert_eq!(
        a.clusters[0].status.last_error, None,
        "cleared by the next success"
    );
}

#[test]
fn detail_for_a_job_no_longer_selected_is_dropped() {
    let mut a = app();
    a.update(loaded(jobs()));
    let detail = parse_scontrol_jobs(SCONTROL_RUNNING).expect("fixture")[0].clone();
    let other = id("999999");
    let cmds = a.update(Msg::Job(JobMsg::Detail {
        id: other,
        result: Box::new(Ok((detail, DetailSource::Scontrol))),
    }));
    assert!(cmds.is_empty());
    assert!(a.detail.detail.is_none());
}

#[test]
fn detail_of_the_selected_job_starts_tailing_its_resolved_log_paths() {
    let mut a = app();
    a.update(loaded(jobs()));
    let detail = parse_scontrol_jobs(SCONTROL_RUNNING).expect("fixture")[0].clone();
    let jid = detail.id.clone().expect("id");
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('/'),
        KeyModifiers::NONE,
    )));
    for c in jid.as_str().chars() {
        a.update(key(c));
    }
    a.update(code(KeyCode::Enter));
    assert_eq!(a.queue.shown().selected_id(), Some(&jid));
    let cmds = a.update(Msg::Job(JobMsg::Detail {
        id: jid.clone(),
        result: Box::new(Ok((detail.clone(), DetailSource::Scontrol))),
    }));
    let stdout = detail.stdout.clone().expect("StdOut in fixture");
    let Some(Cmd::Tail(targets)) = cmds.first() else {
        panic!("expected a tail command, got {cmds:?}");
    };
    // The fixture's job writes both streams to one file: it is tailed once.
    assert_eq!(detail.stderr, detail.stdout);
    assert_eq!(targets, &vec![(jid.clone(), Stream::Stdout, stdout)]);
    assert!(!targets[0].2.contains('%'), "patterns resolved");

    // The same detail again does not restart the tails.
    let again = a.update(Msg::Job(JobMsg::Detail {
        id: jid,
        result: Box::new(Ok((detail, DetailSource::Scontrol))),
    }));
    assert!(again.is_empty());
}

#[test]
fn log_lines_for_another_job_are_dropped() {
    let mut a = app();
    a.update(loaded(jobs()));
    a.logs.stdout.set_path("/x");
    let ev = |job: JobId| TailEvent {
        job,
        stream: Stream::Stdout,
        path: "/x".into(),
        kind: TailKind::Data {
            bytes: b"hello\n".to_vec(),
            size: 6,
        },
        credit: Default::default(),
    };
    a.update(Msg::Job(JobMsg::Tail(ev(id("999999")))));
    assert_eq!(a.logs.stdout.buffer().len(), 0);
    let selected = a.queue.shown().selected_id().cloned().expect("selected");
    a.update(Msg::Job(JobMsg::Tail(ev(selected))));
    assert_eq!(a.logs.stdout.buffer().len(), 1);
}

#[test]
fn filter_applies_while_typing_and_escape_clears_it() {
    let mut a = app();
    a.update(loaded(jobs()));
    let all = a.queue.shown().len();
    a.update(key('/'));
    assert!(a.overlays.input.is_some());
    for c in "array".chars() {
        a.update(key(c));
    }
    let filtered = a.queue.shown().len();
    assert!(filtered < all && filtered > 0, "{filtered} of {all}");
    assert!(a.queue.shown().rows().all(|r| r.job.name.contains("array")));
    a.update(code(KeyCode::Enter));
    assert!(a.overlays.input.is_none());
    assert_eq!(a.queue.shown().len(), filtered, "enter keeps the filter");
    a.update(code(KeyCode::Esc));
    assert_eq!(a.queue.shown().len(), all, "esc clears it");
}

#[test]
fn command_line_adds_a_cluster_quits_and_explains_unknown_commands() {
    let mut a = app();
    a.update(key(':'));
    for c in "cluster polar".chars() {
        a.update(key(c));
    }
    assert_eq!(
        a.update(code(KeyCode::Enter)),
        vec![Cmd::AddCluster("polar".into())]
    );
    assert!(a
        .note
        .as_deref()
        .is_some_and(|n| n.contains("adding cluster `polar`")));
    a.update(key(':'));
    for c in "frobnicate".chars() {
        a.update(key(c));
    }
    a.update(code(KeyCode::Enter));
    assert!(a.note.as_deref().is_some_and(|n| n.contains(":frobnicate")));
    assert_eq!(a.update(key('q')), vec![Cmd::Quit]);
    assert!(a.quit);
}

#[test]
fn help_opens_and_any_key_closes_it_without_acting() {
    let mut a = app();
    a.update(key('?'));
    assert!(a.overlays.help.is_open());
    assert!(
        a.update(key('q')).is_empty(),
        "q closes help, does not quit"
    );
    assert!(!a.overlays.help.is_open() && !a.quit);
}

#[test]
fn tab_cycles_focus_and_keys_go_to_the_focused_pane() {
    let mut a = app();
    a.update(loaded(jobs()));
    let first = a.queue.shown().selected_id().cloned();
    a.update(code(KeyCode::Tab));
    a.update(code(KeyCode::Tab));
    assert_eq!(a.focus, Pane::Log);
    a.update(key('j'));
    assert_eq!(
        a.queue.shown().selected_id().cloned(),
        first,
        "j scrolls the log, not the queue"
    );
    a.update(key('w'));
    assert!(a.logs.current().wrap());
    a.update(key('e'));
    assert_eq!(a.logs.shown, Stream::Stderr);
}

#[test]
fn one_file_for_both_streams_is_tailed_once_and_shown_whichever_stream_is_asked() {
    let mut a = app();
    a.update(loaded(jobs()));
    let mut detail = parse_scontrol_jobs(SCONTROL_RUNNING).expect("fixture")[0].clone();
    let sel = a.queue.shown().selected_id().cloned().expect("selected");
    detail.id = Some(sel.clone());
    let cmds = a.update(Msg::Job(JobMsg::Detail {
        id: sel.clone(),
        result: Box::new(Ok((detail, DetailSource::Scontrol))),
    }));
    let Some(Cmd::Tail(targets)) = cmds.first() else {
        panic!("expected a tail command, got {cmds:?}");
    };
    let [(_, Stream::Stdout, path)] = targets.as_slice() else {
        panic!("one tail: {targets:?}")
    };
    a.update(Msg::Job(JobMsg::Tail(TailEvent {
        job: sel,
        stream: Stream::Stdout,
        path: path.clone(),
        kind: TailKind::Data {
            bytes: b"both streams\n".to_vec(),
            size: 13,
        },
        credit: Default::default(),
    })));
    a.update(code(KeyCode::Tab));
    a.update(code(KeyCode::Tab));
    a.update(key('e'));
    assert_eq!(a.logs.current().buffer().len(), 1, "the merged lines stay");
}

#[test]
fn a_job_that_starts_running_is_fetched_again() {
    let mut a = app();
    let mut js = jobs();
    a.update(loaded(js.clone()));
    let sel = a.queue.shown().selected_id().cloned().expect("selected");
    let mut detail = parse_scontrol_jobs(SCONTROL_RUNNING).expect("fixture")[0].clone();
    detail.id = Some(sel.clone());
    let job = js.iter().find(|j| j.id == sel).expect("job").clone();
    detail.state = Some(job.state.clone());
    a.update(Msg::Job(JobMsg::Detail {
        id: sel.clone(),
        result: Box::new(Ok((detail, DetailSource::Scontrol))),
    }));
    assert!(
        a.update(loaded(js.clone())).is_empty(),
        "unchanged state: nothing to do"
    );
    for j in js.iter_mut().filter(|j| j.id == sel) {
        j.state = if j.state == JobState::Running {
            JobState::Completing
        } else {
            JobState::Running
        };
    }
    assert_eq!(fetches(&a.update(loaded(js))), vec![sel]);
}

/// `Y` copies what is selected: the id from the queue, the directory from the detail pane,
/// the shown log's path from the log pane; with nothing selected it says so.
#[test]
fn y_copies_the_id_the_directory_or_the_log_path() {
    use crate::keymap::Pane;
    let mut a = app();
    a.update(loaded(jobs()));
    let id = a.queue.shown().selected_id().unwrap().as_str().to_string();
    let cmds = a.on_action(Action::Copy);
    assert_eq!(cmds, vec![Cmd::Clipboard(id.clone())]);
    assert!(a.note.as_deref().unwrap().contains(&format!("copied {id}")));

    a.focus = Pane::Detail;
    let dir = a.queue.shown().selected_job().unwrap().work_dir.to_string();
    assert!(!dir.is_empty());
    assert_eq!(a.on_action(Action::Copy), vec![Cmd::Clipboard(dir)]);

    a.focus = Pane::Log;
    a.logs.paths = Some(("/r/out".into(), "/r/err".into()));
    assert_eq!(
        a.on_action(Action::Copy),
        vec![Cmd::Clipboard("/r/out".into())]
    );
    a.logs.show(crate::logview::Stream::Stderr);
    assert_eq!(
        a.on_action(Action::Copy),
        vec![Cmd::Clipboard("/r/err".into())]
    );

    let mut empty = app();
    assert!(empty.on_action(Action::Copy).is_empty());
    assert!(empty.note.as_deref().unwrap().contains("no job selected"));
}

/// A work dir or log path with control characters (a newline, an escape) is not put on
/// the clipboard, where a paste into a shell would run what follows the newline; the status
/// line says why, with the characters shown as `?`.
#[test]
fn y_refuses_a_path_with_control_characters() {
    use crate::keymap::Pane;
    let mut a = app();
    let mut js = jobs();
    let sel = js[0].id.clone();
    js[0].work_dir = "/home/al/x\nrm -rf ~\x1b]0;t\x07".into();
    a.update(loaded(js));
    a.queue.shown_mut().select_id(&sel);
    a.focus = Pane::Detail;
    assert_eq!(a.on_action(Action::Copy), vec![]);
    assert_eq!(
        a.note.as_deref(),
        Some("not copied: /home/al/x?rm -rf ~?]0;t? holds control characters (shown as ?); copy it from a shell on the cluster")
    );
    a.focus = Pane::Log;
    a.logs.paths = Some(("/r/o\rut".into(), "/r/err".into()));
    assert_eq!(a.on_action(Action::Copy), vec![]);
    assert!(a
        .note
        .as_deref()
        .unwrap()
        .starts_with("not copied: /r/o?ut holds"));
    // The id still copies from the queue.
    a.focus = Pane::Queue;
    assert_eq!(
        a.on_action(Action::Copy),
        vec![Cmd::Clipboard(sel.as_str().to_string())]
    );
}

/// `c` opens the chooser over the queue; enter applies the columns at once and asks for
/// them to be saved; esc leaves the queue as it was; under `:history` it is refused.
#[test]
fn c_chooses_the_columns_applies_and_asks_to_save_them() {
    use crate::queue::Column;
    let mut a = app();
    a.update(loaded(jobs()));
    let before = a.queue.shown().columns().to_vec();
    a.update(key('c'));
    assert!(a.overlays.columns.is_some());
    // Name (second) off, then esc: nothing changes.
    a.update(key('j'));
    a.update(key(' '));
    a.update(code(KeyCode::Esc));
    assert!(a.overlays.columns.is_none());
    assert_eq!(a.queue.shown().columns(), before.as_slice());
    // Again, with enter.
    a.update(key('c'));
    a.update(key('j'));
    a.update(key(' '));
    let cmds = a.update(code(KeyCode::Enter));
    let mut want = before.clone();
    want.retain(|c| *c != Column::Name);
    assert_eq!(cmds, vec![Cmd::SaveColumns(want.clone())]);
    assert_eq!(a.queue.shown().columns(), want.as_slice());
    assert!(a.overlays.columns.is_none());
}
