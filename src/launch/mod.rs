//! Launching jobs the way NVIDIA's TAO Slurm tooling does: a spec (the form's values), pure
//! validation against the cluster's partitions, the rendered sbatch script, staging the job
//! directory on the login node and submitting. `submit` is the one path used by both the
//! command line and the dashboard's form.

pub mod adopt;
pub mod code;
pub mod container;
pub mod directives;
pub mod facts;
pub mod guard;
pub mod outlook;
pub mod quote;
pub mod relaunch;
pub mod rerun;
pub mod resume;
pub mod sbatch_env;
pub mod script;
pub mod session;
pub mod spec;
pub mod stage;
pub mod steps;
pub mod submit;
pub mod sweep;
pub mod validate;

pub use facts::ClusterFacts;
pub use spec::LaunchSpec;
pub use validate::{validate, Field, Plan, Problem};
