//! The command log's recording: a [`Remote`] that runs each command through the cluster's
//! own and sends App one [`Msg::Ran`] when it finished (when it opened, for a stream). Each
//! of the hub's tasks gets one, labelled with why its command runs. A record leaves here
//! with its secrets taken out (`CommandRecord::new`); what went on stdin is only counted.
//!
//! The grain: one message per command, never per chunk of output. A followed log streams over
//! one long-lived command (one record when it opens); the reads from an offset (every few
//! seconds where a log cannot stream, after a stream broke) each send one, and App folds
//! those of the same log into one entry with a count (`app/cmdlog.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use crate::action::Msg;
use crate::payload::{CommandRecord, ConnState, Ran, RemoteStats, Why};
use crate::remote::{
    read_file_argv, ExecStream, FileChunk, FileStream, ReadPos, Remote, RemoteError, RunOutput,
};

fn now() -> chrono::NaiveDateTime {
    chrono::Local::now().naive_local()
}

/// `inner`, recording every command it runs for `why` into `tx`.
pub struct Recording {
    inner: Arc<dyn Remote>,
    why: Why,
    tx: UnboundedSender<Msg>,
}

impl Recording {
    pub fn wrap(inner: Arc<dyn Remote>, why: Why, tx: UnboundedSender<Msg>) -> Arc<dyn Remote> {
        Arc::new(Recording { inner, why, tx })
    }

    fn send(&self, r: CommandRecord) {
        let _ = self.tx.send(Msg::Ran(Box::new(r)));
    }

    /// Sends the record of a stream that opened (`Ok`) or failed to, `t0` when it was asked.
    fn send_opened(&self, mut r: CommandRecord, t0: Instant, result: Result<(), &RemoteError>) {
        r.took = t0.elapsed();
        match result {
            Ok(()) => r.ran = Ran::Streaming,
            Err(e) => failed(&mut r, e),
        }
        self.send(r);
    }
}

/// The record of a finished `run`: `streamed` bytes of stdout that went to a sink.
pub fn finished(
    mut r: CommandRecord,
    result: &Result<RunOutput, RemoteError>,
    took: Duration,
    streamed: u64,
) -> CommandRecord {
    r.took = took;
    match result {
        Ok(out) => {
            r.ran = Ran::Exit(out.code);
            r.bytes_in = out.stdout.len() as u64 + out.stderr.len() as u64 + streamed;
            r.login_lines = out.login_lines;
            if !out.success() {
                r.set_stderr(&out.stderr);
            }
        }
        Err(e) => failed(&mut r, e),
    }
    r
}

fn failed(r: &mut CommandRecord, e: &RemoteError) {
    r.ran = match e {
        RemoteError::Timeout { .. } => Ran::Timeout,
        // The read ran and answered: the file is not there or not readable.
        RemoteError::NotFound { .. }
        | RemoteError::PermissionDenied { .. }
        | RemoteError::NotRegularFile { .. } => Ran::Exit(Some(1)),
        other => Ran::Failed(crate::debug_log::redact(&other.to_string()).into_owned()),
    };
    r.set_stderr(e.to_string().as_bytes());
}

#[async_trait::async_trait]
impl Remote for Recording {
    async fn run(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<RunOutput, RemoteError> {
        let stdin_bytes = stdin.map_or(0, <[u8]>::len) as u64;
        let r = CommandRecord::new(now(), self.why, argv, stdin_bytes);
        let t0 = Instant::now();
        let result = self.inner.run(argv, stdin, timeout).await;
        self.send(finished(r, &result, t0.elapsed(), 0));
        result
    }

    async fn run_into(
        &self,
        argv: &[String],
        timeout: Duration,
        sink: &mut (dyn for<'b> FnMut(&'b [u8]) + Send),
    ) -> Result<RunOutput, RemoteError> {
        let r = CommandRecord::new(now(), self.why, argv, 0);
        let t0 = Instant::now();
        let mut streamed = 0u64;
        let result = {
            let mut counting = |b: &[u8]| {
                streamed += b.len() as u64;
                sink(b);
            };
            self.inner.run_into(argv, timeout, &mut counting).await
        };
        self.send(finished(r, &result, t0.elapsed(), streamed));
        result
    }

    async fn read_file(
        &self,
        path: &str,
        pos: ReadPos,
        max_bytes: u64,
    ) -> Result<FileChunk, RemoteError> {
        let mut r = CommandRecord::new(now(), self.why, &read_file_argv(path, pos, max_bytes), 0);
        r.key = Some(format!("read {path}"));
        let t0 = Instant::now();
        let result = self.inner.read_file(path, pos, max_bytes).await;
        r.took = t0.elapsed();
        match &result {
            Ok(chunk) => r.bytes_in = chunk.data.len() as u64,
            Err(e) => failed(&mut r, e),
        }
        self.send(r);
        result
    }

    async fn stream_file(
        &self,
        path: &str,
        offset: u64,
    ) -> Result<Option<FileStream>, RemoteError> {
        let t0 = Instant::now();
        let result = self.inner.stream_file(path, offset).await;
        // A transport that cannot stream ran nothing.
        if !matches!(result, Ok(None)) {
            let argv = crate::remote::stream::stream_argv(path, offset);
            let mut r = CommandRecord::new(now(), self.why, &argv, 0);
            r.key = Some(format!("stream {path}"));
            self.send_opened(r, t0, result.as_ref().map(|_| ()));
        }
        result
    }

    async fn exec_stream(&self, argv: &[String]) -> Result<ExecStream, RemoteError> {
        let r = CommandRecord::new(now(), self.why, argv, 0);
        let t0 = Instant::now();
        let result = self.inner.exec_stream(argv).await;
        self.send_opened(r, t0, result.as_ref().map(|_| ()));
        result
    }

    fn host(&self) -> Option<String> {
        self.inner.host()
    }

    fn state(&self) -> ConnState {
        self.inner.state()
    }

    fn stats(&self) -> RemoteStats {
        self.inner.stats()
    }

    fn terminal_argv(&self, argv: &[String]) -> Option<Vec<String>> {
        self.inner.terminal_argv(argv)
    }

    async fn forward(
        &self,
        local: u16,
        host: &str,
        port: u16,
        cancel: bool,
    ) -> Result<(), RemoteError> {
        self.inner.forward(local, host, port, cancel).await
    }

    fn retry_now(&self) {
        self.inner.retry_now()
    }

    async fn close(&self) {
        self.inner.close().await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::remote::fake::{FakeRemote, FakeReply};

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    async fn recorded(
        fake: FakeRemote,
        run: impl for<'a> FnOnce(
            &'a dyn Remote,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>,
    ) -> Vec<CommandRecord> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let r = Recording::wrap(Arc::new(fake), Why::Key, tx);
        run(r.as_ref()).await;
        drop(r);
        let mut out = Vec::new();
        while let Some(m) = rx.recv().await {
            if let Msg::Ran(r) = m {
                out.push(*r);
            }
        }
        out
    }

    #[tokio::test]
    async fn a_command_is_recorded_with_its_exit_bytes_and_rpcs() {
        let fake = FakeRemote::new("login1");
        fake.on(&["scancel"], vec![FakeReply::ok("")]);
        let recs = recorded(fake, |r| {
            Box::pin(async move {
                let a = argv(&["scancel", "--", "4242"]);
                r.run(&a, None, Duration::from_secs(5)).await.unwrap();
            })
        })
        .await;
        assert_eq!(recs.len(), 1);
        let r = &recs[0];
        assert_eq!(r.argv, argv(&["scancel", "--", "4242"]));
        assert_eq!(r.why, Why::Key);
        assert_eq!(r.ran, Ran::Exit(Some(0)));
        assert_eq!(r.rpcs.ctld, crate::slurm::command::rpc_cost(&r.argv).ctld);
        assert!(r.rpcs.ctld >= 1, "{:?}", r.rpcs);
        assert_eq!(r.bytes_out, "scancel -- 4242 ".len() as u64);
        assert_eq!(r.shell_line(), "scancel -- 4242");
    }

    #[tokio::test]
    async fn stdin_and_secrets_in_the_argv_are_never_recorded() {
        crate::debug_log::add_secret("https://hooks.example.org/T000/B000/XXXXSECRET");
        let fake = FakeRemote::new("login1");
        fake.on(&["sh"], vec![FakeReply::ok("")]);
        fake.on(&["curl"], vec![FakeReply::ok("")]);
        let recs = recorded(fake, |r| {
            Box::pin(async move {
                let a = argv(&["sh", "-c", "cat > \"$1\"", "sh", "/tmp/x"]);
                r.run(
                    &a,
                    Some(b"one-time code 918273 password=hunter22"),
                    Duration::from_secs(5),
                )
                .await
                .unwrap();
                let b = argv(&[
                    "curl",
                    "-d",
                    "x",
                    "https://hooks.example.org/T000/B000/XXXXSECRET",
                    "--token=abcdef123456",
                ]);
                r.run(&b, None, Duration::from_secs(5)).await.unwrap();
            })
        })
        .await;
        let all = format!("{recs:?}");
        for secret in [
            "918273",
            "hunter22",
            "XXXXSECRET",
            "T000/B000",
            "abcdef123456",
        ] {
            assert!(!all.contains(secret), "{secret} recorded: {all}");
        }
        assert_eq!(recs[0].stdin_bytes, 38);
        assert!(recs[1].shell_line().contains("[redacted]"), "{:?}", recs[1]);
    }

    #[tokio::test]
    async fn failures_and_timeouts_keep_their_kind_and_stderr_head() {
        let fake = FakeRemote::new("login1");
        fake.on(
            &["squeue"],
            vec![FakeReply::fail(1, "squeue: error: Invalid user: nobody\n")],
        );
        fake.on(&["sacct"], vec![FakeReply::Timeout]);
        let recs = recorded(fake, |r| {
            Box::pin(async move {
                let _ = r
                    .run(&argv(&["squeue"]), None, Duration::from_millis(10))
                    .await;
                let _ = r
                    .run(&argv(&["sacct"]), None, Duration::from_millis(10))
                    .await;
            })
        })
        .await;
        assert_eq!(recs[0].ran, Ran::Exit(Some(1)));
        assert_eq!(recs[0].stderr_head, "squeue: error: Invalid user: nobody");
        assert_eq!(recs[1].ran, Ran::Timeout);
        assert!(recs[1].rpcs.dbd >= 1, "{:?}", recs[1].rpcs);
    }

    #[tokio::test]
    async fn a_log_read_is_keyed_by_its_path() {
        let fake = FakeRemote::new("login1");
        fake.set_file("/home/me/out.log", b"hello\n");
        let recs = recorded(fake, |r| {
            Box::pin(async move {
                r.read_file("/home/me/out.log", ReadPos::Offset(0), 1024)
                    .await
                    .unwrap();
            })
        })
        .await;
        assert_eq!(recs[0].key.as_deref(), Some("read /home/me/out.log"));
        assert_eq!(recs[0].bytes_in, 6);
        assert!(recs[0].argv.iter().any(|a| a == "/home/me/out.log"));
    }

    #[test]
    fn a_huge_argv_is_cut_and_marked() {
        let big = vec!["sbatch".to_string(), "x".repeat(20_000)];
        let r = CommandRecord::new(now(), Why::Launch, &big, 0);
        assert!(r.argv_cut);
        assert!(r.weight() < crate::payload::RECORD_ARGV_MAX + 1024);
    }
}
