//! Background work: receives commands, sends messages. Never touches UI state.

pub mod files;
pub mod flight;
pub mod hub;
pub mod launch;
pub mod local;
pub mod recorder;
pub mod tailer;
