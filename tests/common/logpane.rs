//! A log pane fed by the real tailer: its lines, and applying the tailer's events until the
//! pane shows what a test waits for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::task::JoinHandle;

use slurmdash::logview::{LogPane, Stream, TailEvent, TailKind};
use slurmdash::remote::Remote;
use slurmdash::slurm::model::JobId;
use slurmdash::worker::tailer::spawn_tailer;

/// A stdout pane on `path` and the real tailer following it for job `job`, reading every
/// `every`: the pane, the tailer's events and its task.
pub fn tail(
    r: &Arc<dyn Remote>,
    job: u64,
    path: &str,
    every: Duration,
) -> (LogPane, UnboundedReceiver<TailEvent>, JoinHandle<()>) {
    let mut pane = LogPane::new(Stream::Stdout);
    pane.set_path(path);
    let (tx, rx) = unbounded_channel::<TailEvent>();
    let h = spawn_tailer(
        r.clone(),
        JobId::new(job),
        Stream::Stdout,
        path.to_string(),
        every,
        tx,
    );
    (pane, rx, h)
}

/// The pane's lines, oldest first.
pub fn texts(p: &LogPane) -> Vec<String> {
    let b = p.buffer();
    (b.first_seq()..b.end_seq())
        .filter_map(|s| b.get(s).map(|l| l.text().to_string()))
        .collect()
}

/// Applies events until `done` holds for the pane (panics after `limit`); returns the events
/// seen.
pub async fn until(
    rx: &mut UnboundedReceiver<TailEvent>,
    pane: &mut LogPane,
    limit: Duration,
    done: impl Fn(&LogPane) -> bool,
) -> Vec<TailKind> {
    let mut seen = Vec::new();
    let end = Instant::now() + limit;
    while !done(pane) {
        let left = end.saturating_duration_since(Instant::now());
        let ev = tokio::time::timeout(left, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out; pane shows {:?}", texts(pane)))
            .expect("tailer alive");
        seen.push(ev.kind.clone());
        pane.apply(ev);
    }
    seen
}
