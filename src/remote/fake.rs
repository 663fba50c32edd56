//! [`FakeRemote`]: scripted answers for state-machine tests and fault injection. It records
//! every argv it is asked to run. Not a proof that anything works on a real cluster.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::readfile::slice_file;
use super::{
    display_argv, ConnState, FileChunk, ReadPos, Remote, RemoteError, RemoteStats, RunOutput,
};

/// One scripted reaction.
#[derive(Debug, Clone)]
pub enum FakeReply {
    Output(RunOutput),
    /// Sleeps for the caller's whole timeout, then returns `RemoteError::Timeout`.
    Timeout,
    Error(RemoteError),
    /// Waits, then answers with the inner reply.
    Delay(Duration, Box<FakeReply>),
}

impl FakeReply {
    pub fn ok(stdout: impl Into<Vec<u8>>) -> Self {
        Self::Output(RunOutput {
            stdout: stdout.into(),
            stderr: Vec::new(),
            code: Some(0),
            login_lines: (0, 0),
        })
    }
    pub fn fail(code: i32, stderr: impl Into<Vec<u8>>) -> Self {
        Self::Output(RunOutput {
            stdout: Vec::new(),
            stderr: stderr.into(),
            code: Some(code),
            login_lines: (0, 0),
        })
    }
}

struct Rule {
    prefix: Vec<String>,
    /// Replies in order; the last one repeats.
    replies: Vec<FakeReply>,
    used: usize,
}

#[derive(Default)]
struct Inner {
    rules: Vec<Rule>,
    files: HashMap<String, Result<Vec<u8>, RemoteError>>,
    calls: Vec<Vec<String>>,
    reads: Vec<(String, ReadPos, u64)>,
    stats: RemoteStats,
    state: ConnState,
}

pub struct FakeRemote {
    host: String,
    inner: Mutex<Inner>,
}

impl Default for FakeRemote {
    fn default() -> Self {
        Self::new("fake-login")
    }
}

impl FakeRemote {
    pub fn new(host: &str) -> Self {
        let inner = Inner {
            state: ConnState::Connected { host: host.into() },
            ..Inner::default()
        };
        Self {
            host: host.into(),
            inner: Mutex::new(inner),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Answers commands whose argv starts with `prefix` with `replies` in turn (the last one
    /// repeats). The longest matching prefix wins; unmatched commands exit 127.
    pub fn on(&self, prefix: &[&str], replies: Vec<FakeReply>) -> &Self {
        self.lock().rules.push(Rule {
            prefix: prefix.iter().map(|s| s.to_string()).collect(),
            replies,
            used: 0,
        });
        self
    }

    /// Serves `path` from memory (with the real script's offset/tail/truncation rules).
    pub fn set_file(&self, path: &str, content: impl Into<Vec<u8>>) -> &Self {
        self.lock().files.insert(path.into(), Ok(content.into()));
        self
    }

    /// Makes `read_file(path)` fail with `err`.
    pub fn set_file_error(&self, path: &str, err: RemoteError) -> &Self {
        self.lock().files.insert(path.into(), Err(err));
        self
    }

    pub fn set_state(&self, state: ConnState) {
        self.lock().state = state;
    }

    /// Every argv run so far, in order.
    pub fn calls(&self) -> Vec<Vec<String>> {
        self.lock().calls.clone()
    }

    /// Every read_file request so far.
    pub fn reads(&self) -> Vec<(String, ReadPos, u64)> {
        self.lock().reads.clone()
    }

    fn next_reply(&self, argv: &[String]) -> FakeReply {
        let mut inner = self.lock();
        inner.calls.push(argv.to_vec());
        inner.stats.count(argv);
        let best = inner
            .rules
            .iter_mut()
            .filter(|r| argv.starts_with(&r.prefix))
            .max_by_key(|r| r.prefix.len());
        match best {
            Some(rule) if !rule.replies.is_empty() => {
                let i = rule.used.min(rule.replies.len() - 1);
                rule.used += 1;
                rule.replies[i].clone()
            }
            _ => FakeReply::fail(127, format!("fake: no reply scripted for {argv:?}\n")),
        }
    }
}

#[async_trait::async_trait]
impl Remote for FakeRemote {
    async fn run(
        &self,
        argv: &[String],
        _stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<RunOutput, RemoteError> {
        let mut reply = self.next_reply(argv);
        loop {
            match reply {
                FakeReply::Output(out) => return Ok(out),
                FakeReply::Error(e) => return Err(e),
                FakeReply::Timeout => {
                    tokio::time::sleep(timeout).await;
                    return Err(RemoteError::Timeout {
                        command: display_argv(argv),
                        host: self.host.clone(),
                        secs: timeout.as_secs_f64(),
                    });
                }
                FakeReply::Delay(d, inner) => {
                    if d >= timeout {
                        reply = FakeReply::Timeout;
                        continue;
                    }
                    tokio::time::sleep(d).await;
                    reply = *inner;
                }
            }
        }
    }

    async fn read_file(
        &self,
        path: &str,
        pos: ReadPos,
        max_bytes: u64,
    ) -> Result<FileChunk, RemoteError> {
        let mut inner = self.lock();
        inner.reads.push((path.into(), pos, max_bytes));
        match inner.files.get(path) {
            Some(Ok(content)) => Ok(slice_file(content, pos, max_bytes)),
            Some(Err(e)) => Err(e.clone()),
            None => Err(RemoteError::NotFound {
                path: path.into(),
                host: self.host.clone(),
            }),
        }
    }

    fn host(&self) -> Option<String> {
        Some(self.host.clone())
    }

    fn state(&self) -> ConnState {
        self.lock().state.clone()
    }

    fn stats(&self) -> RemoteStats {
        self.lock().stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[tokio::test]
    async fn scripted_replies_in_order_and_recorded() {
        let f = FakeRemote::default();
        f.on(&["squeue"], vec![FakeReply::ok("a"), FakeReply::ok("b")])
            .on(&["squeue", "--json"], vec![FakeReply::ok("{}")]);
        let t = Duration::from_secs(1);
        let got = |o: Result<RunOutput, RemoteError>| o.expect("ok").stdout_lossy();
        assert_eq!(got(f.run(&s(&["squeue", "-u", "x"]), None, t).await), "a");
        assert_eq!(got(f.run(&s(&["squeue"]), None, t).await), "b");
        assert_eq!(got(f.run(&s(&["squeue"]), None, t).await), "b");
        assert_eq!(got(f.run(&s(&["squeue", "--json"]), None, t).await), "{}");
        let none = f.run(&s(&["sinfo"]), None, t).await.expect("exit code");
        assert_eq!(none.code, Some(127));
        assert_eq!(f.calls().len(), 5);
        assert_eq!(f.calls()[0], s(&["squeue", "-u", "x"]));
    }

    #[tokio::test]
    async fn injected_faults() {
        let f = FakeRemote::default();
        f.on(&["slow"], vec![FakeReply::Timeout]).on(
            &["drop"],
            vec![FakeReply::Error(RemoteError::Disconnected {
                command: "drop".into(),
                host: "fake-login".into(),
                reason: "injected".into(),
            })],
        );
        let e = f
            .run(&s(&["slow"]), None, Duration::from_millis(10))
            .await
            .expect_err("timeout");
        assert!(matches!(e, RemoteError::Timeout { .. }));
        let e = f
            .run(&s(&["drop"]), None, Duration::from_secs(1))
            .await
            .expect_err("drop");
        assert!(e.is_transient());
    }

    #[tokio::test]
    async fn files_follow_read_semantics() {
        let f = FakeRemote::default();
        f.set_file("/log", "0123456789");
        let c = f
            .read_file("/log", ReadPos::Offset(8), 10)
            .await
            .expect("read");
        assert_eq!(c.data, b"89");
        let e = f
            .read_file("/nope", ReadPos::Offset(0), 10)
            .await
            .expect_err("missing");
        assert!(matches!(e, RemoteError::NotFound { .. }));
        assert_eq!(f.reads().len(), 2);
    }
}
