//! What flows through the event loop: messages in (keys, ticks, worker results) and
//! commands out (work for the workers). Key meanings live in `keymap::Action`.

use std::time::Duration;

use chrono::NaiveDateTime;
use crossterm::event::{KeyEvent, MouseEvent};

use crate::logview::{Stream, TailEvent};
use crate::payload::ConnState;
use crate::payload::DetailSource;
use crate::payload::RetryEvent;
use crate::registry::Entry;
use crate::slurm::model::{CancelOutcome, Job, JobDetail, JobId, Partition};
use crate::slurm::ops::{JobEdit, JobOp, OpReport};

#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// The clock moved (the status bar shows ages).
    Tick(NaiveDateTime),
    /// Time for the next queue refresh.
    PollDue,
    /// A refresh answered (queue, start estimates, sacct records, connection).
    Queue(Box<crate::payload::Refresh>),
    Detail {
        id: JobId,
        result: Box<Result<(JobDetail, DetailSource), String>>,
    },
    Tail(TailEvent),
    Conn {
        state: ConnState,
        host: Option<String>,
    },
    /// A job action finished (or could not run).
    OpDone {
        op: JobOp,
        result: Result<OpReport, String>,
    },
    /// `scontrol update` of one job finished.
    Edited {
        id: JobId,
        edit: JobEdit,
        result: Result<Vec<(JobId, CancelOutcome)>, String>,
    },
    /// Partition limits for the edit form (`scontrol show partition`).
    Limits(Result<Vec<Partition>, String>),
    /// The retry check ran: what it did and the launches of this cluster afterwards.
    Retries(Result<(Vec<RetryEvent>, Vec<Entry>), String>),
    /// A finished job's triage; `Ok(None)` when it turned out not to have finished.
    Triaged {
        id: JobId,
        result: Box<Result<Option<crate::payload::TriageReport>, String>>,
    },
    /// Partitions, accounts and Pyxis for the launch form.
    LaunchFacts(Result<crate::launch::ClusterFacts, String>),
    /// The scheduler's `sbatch --test-only` answer.
    TestOnly(Result<crate::launch::stage::Estimate, String>),
    Submitted(Box<Result<crate::launch::submit::Submitted, String>>),
    /// Jobs from the launch registry, as sacct knows them (kept visible after squeue).
    RegistryJobs(Result<Vec<Job>, String>),
    /// Rank, priority, fair-share and limits of a pending job.
    Pending {
        id: JobId,
        result: Box<Result<crate::slurm::pending::PendingInfo, String>>,
    },
    Partitions {
        result: Result<Vec<crate::slurm::partview::PartitionRow>, String>,
        at: NaiveDateTime,
    },
    /// A sample of the transport's counters, for :stats.
    RemoteStats {
        stats: crate::payload::RemoteStats,
        at: NaiveDateTime,
    },
}

impl Msg {
    /// A refresh that brought only the queue (or its error).
    pub fn queue(result: Result<Vec<Job>, String>, at: NaiveDateTime, took: Duration) -> Msg {
        Msg::Queue(Box::new(crate::payload::Refresh {
            result,
            extra: None,
            conn: None,
            at,
            took,
        }))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    PollQueue,
    /// Skip the wait before the next reconnect attempt (`r` while disconnected).
    Reconnect,
    FetchDetail(JobId),
    /// Stop every tail and start these (job, stream, path); an empty list only stops.
    Tail(Vec<(JobId, Stream, String)>),
    Quit,
    Suspend,
    SwitchCluster(String),
    /// The next refresh comes one new interval from now (the adaptive interval moved).
    SetPollInterval(Duration),
    /// One scancel / scontrol for all the op's jobs.
    Op(JobOp),
    Edit(JobId, JobEdit),
    /// Partition limits for the edit form.
    FetchLimits,
    /// Look for finished launches; re-submit infrastructure failures.
    CheckRetries,
    /// Classify a finished job (reads its log tails and status.json).
    Triage {
        id: JobId,
        detail: Box<JobDetail>,
        source: DetailSource,
        results_dir: Option<String>,
    },
    FetchLaunchFacts,
    TestOnly(Box<crate::launch::submit::Prepared>),
    Submit {
        cluster: String,
        prepared: Box<crate::launch::submit::Prepared>,
    },
    /// Look up this cluster's registry jobs with sacct.
    LoadRegistryJobs(String),
    /// Ring the bell / show a desktop notification, as configured (done by the dashboard).
    Notify(crate::notify::Notification),
    /// A refresh that also asks sacct about jobs that left squeue.
    PollWith {
        sacct: Vec<JobId>,
    },
    FetchPending(Box<Job>),
    FetchPartitions,
}
