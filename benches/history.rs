//! `:history` over a month of finished jobs, against the dev cluster (`scripts/dev-cluster
//! up`). Prints figures, asserts nothing. Run with `cargo bench --bench history`.
//!
//! It reads the jobs of the test user `sdother` (so the bench's jobs never crowd the queue
//! of `sduser`, whom the tests use). Make them first, e.g. six arrays of 1,000 trivial tasks
//! on the `cpu` partition (a few minutes on the 2-core machine):
//!
//! ```sh
//! for i in 1 2 3 4 5 6; do ssh -F .dev-cluster/ssh/config slurmdash-dev-other \
//!   sbatch -p cpu -J effbench --array=0-999 -c 1 --mem=10M -t 1 -o /dev/null --wrap true; done
//! ```
//!
//! Measured, each over a new SSH connection (its own runtime directory, so no master is
//! shared): the time from the start until the history's rows are on screen (connection,
//! sacct of the newest week's list, parsing, App::update, one frame drawn), until every
//! window's use figures are in, and an incremental read (only what ended since).

use slurmdash::action::JobMsg;
use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use slurmdash::action::{Cmd, Msg};
use slurmdash::app::App;
use slurmdash::config::{Env, Loaded};
use slurmdash::io::history;

fn dev_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".dev-cluster")
}

fn config(tmp: &std::path::Path) -> std::path::PathBuf {
    let src = std::fs::read_to_string(dev_dir().join("slurmdash.toml")).expect("dev config");
    let text = src
        .replace(
            "hosts = [\"slurmdash-dev\"]",
            "hosts = [\"slurmdash-dev-other\"]",
        )
        .replace("user = \"sduser\"", "user = \"sdother\"")
        .replace("/lustre/fsw/sduser/", "/lustre/fsw/sdother/")
        + "persist_secs = 0\n";
    let p = tmp.join("bench.toml");
    std::fs::write(&p, text).expect("write config");
    p
}

fn frame(app: &App) -> String {
    let mut t = Terminal::new(TestBackend::new(160, 48)).expect("terminal");
    t.draw(|f| slurmdash::ui::draw(f, app)).expect("draw");
    let b = t.backend().buffer().clone();
    b.content().iter().map(|c| c.symbol()).collect()
}

fn requests(cmds: Vec<Cmd>) -> Vec<history::Request> {
    cmds.into_iter()
        .filter_map(|c| match c {
            Cmd::History(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// Runs the reads `cmds` asks for, feeding each page to the app; returns (time until the
/// first page is drawn, time until the last, pages, jobs in them).
async fn read(
    app: &mut App,
    remote: &dyn slurmdash::remote::Remote,
    cmds: Vec<Cmd>,
    start: Instant,
) -> (Duration, Duration, usize, usize) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut first = None;
    let mut pages = 0;
    let mut jobs = 0;
    for req in requests(cmds) {
        let generation = req.generation;
        let send = |p| {
            let _ = tx.send(p);
        };
        let run = history::run(remote, &req, Duration::from_secs(120), &send);
        let drain = async {
            // Pages are applied as they come, as the dashboard does.
            while let Some(p) = rx.recv().await {
                let last = {
                    let p: &history::Page = &p;
                    p.last
                };
                pages += 1;
                jobs += p.jobs.len();
                app.update(Msg::Job(JobMsg::History {
                    generation,
                    result: Box::new(Ok(p)),
                }));
                let _ = frame(app);
                first.get_or_insert(start.elapsed());
                if last {
                    break;
                }
            }
        };
        let (r, ()) = tokio::join!(run, drain);
        r.expect("history read");
    }
    (first.unwrap_or_default(), start.elapsed(), pages, jobs)
}

#[tokio::main]
async fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = config(tmp.path());
    let runtime = tmp.path().join("run");
    std::fs::create_dir_all(&runtime).expect("runtime dir");
    std::fs::set_permissions(
        &runtime,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .expect("chmod");
    // Set before any other thread runs: a master of its own, a new SSH connection.
    std::env::set_var("XDG_RUNTIME_DIR", &runtime);
    let loaded = Loaded::load(Some(&cfg)).expect("config");
    let cluster = loaded
        .clusters(None, &Env::default())
        .expect("cluster")
        .remove(0);

    let start = Instant::now();
    let remote = slurmdash::io::connect::connect(&cluster).expect("connect");
    let mut app = App::fixture(chrono::Local::now().naive_local());
    app.size = (160, 48);
    let cmds = app.run_command("history 30");
    let (first, all, pages, jobs) = read(&mut app, remote.as_ref(), cmds, start).await;
    let rows = app.queue.shown().total();
    let screen = frame(&app);
    let effbench = app
        .queue
        .shown()
        .jobs()
        .iter()
        .filter(|j| j.name == "effbench")
        .count();
    println!("30-day history of sdother: {rows} finished jobs ({effbench} of them the bench's array tasks), {pages} pages, {jobs} job records read");
    println!(
        "  rows on screen (new SSH connection + newest week's list): {:.2} s",
        first.as_secs_f64()
    );
    println!(
        "  use figures filled in (every window, with steps):         {:.2} s",
        all.as_secs_f64()
    );
    assert!(
        screen.contains("history, 30 days"),
        "sanity: the view is drawn"
    );

    // Incremental: back to the queue and :history again.
    app.update(Msg::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Esc,
        crossterm::event::KeyModifiers::NONE,
    )));
    let t = Instant::now();
    let cmds = app.run_command("history");
    let (_, inc, pages, jobs) = read(&mut app, remote.as_ref(), cmds, t).await;
    println!("  incremental read (what ended since the newest end, over the open connection): {:.3} s, {pages} pages, {jobs} records", inc.as_secs_f64());

    // The same 30 days as `slurmdash history --days 30` reads them (steps at once).
    let t = Instant::now();
    let mut n = 0;
    for (s, e) in slurmdash::slurm::eff::windows(0, 30, 7) {
        n += history::ended(remote.as_ref(), s, e, true, Duration::from_secs(120))
            .await
            .expect("sacct")
            .items
            .len();
    }
    println!(
        "  slurmdash history --days 30's reads over the open connection: {:.2} s ({n} jobs)",
        t.elapsed().as_secs_f64()
    );
    remote.close().await;
}
