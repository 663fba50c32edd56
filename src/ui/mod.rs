//! Drawing. Every pane only reads state.

pub mod detail;
pub mod log;
pub mod queue;
pub mod theme;
