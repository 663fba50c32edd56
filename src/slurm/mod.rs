//! The pure Slurm layer: argv builders, output parsers and the model they
//! produce. Nothing here does I/O.

pub mod batch;
pub mod command;
pub mod custom;
pub mod dependency;
pub mod deptree;
pub mod eff;
pub mod error;
pub mod fit;
pub mod hostlist;
pub mod jobid;
pub mod limits;
pub mod live;
pub mod logpath;
pub mod model;
pub mod ops;
pub mod parse;
pub mod partview;
pub mod pending;
pub mod ratelimit;
pub mod reason;
pub mod reservation;
pub mod shared;
pub mod shell;
pub mod state;
pub mod statecheck;
pub mod synth;
pub mod time;
pub mod timeline;
pub mod top;
pub mod usage;
pub mod why;

pub use error::ParseError;

/// `str::trim`, skipping the Unicode scan when both ends are plainly not
/// whitespace (the usual case for a Slurm field).
pub(crate) fn trim(s: &str) -> &str {
    let solid = |b: Option<&u8>| b.is_some_and(|&b| b > b' ' && b.is_ascii());
    let b = s.as_bytes();
    if solid(b.first()) && solid(b.last()) {
        s
    } else {
        s.trim()
    }
}
