//! Prints how long parsing a 20,000-job squeue output takes (target: under 30 ms).
//! Run with `cargo bench --bench parse`. Figures, not assertions.

use std::time::{Duration, Instant};

use slurmdash::slurm::parse::parse_squeue;
use slurmdash::slurm::synth::squeue_rows;

const REAL: &str = include_str!("../tests/fixtures/slurm/squeue_all.out");

fn main() {
    let n = 20_000;
    let input = squeue_rows(REAL, n);
    let mut best = Duration::MAX;
    let mut total = Duration::ZERO;
    let runs = 20;
    for _ in 0..runs {
        let t = Instant::now();
        let jobs = parse_squeue(&input).expect("synthetic squeue output parses");
        let took = t.elapsed();
        assert_eq!(jobs.len(), n);
        best = best.min(took);
        total += took;
    }
    println!(
        "parse_squeue: {n} jobs, {:.1} KB: best {:.2} ms, mean {:.2} ms over {runs} runs (target < 30 ms)",
        input.len() as f64 / 1024.0,
        best.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3 / runs as f64
    );
}
