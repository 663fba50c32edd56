//! What flows through the event loop: messages in (keys, ticks, worker results) and
//! commands out (work for the workers). Key meanings live in `keymap::Action`.

use std::time::Duration;

use chrono::NaiveDateTime;
use crossterm::event::{KeyEvent, MouseEvent};

use crate::logview::{Stream, TailEvent};
use crate::remote::ConnState;
use crate::slurm::model::{Job, JobDetail, JobId};
use crate::worker::fetch::DetailSource;

#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// The clock moved (the status bar shows ages).
    Tick(NaiveDateTime),
    /// Time for the next queue refresh.
    PollDue,
    Queue {
        result: Result<Vec<Job>, String>,
        at: NaiveDateTime,
        took: Duration,
    },
    Detail {
        id: JobId,
        result: Box<Result<(JobDetail, DetailSource), String>>,
    },
    Tail(TailEvent),
    Conn {
        state: ConnState,
        host: Option<String>,
    },
    /// Start estimates and sacct records from the same refresh; sent just before its Queue.
    PollExtra(Box<crate::worker::poll::PollExtra>),
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
        stats: crate::remote::RemoteStats,
        at: NaiveDateTime,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    PollQueue,
    FetchDetail(JobId),
    /// Stop every tail and start these (job, stream, path); an empty list only stops.
    Tail(Vec<(JobId, Stream, String)>),
    Quit,
    Suspend,
    SwitchCluster(String),
    /// A refresh that also asks sacct about jobs that left squeue (`sacct`), and skips
    /// `squeue --start` when no job was pending (`start: false`).
    PollWith {
        sacct: Vec<JobId>,
        start: bool,
    },
    FetchPending(Box<Job>),
    FetchPartitions,
}
