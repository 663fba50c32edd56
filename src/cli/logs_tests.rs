use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::remote::fake::FakeRemote;
use crate::remote::{ConnState, FileChunk, RemoteStats, RunOutput};

const P: &str = "/home/u/slurm-7.out";

/// The fake's file, whose reads past `at` return no bytes `stalls` times while its length
/// says there are more (a network file system whose size runs ahead of its data); every
/// read counted. After 1,000 reads it fails, so that a loop without a wait ends.
struct Lagging {
    fake: FakeRemote,
    at: u64,
    stalls: u32,
    reads: AtomicU32,
}

impl Lagging {
    fn new(content: &str, at: u64, stalls: u32) -> Arc<Lagging> {
        let fake = FakeRemote::default();
        fake.set_file(P, content);
        Arc::new(Lagging {
            fake,
            at,
            stalls,
            reads: AtomicU32::new(0),
        })
    }
}

#[async_trait::async_trait]
impl Remote for Lagging {
    async fn run(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<RunOutput, RemoteError> {
        self.fake.run(argv, stdin, timeout).await
    }
    async fn read_file(
        &self,
        path: &str,
        pos: ReadPos,
        max_bytes: u64,
    ) -> Result<FileChunk, RemoteError> {
        let n = self.reads.fetch_add(1, Ordering::SeqCst) + 1;
        if n > 1000 {
            return Err(RemoteError::Other {
                command: "read_file".into(),
                host: "fake-login".into(),
                reason: "read again and again without a wait".into(),
            });
        }
        let chunk = self.fake.read_file(path, pos, max_bytes).await?;
        if chunk.offset >= self.at && chunk.offset < chunk.size && n <= self.stalls {
            return Ok(FileChunk {
                data: Vec::new(),
                ..chunk
            });
        }
        Ok(chunk)
    }
    fn host(&self) -> Option<String> {
        self.fake.host()
    }
    fn state(&self) -> ConnState {
        self.fake.state()
    }
    fn stats(&self) -> RemoteStats {
        self.fake.stats()
    }
}

fn loc() -> LogLocation {
    LogLocation {
        path: P.into(),
        note: None,
        state: Some(JobState::Completed),
    }
}

/// `print_file` over `remote`, for a job that ended; what it printed.
async fn print(remote: &Lagging, follow: bool) -> (Result<()>, String) {
    let mut out = Vec::new();
    let r = print_file(remote, &loc(), follow, true, None, &mut out, || async {
        true
    })
    .await;
    (r, String::from_utf8_lossy(&out).into_owned())
}

/// A read that returns nothing while the file is longer is tried again after a wait that
/// grows, not at once: the whole file is printed, with one read per stall.
#[tokio::test(start_paused = true)]
async fn an_empty_read_of_a_longer_file_waits_before_reading_again() {
    let remote = Lagging::new("one\ntwo\n", 0, 3);
    let start = tokio::time::Instant::now();
    let (r, out) = print(&remote, false).await;
    r.unwrap();
    assert_eq!(out, "one\ntwo\n");
    assert_eq!(
        remote.reads.load(Ordering::SeqCst),
        4,
        "3 empty reads, then the file"
    );
    // Paused time: the waits the loop asked for, not the machine's speed.
    assert!(
        start.elapsed() >= Duration::from_millis(100 + 200 + 400),
        "waited {:?}",
        start.elapsed()
    );
}

/// A file whose data never comes: `logs` prints what it read, says so and stops, after a
/// bounded number of reads.
#[tokio::test(start_paused = true)]
async fn a_file_that_stays_unreadable_is_given_up_after_a_few_waits() {
    let remote = Lagging::new("one\ntwo\n", 0, u32::MAX);
    let (r, out) = print(&remote, false).await;
    r.unwrap();
    assert_eq!(out, "");
    let reads = remote.reads.load(Ordering::SeqCst);
    assert!((2..=20).contains(&reads), "{reads} reads");
}

/// Following: once caught up, one read a second, and the job's state asked every five
/// seconds; when it has ended, one last read and done.
#[tokio::test(start_paused = true)]
async fn following_reads_each_second_until_the_job_ended() {
    let remote = Lagging::new("one\n", 0, 0);
    let asked = AtomicU32::new(0);
    let start = tokio::time::Instant::now();
    let mut out = Vec::new();
    print_file(
        remote.as_ref(),
        &loc(),
        true,
        false,
        None,
        &mut out,
        || async {
            asked.fetch_add(1, Ordering::SeqCst);
            true
        },
    )
    .await
    .unwrap();
    assert_eq!(out, b"one\n");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(
        remote.reads.load(Ordering::SeqCst),
        6,
        "5 a second, then the last"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(5));
}
