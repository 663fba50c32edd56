//! Background work: receives commands, sends messages. Never touches UI state.

pub mod fetch;
pub mod tailer;
pub mod triage;
