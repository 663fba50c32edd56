//! What flows through the event loop: messages in (keys, ticks, worker results, `msg.rs`)
//! and commands out (work for the workers, `cmd.rs`). Key meanings live in
//! `keymap::Action`.

mod cmd;
mod msg;

pub use cmd::Cmd;
pub use msg::{InsightMsg, JobMsg, LaunchMsg, Msg, PollMsg};
