//! Job top's state with the App around it: opening reads at once as the user's read, the
//! repeats while open are background reads the default RPC budget may hold, `r` is never
//! held, closing stops the repeats, and the answers land on the pane.

use crate::action::JobMsg;
use crossterm::event::KeyCode;

use super::super::budget::{Budget, Kind};
use super::super::tests::{app, code, jobs, key, loaded, now};
use super::super::App;
use super::*;
use crate::action::Msg;
use crate::slurm::model::Status;
use crate::slurm::top::{NodeTop, StepSource};

fn at(secs: i64) -> NaiveDateTime {
    now() + chrono::Duration::seconds(secs)
}

fn tops(cmds: &[(u16, Cmd)]) -> usize {
    cmds.iter()
        .filter(|(_, c)| matches!(c, Cmd::Top(_)))
        .count()
}

/// An App with the default budget (4 RPCs a minute) and a running job selected.
fn running() -> (App, JobId) {
    let mut a = app();
    a.clusters[0].budget = Budget::new(4);
    a.update(loaded(jobs()));
    let id = a
        .queue
        .shown()
        .jobs()
        .iter()
        .find(|j| j.status() == Status::Running && !j.nodes().is_empty())
        .map(|j| j.id.clone())
        .unwrap();
    a.queue.shown_mut().select_id(&id);
    (a, id)
}

fn answer(a: &mut App, id: &JobId, secs: i64) -> Vec<(u16, Cmd)> {
    let sample = TopSample {
        nodes: vec![NodeTop {
            node: "gpu07".into(),
            procs: Vec::new(),
            steps: StepSource::Listpids,
            gpu_note: None,
            problems: Vec::new(),
        }],
        srun_exit: Some(0),
    };
    a.handle(Msg::Cluster(
        0,
        Box::new(Msg::Job(JobMsg::Top {
            id: id.clone(),
            result: Box::new(Ok(sample)),
            at: at(secs),
        })),
    ))
}

#[test]
fn t_reads_at_once_and_repeats_only_within_the_budget_until_closed() {
    let (mut a, id) = running();
    a.handle(Msg::Tick(at(0)));
    let cmds = a.handle(key('t'));
    assert!(a.overlays.top.open, "t opens job top");
    assert_eq!(a.top_overlay(), Some(super::super::overlay::Overlay::Top));
    // The user's read goes at the next second, whatever the budget spent.
    let mut sent = tops(&cmds);
    sent += tops(&a.handle(Msg::Tick(at(1))));
    assert_eq!(sent, 1, "one read for the key");
    let target = a.overlays.top.target.clone().unwrap();
    assert_eq!(target.id, id);
    assert!(!target.nodes.is_empty(), "the job's nodes are read");
    answer(&mut a, &id, 2);
    assert!(a.overlays.top.sample.is_some());
    assert_eq!(a.overlays.top.at, Some(at(2)));

    // Five minutes open: the repeats come, but no more than the background's share.
    let mut repeats = 0;
    for s in 3..300 {
        let cmds = a.handle(Msg::Tick(at(s)));
        if tops(&cmds) > 0 {
            repeats += 1;
            answer(&mut a, &id, s);
        }
    }
    assert!(repeats >= 1, "read again while open");
    let cost = crate::slurm::top::rpc_cost(&target) as usize;
    // A quarter of 5 × 4 RPCs, less what the user's read spent, at `cost` each.
    assert!(
        repeats * cost <= 5 * 4 / 4 + cost,
        "{repeats} repeats of {cost} RPCs in five minutes: over the background's share"
    );
    assert!(
        a.clusters[0].budget.holds(Kind::Top) || a.overlays.top.reading(at(300)),
        "a repeat waits for the budget"
    );

    // r is the user's: it goes at the next second even with a repeat held.
    let cmds = a.handle(key('r'));
    let sent = tops(&cmds) + tops(&a.handle(Msg::Tick(at(301))));
    assert_eq!(sent, 1, "r reads now");
    answer(&mut a, &id, 302);

    // Closing stops the repeats and drops a held one.
    a.handle(code(KeyCode::Esc));
    assert!(!a.overlays.top.open);
    let mut after = 0;
    for s in 303..700 {
        after += tops(&a.handle(Msg::Tick(at(s))));
    }
    assert_eq!(after, 0, "no read once closed");
    assert!(!a.clusters[0].budget.holds(Kind::Top));
}

#[test]
fn t_on_a_job_that_does_not_run_says_so_and_reads_nothing() {
    let mut a = app();
    a.update(loaded(jobs()));
    let pending = a
        .queue
        .shown()
        .jobs()
        .iter()
        .find(|j| j.status() == Status::Pending)
        .map(|j| j.id.clone())
        .unwrap();
    a.queue.shown_mut().select_id(&pending);
    let cmds = a.handle(key('t'));
    assert!(!a.overlays.top.open);
    assert_eq!(tops(&cmds), 0);
    let note = a.note.clone().unwrap();
    assert!(
        note.contains("running job") && note.contains("pending"),
        "{note}"
    );
}

#[test]
fn a_failed_read_keeps_the_last_sample_and_names_the_error() {
    let (mut a, id) = running();
    a.handle(key('t'));
    a.handle(Msg::Tick(at(1)));
    answer(&mut a, &id, 2);
    a.handle(Msg::Cluster(
        0,
        Box::new(Msg::Job(JobMsg::Top {
            id: id.clone(),
            result: Box::new(Err(
                "srun --overlap into job 1 exited 1: Invalid job id".into()
            )),
            at: at(8),
        })),
    ));
    assert!(a.overlays.top.sample.is_some(), "the last sample stays");
    assert!(a
        .overlays
        .top
        .error
        .as_deref()
        .unwrap()
        .contains("srun --overlap"));
    // An answer about another job (the pane moved on) is not taken.
    let other: JobId = "999".parse().unwrap();
    a.overlays.top.on_sample(&other, Err("x".into()), at(9));
    assert_eq!(a.overlays.top.at, Some(at(8)));
}

#[test]
fn a_job_that_ends_is_not_read_again() {
    let (mut a, id) = running();
    a.handle(key('t'));
    a.handle(Msg::Tick(at(1)));
    answer(&mut a, &id, 2);
    // The refresh lists it as ending (it then leaves; sacct gives its final state).
    let mut js = jobs();
    for j in js.iter_mut().filter(|j| j.id == id) {
        j.state = crate::slurm::state::JobState::Completing;
    }
    a.update(loaded(js));
    let mut sent = 0;
    for s in 3..120 {
        sent += tops(&a.handle(Msg::Tick(at(s))));
    }
    assert_eq!(sent, 0, "no read of a job that left");
    assert!(a.overlays.top.ended);
    // r still reads on request.
    let cmds = a.handle(key('r'));
    assert_eq!(tops(&cmds) + tops(&a.handle(Msg::Tick(at(121)))), 1);
}
