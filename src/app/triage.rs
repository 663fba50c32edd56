//! The selected job's triage: asked for once its detail says it has finished, shown in the
//! detail pane, dropped when the selection moves on. A component (see `component.rs`) whose
//! state is the detail's `triage` slot: App hands it that slot and lands its command.

use crate::action::Cmd;
use crate::payload::DetailSource;
use crate::payload::TriageReport;
use crate::slurm::model::{JobDetail, JobId, JobState};

/// The triage of the selected job, for the state it was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct TriageView {
    pub state: JobState,
    pub status: TriageStatus,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TriageStatus {
    Loading,
    Done(Box<TriageReport>),
    /// Reading the logs failed; the message names the command.
    Failed(String),
}

/// After a detail arrived: the command that triages the job (into `slot`, the selected
/// job's triage) if it has finished and was not triaged in this state yet. `results_dir`:
/// where its status.json lives, when slurmdash launched it.
pub(super) fn ask(
    slot: &mut Option<TriageView>,
    id: &JobId,
    detail: &JobDetail,
    source: DetailSource,
    results_dir: Option<String>,
) -> Option<Cmd> {
    let state = detail.state.as_ref().filter(|s| s.is_finished())?;
    if slot.as_ref().is_some_and(|t| &t.state == state) {
        return None;
    }
    *slot = Some(TriageView {
        state: state.clone(),
        status: TriageStatus::Loading,
    });
    Some(Cmd::Triage {
        id: id.clone(),
        detail: Box::new(detail.clone()),
        source,
        results_dir,
    })
}

/// The triage's answer, kept in `slot` when its job is still the `selected` one.
pub(super) fn land(
    slot: &mut Option<TriageView>,
    selected: bool,
    result: Result<Option<TriageReport>, String>,
) {
    if !selected {
        return;
    }
    let Some(view) = slot.as_mut() else {
        return;
    };
    match result {
        Ok(Some(r)) => view.status = TriageStatus::Done(Box::new(r)),
        Ok(None) => *slot = None,
        Err(e) => view.status = TriageStatus::Failed(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::action::JobMsg;
    use std::time::Duration;

    use chrono::NaiveDate;

    use super::super::App;
    use super::*;
    use crate::action::Msg;
    use crate::slurm::parse::{parse_sacct, parse_squeue};
    use crate::triage::{Class, Evidence, Triage};

    fn app_with_selection() -> (App, JobId) {
        let now = NaiveDate::from_ymd_opt(2026, 11, 23)
            .and_then(|d| d.and_hms_opt(12, 0, 0))
            .unwrap();
        let mut a = App::fixture(now);
        let jobs = parse_squeue(include_str!("../../tests/fixtures/slurm/squeue_me.out")).unwrap();
        a.update(Msg::queue(Ok(jobs), now, Duration::from_millis(1)));
        let id = a.detail.id.clone().unwrap();
        (a, id)
    }

    fn failed_detail(id: &JobId) -> JobDetail {
        let mut d = parse_sacct(include_str!(
            "../../tests/fixtures/slurm/sacct_finished.out"
        ))
        .unwrap()
        .into_iter()
        .find(|d| d.name == "done-fail")
        .unwrap();
        d.id = Some(id.clone());
        d
    }

    fn detail_msg(id: &JobId, d: JobDetail) -> Msg {
        Msg::Job(JobMsg::Detail {
            id: id.clone(),
            result: Box::new(Ok((d, DetailSource::Sacct))),
        })
    }

    fn report(class: Class) -> TriageReport {
        TriageReport {
            triage: Triage {
                class,
                evidence: Evidence::ExitCode { code: 3, signal: 0 },
                suggestion: "read the log".into(),
            },
            status_path: None,
            notes: vec![],
        }
    }

    fn triage_cmds(cmds: &[Cmd]) -> usize {
        cmds.iter()
            .filter(|c| matches!(c, Cmd::Triage { .. }))
            .count()
    }

    #[test]
    fn a_finished_job_is_triaged_once_per_state() {
        let (mut a, id) = app_with_selection();
        let d = failed_detail(&id);
        let cmds = a.update(detail_msg(&id, d.clone()));
        assert_eq!(triage_cmds(&cmds), 1, "{cmds:?}");
        match cmds.iter().find(|c| matches!(c, Cmd::Triage { .. })) {
            Some(Cmd::Triage {
                id: tid,
                detail,
                source,
                results_dir,
            }) => {
                assert_eq!(tid, &id);
                assert_eq!(detail.state, Some(JobState::Failed));
                assert_eq!(*source, DetailSource::Sacct);
                assert_eq!(results_dir, &None);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            a.detail.triage.as_ref().map(|t| &t.status),
            Some(&TriageStatus::Loading)
        );
        // The same detail again (a refetch) does not triage again.
        assert_eq!(triage_cmds(&a.update(detail_msg(&id, d))), 0);
        a.update(Msg::Job(JobMsg::Triaged {
            id: id.clone(),
            result: Box::new(Ok(Some(report(Class::Program)))),
        }));
        assert_eq!(
            a.detail.triage.as_ref().map(|t| &t.status),
            Some(&TriageStatus::Done(Box::new(report(Class::Program))))
        );
    }

    #[test]
    fn running_jobs_are_not_triaged_and_stale_results_are_dropped() {
        let (mut a, id) = app_with_selection();
        let mut d = failed_detail(&id);
        d.state = Some(JobState::Running);
        assert_eq!(triage_cmds(&a.update(detail_msg(&id, d))), 0);
        assert_eq!(a.detail.triage, None);
        a.update(Msg::Job(JobMsg::Triaged {
            id: "999999".parse().unwrap(),
            result: Box::new(Ok(Some(report(Class::Infra)))),
        }));
        assert_eq!(a.detail.triage, None);
    }

    #[test]
    fn a_failed_triage_is_shown_as_such() {
        let (mut a, id) = app_with_selection();
        a.update(detail_msg(&id, failed_detail(&id)));
        a.update(Msg::Job(JobMsg::Triaged {
            id,
            result: Box::new(Err("connection dropped".into())),
        }));
        assert_eq!(
            a.detail.triage.as_ref().map(|t| &t.status),
            Some(&TriageStatus::Failed("connection dropped".into()))
        );
    }

    #[test]
    fn the_slot_asks_once_per_state_and_keeps_only_its_jobs_answer() {
        let id: JobId = "4242".parse().unwrap();
        let d = failed_detail(&id);
        let mut slot = None;
        let cmd = ask(
            &mut slot,
            &id,
            &d,
            DetailSource::Sacct,
            Some("/w/run".into()),
        );
        assert!(
            matches!(&cmd, Some(Cmd::Triage { results_dir: Some(dir), .. }) if dir == "/w/run"),
            "{cmd:?}"
        );
        assert_eq!(
            slot.as_ref().map(|t| &t.status),
            Some(&TriageStatus::Loading)
        );
        assert_eq!(ask(&mut slot, &id, &d, DetailSource::Sacct, None), None);
        // An answer for a job no longer selected changes nothing.
        land(&mut slot, false, Err("late".into()));
        assert_eq!(
            slot.as_ref().map(|t| &t.status),
            Some(&TriageStatus::Loading)
        );
        // Nothing to say about the job: the slot empties.
        land(&mut slot, true, Ok(None));
        assert_eq!(slot, None);
    }
}
