//! Work sessions through App::update: `:session` fills the form, the end-of-time warnings
//! and the extension offer, a refused extension in a session's words, `:ssh-config`.

use crate::action::{JobMsg, PollMsg};
use std::time::Duration;

use super::super::tests::{app, code, id, jobs, key, loaded};
use super::super::App;
use super::*;
use crate::action::Msg;
use crate::slurm::model::{CancelOutcome, SlurmDuration};

/// The fixture's queue with running job 237 as a session of `limit` minutes that has run
/// `used` seconds.
fn with_session(limit_min: u64, used_secs: u64) -> Vec<Job> {
    let mut jobs = jobs();
    let j = jobs
        .iter_mut()
        .find(|j| j.id == id("237"))
        .expect("237 in the fixture");
    j.name = "session-debug".into();
    j.time_limit = SlurmDuration::Known(Duration::from_secs(limit_min * 60));
    j.time_used = SlurmDuration::Known(Duration::from_secs(used_secs));
    jobs
}

/// An app that launched job 237 (it is in its registry's jobs).
fn launched_237() -> App {
    let mut a = app();
    let j = jobs()
        .into_iter()
        .find(|j| j.id == id("237"))
        .expect("237 in the fixture");
    a.clusters[0].launch.registry_jobs.push(j);
    // No key lately: the question may open.
    a.clusters[0].insight.last_key = None;
    a
}

fn notified(cmds: &[Cmd]) -> Vec<String> {
    cmds.iter()
        .filter_map(|c| match c {
            Cmd::Notify(n) => Some(n.body.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn ten_minutes_before_the_end_it_warns_and_offers_to_extend() {
    let mut a = launched_237();
    a.update(Msg::Poll(PollMsg::PollDue));
    let cmds = a.update(loaded(with_session(60, 50 * 60 + 10)));
    assert!(notified(&cmds).contains(&"work session 237 ends in 10 minutes".to_string()));
    let q = a.overlays.confirm.clone().expect("the extension question");
    assert!(
        q.prompt
            .starts_with("session 237 (session-debug) ends in 10 minutes: extend it?"),
        "{}",
        q.prompt
    );
    let cmds = a.update(key('+'));
    assert_eq!(
        cmds,
        vec![Cmd::Edit(
            id("237"),
            crate::slurm::ops::JobEdit {
                time_limit: Some("+30:00".into()),
                ..Default::default()
            }
        )]
    );
    assert_eq!(a.queue.shown().busy(&id("237")), Some("extending…"));
    // The cluster refuses, as most do for users: said in those words.
    let edit = match &cmds[0] {
        Cmd::Edit(_, e) => e.clone(),
        _ => unreachable!(),
    };
    a.update(Msg::Job(JobMsg::Edited {
        id: id("237"),
        edit,
        result: Ok(vec![(
            id("237"),
            CancelOutcome::Failed("Access/permission denied for job 237".into()),
        )]),
    }));
    assert_eq!(
        a.note.as_deref(),
        Some("237: the cluster refused to extend: only an operator can raise a time limit here")
    );
}

#[test]
fn each_warning_comes_once_then_the_two_minute_one() {
    let mut a = launched_237();
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(loaded(with_session(60, 51 * 60)));
    assert!(a.overlays.confirm.take().is_some());
    a.update(Msg::Poll(PollMsg::PollDue));
    let cmds = a.update(loaded(with_session(60, 52 * 60)));
    assert!(notified(&cmds).is_empty() && a.overlays.confirm.is_none());
    a.update(Msg::Poll(PollMsg::PollDue));
    let cmds = a.update(loaded(with_session(60, 58 * 60 + 5)));
    assert_eq!(notified(&cmds), vec!["work session 237 ends in 2 minutes"]);
    let q = a.overlays.confirm.clone().expect("asked again");
    // `!` offers to end it (a second question).
    assert!(q.choices.iter().any(|c| c.key == '!'));
}

/// The question opens by itself, maybe just as the user reaches for a dashboard key: `e`
/// (stderr), `y` (files), enter, `d` mean nothing to it and end nothing; only `!` and then
/// `y` to a second question end the session.
#[test]
fn no_dashboard_key_ends_a_session_only_two_deliberate_answers_do() {
    for k in [
        key('e'),
        key('y'),
        key('d'),
        key('D'),
        key('x'),
        code(crossterm::event::KeyCode::Enter),
    ] {
        let mut a = launched_237();
        a.update(Msg::Poll(PollMsg::PollDue));
        a.update(loaded(with_session(60, 50 * 60 + 10)));
        assert!(a.overlays.confirm.is_some(), "the question is open");
        let cmds = a.update(k.clone());
        assert!(
            !cmds.iter().any(|c| matches!(c, Cmd::Op(_) | Cmd::Edit(..))),
            "{k:?} changed a job: {cmds:?}"
        );
        assert!(a.overlays.confirm.is_none(), "{k:?} answered no");
        assert_eq!(a.queue.shown().busy(&id("237")), None);
    }
    let mut a = launched_237();
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(loaded(with_session(60, 50 * 60 + 10)));
    assert!(a
        .overlays
        .confirm
        .as_ref()
        .is_some_and(|q| q.hint() == "+: 30 more minutes · !: end it now… · any other key: no"));
    let cmds = a.update(key('!'));
    assert!(cmds.is_empty(), "{cmds:?}");
    let q = a.overlays.confirm.clone().expect("the second question");
    assert_eq!(
        q.prompt,
        "end session 237 (session-debug) now? its job is cancelled and its allocation given back"
    );
    // Any other key to the second question keeps it.
    let cmds = a.update(key('n'));
    assert!(cmds.is_empty() && a.overlays.confirm.is_none(), "{cmds:?}");
    assert_eq!(a.note.as_deref(), Some("nothing changed"));
    // Asked again: `!` then `y` cancels the job.
    a.clusters[0].insight.last_key = None;
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(loaded(with_session(60, 58 * 60 + 5)));
    a.update(key('!'));
    let cmds = a.update(key('y'));
    assert!(
        matches!(&cmds[..], [Cmd::Op(op)] if op.kind == OpKind::Cancel && op.ids == vec![id("237")]),
        "{cmds:?}"
    );
}

#[test]
fn jobs_that_are_not_sessions_and_sessions_far_from_the_end_are_left_alone() {
    let mut a = launched_237();
    a.update(Msg::Poll(PollMsg::PollDue));
    let mut jobs = with_session(60, 60);
    let j = jobs
        .iter_mut()
        .find(|j| j.id == id("234"))
        .expect("234 in the fixture");
    j.time_limit = SlurmDuration::Known(Duration::from_secs(600));
    j.time_used = SlurmDuration::Known(Duration::from_secs(590));
    let cmds = a.update(loaded(jobs));
    assert!(notified(&cmds).is_empty());
    assert!(a.overlays.confirm.is_none());
}

#[test]
fn the_question_waits_for_nothing_else_to_be_open() {
    let mut a = launched_237();
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(key('?'));
    assert!(a.overlays.help.is_open());
    a.update(loaded(with_session(60, 55 * 60)));
    assert!(a.overlays.confirm.is_none(), "help stays on top, untouched");
    assert!(a.clusters[0].events.log.back().is_some_and(|e| e
        .text
        .contains("ends in 10 minutes: :extend adds 30 minutes")));
    a.update(key('x'));
    assert!(!a.overlays.help.is_open());
    a.queue.shown_mut().select_id(&id("237"));
    let cmds = a.run_command("extend");
    assert!(matches!(&cmds[..], [Cmd::Edit(i, _)] if *i == id("237")));
}

#[test]
fn no_question_takes_the_key_of_a_user_who_is_typing() {
    let mut a = launched_237();
    a.clusters[0].insight.last_key = Some(a.now);
    a.update(Msg::Poll(PollMsg::PollDue));
    let cmds = a.update(loaded(with_session(60, 55 * 60)));
    assert_eq!(notified(&cmds).len(), 1, "warned all the same");
    assert!(a.overlays.confirm.is_none());
}

#[test]
fn a_session_not_launched_from_here_is_not_asked_about() {
    let mut a = app();
    a.update(Msg::Poll(PollMsg::PollDue));
    let cmds = a.update(loaded(with_session(60, 55 * 60)));
    assert!(notified(&cmds).is_empty());
    assert!(a.overlays.confirm.is_none());
}

#[test]
fn session_opens_the_form_prefilled_for_a_session() {
    let mut a = app();
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(loaded(jobs()));
    let cmds = a.run_command("session notebook");
    assert_eq!(cmds, vec![Cmd::FetchLaunchFacts, Cmd::FetchReservations]);
    let form = a.overlays.form.as_ref().expect("the launch form");
    assert_eq!(form.spec.name, "session-notebook");
    assert_eq!(form.spec.gpus, 0);
    assert_eq!(form.spec.nodes, 1);
    assert_eq!(form.spec.time, session::DEFAULT_TIME);
    assert!(form.spec.command.contains("while :; do sleep 600; done"));
    assert_eq!(form.field_key(), Some("gpus"));
    a.overlays.form = None;
    a.run_command("session");
    assert_eq!(
        a.overlays.form.as_ref().map(|f| f.spec.name.as_str()),
        Some("session-120000")
    );
}

#[test]
fn ssh_config_copies_a_block_for_the_selected_running_job() {
    let mut a = app();
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(loaded(with_session(60, 60)));
    a.clusters[0].launch.jump = Some(session::Jump {
        host: "login.example".into(),
        user: Some("me".into()),
        port: None,
    });
    a.queue.shown_mut().select_id(&id("237"));
    let cmds = a.run_command("ssh-config");
    let [Cmd::Clipboard(block)] = &cmds[..] else {
        panic!("{cmds:?}");
    };
    assert_eq!(
        block,
        "Host slurmdash-dev-237\n    HostName gpu07\n    ProxyJump me@login.example\n    User me\n"
    );
    assert!(a
        .note
        .as_deref()
        .unwrap_or("")
        .contains("Host slurmdash-dev-237"));
    // A pending job has no node to reach.
    a.queue.shown_mut().select_id(&id("248"));
    assert!(a.run_command("ssh-config").is_empty());
    assert!(a.note.as_deref().unwrap_or("").contains("needs it running"));
}

#[test]
fn a_session_that_starts_says_what_it_offers() {
    let mut a = app();
    a.update(Msg::Poll(PollMsg::PollDue));
    let mut pending = with_session(60, 0);
    let j = pending.iter_mut().find(|j| j.id == id("237")).expect("237");
    j.state = crate::slurm::model::JobState::Pending;
    a.update(loaded(pending));
    a.update(Msg::Poll(PollMsg::PollDue));
    let cmds = a.update(loaded(with_session(60, 5)));
    let said = notified(&cmds);
    assert_eq!(
        said,
        vec!["job 237 session-debug started on gpu07: work session ready (x: shell, F: tunnel, :ssh-config)"]
    );
}

#[test]
fn an_extension_marks_its_row_busy_and_a_read_only_session_refuses_it() {
    let out = extend(id("237"));
    assert_eq!(out.busy, Some((vec![id("237")], "extending…")));
    assert_eq!(out.cmds, vec![Cmd::Edit(id("237"), extension())]);
    assert!(out
        .note
        .as_deref()
        .is_some_and(|n| n.contains("extend 237 by 30 minutes")));
    let mut a = app();
    a.update(loaded(jobs()));
    a.queue.shown_mut().select_id(&id("237"));
    a.clusters[0].read_only = true;
    let refused = extend_session(&view!(a, 0), None);
    assert!(refused.cmds.is_empty() && refused.busy.is_none());
    assert!(refused
        .note
        .as_deref()
        .is_some_and(|n| n.starts_with("read-only session: extending a session is disabled")));
}
