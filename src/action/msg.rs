//! Messages in: keys, the clock, and the workers' answers, each worker's under its owner
//! (`PollMsg`, `InsightMsg`, `LaunchMsg`, `JobMsg`), with the visitors that label the job
//! ids they carry with their cluster.

use std::time::Duration;

use chrono::NaiveDateTime;
use crossterm::event::{KeyEvent, MouseEvent};

use crate::logview::TailEvent;
use crate::payload::ConnState;
use crate::payload::DetailSource;
use crate::payload::RetryEvent;
use crate::registry::Entry;
use crate::slurm::model::{CancelOutcome, Job, JobDetail, JobId, Partition, SharedStr};
use crate::slurm::ops::{JobEdit, JobOp, OpReport};

#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// The clock moved (the status bar shows ages).
    Tick(NaiveDateTime),
    /// The files view: a listing, a preview, a copy's progress or end.
    Files(crate::jobfiles::FilesMsg),
    /// A message from the workers of one of the dashboard's clusters (by its number).
    Cluster(u16, Box<Msg>),
    /// Something the event loop did for the user (a shell that ended, a cluster that could
    /// not be added), for the status bar.
    Note(String),
    /// A cluster `:cluster NAME` asked for was connected and added: focus it.
    ClusterAdded(String),
    /// One of the user's own commands (`[[commands]]`) ended: its output.
    Custom(Box<crate::slurm::custom::CustomOutput>),
    /// A remote command finished (a stream: opened), for the command log (`@`).
    Ran(Box<crate::payload::CommandRecord>),
    /// What `:grep` / `:errors` found in the jobs' logs.
    Grep(Box<crate::logview::found::GrepReport>),
    /// A cluster's refresh and its link: the queue, state checks, what `scontrol show config`
    /// says, the connection.
    Poll(PollMsg),
    /// What a cluster says of its scheduling: pending jobs' standing, partitions,
    /// reservations, the budget, waits, limits.
    Insight(InsightMsg),
    /// Launching: the form's facts and answers, submissions, the registry of launches,
    /// retries, `A` and `L`.
    Launch(LaunchMsg),
    /// One job's reads and actions: its detail and logs, use, triage, live samples,
    /// tunnels, ops, edits, `:sooner`.
    Job(JobMsg),
}

/// A cluster's refresh and its link: the queue, state checks, what `scontrol show config`
/// says, the connection.
#[derive(Debug, Clone)]
pub enum PollMsg {
    /// Time for the next queue refresh.
    PollDue,
    /// A refresh answered (queue, start estimates, sacct records, connection).
    Queue(Box<crate::payload::Refresh>),
    Conn {
        state: ConnState,
        host: Option<String>,
    },
    /// The site's own RPC rate limit (`rl_enable`), or none.
    SiteLimit(Result<Option<crate::slurm::ratelimit::RateLimit>, String>),
    /// The cluster's Slurm release (`SLURM_VERSION`, from the same `scontrol show config`).
    SlurmVersion(crate::slurm::statecheck::Version),
    /// How often slurmctld works priorities out (`PriorityCalcPeriod`, the same read).
    PriorityCalcPeriod(std::time::Duration),
    /// A state check answered (`squeue --only-job-state`): the known jobs still queued.
    StateCheck {
        result: Result<Vec<crate::slurm::statecheck::Seen>, String>,
        at: NaiveDateTime,
    },
    /// sacct's answer about jobs that just left squeue (see `Cmd::FinalStates`).
    FinalStates(crate::payload::PollExtra),
    /// A sample of the transport's counters, for :stats.
    RemoteStats {
        stats: crate::payload::RemoteStats,
        at: NaiveDateTime,
    },
}

/// What a cluster says of its scheduling: pending jobs' standing, partitions,
/// reservations, the budget, waits, limits.
#[derive(Debug, Clone)]
pub enum InsightMsg {
    /// Partition limits for the edit form (`scontrol show partition`).
    Limits(Result<Vec<Partition>, String>),
    /// Rank, priority, fair-share and limits of every pending job of one user.
    Pending {
        ask: Box<crate::slurm::pending::Ask>,
        result: Box<Result<crate::slurm::pending::Batch, String>>,
        at: NaiveDateTime,
    },
    Partitions {
        result: Result<Vec<crate::slurm::partview::PartitionRow>, String>,
        at: NaiveDateTime,
    },
    /// The cluster's reservations (maintenance windows) with its clock.
    Reservations {
        result: Box<Result<crate::slurm::reservation::Reservations, String>>,
        at: NaiveDateTime,
    },
    /// The budget read for `:usage`, finished at `at`.
    Usage {
        days: u32,
        result: Box<Result<crate::slurm::usage::UsageReport, String>>,
        at: NaiveDateTime,
    },
    /// The user's recent jobs with their waits (similar jobs' waits beside an estimate).
    Waits {
        result: Result<Vec<crate::slurm::usage::AcctJob>, String>,
        at: NaiveDateTime,
    },
}

/// Launching: the form's facts and answers, submissions, the registry of launches,
/// retries, `A` and `L`.
#[derive(Debug, Clone)]
pub enum LaunchMsg {
    /// The retry check ran: what it did and the launches of this cluster afterwards.
    Retries(Result<(Vec<RetryEvent>, Vec<Entry>), String>),
    /// Partitions, accounts and Pyxis for the launch form.
    LaunchFacts(Result<crate::launch::ClusterFacts, String>),
    /// The scheduler's `sbatch --test-only` answer.
    TestOnly(Result<crate::launch::stage::Estimate, String>),
    Submitted(Box<Result<crate::launch::submit::Submitted, String>>),
    /// Jobs from the launch registry, as sacct knows them (kept visible after squeue).
    RegistryJobs(Result<Vec<Job>, String>),
    /// The launches of this cluster as this laptop's registry holds them, read at start
    /// and after a submission (no remote read): `L`, badges and sweeps need no retry check.
    Launches(Vec<Entry>),
    /// `A`'s answer: what was done (a line for the status bar), or why not.
    Adopted {
        id: JobId,
        result: Result<String, String>,
    },
    /// A finished launch's staged spec and use, for `L`.
    Relaunch {
        id: JobId,
        result: Box<Result<crate::launch::relaunch::Relaunchable, String>>,
    },
    /// An array's tasks with what `L` reads of the selected task, for `L` on an array.
    Rerun {
        id: JobId,
        result: Box<crate::launch::relaunch::RerunRead>,
    },
    /// What could be recovered of a job slurmdash did not launch, for `L`.
    Recovered {
        id: JobId,
        result: Box<Result<crate::launch::relaunch::Recovered, String>>,
    },
    /// The launch form's values were written as a template file (or why not).
    TemplateSaved {
        name: String,
        spec: Box<crate::launch::LaunchSpec>,
        result: Result<std::path::PathBuf, crate::config::template_files::SaveError>,
    },
    /// A batch script the launch form asked for (`o`) was read on this machine (its bytes,
    /// or why not).
    ScriptRead {
        path: String,
        result: Result<Vec<u8>, String>,
    },
}

/// One job's reads and actions: its detail and logs, use, triage, live samples,
/// tunnels, ops, edits, `:sooner`.
#[derive(Debug, Clone)]
pub enum JobMsg {
    Detail {
        id: JobId,
        result: Box<Result<(JobDetail, DetailSource), String>>,
    },
    Tail(TailEvent),
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
    /// A finished job's triage; `Ok(None)` when it turned out not to have finished.
    Triaged {
        id: JobId,
        result: Box<Result<Option<crate::payload::TriageReport>, String>>,
    },
    /// The scheduler's estimates for the changes `:sooner` checks.
    SoonerChecked {
        id: JobId,
        result: Result<Vec<crate::slurm::why::Alternative>, String>,
        at: NaiveDateTime,
    },
    /// A change `:sooner N` applied (`words`: what it was), or why Slurm refused it.
    SoonerApplied {
        id: JobId,
        words: String,
        result: Result<(), String>,
    },
    /// A forward asked for is open (on this local port) or could not be.
    Forwarded {
        id: JobId,
        node: String,
        port: u16,
        path: String,
        result: Result<u16, String>,
    },
    /// A finished job's use, read with its detail (one sacct with every step).
    JobUse {
        id: JobId,
        result: Box<crate::slurm::eff::JobUse>,
    },
    /// One page of a `:history` read (or why it stopped).
    History {
        generation: u64,
        result: Box<Result<crate::payload::Page, String>>,
    },
    /// A live sample of a running job (sstat, nvidia-smi on its nodes), taken at `at`.
    Live {
        id: JobId,
        result: Box<Result<crate::slurm::live::LiveSample, String>>,
        at: NaiveDateTime,
    },
    /// A job top sample of a running job (its processes on each node), answered at `at`.
    Top {
        id: JobId,
        result: Box<Result<crate::slurm::top::TopSample, String>>,
        at: NaiveDateTime,
    },
}

impl Msg {
    /// Says which cluster every job id the message carries is on. A queue record the
    /// worker labelled already (a reused one, shared with the refresh before) is not
    /// written to: writing would copy it.
    pub fn set_cluster(&mut self, ix: u16) {
        let f = &mut |id: &mut JobId| id.set_cluster(ix);
        match self {
            Msg::Poll(m) => m.set_cluster(ix),
            Msg::Insight(m) => m.set_cluster(ix),
            Msg::Launch(m) => m.set_cluster(ix),
            Msg::Job(m) => m.set_cluster(ix),
            Msg::Grep(r) => {
                r.req.ids.iter_mut().for_each(&mut *f);
                r.files.iter_mut().for_each(|x| f(&mut x.job));
            }
            Msg::Cluster(_, m) => m.set_cluster(ix),
            Msg::Key(_)
            | Msg::Mouse(_)
            | Msg::Resize(..)
            | Msg::Tick(_)
            | Msg::Files(_)
            | Msg::Note(_)
            | Msg::Ran(_)
            | Msg::ClusterAdded(_)
            | Msg::Custom(_) => {}
        }
    }

    /// Gives every queue row the message brings its cluster's name (when the dashboard
    /// shows several), leaving a row that has it already untouched (see `set_cluster`).
    pub fn set_cluster_name(&mut self, name: &SharedStr) {
        let jobs = |jobs: &mut Vec<Job>| {
            jobs.iter_mut()
                .filter(|j| j.cluster != *name)
                .for_each(|j| j.cluster = name.clone());
        };
        match self {
            Msg::Poll(PollMsg::Queue(r)) => {
                if let Ok(js) = &mut r.result {
                    jobs(js);
                }
            }
            Msg::Launch(LaunchMsg::RegistryJobs(Ok(js))) => jobs(js),
            Msg::Cluster(_, m) => m.set_cluster_name(name),
            _ => {}
        }
    }

    /// A refresh that brought only the queue (or its error).
    pub fn queue(result: Result<Vec<Job>, String>, at: NaiveDateTime, took: Duration) -> Msg {
        Msg::Poll(PollMsg::Queue(Box::new(crate::payload::Refresh {
            result,
            extra: None,
            conn: None,
            at,
            took,
        })))
    }
}

/// Labels the rows of `jobs` with cluster `ix`, leaving those labelled already untouched (a
/// reused record, shared with the refresh before: writing would copy it).
fn label_rows(jobs: &mut [Job], ix: u16) {
    jobs.iter_mut()
        .filter(|j| j.id.cluster() != ix)
        .for_each(|j| j.id.set_cluster(ix));
}

/// Labels the ids of sacct's answer about jobs that left squeue with cluster `ix`.
fn label_extra(e: &mut crate::payload::PollExtra, ix: u16) {
    let f = &mut |id: &mut JobId| id.set_cluster(ix);
    e.finished
        .iter_mut()
        .filter_map(|d| d.id.as_mut())
        .for_each(&mut *f);
    e.asked.iter_mut().for_each(f);
}

impl PollMsg {
    /// Says which cluster every job id the message carries is on.
    pub fn set_cluster(&mut self, ix: u16) {
        match self {
            PollMsg::Queue(r) => {
                if let Ok(js) = &mut r.result {
                    label_rows(js, ix);
                }
                if let Some(e) = &mut r.extra {
                    label_extra(e, ix);
                }
            }
            PollMsg::FinalStates(e) => label_extra(e, ix),
            PollMsg::PollDue
            | PollMsg::Conn { .. }
            | PollMsg::SiteLimit(_)
            | PollMsg::SlurmVersion(_)
            | PollMsg::PriorityCalcPeriod(_)
            | PollMsg::StateCheck { .. }
            | PollMsg::RemoteStats { .. } => {}
        }
    }
}

impl InsightMsg {
    /// Says which cluster every job id the message carries is on.
    pub fn set_cluster(&mut self, ix: u16) {
        match self {
            InsightMsg::Pending { result, .. } => {
                if let Ok(b) = result.as_mut() {
                    b.ids_mut().for_each(|id| id.set_cluster(ix));
                }
            }
            InsightMsg::Limits(_)
            | InsightMsg::Partitions { .. }
            | InsightMsg::Reservations { .. }
            | InsightMsg::Usage { .. }
            | InsightMsg::Waits { .. } => {}
        }
    }
}

impl LaunchMsg {
    /// Says which cluster every job id the message carries is on.
    pub fn set_cluster(&mut self, ix: u16) {
        match self {
            LaunchMsg::Relaunch { id, .. }
            | LaunchMsg::Adopted { id, .. }
            | LaunchMsg::Recovered { id, .. }
            | LaunchMsg::Rerun { id, .. } => id.set_cluster(ix),
            LaunchMsg::RegistryJobs(Ok(js)) => label_rows(js, ix),
            LaunchMsg::RegistryJobs(Err(_))
            | LaunchMsg::Retries(_)
            | LaunchMsg::Launches(_)
            | LaunchMsg::LaunchFacts(_)
            | LaunchMsg::TestOnly(_)
            | LaunchMsg::Submitted(_)
            | LaunchMsg::TemplateSaved { .. }
            | LaunchMsg::ScriptRead { .. } => {}
        }
    }
}

impl JobMsg {
    /// Says which cluster every job id the message carries is on.
    pub fn set_cluster(&mut self, ix: u16) {
        let f = &mut |id: &mut JobId| id.set_cluster(ix);
        match self {
            JobMsg::Detail { id, result } => {
                f(id);
                if let Ok((d, _)) = result.as_mut() {
                    d.id.iter_mut().for_each(f);
                }
            }
            JobMsg::Tail(ev) => f(&mut ev.job),
            JobMsg::OpDone { op, result } => {
                op.ids.iter_mut().for_each(&mut *f);
                if let Ok(r) = result {
                    r.op.ids.iter_mut().for_each(&mut *f);
                    r.outcomes.iter_mut().for_each(|(id, _)| f(id));
                }
            }
            JobMsg::Edited { id, result, .. } => {
                f(id);
                if let Ok(v) = result {
                    v.iter_mut().for_each(|(id, _)| f(id));
                }
            }
            JobMsg::Triaged { id, .. }
            | JobMsg::Forwarded { id, .. }
            | JobMsg::Live { id, .. }
            | JobMsg::Top { id, .. }
            | JobMsg::SoonerChecked { id, .. }
            | JobMsg::SoonerApplied { id, .. } => f(id),
            JobMsg::JobUse { id, result } => {
                f(id);
                result.detail.id.iter_mut().for_each(f);
            }
            JobMsg::History { result, .. } => {
                if let Ok(p) = result.as_mut() {
                    p.jobs
                        .iter_mut()
                        .filter_map(|u| u.detail.id.as_mut())
                        .for_each(f);
                }
            }
        }
    }
}
