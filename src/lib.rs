//! slurmdash: watch and drive Slurm jobs on a remote cluster over SSH.

pub mod action;
pub mod app;
pub mod cli;
pub mod config;
pub mod dashboard;
pub mod debug_log;
pub mod jobfiles;
pub mod kept_scripts;
pub mod keymap;
pub mod launch;
pub mod layout;
pub mod logview;
pub mod memory;
pub mod notify;
pub mod payload;
pub mod queue;
pub mod registry;
pub mod remote;
pub mod retry;
pub mod signals;
pub mod slurm;
pub mod theme;
pub mod triage;
pub mod tui;
pub mod ui;
pub mod worker;
