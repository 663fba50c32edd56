//! Talking to a cluster: each function makes one remote round trip (or sets up the
//! transport for one) and returns plain data. Shared by the dashboard's workers and the
//! command line; nothing here knows about tasks, messages or the UI.

pub mod connect;
pub mod facts;
pub mod fetch;
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
pub mod triage;
pub mod usage;
pub mod why;
