//! Background work: receives commands, sends messages. Never touches UI state.

pub mod fetch;
pub mod launch;
pub mod ops;
pub mod retry;
pub mod tailer;
pub mod triage;
