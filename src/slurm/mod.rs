//! The pure Slurm layer: argv builders, output parsers and the model they
//! produce. Nothing here does I/O.

pub mod command;
pub mod error;
pub mod jobid;
pub mod logpath;
pub mod model;
pub mod parse;
pub mod state;
pub mod synth;
pub mod time;

pub use error::ParseError;
