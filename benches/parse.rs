//! Prints how long parsing a 20,000-job squeue output takes (target: under 30 ms), built
//! from real records of two captures: `squeue_all.out` (the older `-o` format, unframed) and
//! `26.05/squeue_gpus.out` (today's `--Format`, framed, with `tres-alloc`).
//! Run with `cargo bench --bench parse`. Figures, not assertions.

use std::time::{Duration, Instant};

use slurmdash::slurm::parse::parse_squeue;
use slurmdash::slurm::synth::squeue_rows;

const REAL: &str = include_str!("../tests/fixtures/slurm/squeue_all.out");
const REAL_FORMAT: &str = include_str!("../tests/fixtures/slurm/26.05/squeue_gpus.out");

fn main() {
    let n = 20_000;
    for (what, real) in [
        ("squeue_all.out", REAL),
        ("26.05/squeue_gpus.out", REAL_FORMAT),
    ] {
        let input = squeue_rows(real, n);
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
            "parse_squeue ({what}): {n} jobs, {:.1} KB: best {:.2} ms, mean {:.2} ms over {runs} runs (target < 30 ms)",
            input.len() as f64 / 1024.0,
            best.as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3 / runs as f64
        );
    }
}
