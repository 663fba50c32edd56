//! The files view's work orders and answers, as `Cmd::Files` and `Msg::Files` carry them.

use std::path::PathBuf;

use super::list::Listing;
use crate::slurm::model::JobId;

#[derive(Debug, Clone, PartialEq)]
pub enum FilesCmd {
    /// One level of `dir`.
    List { job: JobId, dir: Vec<u8>, seq: u64 },
    /// The start of a file.
    Preview { job: JobId, path: Vec<u8>, seq: u64 },
    /// The size of a directory tree, before fetching it.
    Plan {
        job: JobId,
        src: Vec<u8>,
        dest: PathBuf,
    },
    /// Copy a file or a directory to this machine.
    Fetch {
        job: JobId,
        src: Vec<u8>,
        dir: bool,
        dest: PathBuf,
    },
    /// Stop the copy under way (the partial file stays, and a later fetch resumes it).
    Stop { job: JobId },
}

impl FilesCmd {
    pub fn job_mut(&mut self) -> &mut JobId {
        match self {
            FilesCmd::List { job, .. }
            | FilesCmd::Preview { job, .. }
            | FilesCmd::Plan { job, .. }
            | FilesCmd::Fetch { job, .. }
            | FilesCmd::Stop { job } => job,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum FilesMsg {
    Listed {
        seq: u64,
        result: Result<Listing, String>,
    },
    /// The file's size and its first bytes.
    Previewed {
        seq: u64,
        result: Result<(u64, Vec<u8>), String>,
    },
    /// The bytes a directory fetch would copy.
    Planned {
        src: Vec<u8>,
        dest: PathBuf,
        result: Result<u64, String>,
    },
    Progress {
        done: u64,
        total: u64,
        file: String,
    },
    /// The copy ended: a summary (bytes, time, rate) or what failed.
    Fetched {
        dest: PathBuf,
        result: Result<String, String>,
    },
}
