//! Background work: receives commands, sends messages. Never touches UI state.

pub mod fetch;
pub mod files;
pub mod flight;
pub mod guard_sync;
pub mod history;
pub mod hub;
pub mod keep;
pub mod launch;
pub mod live;
pub mod ops;
pub mod partitions;
pub mod pending;
pub mod poll;
pub mod retry;
pub mod tailer;
pub mod triage;
pub mod usage;
