//! Background work: receives commands, sends messages. Never touches UI state.

pub mod fetch;
pub mod partitions;
pub mod pending;
pub mod poll;
pub mod tailer;
