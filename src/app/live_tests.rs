//! Live samples driven through App::update: when they are asked for, what they keep, and
//! the idle-GPU mark.

use crate::action::{JobMsg, PollMsg};
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
        .shown()
        .rows()
        .position(|r| r.job.id.as_str() == want)
        .expect("row");
    a.queue.shown_mut().select_index(i);
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
            nodes: "gpu07".into(),
            cpu_secs: cpu,
            rss_now: rss << 20,
            rss_peak: rss << 20,
            read_bytes: Some(10),
            write_bytes: Some(20),
        }]),
        gpus: vec![NodeGpus {
            node: "gpu07".into(),
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
    a.update(Msg::Job(JobMsg::Live {
        id: id("237"),
        result: Box::new(Ok(s)),
        at,
    }));
}

/// The first refresh, its sample (of the first row, if it runs) answered.
fn start() -> App {
    let mut a = app();
    a.update(Msg::Poll(PollMsg::PollDue));
    let cmds = a.update(loaded(jobs()));
    for t in samples(&cmds) {
        a.update(Msg::Job(JobMsg::Live {
            id: t.id.clone(),
            result: Box::new(Err("not asked in this test".into())),
            at: now(),
        }));
    }
    a
}

/// A refresh at `at` (the clock moved there first).
fn refresh(a: &mut App, at: NaiveDateTime) -> Vec<Cmd> {
    a.update(Msg::Tick(at));
    a.update(Msg::Poll(PollMsg::PollDue));
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
    assert_eq!(s[0].gpu_nodes, ["gpu07"]);
    // Another running job, selected: sampled at once too; a job without GPUs without
    // asking its nodes for GPUs.
    let cmds = select(&mut a, "234");
    let s = samples(&cmds);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].id, id("234"));
    assert!(s[0].gpu_nodes.is_empty());
    // Back before the answer: its sample is still out, none more.
    assert!(samples(&select(&mut a, "237")).is_empty());
    // The next refresh while the sample is still out: none either.
    assert!(samples(&refresh(&mut a, now())).is_empty());
    answer(&mut a, sample(100.0, 10.0, 300, &[50]), now());
    // Then one per refresh while it stays selected.
    assert_eq!(samples(&refresh(&mut a, now())).len(), 1);
    assert!(samples(&select(&mut a, "237")).is_empty());
    answer(&mut a, sample(105.0, 20.0, 300, &[50]), now());
    // Selected again within KEEP_SECS of its last sample: that one shows, none is read.
    select(&mut a, "248");
    assert!(samples(&select(&mut a, "237")).is_empty());
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
    assert_eq!(j.gpu_keys(), [("gpu07".to_string(), 3)]);
    // A failed sample keeps the history and says why.
    a.update(Msg::Job(JobMsg::Live {
        id: id("237"),
        result: Box::new(Err("live sample of job 237: timed out".into())),
        at: t(20),
    }));
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
        assert!(!a.queue.shown().is_idle(&id("237")), "minute {m}");
    }
    answer(&mut a, sample(600.0, 0.0, 10, &[0, 0]), t(10));
    assert!(a.queue.shown().is_idle(&id("237")), "10 minutes at 0 %");
    assert!(!a.queue.shown().is_idle(&id("233")));
    // One GPU working clears it, and the count starts again.
    answer(&mut a, sample(660.0, 0.0, 10, &[0, 3]), t(11));
    assert!(!a.queue.shown().is_idle(&id("237")));
    answer(&mut a, sample(720.0, 0.0, 10, &[0, 0]), t(12));
    answer(&mut a, sample(1200.0, 0.0, 10, &[0, 0]), t(20));
    assert!(!a.queue.shown().is_idle(&id("237")), "8 minutes only");
    answer(&mut a, sample(1320.0, 0.0, 10, &[0, 0]), t(22));
    assert!(a.queue.shown().is_idle(&id("237")));
    // 0 turns the mark off (at the next refresh or sample).
    a.live.idle_minutes = 0;
    refresh(&mut a, t(22));
    assert!(!a.queue.shown().is_idle(&id("237")));
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
    a.update(Msg::Poll(PollMsg::PollDue));
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

/// A sample that failed (here: the login ended mid-session) does not space the next one:
/// the first refresh after it samples again, and a good sample replaces the error.
#[test]
fn a_failed_sample_is_taken_again_at_the_next_refresh() {
    let mut a = start();
    a.live.min_gap_secs = 30;
    select(&mut a, "237");
    let t0 = now() + chrono::Duration::seconds(60);
    assert_eq!(samples(&refresh(&mut a, t0)).len(), 1);
    a.update(Msg::Job(JobMsg::Live {
        id: id("237"),
        result: Box::new(Err("cannot connect: login needed".into())),
        at: t0,
    }));
    assert!(a.live.job(&id("237")).is_some_and(|j| j.error.is_some()));
    let at = t0 + chrono::Duration::seconds(5);
    assert_eq!(samples(&refresh(&mut a, at)).len(), 1);
    answer(&mut a, sample(100.0, 10.0, 300, &[50]), at);
    assert!(a.live.job(&id("237")).is_some_and(|j| j.error.is_none()));
}

/// A job of `cores` cores asking `mem_gib` GiB, sampled once a minute: `busy` cores, `rss`
/// MiB.
fn low_job(cores: u32, mem_gib: Option<u64>, busy: &[f64], rss: u64) -> JobLive {
    let mut j = JobLive {
        asked_cores: cores,
        asked_mem: mem_gib.map(|g| g << 30),
        ..JobLive::default()
    };
    let mut cpu = 0.0;
    for (m, b) in busy.iter().enumerate() {
        cpu += b * 60.0;
        let mut s = sample(m as f64 * 60.0, cpu, rss, &[]);
        s.gpus.clear();
        j.add(s, now() + Span::minutes(m as i64));
    }
    j
}

const RULES: LowUseRules = LowUseRules {
    minutes: 10,
    cpu_percent: 25,
    mem_percent: 25,
};

#[test]
fn low_use_needs_every_measured_sample_under_the_share_for_the_whole_span() {
    // 1.2 of 8 cores (15 %): the first sample has no figure yet, so 11 samples a minute
    // apart measure 9 minutes (not enough) and 12 measure 10.
    assert!(low_job(8, None, &[1.2; 11], 300).low_use(&RULES).is_empty());
    let low = low_job(8, None, &[1.2; 12], 300).low_use(&RULES);
    assert_eq!(low.len(), 1, "{low:?}");
    let LowUse::Cores { busy, of, minutes } = &low[0] else {
        panic!("{low:?}")
    };
    assert!((busy - 1.2).abs() < 1e-9);
    assert_eq!((*of, *minutes), (8, 10));
    assert_eq!(low[0].describe(), "1.2 of 8 cores busy for 10 min");
    // One busy minute in the middle starts the count again.
    let mut busy = vec![1.0; 12];
    busy[4] = 3.0;
    assert!(low_job(8, None, &busy, 300).low_use(&RULES).is_empty());
    // At the share or above is not low; 0 turns the test off; so does a span of 0.
    assert!(low_job(8, None, &[2.0; 12], 300).low_use(&RULES).is_empty());
    let off = LowUseRules {
        cpu_percent: 0,
        ..RULES
    };
    assert!(low_job(8, None, &[1.2; 12], 300).low_use(&off).is_empty());
    let never = LowUseRules {
        minutes: 0,
        ..RULES
    };
    assert!(low_job(8, Some(16), &[0.1; 12], 300)
        .low_use(&never)
        .is_empty());
    // Unknown cores: no verdict.
    assert!(low_job(0, None, &[0.0; 12], 300).low_use(&RULES).is_empty());
}

#[test]
fn low_memory_is_a_peak_under_the_share_of_the_request_over_the_span() {
    // 310 MiB of 16 GiB, sampled 11 minutes: low (and the cores are busy enough).
    let j = low_job(2, Some(16), &[2.0; 12], 310);
    let low = j.low_use(&RULES);
    assert_eq!(
        low,
        [LowUse::Memory {
            peak: 310 << 20,
            asked: 16 << 30,
            minutes: 11
        }]
    );
    assert_eq!(
        low[0].describe(),
        "peak 310.0 MiB of 16.0 GiB asked over 11 min"
    );
    // Sampled for less than the span: no verdict yet.
    assert!(low_job(2, Some(16), &[2.0; 5], 310)
        .low_use(&RULES)
        .is_empty());
    // A peak at 25 % or more, no known request, or the test off: none.
    assert!(low_job(2, Some(1), &[2.0; 12], 300)
        .low_use(&RULES)
        .is_empty());
    assert!(low_job(2, None, &[2.0; 12], 310).low_use(&RULES).is_empty());
    let off = LowUseRules {
        mem_percent: 0,
        ..RULES
    };
    assert!(low_job(2, Some(16), &[2.0; 12], 310)
        .low_use(&off)
        .is_empty());
    // Both at once.
    assert_eq!(
        low_job(8, Some(16), &[0.5; 12], 310).low_use(&RULES).len(),
        2
    );
}

#[test]
fn a_sampled_job_using_little_of_what_it_asked_is_marked_u_and_z_stays_for_gpus() {
    let mut a = start();
    select(&mut a, "237");
    // Its detail: 4 cores, 16 GiB in all.
    let detail = crate::slurm::model::JobDetail {
        id: Some(id("237")),
        cpus: Some(4),
        tres: Some("cpu=4,mem=16G,node=1,billing=4,gres/gpu=1".into()),
        ..Default::default()
    };
    a.update(Msg::Job(JobMsg::Detail {
        id: id("237"),
        result: Box::new(Ok((detail, crate::payload::DetailSource::Scontrol))),
    }));
    let t = |m: i64| now() + Span::minutes(m);
    // 0.5 of 4 cores and 300 MiB, GPU at 50 %: not idle, but little used.
    let mut cpu = 0.0;
    for m in 0..10 {
        cpu += 30.0;
        answer(&mut a, sample(m as f64 * 60.0, cpu, 300, &[50]), t(m));
        assert!(!a.queue.shown().is_low_use(&id("237")), "minute {m}");
    }
    // 10 minutes of samples: the memory says so; a minute later the cores too.
    cpu += 30.0;
    answer(&mut a, sample(600.0, cpu, 300, &[50]), t(10));
    assert!(
        a.queue.shown().is_low_use(&id("237")),
        "300 MiB of 16 GiB for 10 min"
    );
    assert_eq!(
        a.live
            .job(&id("237"))
            .unwrap()
            .low_use(&a.live.rules())
            .len(),
        1
    );
    cpu += 30.0;
    answer(&mut a, sample(660.0, cpu, 300, &[50]), t(11));
    assert!(a.queue.shown().is_low_use(&id("237")));
    assert!(!a.queue.shown().is_idle(&id("237")), "its GPU works");
    assert!(!a.queue.shown().is_low_use(&id("233")));
    let j = a.live.job(&id("237")).unwrap();
    assert_eq!((j.asked_cores, j.asked_mem), (4, Some(16 << 30)));
    let why: Vec<String> = j
        .low_use(&a.live.rules())
        .iter()
        .map(LowUse::describe)
        .collect();
    assert_eq!(
        why,
        [
            "0.5 of 4 cores busy for 10 min",
            "peak 300.0 MiB of 16.0 GiB asked over 11 min"
        ]
    );
    // Busy again: the memory still says so; with that test off the mark goes.
    cpu += 180.0;
    answer(&mut a, sample(720.0, cpu, 300, &[50]), t(12));
    assert!(a.queue.shown().is_low_use(&id("237")));
    a.live.low_mem_percent = 0;
    refresh(&mut a, t(12));
    assert!(!a.queue.shown().is_low_use(&id("237")));
}

/// When the queue says job 237 started.
fn started_237(a: &App) -> NaiveDateTime {
    a.queue
        .shown()
        .jobs()
        .iter()
        .find(|j| j.id == id("237"))
        .and_then(|j| j.start_time)
        .expect("a running job's start")
}

/// The first sample of a job that has run a while already says how busy its cores were on
/// average since it started (its steps' CPU time over its elapsed time): a figure at once,
/// before a second sample can measure the pace.
#[test]
fn the_first_sample_gives_the_cores_busy_on_average_since_the_start() {
    let mut a = start();
    select(&mut a, "237");
    let started = started_237(&a);
    let at = started + Span::seconds(100);
    answer(&mut a, sample(1000.0, 50.0, 300, &[50]), at);
    let j = a.live.job(&id("237")).unwrap();
    assert_eq!(
        j.points.back().unwrap().cores_busy,
        None,
        "one sample: no pace"
    );
    assert_eq!(
        j.avg_busy(Some(started)),
        Some(0.5),
        "50 CPU-seconds over 100 s"
    );
    assert_eq!(j.avg_busy(None), None, "no start known");
    assert_eq!(j.avg_busy(Some(at)), None, "under 5 s: rounding");
}

/// A job selected in its first seconds: its first sample gives no CPU figure (under 5 s of
/// run), so a second one follows 10 s later, without waiting for the budget's background.
#[test]
fn a_first_sample_without_a_cpu_figure_is_followed_up_once() {
    let mut a = start();
    select(&mut a, "237");
    let started = started_237(&a);
    let at = started + Span::seconds(2);
    answer(&mut a, sample(1000.0, 1.0, 300, &[50]), at);
    assert!(samples(&a.update(Msg::Tick(at + Span::seconds(9)))).is_empty());
    let cmds = a.update(Msg::Tick(at + Span::seconds(FOLLOWUP_SECS)));
    assert_eq!(samples(&cmds).len(), 1, "the follow-up");
    answer(
        &mut a,
        sample(1010.0, 9.0, 300, &[50]),
        at + Span::seconds(11),
    );
    let j = a.live.job(&id("237")).unwrap();
    assert_eq!(
        j.points.back().unwrap().cores_busy,
        Some(0.8),
        "8 CPU-s over 10 s"
    );
    assert!(
        samples(&a.update(Msg::Tick(at + Span::seconds(40)))).is_empty(),
        "once"
    );
}
