//! Peak memory of the dashboard's state holding a 20,000-job queue: the App is fed three
//! refreshes of 20,000 jobs and draws a frame, then the process's peak RSS (VmHWM) is
//! printed. Target: under 40 MB. Figures, not assertions. `cargo bench --bench rss`
//! (`-- N` for another number of jobs).

use std::time::Duration;

use chrono::NaiveDateTime;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use slurmdash::action::Msg;
use slurmdash::app::App;
use slurmdash::keymap::Keymap;
use slurmdash::queue::QueueView;
use slurmdash::slurm::parse::parse_squeue;
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

fn main() {
    let n = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(20_000);
    let now = NaiveDateTime::parse_from_str("2026-11-23T09:20:10", "%Y-%m-%dT%H:%M:%S")
        .expect("fixed time parses");
    let before = vm("VmRSS:");
    let mut app = App::new(
        "dev",
        "your jobs",
        Keymap::default(),
        Theme::new(true),
        QueueView::default(),
        Duration::from_secs(5),
        now,
    );
    app.size = (200, 50);
    let mut term = Terminal::new(TestBackend::new(200, 50)).expect("terminal");
    for _ in 0..3 {
        // Each refresh parses squeue's text as the poller does; the text is dropped after.
        let jobs = parse_squeue(&squeue_rows(REAL, n)).expect("parses");
        app.update(Msg::queue(Ok(jobs), now, Duration::from_millis(20)));
        term.draw(|f| slurmdash::ui::draw(f, &app)).expect("draw");
    }
    println!(
        "dashboard state with {n} jobs after 3 refreshes: RSS {:.1} MB now, peak {:.1} MB (process start {:.1} MB; target < 40 MB)",
        vm("VmRSS:"),
        vm("VmHWM:"),
        before
    );
}
