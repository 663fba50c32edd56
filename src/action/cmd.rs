//! Commands out: work for the workers (and the few things only the event loop can do).

use std::time::Duration;

use crate::logview::Stream;
use crate::payload::DetailSource;
use crate::slurm::model::{JobDetail, JobId};
use crate::slurm::ops::{JobEdit, JobOp};

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
    /// Hand the terminal to a shell in this running job (on `node`), then take it back.
    Shell {
        id: JobId,
        node: Option<String>,
    },
    /// Forward a free local port (from `port` on) to `node:port` of job `id`.
    Forward {
        id: JobId,
        node: String,
        port: u16,
        path: String,
    },
    /// Close this tunnel.
    Unforward(crate::payload::Tunnel),
    /// Show this configured cluster too (`:cluster NAME` for a cluster not shown yet).
    AddCluster(String),
    /// The next refresh comes one new interval from now (the adaptive interval moved).
    SetPollInterval(Duration),
    /// One scancel / scontrol for all the op's jobs.
    Op(JobOp),
    Edit(JobId, JobEdit),
    /// Partition limits of cluster `.0` (the edit form's, the history's verdicts).
    FetchLimits(u16),
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
    /// Put this text on the terminal's clipboard (OSC 52; written by the dashboard).
    Clipboard(String),
    /// Write these queue columns into the config file (`[ui] columns`; by the dashboard).
    SaveColumns(Vec<crate::queue::Column>),
    /// Write the launch form's values as template file `name` (by the dashboard);
    /// `overwrite`: replace one that exists.
    SaveTemplate {
        name: String,
        spec: Box<crate::launch::LaunchSpec>,
        overwrite: bool,
    },
    /// Read a batch script on this machine for the launch form (by the local worker).
    ReadScript(String),
    /// A refresh that also asks sacct about jobs that left squeue.
    PollWith {
        sacct: Vec<JobId>,
    },
    /// sacct alone, at once, about jobs a refresh just saw leave squeue.
    FinalStates(Vec<JobId>),
    /// Why every pending job of one user waits (`slurm::pending::Ask`).
    FetchPending(Box<crate::slurm::pending::Ask>),
    FetchPartitions,
    /// `scontrol show reservation` (with the cluster's clock): once a session, then every
    /// ten minutes and when `:partitions` opens.
    FetchReservations,
    /// `sbatch --test-only` of each change `:sooner` offers, in one exec.
    CheckSooner {
        id: JobId,
        alternatives: Vec<crate::slurm::why::Alternative>,
    },
    /// `scontrol update` of one change the user confirmed.
    ApplySooner {
        id: JobId,
        change: crate::slurm::why::Change,
    },
    /// `scontrol show config`, once per cluster: the site's RPC rate limit and the release.
    FetchSiteLimit,
    /// The cheap state check of these job (or array) ids, between full reads.
    CheckStates(Vec<u64>),
    /// The budget read of the last `days` days, for `:usage`.
    FetchUsage {
        days: u32,
    },
    /// The user's recent jobs with their waits.
    FetchWaits,
    /// Read finished jobs for `:history`.
    History(crate::payload::Request),
    /// Read a finished launch's staged spec and use, for `L`.
    Relaunch {
        id: JobId,
        job_dir: String,
    },
    /// Adopt a job submitted elsewhere (`A`): its job directory goes under `results_root`
    /// with mode `job_dir_mode`.
    Adopt {
        id: JobId,
        results_root: String,
        job_dir_mode: u32,
    },
    /// Recover a job's options and batch script (a job slurmdash did not launch), for `L`.
    Recover(JobId),
    /// Read the array of task `id` (its tasks, MaxArraySize) with what `L` reads of the
    /// task: the launch's spec from `job_dir`, else what can be recovered, for `L`.
    Rerun {
        id: JobId,
        job_dir: Option<String>,
    },
    /// One live sample of a running job.
    SampleLive(Box<crate::slurm::live::LiveTarget>),
    /// One job top sample of a running job (`t`).
    Top(Box<crate::slurm::top::TopTarget>),
    /// The files view's work: list, preview, size, fetch, stop.
    Files(crate::jobfiles::FilesCmd),
    /// Run one of the user's own commands (`[[commands]]`) for cluster `run.cluster`.
    Custom(Box<crate::slurm::custom::CustomRun>),
    /// Hand this text to `$PAGER` (by the dashboard, which lends it the terminal).
    Pager(String),
    /// `:grep` / `:errors`: one search across the jobs' logs.
    Grep(Box<crate::logview::found::GrepRequest>),
}

impl Cmd {
    /// Calls `f` on every job id the command carries.
    pub fn for_each_id(&mut self, f: &mut dyn FnMut(&mut JobId)) {
        match self {
            Cmd::FetchDetail(id)
            | Cmd::Edit(id, _)
            | Cmd::Shell { id, .. }
            | Cmd::Forward { id, .. }
            | Cmd::Relaunch { id, .. }
            | Cmd::Adopt { id, .. }
            | Cmd::Recover(id)
            | Cmd::Rerun { id, .. }
            | Cmd::CheckSooner { id, .. }
            | Cmd::ApplySooner { id, .. } => f(id),
            Cmd::Unforward(t) => f(&mut t.job),
            Cmd::Tail(targets) => targets.iter_mut().for_each(|(id, ..)| f(id)),
            Cmd::Op(op) => op.ids.iter_mut().for_each(f),
            Cmd::Triage { id, detail, .. } => {
                f(id);
                detail.id.iter_mut().for_each(f);
            }
            Cmd::PollWith { sacct } | Cmd::FinalStates(sacct) => sacct.iter_mut().for_each(f),
            Cmd::SampleLive(t) => f(&mut t.id),
            Cmd::Top(t) => f(&mut t.id),
            Cmd::Files(c) => f(c.job_mut()),
            Cmd::Grep(r) => r.ids.iter_mut().for_each(f),
            Cmd::PollQueue
            | Cmd::Reconnect
            | Cmd::Quit
            | Cmd::Suspend
            | Cmd::AddCluster(_)
            | Cmd::SetPollInterval(_)
            | Cmd::FetchLimits(_)
            | Cmd::CheckRetries
            | Cmd::FetchLaunchFacts
            | Cmd::TestOnly(_)
            | Cmd::Submit { .. }
            | Cmd::LoadRegistryJobs(_)
            | Cmd::Notify(_)
            | Cmd::Clipboard(_)
            | Cmd::SaveColumns(_)
            | Cmd::SaveTemplate { .. }
            | Cmd::ReadScript(_)
            | Cmd::FetchPartitions
            | Cmd::FetchReservations
            | Cmd::FetchPending(_)
            | Cmd::FetchSiteLimit
            | Cmd::CheckStates(_)
            | Cmd::FetchUsage { .. }
            | Cmd::FetchWaits
            | Cmd::History(_)
            | Cmd::Custom(_)
            | Cmd::Pager(_) => {}
        }
    }

    /// The cluster the command names itself (a history read, partition limits).
    pub fn addressed(&self) -> Option<u16> {
        match self {
            Cmd::History(r) => Some(r.cluster),
            Cmd::FetchLimits(ix) => Some(*ix),
            Cmd::Custom(run) => Some(run.cluster),
            _ => None,
        }
    }

    /// The cluster whose jobs the command names, if it names any.
    pub fn cluster_of_ids(&mut self) -> Option<u16> {
        let mut found = None;
        self.for_each_id(&mut |id| {
            found.get_or_insert(id.cluster());
        });
        found
    }
}
