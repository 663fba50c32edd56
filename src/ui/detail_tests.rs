use insta::assert_snapshot;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::widgets::Widget;

use super::*;
use crate::slurm::model::JobDetail;
use crate::slurm::parse::{parse_sacct, parse_scontrol_jobs, parse_squeue};
use crate::ui::queue::tests::{now, text};

const ME: &str = include_str!("../../tests/fixtures/slurm/squeue_me.out");

fn job(id: &str) -> Job {
    parse_squeue(ME)
        .unwrap()
        .into_iter()
        .find(|j| j.id.as_str() == id)
        .unwrap()
}

fn scontrol(out: &str) -> Vec<JobDetail> {
    parse_scontrol_jobs(out).unwrap()
}

struct Case<'a> {
    job: Option<&'a Job>,
    detail: Option<&'a JobDetail>,
    loading: bool,
    error: Option<&'a str>,
    color: bool,
}

fn render(c: Case, w: u16, h: u16) -> Buffer {
    let theme = Theme::new(c.color);
    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
    DetailWidget {
        job: c.job,
        detail: c.detail,
        loading: c.loading,
        error: c.error,
        focused: true,
        ..DetailWidget::blank(&theme, now())
    }
    .render(buf.area, &mut buf);
    buf
}

fn show(job: Option<&Job>, detail: Option<&JobDetail>) -> String {
    let c = Case {
        job,
        detail,
        loading: false,
        error: None,
        color: true,
    };
    text(&render(c, 80, 34))
}

#[test]
fn detail_pending() {
    let j = job("248");
    let d = scontrol(include_str!(
        "../../tests/fixtures/slurm/scontrol_job_pending.out"
    ));
    assert_snapshot!(show(Some(&j), Some(&d[0])));
}

#[test]
fn detail_pending_that_will_never_start() {
    let j = job("242");
    let d = scontrol(include_str!(
        "../../tests/fixtures/slurm/scontrol_job_overtime.out"
    ));
    assert_snapshot!(show(Some(&j), Some(&d[0])));
}

#[test]
fn detail_running_with_gpus() {
    let j = job("233");
    let d = scontrol(include_str!(
        "../../tests/fixtures/slurm/scontrol_job_gpu_d.out"
    ));
    assert_snapshot!(show(Some(&j), Some(&d[0])));
}

#[test]
fn detail_running_odd_name() {
    let j = job("235");
    let d = scontrol(include_str!(
        "../../tests/fixtures/slurm/scontrol_job_running.out"
    ));
    assert_snapshot!(show(Some(&j), Some(&d[0])));
}

#[test]
fn detail_finished_from_sacct() {
    let d = parse_sacct(include_str!(
        "../../tests/fixtures/slurm/sacct_finished.out"
    ))
    .unwrap();
    let failed = d.iter().find(|d| d.name == "done-fail").unwrap();
    let cancelled = d
        .iter()
        .find(|d| d.name == "cancelled-while-pending")
        .unwrap();
    let both = format!(
        "{}{}",
        show(None, Some(failed)),
        show(None, Some(cancelled))
    );
    assert_snapshot!(both);
}

#[test]
fn detail_array_task_and_collapsed_array() {
    let d = scontrol(include_str!(
        "../../tests/fixtures/slurm/scontrol_job_array.out"
    ));
    let task = d
        .iter()
        .find(|d| d.array_task.as_deref() == Some("3"))
        .unwrap();
    let rest = d
        .iter()
        .find(|d| d.state == Some(JobState::Pending))
        .unwrap();
    let t = job("236_3");
    let c = job("236_[4-99%4]");
    let both = format!(
        "{}{}",
        show(Some(&t), Some(task)),
        show(Some(&c), Some(rest))
    );
    assert_snapshot!(both);
}

#[test]
fn detail_het_component() {
    let j = job("249+1");
    assert_snapshot!(show(Some(&j), None));
}

#[test]
fn detail_loading_from_the_queue_row_only() {
    let j = job("247");
    let c = Case {
        job: Some(&j),
        detail: None,
        loading: true,
        error: None,
        color: true,
    };
    assert_snapshot!(text(&render(c, 60, 24)));
}

#[test]
fn detail_error_and_nothing_selected() {
    let j = job("248");
    let err = Case {
        job: Some(&j),
        detail: None,
        loading: false,
        error: Some("scontrol: error: Invalid job id specified (exit 1)"),
        color: true,
    };
    let none = Case {
        job: None,
        detail: None,
        loading: false,
        error: None,
        color: true,
    };
    let both = format!(
        "{}{}",
        text(&render(err, 50, 26)),
        text(&render(none, 50, 4))
    );
    assert_snapshot!(both);
}

#[test]
fn detail_long_values_wrap_under_their_label() {
    let j = job("239");
    let d = scontrol(include_str!(
        "../../tests/fixtures/slurm/scontrol_job_spacedir.out"
    ));
    let c = Case {
        job: Some(&j),
        detail: Some(&d[0]),
        loading: false,
        error: None,
        color: false,
    };
    let buf = render(c, 44, 40);
    for cell in buf.content() {
        assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset));
    }
    assert_snapshot!(text(&buf));
}

#[test]
fn scrolling_is_clamped_to_the_content() {
    let j = job("248");
    let d = scontrol(include_str!(
        "../../tests/fixtures/slurm/scontrol_job_pending.out"
    ));
    let theme = Theme::new(true);
    let w = |scroll| {
        let mut buf = Buffer::empty(Rect::new(0, 0, 60, 10));
        DetailWidget {
            job: Some(&j),
            detail: Some(&d[0]),
            ..DetailWidget::blank(&theme, now())
        }
        .scrolled(scroll)
        .render(buf.area, &mut buf);
        text(&buf)
    };
    assert!(w(0).contains("State"));
    assert!(!w(3).contains("State"));
    assert_eq!(w(1000), w(u16::MAX));
    assert!(w(1000).contains("Requeue"));
}

/// A folded pending array: the pane says sprio was asked about the array's own id, and the
/// log files are a pattern per task.
#[test]
fn a_folded_array_says_which_id_was_asked_and_shows_logs_per_task() {
    let mut j = job("248");
    j.id = "248_[2-20]".parse().unwrap();
    let d = scontrol(include_str!(
        "../../tests/fixtures/odd/scontrol_pending_array.out"
    ));
    let info = crate::slurm::pending::PendingInfo {
        id: Some(j.id.clone()),
        asked_as: Some(crate::slurm::model::JobId::new(248)),
        ..Default::default()
    };
    let theme = Theme::new(false);
    let mut buf = Buffer::empty(Rect::new(0, 0, 100, 40));
    DetailWidget {
        job: Some(&j),
        detail: Some(&d[0]),
        pending: PendingView {
            info: Some(&info),
            ..PendingView::default()
        },
        ..DetailWidget::blank(&theme, now())
    }
    .render(buf.area, &mut buf);
    let s = text(&buf);
    assert!(
        s.contains(
            "Asked as     248, the array's own id (sprio refuses a folded id like 248_[2-20])"
        ),
        "{s}"
    );
    assert!(
        s.contains("Stdout       /home/sduser/slurm-2256_%a.out (one file per task)"),
        "{s}"
    );
}

/// A name longer than the title can hold is shown whole in the pane.
#[test]
fn a_long_name_is_shown_whole() {
    let mut j = job("248");
    j.name = "a rather long job name that no queue column keeps in full, ending here".into();
    let s = show(Some(&j), None);
    assert!(s.contains("│Name         a rather long job name"), "{s}");
    assert!(s.contains("│             here "), "{s}");
    let short = show(Some(&job("248")), None);
    assert!(!short.contains("Name "), "{short}");
}

/// `--mem-per-cpu=1G` on 4 CPUs (captured on 22.05): the pane says the 1G is per CPU and
/// what the job holds in all, from its TRES.
#[test]
fn memory_asked_per_cpu_says_so_and_the_total() {
    let d = scontrol(include_str!(
        "../../tests/fixtures/slurm/scontrol_job_mem_per_cpu.out"
    ));
    let t = show(None, Some(&d[0]));
    assert!(t.contains("4 CPUs · 1G per CPU, 4G in all"), "{t}");
}

/// What a job waits on, read from the real `Dependency=` of the 26.05 dev cluster: each
/// condition and whether it can still be met; a job whose `afterok` job failed is told it
/// can never start.
#[test]
fn dependencies_are_listed_with_whether_they_can_be_met() {
    let theme = Theme::new(false);
    for (name, fixture) in [
        (
            "waiting",
            include_str!("../../tests/fixtures/slurm/26.05/scontrol_job_dependency_and.out"),
        ),
        (
            "never",
            include_str!("../../tests/fixtures/slurm/26.05/scontrol_job_dependency_never.out"),
        ),
        (
            "any",
            include_str!("../../tests/fixtures/slurm/26.05/scontrol_job_dependency_or.out"),
        ),
    ] {
        let d = scontrol(fixture);
        // The queue's row of the same job, as the dashboard has it.
        let j = d[0].to_job().expect("a job");
        let mut buf = Buffer::empty(Rect::new(0, 0, 90, 40));
        DetailWidget {
            job: Some(&j),
            detail: Some(&d[0]),
            ..DetailWidget::blank(&theme, now())
        }
        .render(buf.area, &mut buf);
        let s = text(&buf);
        assert!(s.contains("Waits on"), "{s}");
        assert_eq!(
            s.contains("can never start on its dependencies"),
            name == "never",
            "{name}: {s}"
        );
        insta::assert_snapshot!(format!("detail_dependency_{name}"), s);
    }
}

#[test]
fn detail_of_a_sweep_task_shows_its_values() {
    let j = job("236_2");
    let chain = crate::retry::Chain {
        local_id: "20261129-0101-ab".into(),
        job_dir: "/lustre/r/sweep".into(),
        name: "sweep".into(),
        attempt: 1,
        attempts: 1,
        max_attempts: 11,
        previous: Vec::new(),
        guard: Some(None),
        sweep: (0..100)
            .map(|i| format!("LR={} SEED={}", ["0.1", "0.2"][i % 2], i / 2))
            .collect(),
        secrets: Vec::new(),
        spec_sha256: None,
        code: None,
    };
    let theme = Theme::new(false);
    let mut buf = Buffer::empty(Rect::new(0, 0, 80, 24));
    DetailWidget {
        job: Some(&j),
        chain: Some(&chain),
        sweep: chain.sweep_text(j.id.array_task()).as_deref(),
        focused: true,
        ..DetailWidget::blank(&theme, now())
    }
    .render(buf.area, &mut buf);
    let screen = text(&buf);
    assert!(
        screen.contains("LR=0.1 SEED=1 · task 2 of 100 runs"),
        "{screen}"
    );
    assert_snapshot!(screen);
}

#[test]
fn detail_of_a_launch_with_a_code_snapshot_names_its_commit_and_changes() {
    let j = job("237");
    let chain = crate::retry::Chain {
        local_id: "20261129-0101-ab".into(),
        job_dir: "/lustre/r/train".into(),
        name: "train".into(),
        attempt: 1,
        attempts: 1,
        max_attempts: 11,
        previous: Vec::new(),
        guard: None,
        sweep: Vec::new(),
        secrets: Vec::new(),
        spec_sha256: None,
        code: Some(crate::launch::code::summary("abc1234def", 3)),
    };
    let theme = Theme::new(false);
    let mut buf = Buffer::empty(Rect::new(0, 0, 80, 24));
    DetailWidget {
        job: Some(&j),
        chain: Some(&chain),
        focused: true,
        ..DetailWidget::blank(&theme, now())
    }
    .render(buf.area, &mut buf);
    let screen = text(&buf);
    let line = screen
        .lines()
        .find(|l| l.contains("Code"))
        .unwrap_or_else(|| panic!("no Code line:\n{screen}"));
    assert!(line.contains("abc1234 + 3 changed files"), "{screen}");
    assert!(!line.contains("code abc"), "{screen}");
}
