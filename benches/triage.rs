//! Prints how long classifying a FAILED job takes on two full 64 KiB log tails with no
//! matching line (the worst case: every line is checked against every pattern), and how
//! long building the patterns takes; and how long job-change detection takes on a
//! 20,000-job queue. Run with `cargo bench --bench triage`. Figures only.

use std::time::{Duration, Instant};

use slurmdash::app::Events;
use slurmdash::slurm::model::JobState;
use slurmdash::slurm::parse::parse_squeue;
use slurmdash::slurm::synth::squeue_rows;
use slurmdash::triage::{classify, Class, Patterns, TriageInput};

const LOG: &str = include_str!("../tests/fixtures/triage/program_lookalikes.out");
const TAIL: usize = 64 * 1024;

fn tail_of_training_log() -> String {
    let mut s = String::with_capacity(TAIL + 200);
    let mut i = 0u64;
    while s.len() < TAIL {
        s.push_str(&format!(
            "Epoch {}: {:>3}%|####      | {i}/5000 [41:12<59:14, 1.21s/it, loss={:.3}]\n",
            i / 5000,
            i % 100,
            2.0 / (1.0 + i as f64 / 1000.0)
        ));
        if i.is_multiple_of(97) {
            s.push_str(LOG);
        }
        i += 1;
    }
    s.truncate(TAIL);
    s
}

fn main() {
    let t = Instant::now();
    let patterns = Patterns::builtin();
    let build = t.elapsed();
    let out = tail_of_training_log();
    let err = tail_of_training_log();
    let runs = 20;
    let (mut best, mut total) = (Duration::MAX, Duration::ZERO);
    for _ in 0..runs {
        let t = Instant::now();
        let r = classify(
            &TriageInput {
                state: &JobState::Failed,
                exit_code: Some((1, 0)),
                cancelled_by: None,
                reason: Some("NonZeroExitCode"),
                stdout: &out,
                stderr: &err,
                status_json: None,
            },
            &patterns,
        )
        .expect("classified");
        let took = t.elapsed();
        assert_eq!(r.class, Class::Program);
        best = best.min(took);
        total += took;
    }
    println!(
        "classify: 2 x 64 KiB tails, {} lines, {} patterns, no match: best {:.2} ms, mean {:.2} ms over {runs} runs; building the patterns {:.2} ms",
        out.lines().count() * 2,
        patterns.infra.len() + patterns.oom.len(),
        best.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3 / runs as f64,
        build.as_secs_f64() * 1e3
    );
    events_bench();
}

fn events_bench() {
    let n = 20_000;
    let real = include_str!("../tests/fixtures/slurm/squeue_all.out");
    let jobs = parse_squeue(&squeue_rows(real, n)).expect("synthetic squeue parses");
    let mut changed = jobs.clone();
    for j in &mut changed {
        j.state = match j.state {
            JobState::Pending => JobState::Running,
            _ => JobState::Completed,
        };
    }
    let at = chrono::NaiveDate::from_ymd_opt(2026, 11, 23)
        .and_then(|d| d.and_hms_opt(12, 0, 0))
        .expect("valid time");
    let runs = 10;
    let (mut same, mut all) = (Duration::MAX, Duration::MAX);
    for _ in 0..runs {
        let mut e = Events::default();
        e.on_jobs(&[], &jobs, at);
        let t = Instant::now();
        let none = e.on_jobs(&jobs, &jobs, at);
        same = same.min(t.elapsed());
        assert!(none.is_empty());
        let t = Instant::now();
        let evs = e.on_jobs(&jobs, &changed, at);
        all = all.min(t.elapsed());
        assert!(!evs.is_empty());
    }
    println!(
        "job-change detection, {n} jobs: unchanged refresh best {:.2} ms, every job changed best {:.2} ms",
        same.as_secs_f64() * 1e3,
        all.as_secs_f64() * 1e3
    );
}
