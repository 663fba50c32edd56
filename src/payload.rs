//! What workers and the transport report, as the messages carry it: the payloads of
//! `action::Msg`. A leaf below app/, ui/ and worker/, so the screen and the state never
//! import a worker or the transport to name what they receive.

use std::time::Duration;

use crate::slurm::model::{JobDetail, JobId};
use crate::triage::{Class, Triage};

/// Where a job's detail came from: slurmctld knows running and recently ended jobs; after
/// MinJobAge only the accounting database (sacct) does, without the output paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetailSource {
    Scontrol,
    Sacct,
}

/// What one refresh brings besides the queue itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PollExtra {
    /// Final accounting records of jobs that left squeue.
    pub finished: Vec<JobDetail>,
    /// The ids sacct was asked about (those it did not know may be asked again).
    pub asked: Vec<JobId>,
    /// Sections that failed without spoiling the queue, each naming its command.
    pub problems: Vec<String>,
}

/// One refresh's answer, in one message: the queue, what came with it, and the connection
/// as the transport saw it afterwards.
#[derive(Debug, Clone)]
pub struct Refresh {
    pub result: Result<Vec<crate::slurm::model::Job>, String>,
    /// Start estimates and sacct records of the same exec (when it succeeded).
    pub extra: Option<PollExtra>,
    /// The connection after the refresh, and the host it reached (when known).
    pub conn: Option<(ConnState, Option<String>)>,
    pub at: chrono::NaiveDateTime,
    pub took: Duration,
}

/// What the check did, for the status line and the events log.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryEvent {
    /// A launched job reached a final state.
    Finished {
        local_id: String,
        job_id: u64,
        state: String,
        class: Option<Class>,
    },
    /// An infrastructure failure was submitted again.
    Resubmitted {
        local_id: String,
        failed: u64,
        new: u64,
        attempt: usize,
        max_attempts: usize,
        /// The guard resumed the launch rather than retried it: its decision
        /// (`resumed after TIMEOUT as 12 (resume 2 of 10)`).
        resumed: Option<String>,
        /// The nodes the new attempt was kept off (`--exclude`): those it failed on.
        excluded: Option<String>,
    },
    /// An infrastructure failure that is not retried (limit reached, retry off, or the
    /// re-submission failed), with why.
    NotRetried {
        local_id: String,
        job_id: u64,
        reason: String,
    },
    /// Slurm requeued the job itself (`--requeue`): same id, pending again. Not resubmitted.
    Requeued {
        local_id: String,
        job_id: u64,
        /// How the run before the requeue ended (e.g. NODE_FAIL).
        state: String,
        /// Requeues of this job seen so far.
        times: usize,
    },
    /// A line of a guarded launch's `meta/chain.jsonl` named a job that is not the launch's
    /// (another user's, or one the guard did not submit) as its next attempt: not recorded.
    Ignored {
        local_id: String,
        job_id: u64,
        reason: String,
    },
    /// The local registry could not be updated after a retry decision (the disk is full,
    /// the file is not writable...): what the record now lacks, and the error.
    RecordFailed {
        local_id: String,
        job_id: u64,
        what: String,
        error: String,
    },
    /// An attempt a dashboard claimed but never submitted (it stopped in between) was
    /// submitted now, or found already queued.
    Recovered {
        local_id: String,
        job_id: u64,
        attempt: usize,
        /// The stopped dashboard had queued it after all; nothing new was submitted.
        existing: bool,
    },
}

impl RetryEvent {
    pub fn line(&self) -> String {
        match self {
            RetryEvent::Finished {
                job_id,
                state,
                class: Some(c),
                ..
            } => format!("launched job {job_id} ended {state} ({c})"),
            RetryEvent::Finished { job_id, state, .. } => {
                format!("launched job {job_id} ended {state}")
            }
            RetryEvent::Resubmitted {
                failed,
                resumed: Some(how),
                ..
            } => format!("job {failed} {how}"),
            RetryEvent::Resubmitted {
                failed,
                new,
                attempt,
                max_attempts,
                excluded,
                ..
            } => format!(
                "job {failed} failed on infrastructure: resubmitted as {new} (attempt {attempt}/{max_attempts}){}",
                excluded
                    .as_deref()
                    .map(|n| format!(", not on {n} where it failed (--exclude)"))
                    .unwrap_or_default()
            ),
            // The first attempt of a launch whose submission was interrupted.
            RetryEvent::NotRetried {
                job_id: 0,
                local_id,
                reason,
            } => format!("launch {local_id} is not submitted yet: {reason}"),
            RetryEvent::NotRetried { job_id, reason, .. } => {
                format!("job {job_id} failed on infrastructure and was not resubmitted: {reason}")
            }
            RetryEvent::Requeued { job_id, state, .. } => format!(
                "job {job_id} ended {state} and Slurm requeued it (same id, --requeue): not resubmitted"
            ),
            RetryEvent::Ignored {
                local_id,
                job_id,
                reason,
            } => format!(
                "launch {local_id}: its meta/chain.jsonl names job {job_id} as a retry, ignored: {reason} (the job, or whoever can write its directory, wrote that line)"
            ),
            RetryEvent::RecordFailed {
                local_id,
                what,
                error,
                ..
            } => format!(
                "launch {local_id}: {what}, but its record on this machine could not be updated ({error}); check that the state directory (registry.json) is writable and has room"
            ),
            RetryEvent::Recovered {
                local_id,
                job_id,
                attempt,
                existing: true,
            } => format!(
                "attempt {attempt} of launch {local_id} was left unrecorded by a slurmdash that stopped or lost its answer: it is job {job_id}, already queued"
            ),
            RetryEvent::Recovered {
                local_id,
                job_id,
                attempt,
                existing: false,
            } => format!(
                "attempt {attempt} of launch {local_id} was claimed but never submitted (a slurmdash stopped while submitting it): submitted now as {job_id}"
            ),
        }
    }
}

/// A classification and how it was reached.
#[derive(Debug, Clone, PartialEq)]
pub struct TriageReport {
    pub triage: Triage,
    /// The status.json that was used, if any.
    pub status_path: Option<String>,
    /// Files that could not be read, as user-facing sentences.
    pub notes: Vec<String>,
}

/// Connection state, for the status bar.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ConnState {
    #[default]
    NotConnected,
    Connecting {
        host: String,
        attempt: u32,
    },
    Connected {
        host: String,
    },
    /// The connection was lost (or never made) and is being retried.
    Reconnecting {
        attempt: u32,
        last_error: String,
        /// Time left before the next attempt, rounded up to whole seconds; `None` while an
        /// attempt is under way.
        retry_in: Option<Duration>,
    },
    Failed {
        reason: String,
    },
    /// The master of an interactive (password / one-time code) login is gone, and only a
    /// person can open a new one (`slurmdash login`). Nothing is retried over the network;
    /// each command only checks whether a master is back on the socket.
    LoginNeeded {
        host: String,
    },
}

/// Counters since the remote was created (shown as remote commands per minute).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteStats {
    /// Commands started on the cluster (one `ssh` channel each).
    pub execs: u64,
    /// Bytes received: stdout plus stderr.
    pub bytes_in: u64,
    /// Bytes sent: argv plus stdin.
    pub bytes_out: u64,
    /// Wall time of the last completed command, connection set-up excluded.
    pub last_rtt: Option<Duration>,
    /// SSH connections (ControlMasters) opened or attached.
    pub connects: u64,
    /// RPCs the commands run so far cost slurmctld and slurmdbd, counted from each command
    /// (see `slurm::command::rpc_cost`).
    pub rpcs: crate::slurm::command::RpcCost,
    /// The same, per Slurm command (`squeue`, `sstat`, `scontrol show job`): how often it
    /// ran and what it cost, for `:stats`.
    pub by_command: std::collections::BTreeMap<String, CommandCount>,
}

/// How often one Slurm command ran and what it cost in all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandCount {
    pub runs: u64,
    pub rpcs: crate::slurm::command::RpcCost,
}

impl RemoteStats {
    /// Counts one command: an exec and what it costs the Slurm daemons.
    pub fn count(&mut self, argv: &[String]) {
        self.execs += 1;
        let (total, by) = (&mut self.rpcs, &mut self.by_command);
        crate::slurm::command::rpc_parts(argv, &mut |name, cost| {
            *total += cost;
            let c = by.entry(name).or_default();
            c.runs += 1;
            c.rpcs += cost;
        });
    }
}

/// A local port forwarded to what a job serves on its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunnel {
    pub job: JobId,
    pub node: String,
    /// The port on the node.
    pub port: u16,
    /// The port on this machine (127.0.0.1).
    pub local: u16,
    /// Path and query the job printed with its URL (`/lab?token=...`), `/` when none.
    pub path: String,
}

impl Tunnel {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}{}", self.local, self.path)
    }

    /// `127.0.0.1:8889 → gpu01:8888 (job 123)`.
    pub fn describe(&self) -> String {
        format!(
            "127.0.0.1:{} → {}:{} (job {})",
            self.local, self.node, self.port, self.job
        )
    }
}

/// One page of `:history`: what a worker sends back for each window.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Which read this belongs to (App drops pages of reads it no longer wants).
    pub generation: u64,
    /// false: the list (one line per job); true: the same window with every step.
    pub steps: bool,
    pub jobs: Vec<crate::slurm::eff::JobUse>,
    /// Records that did not read, as sentences.
    pub problems: Vec<String>,
    /// The last page of this read.
    pub last: bool,
}

/// What App asks for: windows, newest first. The list of every window is read first, then
/// the steps of each, so the list is on screen before the use figures fill in.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The cluster read.
    pub cluster: u16,
    pub generation: u64,
    pub windows: Vec<(crate::slurm::eff::Edge, crate::slurm::eff::Edge)>,
}

/// Why a remote command ran: the command log's (`@`) "why" column and its filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Why {
    /// The queue's refresh and state checks, and the final states of jobs that left.
    Refresh,
    /// A key of the user's: cancel, hold, edit, `:history`, `:usage`, a relaunch, ...
    Key,
    /// The selected job's detail, why it pends, its triage.
    Selection,
    /// A live sample of the selected running job (sstat, nvidia-smi).
    Live,
    /// Job top (`t`): a running job's processes on its nodes.
    Top,
    /// The retry guard's check.
    Guard,
    /// Following a job's log.
    Tail,
    /// The files view: listing, preview, fetch.
    Files,
    /// The launch form: cluster facts, `--test-only`, the submission.
    Launch,
    /// Reads no key asked for: partitions, maintenance windows, the site's rate limit.
    Background,
}

impl Why {
    /// Every kind, in the order the log's filter cycles through them.
    pub const ALL: [Why; 10] = [
        Why::Refresh,
        Why::Key,
        Why::Selection,
        Why::Live,
        Why::Top,
        Why::Guard,
        Why::Tail,
        Why::Files,
        Why::Launch,
        Why::Background,
    ];

    /// The word the log shows.
    pub fn word(self) -> &'static str {
        match self {
            Why::Refresh => "refresh",
            Why::Key => "your key",
            Why::Selection => "selection",
            Why::Live => "live",
            Why::Top => "job top",
            Why::Guard => "guard",
            Why::Tail => "log tail",
            Why::Files => "files",
            Why::Launch => "launch",
            Why::Background => "background",
        }
    }
}

/// How a recorded command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    /// It ran; its exit code (`None`: killed by a signal).
    Exit(Option<i32>),
    /// It did not finish in time and was abandoned.
    Timeout,
    /// A transport error (no connection, the connection dropped, too much output, ...).
    Failed(String),
    /// A log stream opened: it runs until the log is left.
    Streaming,
}

impl Ran {
    pub fn ok(&self) -> bool {
        matches!(self, Ran::Exit(Some(0)) | Ran::Streaming)
    }

    /// `0`, `1`, `signal`, `timeout`, `error`, `stream`.
    pub fn short(&self) -> String {
        match self {
            Ran::Exit(Some(c)) => c.to_string(),
            Ran::Exit(None) => "signal".into(),
            Ran::Timeout => "timeout".into(),
            Ran::Failed(_) => "error".into(),
            Ran::Streaming => "stream".into(),
        }
    }
}

/// One remote command slurmdash ran, as the command log (`@`) keeps it. Its argv has its
/// secrets taken out before it leaves the worker; what went on stdin is only counted.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRecord {
    /// When it started (the last time, for an entry that stands for several reads).
    pub at: chrono::NaiveDateTime,
    pub why: Why,
    /// The argv slurmdash asked for (before the transport's framing or a login shell).
    pub argv: Vec<String>,
    /// The argv was cut to fit the log's memory: it cannot be copied to run by hand.
    pub argv_cut: bool,
    /// Bytes sent on stdin (never their content).
    pub stdin_bytes: u64,
    pub ran: Ran,
    pub took: Duration,
    /// Bytes sent: argv plus stdin.
    pub bytes_out: u64,
    /// Bytes received: stdout plus stderr.
    pub bytes_in: u64,
    /// What it cost slurmctld and slurmdbd (`slurm::command::rpc_cost`: what the transport
    /// counts for the RPC budget).
    pub rpcs: crate::slurm::command::RpcCost,
    /// The first lines of stderr when it failed (redacted).
    pub stderr_head: String,
    /// Lines the login shell and its dotfiles printed around it (stdout, stderr), taken off.
    pub login_lines: (usize, usize),
    /// Reads of the same log folded into this entry (1: itself alone).
    pub count: u32,
    /// What aggregates (the followed log's path): reads with the same key fold into one.
    pub key: Option<String>,
    /// The cluster's number (set by App).
    pub cluster: u16,
}

/// The longest argv kept whole, in bytes: a longer one is cut (and cannot be copied).
pub const RECORD_ARGV_MAX: usize = 8 << 10;
/// The most bytes of stderr kept for a failed command.
pub const RECORD_STDERR_MAX: usize = 1 << 10;

impl CommandRecord {
    /// A record of `argv`, its secrets taken out ([`crate::debug_log::redact`]: URLs'
    /// paths and passwords, `token=` values, the registered webhook), cut to
    /// [`RECORD_ARGV_MAX`]; stdin only counted.
    pub fn new(
        at: chrono::NaiveDateTime,
        why: Why,
        argv: &[String],
        stdin_bytes: u64,
    ) -> CommandRecord {
        let rpcs = crate::slurm::command::rpc_cost(argv);
        let bytes_out = argv.iter().map(|a| a.len() as u64 + 1).sum::<u64>() + stdin_bytes;
        let mut kept = Vec::with_capacity(argv.len());
        let (mut size, mut cut) = (0usize, false);
        for a in argv {
            let a = crate::debug_log::redact(a).into_owned();
            if size + a.len() > RECORD_ARGV_MAX {
                let room = RECORD_ARGV_MAX.saturating_sub(size);
                let mut end = room.min(a.len());
                while !a.is_char_boundary(end) {
                    end -= 1;
                }
                kept.push(format!("{}…", &a[..end]));
                cut = true;
                break;
            }
            size += a.len();
            kept.push(a);
        }
        CommandRecord {
            at,
            why,
            argv: kept,
            argv_cut: cut,
            stdin_bytes,
            ran: Ran::Exit(Some(0)),
            took: Duration::ZERO,
            bytes_out,
            bytes_in: 0,
            rpcs,
            stderr_head: String::new(),
            login_lines: (0, 0),
            count: 1,
            key: None,
            cluster: 0,
        }
    }

    /// Keeps the head of a failed command's stderr, redacted.
    pub fn set_stderr(&mut self, stderr: &[u8]) {
        let mut end = stderr.len().min(RECORD_STDERR_MAX);
        let text = loop {
            match std::str::from_utf8(&stderr[..end]) {
                Ok(t) => break t.to_string(),
                Err(e) if e.valid_up_to() > 0 && end - e.valid_up_to() < 4 => {
                    end = e.valid_up_to();
                }
                Err(_) => break String::from_utf8_lossy(&stderr[..end]).into_owned(),
            }
        };
        self.stderr_head = crate::debug_log::redact(text.trim_end()).into_owned();
    }

    /// The memory the entry holds, roughly: for the log's cap.
    pub fn weight(&self) -> usize {
        std::mem::size_of::<CommandRecord>()
            + self.argv.iter().map(|a| a.len() + 24).sum::<usize>()
            + self.stderr_head.len()
            + self.key.as_ref().map_or(0, String::len)
    }

    /// The argv as one line to paste into a shell (each argument quoted for `sh`).
    pub fn shell_line(&self) -> String {
        shlex::try_join(self.argv.iter().map(String::as_str))
            .unwrap_or_else(|_| self.argv.join(" ").replace('\0', "\\0"))
    }
}
