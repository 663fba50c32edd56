//! The triage section of the detail pane: the class of a finished job, the evidence that
//! decided it and a one-line suggestion.

use ratatui::style::Style;

use super::theme::Theme;
use crate::app::{TriageStatus, TriageView};
use crate::slurm::model::{JobState, Status};
use crate::triage::Class;

fn describe(c: Class) -> &'static str {
    match c {
        Class::Complete => "finished successfully",
        Class::Error => "the program reported an error",
        Class::Infra => "infrastructure failure (worth a retry)",
        Class::Oom => "out of memory",
        Class::Timeout => "hit its time limit",
        Class::Program => "the program failed",
        Class::Cancelled => "cancelled",
    }
}

fn class_style(c: Class, t: &Theme) -> Style {
    match c {
        Class::Complete => t.status_style(Status::Complete),
        Class::Cancelled => t.status_style(Status::Canceled),
        Class::Infra => t.warn(),
        _ => t.error(),
    }
}

/// The status to show instead of Complete when status.json turned COMPLETED into Error.
pub fn refined_status(view: Option<&TriageView>, state: &JobState) -> Option<Status> {
    match &view?.status {
        TriageStatus::Done(r)
            if *state == JobState::Completed && r.triage.class == Class::Error =>
        {
            Some(Status::Error)
        }
        _ => None,
    }
}

/// (label, value, style) rows for the detail pane.
pub fn rows(view: &TriageView, t: &Theme) -> Vec<(&'static str, String, Style)> {
    match &view.status {
        TriageStatus::Loading => vec![(
            "Triage",
            "reading the end of the logs…".to_string(),
            t.dim(),
        )],
        TriageStatus::Failed(e) => vec![("Triage", format!("not available: {e}"), t.error())],
        TriageStatus::Done(r) => {
            let c = r.triage.class;
            let mut out = vec![
                (
                    "Triage",
                    format!("{} · {}", c.code(), describe(c)),
                    class_style(c, t),
                ),
                ("Evidence", r.triage.evidence.to_string(), t.dim()),
                ("Suggestion", r.triage.suggestion.clone(), Style::new()),
            ];
            for n in &r.notes {
                out.push(("Note", n.clone(), t.dim()));
            }
            out
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use insta::assert_snapshot;
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::widgets::Widget;

    use super::*;
    use crate::payload::TriageReport;
    use crate::slurm::model::JobDetail;
    use crate::slurm::parse::parse_sacct;
    use crate::triage::{classify, Patterns, TriageInput};
    use crate::ui::detail::DetailWidget;
    use crate::ui::queue::tests::{now, text};

    fn failed_job() -> JobDetail {
        parse_sacct(include_str!(
            "../../tests/fixtures/slurm/sacct_finished.out"
        ))
        .unwrap()
        .into_iter()
        .find(|d| d.name == "done-fail")
        .unwrap()
    }

    fn view_of(d: &JobDetail, stderr: &str, notes: Vec<String>) -> TriageView {
        let input = TriageInput::from_detail(d, "", stderr, None).unwrap();
        let triage = classify(&input, &Patterns::builtin()).unwrap();
        TriageView {
            state: d.state.clone().unwrap(),
            status: TriageStatus::Done(Box::new(TriageReport {
                triage,
                status_path: None,
                notes,
            })),
        }
    }

    fn render(d: &JobDetail, v: Option<&TriageView>) -> String {
        let theme = Theme::new(true);
        let mut buf = Buffer::empty(Rect::new(0, 0, 80, 12));
        DetailWidget {
            detail: Some(d),
            focused: true,
            triage: v,
            ..DetailWidget::blank(&theme, now())
        }
        .render(buf.area, &mut buf);
        text(&buf)
    }

    #[test]
    fn detail_triage_section() {
        let d = failed_job();
        let infra = view_of(
            &d,
            include_str!("../../tests/fixtures/triage/enroot_credentials.err"),
            vec![],
        );
        let program = view_of(
            &d,
            "ValueError: x\n",
            vec!["stdout log /lustre/x/slurm-226.out not found".into()],
        );
        let loading = TriageView {
            state: JobState::Failed,
            status: TriageStatus::Loading,
        };
        let failed = TriageView {
            state: JobState::Failed,
            status: TriageStatus::Failed("the connection to login1 dropped".into()),
        };
        let all = [&infra, &program, &loading, &failed]
            .iter()
            .map(|v| render(&d, Some(v)))
            .collect::<String>();
        assert_snapshot!(all);
    }

    #[test]
    fn detail_completed_refined_by_status_json() {
        let mut d = failed_job();
        d.state = Some(JobState::Completed);
        d.exit_code = Some((0, 0));
        let input = TriageInput::from_detail(
            &d,
            "",
            "",
            Some("{\"status\": \"FAILURE\", \"message\": \"no label files\"}"),
        )
        .unwrap();
        let v = TriageView {
            state: JobState::Completed,
            status: TriageStatus::Done(Box::new(TriageReport {
                triage: classify(&input, &Patterns::builtin()).unwrap(),
                status_path: Some("/res/j1/status.json".into()),
                notes: vec![],
            })),
        };
        let shown = render(&d, Some(&v));
        assert!(shown.contains("Error (COMPLETED, status.json)"), "{shown}");
        assert_snapshot!(shown);
        assert!(render(&d, None).contains("Complete (COMPLETED)"));
    }

    #[test]
    fn rows_name_the_class_and_its_suggestion() {
        let d = failed_job();
        let v = view_of(
            &d,
            include_str!("../../tests/fixtures/triage/oom_kill.err"),
            vec![],
        );
        let r = rows(&v, &Theme::new(false));
        assert_eq!(r[0].1, "ERR_OOM · out of memory");
        assert!(
            r[1].1
                .starts_with("stderr: srun: error: nid001277: tasks 1-3: Out Of Memory"),
            "{}",
            r[1].1
        );
        assert!(r[2].1.contains("--mem"));
        let shown = render(&d, Some(&v));
        assert!(shown.contains("ERR_OOM"), "{shown}");
        assert!(!render(&d, None).contains("Triage"));
    }
}
