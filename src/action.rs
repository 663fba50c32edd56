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
    /// Partitions, accounts and Pyxis for the launch form.
    LaunchFacts(Result<crate::launch::ClusterFacts, String>),
    /// The scheduler's `sbatch --test-only` answer.
    TestOnly(Result<crate::launch::stage::Estimate, String>),
    Submitted(Box<Result<crate::launch::submit::Submitted, String>>),
    /// Jobs from the launch registry, as sacct knows them (kept visible after squeue).
    RegistryJobs(Result<Vec<Job>, String>),
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
    FetchLaunchFacts,
    TestOnly(Box<crate::launch::submit::Prepared>),
    Submit {
        cluster: String,
        prepared: Box<crate::launch::submit::Prepared>,
    },
    /// Look up this cluster's registry jobs with sacct.
    LoadRegistryJobs(String),
}
