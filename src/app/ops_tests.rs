//! Job actions through App::update: confirmation, marks, read-only, arrays, edits.

use crate::action::{InsightMsg, JobMsg, LaunchMsg, PollMsg};
use crate::slurm::model::Partition;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::tests::{app, code, id, jobs, key, loaded};
use super::*;
use crate::slurm::model::CancelOutcome;
use crate::slurm::ops::{JobEdit, JobOp, OpKind, OpReport};

fn ops(cmds: &[Cmd]) -> Vec<JobOp> {
    cmds.iter()
        .filter_map(|c| match c {
            Cmd::Op(op) => Some(op.clone()),
            _ => None,
        })
        .collect()
}

fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn ready() -> App {
    let mut a = app();
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(loaded(jobs()));
    a
}

fn select(a: &mut App, s: &str) {
    assert!(a.queue.shown_mut().select_id(&id(s)), "{s} in the queue");
    a.selection_changed();
}

fn done(op: &JobOp, outcome: CancelOutcome) -> Msg {
    Msg::Job(JobMsg::OpDone {
        op: op.clone(),
        result: Ok(OpReport {
            op: op.clone(),
            outcomes: op
                .ids
                .iter()
                .map(|i| (i.clone(), outcome.clone()))
                .collect(),
        }),
    })
}

#[test]
fn d_asks_then_cancels_and_the_row_says_cancelling() {
    let mut a = ready();
    select(&mut a, "242");
    assert!(
        a.update(key('d')).is_empty(),
        "nothing is sent before the answer"
    );
    let c = a.overlays.confirm.clone().expect("a question");
    assert!(
        c.prompt.starts_with("cancel 242 (over-maxtime, PENDING)"),
        "{}",
        c.prompt
    );
    let cmds = a.update(key('y'));
    let sent = ops(&cmds);
    assert_eq!(sent, vec![JobOp::new(OpKind::Cancel, [id("242")])]);
    assert_eq!(a.queue.shown().busy(&id("242")), Some("cancelling…"));
    assert!(a.overlays.confirm.is_none());
    // The answer arrives: the label goes, the status line says so, the queue refreshes.
    let cmds = a.update(done(&sent[0], CancelOutcome::Cancelled));
    assert_eq!(a.queue.shown().busy(&id("242")), None);
    assert_eq!(a.note.as_deref(), Some("cancelled 242"));
    assert!(cmds.contains(&Cmd::PollQueue));
}

#[test]
fn any_other_key_keeps_the_job() {
    let mut a = ready();
    select(&mut a, "242");
    a.update(key('d'));
    assert!(a.update(key('n')).is_empty());
    assert!(a.overlays.confirm.is_none());
    assert_eq!(a.queue.shown().busy(&id("242")), None);
    a.update(key('d'));
    assert_eq!(
        ops(&a.update(code(KeyCode::Enter))).len(),
        1,
        "enter confirms"
    );
}

#[test]
fn capital_d_cancels_at_once_unless_configured_off() {
    let mut a = ready();
    select(&mut a, "241");
    assert_eq!(ops(&a.update(key('D'))).len(), 1);
    let mut a = ready();
    a.quick_cancel = false;
    select(&mut a, "241");
    assert!(a.update(key('D')).is_empty());
    assert!(a.overlays.confirm.is_some());
}

#[test]
fn marked_jobs_go_in_one_command() {
    let mut a = ready();
    select(&mut a, "248");
    a.update(key(' ')); // marks 248 and moves down
    a.update(key(' ')); // marks the next row
    assert_eq!(a.queue.shown().mark_count(), 2);
    a.update(key('d'));
    assert!(a
        .overlays
        .confirm
        .as_ref()
        .unwrap()
        .prompt
        .contains("2 marked jobs"));
    let sent = ops(&a.update(key('y')));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].ids.len(), 2);
    assert_eq!(sent[0].ids[0], id("248"));
    // Cancelled jobs lose their marks; esc clears the rest.
    a.update(done(&sent[0], CancelOutcome::Cancelled));
    assert_eq!(a.queue.shown().mark_count(), 0);
    a.update(ctrl('a'));
    assert_eq!(a.queue.shown().mark_count(), a.queue.shown().len());
    a.update(code(KeyCode::Esc));
    assert_eq!(a.queue.shown().mark_count(), 0);
}

#[test]
fn failures_are_shown_as_errors_with_slurms_message() {
    let mut a = ready();
    select(&mut a, "237");
    a.update(key('T'));
    let sent = ops(&a.update(key('y')));
    assert_eq!(sent[0].kind, OpKind::Top);
    a.update(done(
        &sent[0],
        CancelOutcome::Failed("Access/permission denied".into()),
    ));
    let err = a.clusters[0].status.last_error.clone().unwrap();
    assert!(
        err.starts_with("could not top 237: Access/permission denied"),
        "{err}"
    );
}

#[test]
fn read_only_refuses_every_change_and_sends_nothing() {
    let mut a = ready();
    a.clusters[0].read_only = true;
    select(&mut a, "242");
    for c in ['d', 'D', 'h', 'u', 'R', 'T', 'E'] {
        let cmds = a.update(key(c));
        assert!(cmds.is_empty(), "{c} sent {cmds:?}");
        assert!(
            a.overlays.confirm.is_none() && a.overlays.edit.is_none(),
            "{c} opened something"
        );
        let note = a.note.clone().unwrap_or_default();
        assert!(note.starts_with("read-only session"), "{c}: {note}");
    }
    assert!(a.run_command("cancel 242").is_empty());
    assert!(a.note.clone().unwrap().starts_with("read-only session"));
}

#[test]
fn a_collapsed_array_asks_whole_array_or_pending_tasks() {
    let mut a = ready();
    select(&mut a, "236_[4-99%4]");
    a.update(key('d'));
    let c = a.overlays.confirm.clone().unwrap();
    assert_eq!(c.choices.len(), 2);
    assert!(a.update(key('y')).is_empty(), "y is not an answer here");
    a.update(key('d'));
    assert_eq!(ops(&a.update(key('a')))[0].ids, vec![id("236")]);
    a.update(key('d'));
    assert_eq!(
        ops(&a.update(key('p')))[0].ids,
        vec![id("236_[4-99]")],
        "the %4 throttle is not part of what scancel takes"
    );
    // The row shows the action although the id sent differs from the one shown.
    assert_eq!(
        a.queue.shown().busy(&id("236_[4-99%4]")),
        Some("cancelling…")
    );
}

#[test]
fn typed_commands_take_ids_or_the_selection() {
    let mut a = ready();
    let sent = ops(&a.run_command("cancel 12 13,14"));
    assert_eq!(sent[0].ids, vec![id("12"), id("13"), id("14")]);
    select(&mut a, "241");
    assert_eq!(ops(&a.run_command("release"))[0].ids, vec![id("241")]);
    assert!(a.run_command("hold 12x").is_empty());
    assert!(a.note.clone().unwrap().contains("`12x` is not a job id"));
}

/// The refresh out when the action ends may predate it: App asks for another at once and
/// the worker hub runs it after the one in flight (worker/flight.rs tests that rule).
#[test]
fn an_action_during_a_poll_asks_for_a_refresh_that_follows_it() {
    let mut a = ready();
    select(&mut a, "242");
    let sent = ops(&a.update(key('D')));
    assert_eq!(a.update(Msg::Poll(PollMsg::PollDue)), vec![Cmd::PollQueue]);
    assert!(a
        .update(done(&sent[0], CancelOutcome::Cancelled))
        .contains(&Cmd::PollQueue));
    assert!(
        !a.update(loaded(jobs())).contains(&Cmd::PollQueue),
        "the earlier refresh's answer does not ask a third time"
    );
}

fn partitions() -> Vec<Partition> {
    crate::slurm::parse::parse_scontrol_partitions(include_str!(
        "../../tests/fixtures/slurm/scontrol_partition.out"
    ))
    .unwrap()
}

fn typed(a: &mut App, s: &str) {
    for c in s.chars() {
        a.update(key(c));
    }
}

#[test]
fn edit_checks_limits_as_you_type_and_sends_only_changes() {
    let mut a = ready();
    select(&mut a, "242");
    assert_eq!(a.update(key('E')), vec![Cmd::FetchLimits(0)]);
    a.update(Msg::Insight(InsightMsg::Limits(Ok(partitions()))));
    let f = a.overlays.edit.clone().unwrap();
    assert_eq!(f.values[1], "short");
    // Clear the time limit and type one over short's MaxTime.
    a.update(ctrl('u'));
    typed(&mut a, "10:00:00");
    let errs = a.overlays.edit.as_ref().unwrap().errors.clone();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].starts_with("time limit 10:00:00 exceeds short's MaxTime"));
    assert!(
        a.update(code(KeyCode::Enter)).is_empty(),
        "refused while wrong"
    );
    // Move it to a partition that allows it.
    a.update(code(KeyCode::Tab));
    a.update(ctrl('u'));
    typed(&mut a, "long");
    assert!(a.overlays.edit.as_ref().unwrap().errors.is_empty());
    let cmds = a.update(code(KeyCode::Enter));
    let want = JobEdit {
        time_limit: Some("10:00:00".into()),
        partition: Some("long".into()),
        ..JobEdit::default()
    };
    assert_eq!(cmds, vec![Cmd::Edit(id("242"), want.clone())]);
    assert_eq!(a.queue.shown().busy(&id("242")), Some("updating…"));
    let cmds = a.update(Msg::Job(JobMsg::Edited {
        id: id("242"),
        edit: want,
        result: Ok(vec![(id("242"), CancelOutcome::Cancelled)]),
    }));
    assert!(a.overlays.edit.is_none());
    assert!(a
        .note
        .clone()
        .unwrap()
        .starts_with("updated 242: TimeLimit=10:00:00 Partition=long"));
    assert!(cmds.contains(&Cmd::PollQueue));
}

#[test]
fn edit_is_for_pending_jobs_and_shows_slurms_refusal() {
    let mut a = ready();
    select(&mut a, "237");
    assert!(a.update(key('E')).is_empty());
    assert!(a.overlays.edit.is_none());
    assert!(a.note.clone().unwrap().contains("only pending jobs"));
    select(&mut a, "241");
    a.update(key('E'));
    a.update(Msg::Insight(InsightMsg::Limits(Err(
        "scontrol failed".into()
    ))));
    a.update(code(KeyCode::Tab));
    a.update(code(KeyCode::Tab));
    a.update(code(KeyCode::Tab));
    typed(&mut a, "-2");
    let cmds = a.update(code(KeyCode::Enter));
    let Some(Cmd::Edit(_, edit)) = cmds.first() else {
        panic!("{cmds:?}")
    };
    assert_eq!(edit.name.as_deref(), Some("held-job-2"));
    a.update(Msg::Job(JobMsg::Edited {
        id: id("241"),
        edit: edit.clone(),
        result: Ok(vec![(
            id("241"),
            CancelOutcome::Failed("Access/permission denied".into()),
        )]),
    }));
    let f = a.overlays.edit.clone().expect("form stays open");
    assert_eq!(
        f.errors,
        vec!["could not update 241: Access/permission denied".to_string()]
    );
    a.update(code(KeyCode::Esc));
    assert!(a.overlays.edit.is_none());
}

mod retries {
    use super::*;
    use crate::payload::RetryEvent;
    use crate::registry::{Attempt, Entry};

    fn entry(ids: &[u64]) -> Entry {
        let at = chrono::Utc::now();
        Entry {
            local_id: "L1".into(),
            cluster: "dev".into(),
            job_id: *ids.last().unwrap(),
            job_dir: "/r/results/L1".into(),
            name: "train".into(),
            submitted_at: at,
            template: None,
            script: "/r/results/L1/sbatch/job_L1.sbatch".into(),
            attempts: ids
                .iter()
                .enumerate()
                .map(|(i, id)| Attempt {
                    job_id: *id,
                    submitted_at: at,
                    state: (i + 1 < ids.len()).then(|| "NODE_FAIL ERR_INFRA".to_string()),
                })
                .collect(),
            secrets: Vec::new(),
            checksum: None,
            spec_sha256: None,
            requeue: false,
            guard: None,
            sweep: Vec::new(),
            code: None,
        }
    }

    #[test]
    fn a_check_runs_at_start_then_every_30_seconds_one_at_a_time() {
        let mut a = ready();
        let t0 = a.now;
        assert_eq!(a.update(Msg::Tick(t0)), vec![Cmd::CheckRetries]);
        assert!(
            a.update(Msg::Tick(t0 + chrono::Duration::seconds(40)))
                .is_empty(),
            "one in flight"
        );
        a.update(Msg::Launch(LaunchMsg::Retries(Ok((
            Vec::new(),
            Vec::new(),
        )))));
        assert!(
            a.update(Msg::Tick(t0 + chrono::Duration::seconds(20)))
                .is_empty(),
            "not due"
        );
        assert_eq!(
            a.update(Msg::Tick(t0 + chrono::Duration::seconds(31))),
            vec![Cmd::CheckRetries]
        );
    }

    #[test]
    fn a_resubmission_is_announced_badged_and_shown_at_once() {
        let mut a = ready();
        a.update(Msg::Tick(a.now));
        let ev = RetryEvent::Resubmitted {
            local_id: "L1".into(),
            failed: 237,
            new: 248,
            attempt: 2,
            max_attempts: 11,
            resumed: None,
            excluded: None,
        };
        let cmds = a.update(Msg::Launch(LaunchMsg::Retries(Ok((
            vec![ev],
            vec![entry(&[237, 248])],
        )))));
        assert!(cmds.contains(&Cmd::PollQueue), "{cmds:?}");
        assert_eq!(
            a.note.as_deref(),
            Some("job 237 failed on infrastructure: resubmitted as 248 (attempt 2/11)")
        );
        assert_eq!(a.queue.shown().badge(&id("248")), Some("↻2/11"));
        assert_eq!(
            a.queue.shown().badge(&id("237")),
            None,
            "the first attempt has no badge"
        );
        let c = a.clusters[0].chains.get(&248).unwrap();
        assert_eq!(
            c.previous,
            vec![(237, Some("NODE_FAIL ERR_INFRA".to_string()))]
        );
    }

    #[test]
    fn not_retried_is_said_once() {
        let mut a = ready();
        let ev = RetryEvent::NotRetried {
            local_id: "L1".into(),
            job_id: 237,
            reason: "this session is read-only".into(),
        };
        a.update(Msg::Launch(LaunchMsg::Retries(Ok((
            vec![ev.clone()],
            vec![entry(&[237])],
        )))));
        assert!(a.clusters[0]
            .status
            .last_error
            .clone()
            .unwrap()
            .contains("not resubmitted: this session is read-only"));
        a.clusters[0].status.last_error = None;
        a.update(Msg::Launch(LaunchMsg::Retries(Ok((
            vec![ev],
            vec![entry(&[237])],
        )))));
        assert!(a.clusters[0].status.last_error.is_none());
    }
}

#[test]
fn a_truncated_array_row_offers_only_the_whole_array() {
    let mut a = ready();
    let i = a
        .queue
        .shown()
        .rows()
        .position(|r| {
            matches!(
                r.kind,
                crate::queue::RowKind::Collapsed {
                    truncated: true,
                    ..
                }
            )
        })
        .expect("the fixture has a truncated array row");
    a.queue.shown_mut().select_index(i);
    let base = a.queue.shown().selected_id().unwrap().base();
    a.update(key('d'));
    let c = a.overlays.confirm.clone().unwrap();
    assert!(
        c.prompt.contains("squeue did not list every pending task"),
        "{}",
        c.prompt
    );
    assert_eq!(ops(&a.update(key('y')))[0].ids, vec![JobId::new(base)]);
}

mod launched {
    use super::*;
    use crate::payload::DetailSource;
    use crate::registry::{Attempt, Entry};
    use crate::slurm::model::{JobDetail, JobState};

    #[test]
    fn a_launched_job_that_left_slurmctld_is_read_from_its_job_dir() {
        let mut a = ready();
        select(&mut a, "242");
        let at = chrono::Utc::now();
        let badges = a.clusters[0].set_launches(&[Entry {
            local_id: "L9".into(),
            cluster: "dev".into(),
            job_id: 242,
            job_dir: "/r/results/L9".into(),
            name: "train".into(),
            submitted_at: at,
            template: None,
            script: "/r/results/L9/sbatch/job_L9.sbatch".into(),
            attempts: vec![Attempt {
                job_id: 242,
                submitted_at: at,
                state: None,
            }],
            secrets: Vec::new(),
            checksum: None,
            spec_sha256: None,
            guard: None,
            sweep: Vec::new(),
            code: None,
            requeue: false,
        }]);
        a.queue.shown_mut().set_badges(0, badges);
        // From sacct: no StdOut, and (right after the end) no work dir either.
        let detail = JobDetail {
            id: Some(id("242")),
            name: "train".into(),
            user: Some("sduser".into()),
            state: Some(JobState::Failed),
            exit_code: Some((1, 0)),
            ..JobDetail::default()
        };
        let cmds = a.update(Msg::Job(JobMsg::Detail {
            id: id("242"),
            result: Box::new(Ok((detail, DetailSource::Sacct))),
        }));
        let tails: Vec<String> = cmds
            .iter()
            .filter_map(|c| match c {
                Cmd::Tail(t) => Some(t.iter().map(|(_, _, p)| p.clone()).collect::<Vec<_>>()),
                _ => None,
            })
            .flatten()
            .collect();
        assert!(
            tails.contains(&"/r/results/L9/slurm-logs/train-242/main.out".to_string()),
            "{cmds:?}"
        );
        let results_dir = cmds.iter().find_map(|c| match c {
            Cmd::Triage { results_dir, .. } => Some(results_dir.clone()),
            _ => None,
        });
        assert_eq!(results_dir, Some(Some("/r/results/L9".to_string())));
    }
}

/// The detail pane's `:sooner` lines are state, worked out after each message: through
/// `update`, and through `handle`'s clock tick with several clusters (which ticks each
/// cluster without `update`), so "checked 2m ago" comes with the clock.
#[test]
fn the_detail_views_sooner_lines_follow_the_answer_and_the_clock() {
    let mut a = ready();
    select(&mut a, "248");
    let id: JobId = "248".parse().unwrap();
    a.run_command("sooner");
    let cmds = a.update(Msg::Insight(InsightMsg::Limits(Ok(partitions()))));
    let Some(Cmd::CheckSooner { alternatives, .. }) = cmds.first() else {
        panic!("{cmds:?}");
    };
    let mut answered = alternatives.clone();
    answered[0].estimated_start = Some(a.now);
    a.update(Msg::Job(JobMsg::SoonerChecked {
        id: id.clone(),
        result: Ok(answered),
        at: a.now,
    }));
    let lines = super::sooner::lines(a.sooner.for_job(&id).unwrap(), a.now, a.now);
    assert_eq!(a.detail.view.sooner, lines);
    a.add_cluster(ClusterState::new(
        "polar",
        "your jobs",
        std::time::Duration::from_secs(5),
        a.now,
    ));
    let later = a.now + chrono::Duration::minutes(2);
    a.handle(Msg::Tick(later));
    assert_eq!(
        a.detail.view.sooner.last().map(String::as_str),
        Some("checked 2m ago: :sooner again for figures of now"),
        "{:?}",
        a.detail.view.sooner
    );
}

/// `:sooner` on a pending job: the partitions read first when they are not, then the
/// changes sent to the scheduler's test-only check; its answers listed; `:sooner 1` asks
/// with the `scontrol update` shown, `y` sends it, and its answer reads the queue again.
#[test]
fn sooner_checks_the_changes_then_applies_one_after_asking() {
    use crate::slurm::why::Change;
    let mut a = ready();
    select(&mut a, "248");
    let id: JobId = "248".parse().unwrap();
    assert_eq!(a.run_command("sooner"), vec![Cmd::FetchLimits(0)]);
    assert!(a
        .note
        .as_deref()
        .unwrap_or("")
        .contains("reading its partitions first"));
    // The partitions come: the check follows without typing :sooner again.
    let cmds = a.update(Msg::Insight(InsightMsg::Limits(Ok(partitions()))));
    let alts = match cmds.as_slice() {
        [Cmd::CheckSooner {
            id: asked,
            alternatives,
        }] => {
            assert_eq!(asked, &id);
            alternatives.clone()
        }
        other => panic!("{other:?}"),
    };
    assert!(alts
        .iter()
        .any(|x| matches!(x.change, Change::TimeLimit { .. })));
    assert!(alts
        .iter()
        .any(|x| matches!(x.change, Change::Partition { .. })));
    assert!(alts
        .iter()
        .all(|x| x.check.contains(&"--test-only".to_string())));
    let mut answered = alts.clone();
    answered[0].estimated_start = Some(a.now);
    a.update(Msg::Job(JobMsg::SoonerChecked {
        id: id.clone(),
        result: Ok(answered),
        at: a.now,
    }));
    let lines = super::sooner::lines(a.sooner.for_job(&id).unwrap(), a.now, a.now);
    assert!(
        lines[0].contains("starts now") && lines[0].ends_with("(:sooner 1)"),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.starts_with("checked")), "{lines:?}");
    // Two minutes on, the lines say when they were worked out.
    let later = a.now + chrono::Duration::minutes(2);
    let lines = super::sooner::lines(a.sooner.for_job(&id).unwrap(), later, later);
    assert_eq!(
        lines.last().map(String::as_str),
        Some("checked 2m ago: :sooner again for figures of now"),
        "{lines:?}"
    );
    assert!(a.run_command("sooner 1").is_empty(), "asked first");
    let c = a.overlays.confirm.clone().expect("a question");
    assert!(
        c.prompt.contains("scontrol update JobId=248"),
        "{}",
        c.prompt
    );
    let cmds = a.update(key('y'));
    assert!(
        matches!(cmds.as_slice(), [Cmd::ApplySooner { id: sent, .. }] if *sent == id),
        "{cmds:?}"
    );
    let cmds = a.update(Msg::Job(JobMsg::SoonerApplied {
        id: id.clone(),
        words: "time limit 10:00 instead of 20:00".into(),
        result: Ok(()),
    }));
    assert!(
        cmds.iter()
            .any(|c| matches!(c, Cmd::PollQueue | Cmd::PollWith { .. })),
        "{cmds:?}"
    );
    assert!(
        a.sooner.for_job(&id).is_none(),
        "the old answers no longer hold"
    );
    assert_eq!(
        a.run_command("sooner 1"),
        Vec::<Cmd>::new(),
        "nothing to apply before :sooner lists again"
    );
    assert!(a
        .note
        .as_deref()
        .unwrap_or("")
        .contains(":sooner lists them first"));
}
