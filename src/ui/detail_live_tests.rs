use chrono::Duration as Span;
use insta::assert_snapshot;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use super::*;
use crate::app::live::JobLive;
use crate::slurm::live::{GpuUsage, LiveSample, NodeGpus, StepUsage};
use crate::slurm::model::{Job, JobDetail, JobState};
use crate::slurm::parse::parse_squeue;
use crate::theme::Theme;
use crate::ui::queue::tests::{now, text};

const ME: &str = include_str!("../../tests/fixtures/slurm/squeue_me.out");

/// Job 233 of the fixture queue: running on `gpu07` with 2 GPUs.
fn job() -> Job {
    parse_squeue(ME)
        .unwrap()
        .into_iter()
        .find(|j| j.id.as_str() == "233")
        .unwrap()
}

fn detail() -> JobDetail {
    JobDetail {
        id: Some("233".parse().unwrap()),
        state: Some(JobState::Running),
        cpus: Some(2),
        nodes: Some(1),
        node_list: Some("gpu07".into()),
        tres: Some("cpu=2,mem=1G,node=1,billing=2,gres/gpu=2".into()),
        ..JobDetail::default()
    }
}

fn gpus(node: &str, loads: &[(u32, u32, u64)]) -> NodeGpus {
    NodeGpus {
        node: node.into(),
        probe: GpuProbe::Gpus(
            loads
                .iter()
                .map(|&(index, util, mem)| GpuUsage {
                    index,
                    uuid: format!("GPU-{index}"),
                    name: "NVIDIA A100-SXM4-80GB".into(),
                    util: Some(util),
                    mem_used_mib: Some(mem),
                    mem_total_mib: Some(81920),
                })
                .collect(),
        ),
    }
}

fn sample(i: u32, gpus: Vec<NodeGpus>) -> LiveSample {
    LiveSample {
        clock: Some(f64::from(i) * 5.0),
        steps: Ok(vec![
            StepUsage {
                step: "233.batch".into(),
                tasks: 1,
                nodes: "gpu07".into(),
                cpu_secs: 0.0,
                rss_now: 12 << 20,
                rss_peak: 12 << 20,
                read_bytes: Some(34_000),
                write_bytes: Some(1_800),
            },
            StepUsage {
                step: "233.0".into(),
                tasks: 1,
                nodes: "gpu07".into(),
                // Busier and busier: 0.25 more cores every 5 s.
                cpu_secs: 0.625 * f64::from(i * i),
                rss_now: (100 + 25 * u64::from(i)) << 20,
                rss_peak: (110 + 25 * u64::from(i)) << 20,
                read_bytes: Some(48_000_000),
                write_bytes: Some(1 << 20),
            },
        ]),
        gpus,
    }
}

fn history(n: u32, gpu: impl Fn(u32) -> Vec<NodeGpus>) -> JobLive {
    let mut j = JobLive::default();
    for i in 0..n {
        j.add(
            sample(i, gpu(i)),
            now() - Span::seconds(i64::from(5 * (n - i))),
        );
    }
    j
}

fn render(live: LiveView, w: u16, h: u16) -> String {
    let theme = Theme::new(false);
    let j = job();
    let d = detail();
    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
    DetailWidget {
        job: Some(&j),
        detail: Some(&d),
        focused: true,
        live,
        ..DetailWidget::blank(&theme, now())
    }
    .render(buf.area, &mut buf);
    text(&buf)
}

#[test]
fn detail_live_cpu_memory_and_two_gpus_with_sparklines() {
    let j = history(8, |i| {
        vec![gpus(
            "gpu07",
            &[(3, i * 12, 1000 + 500 * u64::from(i)), (5, 0, 4)],
        )]
    });
    assert_snapshot!(render(
        LiveView {
            shown: true,
            job: Some(&j),
            sampling: false,
            idle_minutes: 10,
            low: LowUseRules::default(),
        },
        80,
        36
    ));
}

#[test]
fn detail_live_no_gpu_telemetry_and_a_first_sample() {
    let j = history(1, |_| {
        vec![NodeGpus {
            node: "gpu07".into(),
            probe: GpuProbe::NoTelemetry(
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
                    .into(),
            ),
        }]
    });
    assert_snapshot!(render(
        LiveView {
            shown: true,
            job: Some(&j),
            sampling: true,
            idle_minutes: 10,
            low: LowUseRules::default(),
        },
        80,
        30
    ));
}

#[test]
fn detail_live_idle_gpus_and_a_failed_node() {
    let j = history(3, |_| {
        vec![
            gpus("gpu01", &[(2, 0, 3)]),
            NodeGpus {
                node: "gpu02".into(),
                probe: GpuProbe::Failed("nvidia-smi through srun did not answer in time".into()),
            },
        ]
    });
    let mut idle = j.clone();
    idle.idle_since = Some(now() - Span::minutes(15));
    let s = render(
        LiveView {
            shown: true,
            job: Some(&idle),
            sampling: false,
            idle_minutes: 10,
            low: LowUseRules::default(),
        },
        80,
        30,
    );
    assert!(s.contains("GPUs idle"), "{s}");
    assert!(
        s.contains("gpu02: nvidia-smi through srun did not answer in time"),
        "{s}"
    );
    assert_snapshot!(s);
    // Before any sample, and with the section off.
    let s = render(
        LiveView {
            shown: true,
            ..LiveView::default()
        },
        80,
        30,
    );
    assert!(s.contains("sampled at the next refresh"), "{s}");
    assert!(!render(LiveView::default(), 80, 30).contains("Live use"));
}

#[test]
fn sparklines_scale_to_their_maximum_and_keep_the_newest() {
    let v = [Some(0.0), Some(1.0), None, Some(2.0), Some(9.0)];
    assert_eq!(sparkline(&v, 2.0, 5), "▁▅ ██");
    assert_eq!(sparkline(&v, 2.0, 2), "██");
    assert_eq!(sparkline(&v, 0.0, 3), " ▁▁");
}

#[test]
fn the_queue_marks_rows_with_idle_gpus_z_on_the_left_border() {
    use crate::queue::QueueView;
    use crate::ui::queue::QueueWidget;
    let mut v = QueueView::default();
    v.set_jobs(parse_squeue(ME).unwrap());
    let idle = job().id.clone();
    v.set_idle([idle.clone()].into_iter().collect());
    let theme = Theme::new(false);
    let mut buf = Buffer::empty(Rect::new(0, 0, 100, 24));
    QueueWidget {
        view: &v,
        theme: &theme,
        now: now(),
        focused: true,
    }
    .render(buf.area, &mut buf);
    let screen = text(&buf);
    let marked: Vec<&str> = screen.lines().filter(|l| l.starts_with('z')).collect();
    assert_eq!(marked.len(), 1, "{screen}");
    assert!(marked[0].contains("233"), "{screen}");
    // A row marked for a bulk action shows its `*` instead.
    let i = v.rows().position(|r| r.job.id == idle).unwrap();
    v.select_index(i);
    v.toggle_mark();
    let mut buf = Buffer::empty(Rect::new(0, 0, 100, 24));
    QueueWidget {
        view: &v,
        theme: &theme,
        now: now(),
        focused: true,
    }
    .render(buf.area, &mut buf);
    let screen = text(&buf);
    assert!(!screen.lines().any(|l| l.starts_with('z')), "{screen}");
}

#[test]
fn detail_live_says_why_a_job_uses_little_of_what_it_asked() {
    // Job 233 (2 cores, 1 GiB): about 0.3 cores busy and 110-135 MiB, sampled each minute
    // for 12 minutes, no GPU figures.
    let mut j = JobLive::default();
    j.asked_cores = 2;
    j.asked_mem = Some(1 << 30);
    for i in 0..13u32 {
        let mut s = sample(0, Vec::new());
        s.clock = Some(f64::from(i) * 60.0);
        if let Ok(steps) = &mut s.steps {
            steps[1].cpu_secs = 18.0 * f64::from(i);
            steps[1].rss_peak = 135 << 20;
        }
        j.add(s, now() - Span::minutes(i64::from(12 - i)));
    }
    let low = LowUseRules {
        minutes: 10,
        cpu_percent: 25,
        mem_percent: 25,
    };
    let s = render(
        LiveView {
            shown: true,
            job: Some(&j),
            sampling: false,
            idle_minutes: 10,
            low,
        },
        80,
        24,
    );
    assert!(
        s.contains("0.3 of 2 cores busy for 11 min (u in the queue)"),
        "{s}"
    );
    assert!(
        s.contains("peak 135.0 MiB of 1.0 GiB asked over 12 min"),
        "{s}"
    );
    assert_snapshot!(s);
    // The same job with the tests off says nothing of it.
    let s = render(
        LiveView {
            shown: true,
            job: Some(&j),
            sampling: false,
            idle_minutes: 10,
            low: LowUseRules::default(),
        },
        80,
        24,
    );
    assert!(!s.contains("Low use"), "{s}");
}

#[test]
fn the_queue_marks_rows_using_little_u_and_idle_gpus_win() {
    use crate::queue::QueueView;
    use crate::ui::queue::QueueWidget;
    let mut v = QueueView::default();
    v.set_jobs(parse_squeue(ME).unwrap());
    let low = job().id.clone();
    v.set_low_use([low.clone()].into_iter().collect());
    let theme = Theme::new(false);
    let draw = |v: &QueueView| {
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 24));
        QueueWidget {
            view: v,
            theme: &theme,
            now: now(),
            focused: true,
        }
        .render(buf.area, &mut buf);
        text(&buf)
    };
    let screen = draw(&v);
    let marked: Vec<&str> = screen.lines().filter(|l| l.starts_with('u')).collect();
    assert_eq!(marked.len(), 1, "{screen}");
    assert!(marked[0].contains("233"), "{screen}");
    assert_snapshot!(screen);
    // Idle GPUs too: `z` is shown (the costlier waste); the detail pane says both.
    v.set_idle([low].into_iter().collect());
    let screen = draw(&v);
    assert!(!screen.lines().any(|l| l.starts_with('u')), "{screen}");
    assert_eq!(screen.lines().filter(|l| l.starts_with('z')).count(), 1);
}
