//! Prints how long one frame of a 20,000-job queue takes to draw on a 200x50
//! screen (target: under 5 ms), and how long re-sorting and filtering take.
//! Run with `cargo bench --bench render`. Figures, not assertions.

use std::time::{Duration, Instant};

use chrono::NaiveDateTime;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use slurmdash::queue::{Column, QueueView};
use slurmdash::slurm::parse::parse_squeue;
use slurmdash::slurm::synth::squeue_rows;
use slurmdash::ui::queue::{body_height, QueueWidget};
use slurmdash::ui::theme::Theme;

const REAL: &str = include_str!("../tests/fixtures/slurm/squeue_all.out");

fn time<F: FnMut()>(runs: u32, mut f: F) -> (Duration, Duration) {
    let mut best = Duration::MAX;
    let mut total = Duration::ZERO;
    for _ in 0..runs {
        let t = Instant::now();
        f();
        let took = t.elapsed();
        best = best.min(took);
        total += took;
    }
    (best, total / runs)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let n = 20_000;
    let jobs = parse_squeue(&squeue_rows(REAL, n)).expect("synthetic squeue output parses");
    let now = NaiveDateTime::parse_from_str("2026-11-23T09:20:10", "%Y-%m-%dT%H:%M:%S")
        .expect("fixed time parses");
    let theme = Theme::new(true);
    let area = Rect::new(0, 0, 200, 50);

    let mut view = QueueView::default();
    let (best, mean) = time(10, || view.set_jobs(jobs.clone()));
    println!(
        "set_jobs({n}) (fold arrays, measure, filter, sort): best {:.2} ms, mean {:.2} ms",
        ms(best),
        ms(mean)
    );

    view.set_viewport(body_height(area.height));
    view.select_index(12_345);
    let mut buf = Buffer::empty(area);
    let runs = 200;
    let (best, mean) = time(runs, || {
        buf.reset();
        QueueWidget {
            view: &view,
            theme: &theme,
            now,
            focused: true,
        }
        .render(area, &mut buf);
        view.select_next();
    });
    println!(
        "render 200x50, {n} jobs: best {:.3} ms, mean {:.3} ms over {runs} frames (target < 5 ms)",
        ms(best),
        ms(mean)
    );

    let (best, mean) = time(10, || {
        view.cycle_sort();
        if view.sort().column.is_none() {
            view.cycle_sort();
        }
    });
    println!(
        "re-sort {n} rows by the next column: best {:.2} ms, mean {:.2} ms",
        ms(best),
        ms(mean)
    );
    view.sort_by(Some(Column::Name), false);
    let (best, mean) = time(10, || {
        view.set_filter("hog");
        view.set_filter("");
    });
    println!(
        "filter {n} rows and clear it (2 passes): best {:.2} ms, mean {:.2} ms",
        ms(best),
        ms(mean)
    );
}
