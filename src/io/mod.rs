//! Talking to a cluster, returning plain data. Shared by the dashboard's workers and the
//! command line; nothing here knows about tasks, messages or the UI.
//!
//! Most functions are one round trip: one remote exec (several Slurm commands batched in it
//! count as one) or a few run side by side, at most followed by a fallback read when the
//! first finds nothing (`history::recover`, `rerun::read`). `connect` sets up the transport.
//! Four are workflows of several round trips in a row, writing local records between them:
//! `submit::submit` (check inputs, convert the image, stage, submit, record),
//! `retry::check` (the guards' chains, sacct, then classify and resubmit each failure),
//! `guard_sync::sync` (the chains, then what Slurm says of the jobs they claim) and
//! `triage::triage_job` (the log tails, then status.json where it may be); `keep::keep`
//! asks who the login user is once per cluster before its read.

pub mod adopt;
pub mod code;
pub mod connect;
pub mod custom;
pub mod facts;
pub mod fetch;
pub mod grep;
pub mod guard_sync;
pub mod history;
pub mod keep;
pub mod live;
pub mod ops;
pub mod partitions;
pub mod pending;
pub mod poll;
pub mod rerun;
pub mod reservation;
pub mod retry;
pub mod site_limit;
pub mod stage;
pub mod submit;
pub mod top;
pub mod triage;
pub mod usage;
pub mod why;
