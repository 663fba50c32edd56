//! Follows one log file: a tail read first, then the file streams over one long-lived
//! command (`tail -F` on the existing SSH master, see `remote::stream`), so a new line shows
//! as soon as it is written and no command runs per line or per second. When the stream
//! breaks, or the file is truncated or replaced, the tailer reads from its offset (or the
//! tail again) and streams anew; a transport that cannot stream is read from offsets every
//! `every`. A missing file is polled more slowly; transport errors back off. The App stops
//! it by aborting the JoinHandle (which also ends the remote tail).
//!
//! What is sent and not yet taken in by the pane is bounded ([`IN_FLIGHT`]): each Data event
//! holds a share of the tailer's budget until it is dropped. When the budget is used up (the
//! screen cannot keep up, or a shell opened from the dashboard holds the loop), the stream is
//! dropped and nothing is read until the pane has caught up; then the tailer reads on from its
//! offset, or, further behind than [`MAX_CHUNK`], skips to the file's tail and says how many
//! bytes it left out ([`TailKind::Skipped`]).

use crate::action::JobMsg;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::logview::{Credit, Stream, TailEvent, TailKind};
use crate::remote::{FileChunk, FileStream, ReadPos, Remote, RemoteError, StreamEvent};
use crate::slurm::model::JobId;

/// Bytes read when opening a file: a few thousand lines, whatever the file's size.
pub const TAIL_BYTES: u64 = 256 << 10;
/// Most bytes read per tick. Further behind than this, the tailer skips to the end.
pub const MAX_CHUNK: u64 = 1 << 20;
/// Most bytes of one followed log sent and not yet taken in by its pane.
pub const IN_FLIGHT: usize = 4 << 20;
/// Stream reads already queued are sent together up to about this size: one message (and one
/// frame drawn) per batch instead of per pipe read.
const BATCH: usize = 1 << 20;
/// A missing file is checked every `every * MISSING_SLOWDOWN`.
const MISSING_SLOWDOWN: u32 = 3;
/// Transport errors double the delay up to `every * MAX_BACKOFF`.
const MAX_BACKOFF: u32 = 8;
/// A stream that lived this long was healthy. After two in a row that did not, the next
/// waits `every`, then twice as long, and so on up to `every * MAX_BACKOFF`.
const STREAM_STEADY: Duration = Duration::from_secs(5);

impl From<TailEvent> for crate::action::Msg {
    fn from(ev: TailEvent) -> Self {
        crate::action::Msg::Job(JobMsg::Tail(ev))
    }
}

/// Starts following `path`. Events go to `tx` (a `TailEvent` or the App's `Msg`).
pub fn spawn_tailer<T>(
    remote: Arc<dyn Remote>,
    job: JobId,
    stream: Stream,
    path: String,
    every: Duration,
    tx: UnboundedSender<T>,
) -> JoinHandle<()>
where
    T: From<TailEvent> + Send + 'static,
{
    tokio::spawn(async move {
        let out = Outbox {
            tx,
            job,
            stream,
            path: path.clone(),
            budget: Arc::new(Semaphore::new(IN_FLIGHT)),
        };
        let mut st = TailState::default();
        let mut can_stream = true;
        // Streams in a row that broke early.
        let mut breaks: u32 = 0;
        loop {
            out.drained().await;
            let (kinds, slowdown) = step(remote.as_ref(), &path, &mut st).await;
            for kind in kinds {
                if !out.send(kind).await {
                    return;
                }
            }
            let readable = slowdown == 1 && st.problem.is_none();
            if let (true, true, Some(offset)) = (can_stream, readable, st.next) {
                match remote.stream_file(&path, offset).await {
                    Ok(Some(s)) => {
                        let t0 = Instant::now();
                        match follow(s, &mut st, &out).await {
                            Followed::Closed => return,
                            Followed::Behind => {
                                tracing::debug!(%path, at = ?st.next, "log tail: the pane is behind, stream dropped");
                                // The stream was dropped (its remote tail ends with it). The
                                // next read waits for the pane to catch up, and comes at most
                                // once per `every`: a log that outruns the screen costs the
                                // login node two commands per `every`, no more.
                                breaks = 0;
                                tokio::time::sleep_until((t0 + every).into()).await;
                                continue;
                            }
                            Followed::Ended => {
                                tracing::debug!(%path, at = ?st.next, lived = ?t0.elapsed(), "log tail: the stream ended");
                            }
                        }
                        breaks = if t0.elapsed() >= STREAM_STEADY {
                            0
                        } else {
                            breaks.saturating_add(1)
                        };
                        if breaks <= 1 {
                            // Catch up from the offset (or the tail) at once, then stream
                            // again; only streams that keep breaking early wait.
                            continue;
                        }
                        let shift = (breaks - 2).min(3);
                        tokio::time::sleep(every * (1u32 << shift).min(MAX_BACKOFF)).await;
                        continue;
                    }
                    Ok(None) => can_stream = false,
                    // A transport error: read from the offset after the usual wait.
                    Err(_) => {}
                }
            }
            tokio::time::sleep(every * slowdown).await;
        }
    })
}

/// One tailer's way to the App: every event is labelled with the job, stream and path, and
/// Data holds its bytes' share of `budget` until the event is dropped.
struct Outbox<T> {
    tx: UnboundedSender<T>,
    job: JobId,
    stream: Stream,
    path: String,
    budget: Arc<Semaphore>,
}

enum Sent {
    Done,
    /// No room for the bytes now: nothing was sent.
    Full,
    /// Nobody listens any more.
    Closed,
}

/// Permits for `kind`: its bytes, at most the whole budget.
fn permits(kind: &TailKind) -> u32 {
    match kind {
        TailKind::Data { bytes, .. } => u32::try_from(bytes.len().min(IN_FLIGHT)).unwrap_or(0),
        _ => 0,
    }
}

impl<T: From<TailEvent>> Outbox<T> {
    fn deliver(&self, kind: TailKind, credit: Credit) -> bool {
        let ev = TailEvent {
            job: self.job.clone(),
            stream: self.stream,
            path: self.path.clone(),
            kind,
            credit,
        };
        self.tx.send(T::from(ev)).is_ok()
    }

    /// Sends `kind`, first waiting for room for its bytes. False when nobody listens.
    async fn send(&self, kind: TailKind) -> bool {
        let credit = match permits(&kind) {
            0 => Credit::default(),
            n => match self.budget.clone().acquire_many_owned(n).await {
                Ok(p) => Credit::new(p),
                Err(_) => return false,
            },
        };
        self.deliver(kind, credit)
    }

    /// Sends `kind` if there is room for its bytes now.
    fn try_send(&self, kind: TailKind) -> Sent {
        let credit = match permits(&kind) {
            0 => Credit::default(),
            n => match self.budget.clone().try_acquire_many_owned(n) {
                Ok(p) => Credit::new(p),
                Err(_) => return Sent::Full,
            },
        };
        if self.deliver(kind, credit) {
            Sent::Done
        } else {
            Sent::Closed
        }
    }

    /// Returns once the pane has taken in everything sent.
    async fn drained(&self) {
        let all = u32::try_from(IN_FLIGHT).unwrap_or(u32::MAX);
        let _ = self.budget.acquire_many(all).await;
    }
}

enum Followed {
    /// The stream ended by itself (the connection dropped, the file was truncated...).
    Ended,
    /// The budget was used up: the stream is dropped, the offset is where the pane's bytes end.
    Behind,
    /// Nobody listens any more.
    Closed,
}

/// Forwards a stream's bytes as Data until it ends or the budget is used up.
async fn follow<T: From<TailEvent>>(
    mut s: FileStream,
    st: &mut TailState,
    out: &Outbox<T>,
) -> Followed {
    while let Some(ev) = s.rx.recv().await {
        let (mut bytes, mut end) = match ev {
            StreamEvent::Data(b) => (b, None),
            ended => (Vec::new(), Some(ended)),
        };
        while end.is_none() && bytes.len() < BATCH {
            match s.rx.try_recv() {
                Ok(StreamEvent::Data(more)) => bytes.extend_from_slice(&more),
                Ok(ended) => end = Some(ended),
                Err(_) => break,
            }
        }
        if !bytes.is_empty() {
            let next = st.next.unwrap_or(0) + bytes.len() as u64;
            match out.try_send(TailKind::Data { bytes, size: next }) {
                Sent::Done => st.next = Some(next),
                Sent::Full => return Followed::Behind,
                Sent::Closed => return Followed::Closed,
            }
        }
        if let Some(StreamEvent::Ended { reset, .. }) = end {
            if reset {
                st.next = None;
            }
            return Followed::Ended;
        }
    }
    Followed::Ended
}

#[derive(Debug, Default)]
struct TailState {
    /// Offset of the next unread byte; `None`: start with a tail read.
    next: Option<u64>,
    /// The failure last reported, so that a repeated one is not sent again.
    problem: Option<TailKind>,
    failures: u32,
    /// Where the pane's bytes end when the tailer fell too far behind: the next tail read
    /// says how much it skipped from here.
    skip_from: Option<u64>,
}

/// One tick: the events to send and the multiple of `every` to wait before the next.
async fn step(remote: &dyn Remote, path: &str, st: &mut TailState) -> (Vec<TailKind>, u32) {
    let mut out = Vec::new();
    // A truncated file or a skip ahead costs one more read (a tail read), never more.
    for _ in 0..2 {
        let pos = st
            .next
            .map_or(ReadPos::Tail(TAIL_BYTES + 1), ReadPos::Offset);
        let chunk = match remote.read_file(path, pos, MAX_CHUNK).await {
            Ok(c) => c,
            Err(e) => return failed(e, st),
        };
        st.failures = 0;
        let recovered = st.problem.take().is_some();
        match st.next {
            Some(_) if chunk.truncated() => {
                st.next = None;
                st.skip_from = None;
                continue;
            }
            Some(off) if chunk.size - off > MAX_CHUNK => {
                st.next = None;
                st.skip_from = Some(off);
                continue;
            }
            Some(_) => {
                st.next = Some(chunk.next_offset());
                if !chunk.data.is_empty() || recovered {
                    out.push(TailKind::Data {
                        bytes: chunk.data,
                        size: chunk.size,
                    });
                }
            }
            None => {
                st.next = Some(chunk.next_offset());
                out.extend(from_tail(chunk, st.skip_from.take()));
            }
        }
        break;
    }
    (out, 1)
}

/// A tail read: Reset (or Skipped, when the pane's bytes end at `skipped_from`), then the
/// data from the first complete line (one byte more than `TAIL_BYTES` was read so that a tail
/// starting exactly at a line start keeps that line).
fn from_tail(chunk: FileChunk, skipped_from: Option<u64>) -> Vec<TailKind> {
    let skip = if chunk.offset == 0 {
        0
    } else {
        chunk
            .data
            .iter()
            .position(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
    };
    let start = chunk.offset + skip as u64;
    let first = match skipped_from {
        Some(from) if from <= start => {
            tracing::debug!(from, to = start, "log tail: skipped ahead");
            TailKind::Skipped {
                bytes: start - from,
                size: chunk.size,
            }
        }
        _ => TailKind::Reset {
            offset: start,
            size: chunk.size,
        },
    };
    let mut out = vec![first];
    if skip < chunk.data.len() {
        let mut data = chunk.data;
        data.drain(..skip);
        out.push(TailKind::Data {
            bytes: data,
            size: chunk.size,
        });
    }
    out
}

fn failed(e: RemoteError, st: &mut TailState) -> (Vec<TailKind>, u32) {
    st.failures = st.failures.saturating_add(1);
    let (kind, slowdown) = match &e {
        RemoteError::NotFound { .. } => (TailKind::Missing, MISSING_SLOWDOWN),
        RemoteError::PermissionDenied { .. } => (TailKind::Denied(e.to_string()), MAX_BACKOFF),
        RemoteError::NotRegularFile { .. } => (TailKind::NotRegular(e.to_string()), MAX_BACKOFF),
        _ => {
            let shift = st.failures.saturating_sub(1).min(3);
            (
                TailKind::Error(e.to_string()),
                (1u32 << shift).min(MAX_BACKOFF),
            )
        }
    };
    if !matches!(kind, TailKind::Error(_)) {
        // The file may come back as another file: start again from its tail.
        st.next = None;
        st.skip_from = None;
    }
    let out = if st.problem.as_ref() == Some(&kind) {
        Vec::new()
    } else {
        vec![kind.clone()]
    };
    st.problem = Some(kind);
    (out, slowdown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::FakeRemote;
    use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

    const P: &str = "/scratch/slurm-7.out";
    // Real time, except where a test says it runs on tokio's paused clock: on real time,
    // assertions only bound counts from above.
    const EVERY: Duration = Duration::from_millis(10);

    fn start<R: Remote + 'static>(
        remote: &Arc<R>,
    ) -> (JoinHandle<()>, UnboundedReceiver<TailEvent>) {
        let (tx, rx) = unbounded_channel::<TailEvent>();
        let remote: Arc<dyn Remote> = remote.clone();
        let h = spawn_tailer(remote, JobId::new(7), Stream::Stdout, P.into(), EVERY, tx);
        (h, rx)
    }

    async fn next(rx: &mut UnboundedReceiver<TailEvent>) -> TailKind {
        let ev = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("event in time")
            .expect("event");
        assert_eq!(
            (ev.job, ev.stream, ev.path.as_str()),
            (JobId::new(7), Stream::Stdout, P)
        );
        ev.kind
    }

    fn data(s: &str, size: usize) -> TailKind {
        TailKind::Data {
            bytes: s.as_bytes().to_vec(),
            size: size as u64,
        }
    }

    #[tokio::test]
    async fn opens_at_the_tail_then_reads_only_new_bytes() {
        let fake = Arc::new(FakeRemote::default());
        let mut content: String = (0..40_000).map(|i| format!("line {i:05}\n")).collect();
        content.push_str("partial");
        fake.set_file(P, content.clone());
        let (h, mut rx) = start(&fake);
        let size = content.len() as u64;
        let TailKind::Reset { offset, size: s } = next(&mut rx).await else {
            panic!("reset first")
        };
        assert_eq!(s, size);
        assert!(size - offset <= TAIL_BYTES, "read only the tail");
        let TailKind::Data { bytes, .. } = next(&mut rx).await else {
            panic!("data")
        };
        let text = String::from_utf8(bytes).expect("utf8");
        assert!(
            text.starts_with("line "),
            "first partial line dropped: {:?}",
            &text[..20]
        );
        assert!(text.ends_with("line 39999\npartial"));
        assert_eq!(offset + text.len() as u64, size);

        content.push_str(" done\nline 40000\n");
        fake.set_file(P, content.clone());
        assert_eq!(
            next(&mut rx).await,
            data(" done\nline 40000\n", content.len())
        );
        let reads = fake.reads();
        assert_eq!(
            reads[0],
            (P.to_string(), ReadPos::Tail(TAIL_BYTES + 1), MAX_CHUNK)
        );
        assert!(
            reads[1..].iter().all(|r| r.1 == ReadPos::Offset(size)),
            "{reads:?}"
        );
        // Quiet ticks read from the end and send nothing (waited for with a deadline: the
        // machine may be busy).
        let end = Instant::now() + Duration::from_secs(10);
        while fake.reads().last().map(|r| r.1) != Some(ReadPos::Offset(content.len() as u64)) {
            assert!(Instant::now() < end, "no read from the new end");
            tokio::time::sleep(EVERY).await;
        }
        tokio::time::sleep(EVERY * 3).await;
        assert!(rx.try_recv().is_err());
        h.abort();
        let _ = h.await;
        let n = fake.reads().len();
        tokio::time::sleep(EVERY * 5).await;
        assert_eq!(fake.reads().len(), n, "aborted tailer stops reading");
    }

    #[tokio::test]
    async fn truncated_file_is_read_again_from_its_end() {
        let fake = Arc::new(FakeRemote::default());
        fake.set_file(P, "first run\nmore\n");
        let (_h, mut rx) = start(&fake);
        assert_eq!(
            next(&mut rx).await,
            TailKind::Reset {
                offset: 0,
                size: 15
            }
        );
        assert_eq!(next(&mut rx).await, data("first run\nmore\n", 15));
        fake.set_file(P, "rerun\n");
        assert_eq!(next(&mut rx).await, TailKind::Reset { offset: 0, size: 6 });
        assert_eq!(next(&mut rx).await, data("rerun\n", 6));
    }

    // On tokio's paused clock: time moves only when every task waits, straight to the next
    // timer, so the reads counted below are decided by the tailer's own waits, however busy
    // the machine is.
    #[tokio::test(start_paused = true)]
    async fn missing_file_is_polled_slowly_until_it_appears() {
        let fake = Arc::new(FakeRemote::default());
        let (_h, mut rx) = start(&fake);
        assert_eq!(next(&mut rx).await, TailKind::Missing);
        // Half a tick past the twelfth: no read is due at the moment the count is taken.
        tokio::time::sleep(EVERY * 12 + EVERY / 2).await;
        let polls = fake.reads().len();
        // The first read, then one every 3 ticks (MISSING_SLOWDOWN), not every tick.
        assert_eq!(polls, 5, "{polls} reads in 12 ticks");
        assert!(rx.try_recv().is_err(), "Missing is reported once");
        fake.set_file(P, "started\n");
        assert_eq!(next(&mut rx).await, TailKind::Reset { offset: 0, size: 8 });
        assert_eq!(next(&mut rx).await, data("started\n", 8));
    }

    #[tokio::test(start_paused = true)]
    async fn transport_error_is_reported_once_and_retried() {
        let fake = Arc::new(FakeRemote::default());
        fake.set_file(P, "a\n");
        let (_h, mut rx) = start(&fake);
        next(&mut rx).await;
        next(&mut rx).await;
        let err = RemoteError::Disconnected {
            command: "read".into(),
            host: "login1".into(),
            reason: "broken pipe".into(),
        };
        fake.set_file_error(P, err.clone());
        assert_eq!(next(&mut rx).await, TailKind::Error(err.to_string()));
        let before = fake.reads().len();
        tokio::time::sleep(EVERY * 20).await;
        let retries = fake.reads().len() - before;
        // The first failure was one tick after the last good read; the retries wait 1, 2, 4
        // and 8 ticks (doubling up to MAX_BACKOFF): 4 in the 20 ticks after it, where a tailer
        // that did not back off would have read 20 times.
        assert_eq!(
            retries, 4,
            "backs off, never spins: {retries} retries in 20 ticks"
        );
        assert!(rx.try_recv().is_err());
        fake.set_file(P, "a\nb\n");
        // Recovery is reported even before new bytes, then reading resumes at the offset.
        assert_eq!(next(&mut rx).await, data("b\n", 4));
        assert_eq!(fake.reads().last().map(|r| r.1), Some(ReadPos::Offset(2)));
    }

    #[tokio::test]
    async fn denied_and_not_regular_carry_the_message() {
        let fake = Arc::new(FakeRemote::default());
        let e = RemoteError::PermissionDenied {
            path: P.into(),
            host: "login1".into(),
        };
        fake.set_file_error(P, e.clone());
        let (_h, mut rx) = start(&fake);
        assert_eq!(next(&mut rx).await, TailKind::Denied(e.to_string()));
        let e = RemoteError::NotRegularFile {
            path: P.into(),
            host: "login1".into(),
        };
        fake.set_file_error(P, e.clone());
        assert_eq!(next(&mut rx).await, TailKind::NotRegular(e.to_string()));
    }

    #[tokio::test]
    async fn far_behind_skips_to_the_end() {
        let fake = Arc::new(FakeRemote::default());
        fake.set_file(P, "start\n");
        let (_h, mut rx) = start(&fake);
        next(&mut rx).await;
        next(&mut rx).await;
        let mut big = b"start\n".to_vec();
        for i in 0..300_000 {
            big.extend_from_slice(format!("burst {i}\n").as_bytes());
        }
        let size = big.len() as u64;
        assert!(size > 3 * MAX_CHUNK);
        fake.set_file(P, big);
        let TailKind::Skipped { bytes: skipped, .. } = next(&mut rx).await else {
            panic!("skip ahead, saying so")
        };
        let TailKind::Data { bytes, .. } = next(&mut rx).await else {
            panic!("data")
        };
        assert!(bytes.ends_with(b"burst 299999\n"));
        assert!(bytes.starts_with(b"burst "), "from a line start");
        assert!(bytes.len() as u64 <= TAIL_BYTES);
        assert_eq!(
            6 + skipped + bytes.len() as u64,
            size,
            "every byte shown or counted"
        );
    }

    /// The fake's files, plus streams the test drives by hand (one sender per stream opened).
    struct Streaming {
        fake: Arc<FakeRemote>,
        opened: std::sync::Mutex<Vec<(u64, tokio::sync::mpsc::Sender<StreamEvent>)>>,
    }

    #[async_trait::async_trait]
    impl Remote for Streaming {
        async fn run(
            &self,
            argv: &[String],
            stdin: Option<&[u8]>,
            timeout: Duration,
        ) -> Result<crate::remote::RunOutput, RemoteError> {
            self.fake.run(argv, stdin, timeout).await
        }
        async fn read_file(
            &self,
            path: &str,
            pos: ReadPos,
            max_bytes: u64,
        ) -> Result<FileChunk, RemoteError> {
            self.fake.read_file(path, pos, max_bytes).await
        }
        async fn stream_file(
            &self,
            _path: &str,
            offset: u64,
        ) -> Result<Option<FileStream>, RemoteError> {
            let (tx, rx) = tokio::sync::mpsc::channel(4);
            self.opened.lock().unwrap().push((offset, tx));
            Ok(Some(FileStream::new(rx, tokio::spawn(async {}))))
        }
        fn host(&self) -> Option<String> {
            self.fake.host()
        }
        fn state(&self) -> crate::remote::ConnState {
            self.fake.state()
        }
        fn stats(&self) -> crate::remote::RemoteStats {
            self.fake.stats()
        }
    }

    impl Streaming {
        /// A fake whose file `P` holds `content`, and the streaming remote over it.
        fn over(content: &str) -> (Arc<FakeRemote>, Arc<Streaming>) {
            let fake = Arc::new(FakeRemote::default());
            fake.set_file(P, content);
            let r = Arc::new(Streaming {
                fake: fake.clone(),
                opened: Default::default(),
            });
            (fake, r)
        }

        async fn stream(&self, n: usize) -> (u64, tokio::sync::mpsc::Sender<StreamEvent>) {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Some(s) = self.opened.lock().unwrap().get(n).cloned() {
                    return s;
                }
                assert!(Instant::now() < deadline, "stream {n} never opened");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }

    #[tokio::test]
    async fn streams_after_the_tail_read_with_no_read_per_line() {
        let (fake, r) = Streaming::over("one\n");
        let (_h, mut rx) = start(&r);
        assert_eq!(next(&mut rx).await, TailKind::Reset { offset: 0, size: 4 });
        assert_eq!(next(&mut rx).await, data("one\n", 4));
        let (offset, s) = r.stream(0).await;
        assert_eq!(offset, 4, "streams from where the tail read ended");
        for i in 0..20 {
            s.send(StreamEvent::Data(format!("line {i}\n").into_bytes()))
                .await
                .unwrap();
        }
        // Reads already queued may come as one event: each ends where the bytes so far end.
        let want: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let mut got = Vec::new();
        while got.len() < want.len() {
            let TailKind::Data { bytes, size } = next(&mut rx).await else {
                panic!("data")
            };
            got.extend_from_slice(&bytes);
            assert_eq!(size, 4 + got.len() as u64);
        }
        assert_eq!(
            String::from_utf8(got).unwrap(),
            want,
            "every line once, in order"
        );
        tokio::time::sleep(EVERY * 10).await;
        assert_eq!(
            fake.reads().len(),
            1,
            "one read (the tail), then only the stream"
        );
        assert_eq!(r.opened.lock().unwrap().len(), 1, "one stream");
    }

    /// The pane takes nothing in (a shell is open): the tailer sends at most `IN_FLIGHT`,
    /// stops reading the stream and the file, and once the pane catches up it skips to the
    /// file's tail, saying how much it left out, and streams again from the end.
    #[tokio::test]
    async fn a_pane_that_takes_nothing_in_holds_at_most_the_budget_then_skips() {
        let (fake, r) = Streaming::over("one\n");
        let (_h, mut rx) = start(&r);
        next(&mut rx).await;
        next(&mut rx).await;
        let (_, s) = r.stream(0).await;
        let chunk = vec![b'x'; 64 << 10];
        let mut sent = 0usize;
        let deadline = Instant::now() + Duration::from_secs(20);
        // The stream is fed until the tailer drops it (its channel closes).
        while s.send(StreamEvent::Data(chunk.clone())).await.is_ok() {
            sent += chunk.len();
            assert!(
                Instant::now() < deadline,
                "still reading after {sent} bytes"
            );
        }
        let reads = fake.reads().len();
        tokio::time::sleep(EVERY * 20).await;
        assert_eq!(
            fake.reads().len(),
            reads,
            "no read while the pane is behind"
        );
        assert_eq!(r.opened.lock().unwrap().len(), 1, "no new stream either");
        let mut held = 0usize;
        while let Ok(ev) = rx.try_recv() {
            match ev.kind {
                TailKind::Data { bytes, .. } => held += bytes.len(),
                other => panic!("{other:?}"),
            }
        }
        assert!(held <= IN_FLIGHT, "{held} bytes waited for the pane");
        assert!(held + (1 << 20) >= IN_FLIGHT, "the budget was used: {held}");
        assert!(sent > held, "the stream was read past the budget: {sent}");

        // Meanwhile the job wrote much more; the pane has caught up now.
        let shown = 4 + held as u64;
        let mut file = b"one\n".to_vec();
        file.resize(shown as usize, b'x');
        for i in 0..500_000 {
            file.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        let size = file.len() as u64;
        fake.set_file(P, file);
        let TailKind::Skipped { bytes: skipped, .. } = next(&mut rx).await else {
            panic!("a skip")
        };
        let TailKind::Data { bytes, .. } = next(&mut rx).await else {
            panic!("the tail")
        };
        assert!(bytes.ends_with(b"line 499999\n"));
        assert_eq!(shown + skipped + bytes.len() as u64, size);
        assert_eq!(r.stream(1).await.0, size, "streams again from the end");
    }

    #[tokio::test]
    async fn a_broken_stream_falls_back_to_a_read_from_the_offset_and_streams_again() {
        let (fake, r) = Streaming::over("one\n");
        let (_h, mut rx) = start(&r);
        next(&mut rx).await;
        next(&mut rx).await;
        let (_, s) = r.stream(0).await;
        // Written while the connection dropped: the stream ends without these bytes.
        fake.set_file(P, "one\ntwo\n");
        s.send(StreamEvent::Ended {
            reset: false,
            reason: "connection closed".into(),
        })
        .await
        .unwrap();
        assert_eq!(next(&mut rx).await, data("two\n", 8), "caught up by a read");
        assert_eq!(fake.reads()[1].1, ReadPos::Offset(4));
        let (offset, s2) = r.stream(1).await;
        assert_eq!(offset, 8, "then streams again from the new offset");
        // The file is replaced: tail says so; the tailer starts again from the new file's tail.
        fake.set_file(P, "new\n");
        s2.send(StreamEvent::Ended {
            reset: true,
            reason: "tail: 'slurm-7.out' has been replaced; following new file".into(),
        })
        .await
        .unwrap();
        assert_eq!(next(&mut rx).await, TailKind::Reset { offset: 0, size: 4 });
        assert_eq!(next(&mut rx).await, data("new\n", 4));
        assert_eq!(r.stream(2).await.0, 4);
    }
}
