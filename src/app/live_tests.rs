//! Live samples driven through App::update: when they are asked for, what they keep, and
//! the idle-GPU mark.

use chrono::Duration as Span;

use super::*;
use crate::action::Msg;
use crate::app::tests::{app, id, jobs, loaded, now};
use crate::slurm::live::{GpuUsage, StepUsage};

fn samples(cmds: &[Cmd]) -> Vec<&LiveTarget> {
    cmds.iter()
        .filter_map(|c| match c {
            Cmd::SampleLive(t) => Some(t.as_ref()),
            _ => None,
        })
        .collect()
}

fn select(a: &mut App, want: &str) -> Vec<Cmd> {
    let i = a
        .queue
        .rows()
        .position(|r| r.job.id.as_str() == want)
        .expect("row");
    a.queue.select_index(i);
    a.selection_changed()
}

/// A sample at `clock` seconds: step 0 has used `cpu` s, holds `rss` MiB; the GPUs show
/// these utilisations.
fn sample(clock: f64, cpu: f64, rss: u64, utils: &[u32]) -> LiveSample {
    LiveSample {
        clock: Some(clock),
        steps: Ok(vec![StepUsage {
            step: "237.0".into(),
            tasks: 1,
            nodes: "vm".into(),
            cpu_secs: cpu,
            rss_now: rss << 20,
            rss_peak: rss << 20,
            read_bytes: Some(10),
            write_bytes: Some(20),
        }]),
        gpus: vec![NodeGpus {
            node: "vm".into(),
            probe: GpuProbe::Gpus(
                utils
                    .iter()
                    .enumerate()
                    .map(|(i, u)| GpuUsage {
                        index: 3 + i as u32,
                        uuid: format!("GPU-{i}"),
                        name: "NVIDIA A100-SXM4-80GB".into(),
                        util: Some(*u),
                        mem_used_mib: Some(1000),
                        mem_total_mib: Some(81920),
                    })
                    .collect(),
            ),
        }],
    }
}

fn answer(a: &mut App, s: LiveSample, at: NaiveDateTime) {
    a.update(Msg::Live {
        id: id("237"),
        result: Box::new(Ok(s)),
        at,
    });
}

/// The first refresh, its sample (of the first row, if it runs) answered.
fn start() -> App {
    let mut a = app();
    a.update(Msg::PollDue);
    let cmds = a.update(loaded(jobs()));
    for t in samples(&cmds) {
        a.update(Msg::Live {
            id: t.id.clone(),
            result: Box::new(Err("not asked in this test".into())),
            at: now(),
        });
    }
    a
}

/// A refresh at `at` (the clock moved there first).
fn refresh(a: &mut App, at: NaiveDateTime) -> Vec<Cmd> {
    a.update(Msg::Tick(at));
    a.update(Msg::PollDue);
    a.update(loaded(jobs()))
}

#[test]
fn the_selected_running_job_is_sampled_at_most_once_per_refresh() {
    let mut a = start();
    // A pending job: nothing.
    assert!(samples(&select(&mut a, "248")).is_empty());
    assert!(samples(&refresh(&mut a, now())).is_empty());
    // A running job with a GPU, selected between refreshes: sampled at once, on its node.
    let cmds = select(&mut a, "237");
    let s = samples(&cmds);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].id, id("237"));
    assert_eq!(s[0].gpu_nodes, ["vm"]);
    // Moving away and back before the next refresh: no second sample.
    select(&mut a, "234");
    assert!(samples(&select(&mut a, "237")).is_empty());
    // The next refresh while the sample is still out: none either.
    assert!(samples(&refresh(&mut a, now())).is_empty());
    answer(&mut a, sample(100.0, 10.0, 300, &[50]), now());
    // Then one per refresh.
    assert_eq!(samples(&refresh(&mut a, now())).len(), 1);
    assert!(samples(&select(&mut a, "237")).is_empty());
    answer(&mut a, sample(105.0, 20.0, 300, &[50]), now());
    // A job without GPUs is sampled without asking its nodes for GPUs.
    assert!(
        samples(&select(&mut a, "234")).is_empty(),
        "sampled this refresh"
    );
    let cmds = refresh(&mut a, now());
    let s = samples(&cmds);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].id, id("234"));
    assert!(s[0].gpu_nodes.is_empty());
}

#[test]
fn a_lost_sample_does_not_stop_sampling_for_good() {
    let mut a = start();
    select(&mut a, "248");
    refresh(&mut a, now());
    assert_eq!(samples(&select(&mut a, "237")).len(), 1);
    assert!(samples(&refresh(&mut a, now() + Span::seconds(5))).is_empty());
    // Never answered: after two minutes the next refresh asks again.
    assert_eq!(
        samples(&refresh(&mut a, now() + Span::seconds(130))).len(),
        1
    );
}

#[test]
fn samples_build_a_history_with_cores_busy_from_cpu_time_deltas() {
    let mut a = start();
    select(&mut a, "237");
    let t = |s: i64| now() + Span::seconds(s);
    answer(&mut a, sample(1000.0, 10.0, 300, &[40]), t(0));
    let j = a.live.job(&id("237")).unwrap();
    assert_eq!(j.points.len(), 1);
    assert_eq!(j.points[0].cores_busy, None, "one sample has no delta");
    // 5 s later 9 more CPU seconds: 1.8 cores.
    answer(&mut a, sample(1005.0, 19.0, 310, &[60]), t(5));
    let j = a.live.job(&id("237")).unwrap();
    assert!((j.points[1].cores_busy.unwrap() - 1.8).abs() < 1e-9);
    // Over at least 10 s once there are samples that far back: (31 - 10) / 12.
    answer(&mut a, sample(1012.0, 31.0, 305, &[70]), t(12));
    let j = a.live.job(&id("237")).unwrap();
    assert!((j.points[2].cores_busy.unwrap() - 21.0 / 12.0).abs() < 1e-9);
    assert_eq!(j.peak_rss, 310 << 20);
    let utils = j.series(|p| p.gpus[0].util.map(f64::from));
    assert_eq!(utils, [Some(40.0), Some(60.0), Some(70.0)]);
    assert_eq!(j.gpu_keys(), [("vm".to_string(), 3)]);
    // A failed sample keeps the history and says why.
    a.update(Msg::Live {
        id: id("237"),
        result: Box::new(Err("live sample of job 237: timed out".into())),
        at: t(20),
    });
    let j = a.live.job(&id("237")).unwrap();
    assert_eq!(j.points.len(), 3);
    assert!(j.error.as_deref().unwrap().contains("timed out"));
    // The history is bounded.
    for i in 0..(LIVE_HISTORY + 10) {
        answer(
            &mut a,
            sample(2000.0 + i as f64, i as f64, 300, &[1]),
            t(30 + i as i64),
        );
    }
    assert_eq!(a.live.job(&id("237")).unwrap().points.len(), LIVE_HISTORY);
}

#[test]
fn gpus_idle_in_every_sample_for_the_configured_minutes_mark_the_row() {
    let mut a = start();
    select(&mut a, "237");
    let t = |m: i64| now() + Span::minutes(m);
    for m in 0..10 {
        answer(&mut a, sample(m as f64 * 60.0, 0.0, 10, &[0, 0]), t(m));
        assert!(!a.queue.is_idle(&id("237")), "minute {m}");
    }
    answer(&mut a, sample(600.0, 0.0, 10, &[0, 0]), t(10));
    assert!(a.queue.is_idle(&id("237")), "10 minutes at 0 %");
    assert!(!a.queue.is_idle(&id("233")));
    // One GPU working clears it, and the count starts again.
    answer(&mut a, sample(660.0, 0.0, 10, &[0, 3]), t(11));
    assert!(!a.queue.is_idle(&id("237")));
    answer(&mut a, sample(720.0, 0.0, 10, &[0, 0]), t(12));
    answer(&mut a, sample(1200.0, 0.0, 10, &[0, 0]), t(20));
    assert!(!a.queue.is_idle(&id("237")), "8 minutes only");
    answer(&mut a, sample(1320.0, 0.0, 10, &[0, 0]), t(22));
    assert!(a.queue.is_idle(&id("237")));
    // 0 turns the mark off (at the next refresh or sample).
    a.live.idle_minutes = 0;
    refresh(&mut a, t(22));
    assert!(!a.queue.is_idle(&id("237")));
    // A job without GPU samples is never idle.
    let mut no_gpu = sample(0.0, 0.0, 10, &[]);
    no_gpu.gpus.clear();
    let mut j = JobLive::default();
    j.add(no_gpu.clone(), t(0));
    j.add(no_gpu, t(30));
    assert!(!j.gpus_idle_for(1));
}

#[test]
fn a_job_that_stops_running_is_forgotten_at_the_next_refresh() {
    let mut a = start();
    select(&mut a, "237");
    answer(&mut a, sample(1.0, 1.0, 1, &[0]), now());
    assert!(a.live.job(&id("237")).is_some());
    let rest: Vec<Job> = jobs().into_iter().filter(|j| j.id != id("237")).collect();
    a.update(Msg::PollDue);
    a.update(loaded(rest));
    assert!(a.live.job(&id("237")).is_none());
}

#[test]
fn live_sample_secs_spaces_the_samples_of_a_job_over_refreshes() {
    let mut a = start();
    a.live.min_gap_secs = 30;
    select(&mut a, "237");
    let t0 = now() + chrono::Duration::seconds(60);
    assert_eq!(samples(&refresh(&mut a, t0)).len(), 1);
    answer(&mut a, sample(100.0, 10.0, 300, &[50]), t0);
    // Refreshes 5 s and 25 s later: too soon after the last sample.
    for secs in [5, 25] {
        let at = t0 + chrono::Duration::seconds(secs);
        assert!(samples(&refresh(&mut a, at)).is_empty(), "{secs}s");
    }
    // The first refresh 30 s after it samples again.
    let at = t0 + chrono::Duration::seconds(30);
    assert_eq!(samples(&refresh(&mut a, at)).len(), 1);
}
