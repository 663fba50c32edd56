//! What `L` reads of a finished job to launch it again (a launch's staged spec, or what
//! could be recovered of a job slurmdash did not launch) and of an array to rerun its
//! unfinished tasks: the payloads of `Msg::Relaunch`, `Msg::Recovered` and `Msg::Rerun`.

/// What `L` reads to launch a finished launch again.
#[derive(Debug, Clone, PartialEq)]
pub struct Relaunchable {
    /// The spec staged in the job directory (`specs/launch.json`).
    pub spec: super::LaunchSpec,
    /// sha256 of that file as read now.
    pub spec_sha256: String,
    /// The job's use, for the suggested values.
    pub used: Option<crate::slurm::eff::JobUse>,
}

/// What `L` could recover of a job slurmdash did not launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    pub used: crate::slurm::eff::JobUse,
    pub script: Option<String>,
    /// Where the script came from, or why there is none.
    pub script_from: String,
    /// Who you are on the cluster (`id -un`), to tell whether the job is yours.
    pub me: Option<String>,
}

/// An array's tasks as sacct records them (every step), and the cluster's MaxArraySize: what
/// a rerun of its unfinished tasks is planned from (`launch::rerun::plan`).
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayRead {
    pub tasks: Vec<crate::slurm::eff::JobUse>,
    pub max_array_size: u32,
}

/// What `L` on an array reads: the array's tasks, and what `L` reads of the selected job
/// (a launch's staged spec and use, or what could be recovered of a job slurmdash did not
/// launch).
#[derive(Debug, Clone, PartialEq)]
pub struct RerunRead {
    pub array: Result<ArrayRead, String>,
    pub source: RerunSource,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RerunSource {
    /// A launch of slurmdash's: its job directory and what `io::history::relaunch` read.
    Launch {
        job_dir: String,
        result: Box<Result<Relaunchable, String>>,
    },
    Recovered(Box<Result<Recovered, String>>),
}
