//! Peak memory of the dashboard's state holding a 20,000-job queue: the App is fed three
//! refreshes of 20,000 jobs and draws a frame, then the process's peak RSS (VmHWM) is
//! printed. Target: under 40 MB. Figures, not assertions. `cargo bench --bench rss`
//! (`-- N` for another number of jobs; `-- N idle K` then times K more refreshes in which
//! nothing changed, as an idle queue's, each read and applied as the dashboard does).

use std::time::Duration;

use chrono::NaiveDateTime;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use slurmdash::action::Msg;
use slurmdash::app::App;
use slurmdash::keymap::Keymap;
use slurmdash::queue::QueueView;
use slurmdash::slurm::parse::squeue::{read_squeue_reusing, Reuse};
use slurmdash::slurm::synth::squeue_rows;
use slurmdash::ui::theme::Theme;

const REAL: &str = include_str!("../tests/fixtures/slurm/squeue_me.out");

fn vm(key: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
        / 1024.0
}

/// Every tenth record with its time limit one minute longer (as a refresh that saw a tenth
/// of the queue change).
fn changed_every_tenth(text: &str) -> String {
    text.split_inclusive('\u{1e}')
        .enumerate()
        .map(|(i, r)| {
            if i % 10 == 0 {
                r.replacen("\u{1f}20:00\u{1f}", "\u{1f}21:00\u{1f}", 1)
            } else {
                r.to_string()
            }
        })
        .collect()
}

fn main() {
    let n = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(20_000);
    let now = NaiveDateTime::parse_from_str("2026-11-23T09:20:10", "%Y-%m-%dT%H:%M:%S")
        .expect("fixed time parses");
    let before = vm("VmRSS:");
    let mut app = App::new(
        slurmdash::app::ClusterState::new("dev", "your jobs", Duration::from_secs(5), now),
        Keymap::default(),
        Theme::new(true),
        QueueView::default(),
        now,
    );
    app.size = (200, 50);
    let mut term = Terminal::new(TestBackend::new(200, 50)).expect("terminal");
    // The worker keeps the last answer's records for the next (an unchanged record is the
    // same `Job` again); the third refresh has every 10th record changed.
    let mut last = Reuse::default();
    for round in 0..3 {
        // Each refresh parses squeue's text as the poller does; the text is dropped after.
        let mut text = squeue_rows(REAL, n);
        if round == 2 {
            text = changed_every_tenth(&text);
        }
        let t = std::time::Instant::now();
        let jobs = read_squeue_reusing(&text, &mut last, &|_| {})
            .strict()
            .expect("parses");
        let parsed = t.elapsed();
        drop(text);
        let t = std::time::Instant::now();
        app.update(Msg::queue(Ok(jobs), now, Duration::from_millis(20)));
        let updated = t.elapsed();
        term.draw(|f| slurmdash::ui::draw(f, &app)).expect("draw");
        println!(
            "refresh {}: read {:.1} ms ({} records reused), update {:.1} ms",
            round + 1,
            parsed.as_secs_f64() * 1e3,
            last.reused,
            updated.as_secs_f64() * 1e3
        );
    }
    let idle = std::env::args()
        .skip_while(|a| a != "idle")
        .nth(1)
        .and_then(|a| a.parse::<u32>().ok())
        .unwrap_or(0);
    if idle > 0 {
        let text = changed_every_tenth(&squeue_rows(REAL, n));
        let t = std::time::Instant::now();
        for _ in 0..idle {
            let jobs = read_squeue_reusing(&text, &mut last, &|_| {})
                .strict()
                .expect("parses");
            app.update(Msg::queue(Ok(jobs), now, Duration::from_millis(20)));
            term.draw(|f| slurmdash::ui::draw(f, &app)).expect("draw");
        }
        println!(
            "{idle} unchanged refreshes: {:.1} ms each (read, update and a frame)",
            t.elapsed().as_secs_f64() * 1e3 / f64::from(idle)
        );
    }
    println!(
        "dashboard state with {n} jobs after 3 refreshes: RSS {:.1} MB now, peak {:.1} MB (process start {:.1} MB; target < 40 MB); the last refresh reused {} records",
        vm("VmRSS:"),
        vm("VmHWM:"),
        before,
        last.reused
    );
}
