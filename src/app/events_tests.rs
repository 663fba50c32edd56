//! Job-change detection and the events log, driven through App::update.

use crate::action::{JobMsg, LaunchMsg, PollMsg};
use std::time::Duration;

use chrono::{NaiveDate, NaiveDateTime};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::action::Msg;
use crate::slurm::model::SharedStr;
use crate::slurm::parse::parse_squeue;

fn t0() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 23)
        .and_then(|d| d.and_hms_opt(12, 0, 0))
        .unwrap()
}

fn app() -> App {
    App::fixture(t0())
}

/// A job from the squeue fixture with another id, state and nodes.
fn job(id: &str, name: &str, state: JobState) -> Job {
    let mut j = parse_squeue(include_str!("../../tests/fixtures/slurm/squeue_me.out"))
        .unwrap()
        .remove(0);
    j.id = id.parse().unwrap();
    j.name = name.into();
    j.node_list = (state.status() == Status::Running).then(|| "gpu07".into());
    j.state = state;
    j
}

fn refresh(a: &mut App, jobs: Vec<Job>) -> Vec<Cmd> {
    a.update(Msg::queue(Ok(jobs), t0(), Duration::from_millis(1)))
}

fn notes(cmds: &[Cmd]) -> Vec<String> {
    cmds.iter()
        .filter_map(|c| match c {
            Cmd::Notify(n) => Some(n.body.clone()),
            _ => None,
        })
        .collect()
}

/// The jobs the next refresh asks sacct about (jobs that left squeue).
fn lookups(a: &App) -> Vec<JobId> {
    match a.clusters[0].departures.poll_cmd() {
        Cmd::PollWith { sacct, .. } => sacct,
        _ => Vec::new(),
    }
}

/// The sacct part of a refresh that asked about these jobs arrives.
fn finals(a: &mut App, details: Vec<JobDetail>) -> Vec<Cmd> {
    let asked = lookups(a);
    a.on_poll_extra(
        0,
        crate::payload::PollExtra {
            finished: details,
            asked,
            ..Default::default()
        },
    )
}

fn texts(a: &App) -> Vec<String> {
    a.clusters[0]
        .events
        .log
        .iter()
        .map(|e| e.text.clone())
        .collect()
}

fn sacct(id: &str, state: JobState) -> JobDetail {
    JobDetail {
        id: Some(id.parse().unwrap()),
        state: Some(state),
        ..JobDetail::default()
    }
}

#[test]
fn jobs_already_in_the_queue_at_start_are_not_news() {
    let mut a = app();
    let cmds = refresh(
        &mut a,
        vec![
            job("10", "train", JobState::Running),
            job("11", "eval", JobState::Pending),
        ],
    );
    assert!(notes(&cmds).is_empty());
    assert!(a.clusters[0].events.log.is_empty());
    assert_eq!(a.clusters[0].events.status_line(t0()), None);
}

#[test]
fn start_then_leaving_the_queue_then_the_final_state_from_sacct() {
    let mut a = app();
    refresh(&mut a, vec![job("10", "train", JobState::Pending)]);
    let cmds = refresh(&mut a, vec![job("10", "train", JobState::Running)]);
    assert_eq!(notes(&cmds), vec!["job 10 train started on gpu07"]);
    assert_eq!(
        a.clusters[0].events.status_line(t0()).as_deref(),
        Some("12:00:00 job 10 train started on gpu07")
    );
    // squeue drops the job as soon as it ends.
    let cmds = refresh(&mut a, vec![]);
    assert!(notes(&cmds).is_empty(), "leaving the queue is not notified");
    assert_eq!(lookups(&a), vec!["10".parse::<JobId>().unwrap()]);
    assert_eq!(
        texts(&a).last().map(String::as_str),
        Some("job 10 train started on gpu07"),
        "nothing is logged until sacct says how it ended"
    );
    let cmds = finals(&mut a, vec![sacct("10", JobState::Failed)]);
    assert_eq!(notes(&cmds), vec!["job 10 train failed (FAILED)"]);
    assert!(matches!(&cmds[0], Cmd::Notify(n) if n.urgent));
    // Resolved: no more lookups.
    refresh(&mut a, vec![]);
    assert!(lookups(&a).is_empty());
}

/// A job that started and ended between two reads (seen pending, then gone): its start is
/// news too, said before how it ended, with the nodes sacct names; a pending job cancelled
/// (no nodes) did not start.
#[test]
fn a_job_that_ran_between_two_reads_is_said_to_have_started() {
    let mut a = app();
    refresh(
        &mut a,
        vec![
            job("10", "train", JobState::Pending),
            job("11", "eval", JobState::Pending),
        ],
    );
    refresh(&mut a, vec![]);
    let ran = JobDetail {
        node_list: Some("gpu03".into()),
        ..sacct("10", JobState::Completed)
    };
    let never = JobDetail {
        node_list: Some("None assigned".into()),
        ..sacct("11", JobState::Cancelled)
    };
    let cmds = finals(&mut a, vec![ran, never]);
    assert_eq!(
        notes(&cmds),
        vec![
            "job 10 train started on gpu03",
            "job 10 train completed",
            "job 11 eval cancelled (CANCELLED)",
        ]
    );
    // The same when the list itself brings the final state (a state check's row).
    let mut a = app();
    refresh(&mut a, vec![job("12", "tune", JobState::Pending)]);
    let mut done = job("12", "tune", JobState::Failed);
    done.node_list = Some("gpu05".into());
    let cmds = refresh(&mut a, vec![done]);
    assert_eq!(
        notes(&cmds),
        vec![
            "job 12 tune started on gpu05",
            "job 12 tune failed (FAILED)"
        ]
    );
}

#[test]
fn an_unfinished_sacct_record_keeps_asking_but_not_forever() {
    let mut a = app();
    refresh(&mut a, vec![job("10", "train", JobState::Running)]);
    refresh(&mut a, vec![]);
    let cmds = finals(&mut a, vec![sacct("10", JobState::Completing)]);
    assert!(cmds.is_empty());
    let mut asked = 1;
    for _ in 0..30 {
        refresh(&mut a, vec![]);
        if !lookups(&a).is_empty() {
            asked += 1;
            finals(&mut a, vec![]);
        }
    }
    assert_eq!(asked, crate::app::departures::SACCT_TRIES as usize);
    // Given up on: logged once, not notified.
    let left: Vec<String> = texts(&a)
        .into_iter()
        .filter(|t| t.contains("left the queue"))
        .collect();
    assert_eq!(
        left,
        vec!["job 10 train left the queue (sacct does not know its final state)"]
    );
}

#[test]
fn final_states_in_the_job_list_are_transitions_too() {
    let mut a = app();
    refresh(
        &mut a,
        vec![
            job("10", "a", JobState::Running),
            job("11", "b", JobState::Running),
            job("12", "c", JobState::Running),
        ],
    );
    // E.g. rows merged from sacct for jobs that left squeue.
    let cmds = refresh(
        &mut a,
        vec![
            job("10", "a", JobState::Completed),
            job("11", "b", JobState::Cancelled),
            job("12", "c", JobState::Pending),
        ],
    );
    assert_eq!(
        notes(&cmds),
        vec![
            "job 10 a completed",
            "job 11 b cancelled (CANCELLED)",
            "job 12 c requeued"
        ]
    );
    assert!(lookups(&a).is_empty());
}

#[test]
fn a_vanished_job_that_comes_back_finished_is_refined() {
    let mut a = app();
    refresh(&mut a, vec![job("10", "a", JobState::Running)]);
    refresh(&mut a, vec![]);
    let cmds = refresh(&mut a, vec![job("10", "a", JobState::Timeout)]);
    assert_eq!(notes(&cmds), vec!["job 10 a failed (TIMEOUT)"]);
    // A detail fetch (sacct) of a vanished job refines it as well.
    refresh(&mut a, vec![job("20", "b", JobState::Running)]);
    refresh(&mut a, vec![]);
    let n = a.final_states_known(0, &[sacct("20", JobState::Completed)]);
    assert_eq!(notes(&n), vec!["job 20 b completed"]);
}

#[test]
fn pending_arrays_change_id_without_leaving_and_tasks_start() {
    let mut a = app();
    refresh(&mut a, vec![job("30_[0-9]", "arr", JobState::Pending)]);
    let cmds = refresh(
        &mut a,
        vec![
            job("30_0", "arr", JobState::Running),
            job("30_[1-9]", "arr", JobState::Pending),
        ],
    );
    assert_eq!(notes(&cmds), vec!["job 30_0 arr started on gpu07"]);
    assert!(lookups(&a).is_empty());
    assert!(!texts(&a).iter().any(|t| t.contains("left the queue")));
}

#[test]
fn only_own_jobs_count() {
    let mut a = app();
    a.clusters[0].events.own = Own::User("sduser".into());
    let mut other = job("41", "theirs", JobState::Pending);
    other.user = SharedStr::from("sdother");
    refresh(
        &mut a,
        vec![job("40", "mine", JobState::Pending), other.clone()],
    );
    other.state = JobState::Running;
    let cmds = refresh(&mut a, vec![job("40", "mine", JobState::Running), other]);
    assert_eq!(notes(&cmds), vec!["job 40 mine started on gpu07"]);
    a.clusters[0].events.own = Own::Nobody;
    assert!(notes(&refresh(&mut a, vec![])).is_empty());
}

#[test]
fn many_changes_at_once_make_one_summary_notification() {
    let mut a = app();
    let ids: Vec<String> = (0..20).map(|i| format!("50_{i}")).collect();
    refresh(
        &mut a,
        ids.iter()
            .map(|i| job(i, "sweep", JobState::Running))
            .collect(),
    );
    let mut done: Vec<Job> = ids
        .iter()
        .map(|i| job(i, "sweep", JobState::Completed))
        .collect();
    done[3].state = JobState::Failed;
    let cmds = refresh(&mut a, done);
    assert_eq!(
        notes(&cmds),
        vec!["20 jobs changed: 19 completed, 1 failed"]
    );
    assert_eq!(
        a.clusters[0].events.log.len(),
        20,
        "each change is still logged"
    );
}

#[test]
fn a_retry_event_is_logged_shown_and_notified_with_the_workers_own_words() {
    use crate::payload::RetryEvent;
    let mut a = app();
    // The message the retry worker produces, not one written for the test.
    let ev = RetryEvent::Requeued {
        local_id: "L1".into(),
        job_id: 60,
        state: "NODE_FAIL".into(),
        times: 1,
    };
    let line = ev.line();
    assert_eq!(
        line,
        "job 60 ended NODE_FAIL and Slurm requeued it (same id, --requeue): not resubmitted"
    );
    let cmds = a.update(Msg::Launch(LaunchMsg::Retries(Ok((
        vec![ev.clone()],
        Vec::new(),
    )))));
    assert_eq!(notes(&cmds), vec![line.clone()]);
    assert_eq!(
        a.clusters[0].events.log.back().map(|e| e.kind),
        Some(EventKind::Requeued)
    );
    assert!(
        a.clusters[0]
            .events
            .status_line(t0())
            .is_some_and(|l| l.ends_with(&line)),
        "{:?}",
        a.clusters[0].events.status_line(t0())
    );
    // The next check reports the same requeue: told once.
    let cmds = a.update(Msg::Launch(LaunchMsg::Retries(Ok((vec![ev], Vec::new())))));
    assert!(notes(&cmds).is_empty(), "{cmds:?}");
    assert_eq!(a.clusters[0].events.log.len(), 1);
    // The status bar line fades after a minute.
    let later = t0() + chrono::Duration::seconds(STATUS_LINE_SECS);
    assert_eq!(a.clusters[0].events.status_line(later), None);
}

#[test]
fn events_command_opens_the_view_and_esc_or_q_close_it() {
    let mut a = app();
    let k = |c: KeyCode| Msg::Key(KeyEvent::new(c, KeyModifiers::NONE));
    a.update(k(KeyCode::Char(':')));
    for c in "events".chars() {
        a.update(k(KeyCode::Char(c)));
    }
    a.update(k(KeyCode::Enter));
    assert!(a.overlays.events_view.open);
    a.update(k(KeyCode::Esc));
    assert!(!a.overlays.events_view.open);
    a.run_command("events");
    assert!(a.overlays.events_view.open);
    let cmds = a.update(k(KeyCode::Char('q')));
    assert!(!a.overlays.events_view.open);
    assert!(!a.quit && cmds.is_empty(), "q closes the view, not the app");
}

#[test]
fn the_log_is_capped() {
    let mut a = app();
    for i in 0..(EVENT_LOG_CAP + 10) {
        let now = a.now;
        a.clusters[0].push_event(None, "", EventKind::Note, &format!("n{i}"), now);
    }
    assert_eq!(a.clusters[0].events.log.len(), EVENT_LOG_CAP);
    assert_eq!(
        a.clusters[0].events.log.front().map(|e| e.text.as_str()),
        Some("n10")
    );
}

#[test]
fn failures_learned_from_sacct_are_triaged_and_the_log_says_why() {
    use crate::payload::TriageReport;
    use crate::triage::{Class, Evidence, Triage};
    let mut a = app();
    refresh(&mut a, vec![job("10", "train", JobState::Running)]);
    refresh(&mut a, vec![]);
    let cmds = finals(&mut a, vec![sacct("10", JobState::Failed)]);
    let asked: Vec<&JobId> = cmds
        .iter()
        .filter_map(|c| match c {
            Cmd::Triage { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    assert_eq!(asked, vec![&"10".parse::<JobId>().unwrap()]);
    a.update(Msg::Job(JobMsg::Triaged {
        id: "10".parse().unwrap(),
        result: Box::new(Ok(Some(TriageReport {
            triage: Triage {
                class: Class::Infra,
                evidence: Evidence::Reason("NodeDown".into()),
                suggestion: "resubmit".into(),
            },
            status_path: None,
            notes: vec![],
        }))),
    }));
    let want = "job 10 train failed (FAILED) · ERR_INFRA (reason NodeDown)";
    assert_eq!(texts(&a).last().map(String::as_str), Some(want));
    assert!(a.clusters[0]
        .events
        .status_line(t0())
        .unwrap_or_default()
        .ends_with(want));
    // Completions are not triaged; a batch of failures is triaged a few at a time.
    refresh(
        &mut a,
        (0..9)
            .map(|i| job(&format!("7{i}"), "x", JobState::Running))
            .collect(),
    );
    refresh(&mut a, vec![]);
    let mut details: Vec<JobDetail> = (0..8)
        .map(|i| sacct(&format!("7{i}"), JobState::Failed))
        .collect();
    details.push(sacct("78", JobState::Completed));
    let cmds = finals(&mut a, details);
    assert_eq!(
        cmds.iter()
            .filter(|c| matches!(c, Cmd::Triage { .. }))
            .count(),
        5
    );
}

#[test]
fn events_do_not_hide_the_users_own_messages_and_own_cancels_are_not_notified_twice() {
    let mut a = app();
    refresh(&mut a, vec![job("80", "mine", JobState::Running)]);
    // The cancel as the op runner reports it.
    use crate::slurm::model::CancelOutcome;
    use crate::slurm::ops::{JobOp, OpKind, OpReport};
    let op = JobOp::new(OpKind::Cancel, ["80".parse().unwrap()]);
    let cmds = a.update(Msg::Job(JobMsg::OpDone {
        op: op.clone(),
        result: Ok(OpReport {
            op: op.clone(),
            outcomes: vec![("80".parse().unwrap(), CancelOutcome::Cancelled)],
        }),
    }));
    assert_eq!(notes(&cmds), vec!["job 80 mine cancelled by you"]);
    let own = a.note.clone();
    assert!(own.is_some(), "the op's own message");
    refresh(&mut a, vec![]);
    let cmds = finals(&mut a, vec![sacct("80", JobState::Cancelled)]);
    assert!(notes(&cmds).is_empty(), "already told: {cmds:?}");
    assert_eq!(
        texts(&a).last().map(String::as_str),
        Some("job 80 mine cancelled (CANCELLED)")
    );
    assert_eq!(a.note, own, "the user's own message stays");
}

#[test]
fn a_cancel_from_slurmdash_is_one_event_per_job_and_one_notification() {
    use crate::slurm::model::CancelOutcome;
    use crate::slurm::ops::{JobOp, OpKind, OpReport};
    let mut a = app();
    let jobs: Vec<Job> = (0..6)
        .map(|i| job(&format!("9{i}"), &format!("sweep-{i}"), JobState::Pending))
        .collect();
    refresh(&mut a, jobs);
    let op = JobOp::new(
        OpKind::Cancel,
        (0..6).map(|i| format!("9{i}").parse().unwrap()),
    );
    let cmds = a.update(Msg::Job(JobMsg::OpDone {
        op: op.clone(),
        result: Ok(OpReport {
            op: op.clone(),
            outcomes: op
                .ids
                .iter()
                .map(|i| (i.clone(), CancelOutcome::Cancelled))
                .collect(),
        }),
    }));
    assert_eq!(notes(&cmds), vec!["6 jobs changed: 6 cancelled by you"]);
    assert_eq!(
        texts(&a).first().map(String::as_str),
        Some("job 90 sweep-0 cancelled by you")
    );
    // squeue drops them; sacct says CANCELLED: logged, not notified again.
    refresh(&mut a, vec![]);
    let states = (0..6)
        .map(|i| sacct(&format!("9{i}"), JobState::Cancelled))
        .collect();
    let cmds = finals(&mut a, states);
    assert!(notes(&cmds).is_empty(), "{cmds:?}");
}

#[test]
fn a_retry_submitted_is_logged_and_notified() {
    use crate::payload::RetryEvent;
    let mut a = app();
    let ev = RetryEvent::Resubmitted {
        local_id: "L1".into(),
        failed: 237,
        new: 248,
        attempt: 2,
        max_attempts: 11,
        resumed: None,
        excluded: None,
    };
    let cmds = a.update(Msg::Launch(LaunchMsg::Retries(Ok((vec![ev], Vec::new())))));
    let want = "job 237 failed on infrastructure: resubmitted as 248 (attempt 2/11)";
    assert_eq!(notes(&cmds), vec![want]);
    assert_eq!(
        a.clusters[0].events.log.back().map(|e| e.kind),
        Some(EventKind::Retried)
    );
    assert!(cmds.contains(&Cmd::PollQueue), "{cmds:?}");
}

#[test]
fn a_chain_line_naming_a_job_that_is_not_the_launchs_is_logged_once() {
    use crate::payload::RetryEvent;
    let mut a = app();
    // What the guard sync reports for a planted line, in its own words.
    let ev = RetryEvent::Ignored {
        local_id: "L1".into(),
        job_id: 900,
        reason: "job 900 belongs to alice, not to you (sduser)".into(),
    };
    let line = ev.line();
    a.update(Msg::Launch(LaunchMsg::Retries(Ok((
        vec![ev.clone()],
        Vec::new(),
    )))));
    let last = a.clusters[0].events.log.back().expect("logged").clone();
    assert_eq!(last.kind, EventKind::Note);
    assert_eq!(last.job.as_ref().map(|j| j.as_str()), Some("900"));
    assert!(
        last.text.contains(&line) && line.contains("ignored: job 900 belongs to alice"),
        "{}",
        last.text
    );
    assert_eq!(
        a.clusters[0].status.last_error.as_deref(),
        Some(line.as_str())
    );
    // The line stays in the file: the next check reports it again, logged once.
    let n = a.clusters[0].events.log.len();
    a.update(Msg::Launch(LaunchMsg::Retries(Ok((vec![ev], Vec::new())))));
    assert_eq!(a.clusters[0].events.log.len(), n);
}

/// Where Slurm answers state checks, a check sees a job leave and the full read it calls
/// for brings the job's sacct record in the same exec as the list without it: the final
/// state is logged and notified from that one refresh, a failure triaged, and only once.
#[test]
fn a_final_state_that_comes_with_the_list_the_job_left_is_logged_once() {
    let mut a = app();
    refresh(&mut a, vec![job("10", "train", JobState::Pending)]);
    refresh(
        &mut a,
        vec![
            job("10", "train", JobState::Running),
            job("11", "eval", JobState::Running),
        ],
    );
    let both = Msg::Poll(PollMsg::Queue(Box::new(crate::payload::Refresh {
        result: Ok(vec![]),
        extra: Some(crate::payload::PollExtra {
            finished: vec![
                sacct("10", JobState::Completed),
                sacct("11", JobState::Failed),
            ],
            asked: vec!["10".parse().unwrap(), "11".parse().unwrap()],
            ..Default::default()
        }),
        conn: None,
        at: t0(),
        took: Duration::from_millis(1),
    })));
    let cmds = a.update(both);
    let mut said = notes(&cmds);
    said.sort();
    assert_eq!(
        said,
        vec!["job 10 train completed", "job 11 eval failed (FAILED)"]
    );
    assert!(
        cmds.iter()
            .any(|c| matches!(c, Cmd::Triage { id, .. } if id.as_str() == "11")),
        "the failure is triaged: {cmds:?}"
    );
    // The next refresh (the rows kept, nothing new from sacct) logs nothing again.
    let cmds = refresh(&mut a, vec![]);
    assert!(notes(&cmds).is_empty(), "{:?}", notes(&cmds));
    let logged = texts(&a);
    assert_eq!(
        logged.iter().filter(|t| t.contains("completed")).count(),
        1,
        "{logged:?}"
    );
}

/// Refreshes of the very same records (an idle queue, each record reused by the worker)
/// skip the events' comparison; a change after them is logged all the same, and a job
/// that leaves after them is awaited.
#[test]
fn unchanged_refreshes_then_a_change_is_logged() {
    let mut a = app();
    let first = vec![
        job("10", "train", JobState::Pending),
        job("11", "eval", JobState::Running),
    ];
    refresh(&mut a, first.clone());
    for _ in 0..3 {
        let cmds = refresh(&mut a, first.clone());
        assert!(notes(&cmds).is_empty());
    }
    let mut started = first[0].clone();
    started.state = JobState::Running;
    started.node_list = Some("gpu07".into());
    let cmds = refresh(&mut a, vec![started.clone(), first[1].clone()]);
    assert_eq!(notes(&cmds), vec!["job 10 train started on gpu07"]);
    refresh(&mut a, vec![started.clone(), first[1].clone()]);
    refresh(&mut a, vec![started]);
    assert_eq!(lookups(&a), vec!["11".parse::<JobId>().unwrap()]);
}

/// The selected job ends between two refreshes: it leaves squeue, and the sacct read that
/// follows (`FinalStates`) gives its kept row the final state. Its detail, which said
/// PENDING, is read again, so the detail pane does not keep saying PENDING beside a FAILED
/// row (seen on 22.05 with a job whose begin time came between two refreshes).
#[test]
fn the_selected_job_that_left_the_queue_has_its_detail_read_again() {
    let mut a = app();
    refresh(&mut a, vec![job("10", "train", JobState::Pending)]);
    let id: JobId = "10".parse().unwrap();
    assert_eq!(a.queue.shown().selected_id(), Some(&id));
    a.update(Msg::Job(JobMsg::Detail {
        id: id.clone(),
        result: Box::new(Ok((
            sacct("10", JobState::Pending),
            crate::payload::DetailSource::Scontrol,
        ))),
    }));
    assert!(!a.detail.loading);
    refresh(&mut a, vec![]);
    let asked = lookups(&a);
    assert_eq!(asked, vec![id.clone()]);
    let cmds = a.update(Msg::Poll(PollMsg::FinalStates(crate::payload::PollExtra {
        finished: vec![JobDetail {
            node_list: Some("cpu01".into()),
            ..sacct("10", JobState::Failed)
        }],
        asked,
        ..Default::default()
    })));
    let row = a.queue.shown().selected_job().map(|j| j.state.clone());
    assert_eq!(row, Some(JobState::Failed));
    assert!(
        cmds.iter()
            .any(|c| matches!(c, Cmd::FetchDetail(i) if *i == id)),
        "the PENDING detail is not read again: {cmds:?}"
    );
    assert!(a.detail.loading);
}
