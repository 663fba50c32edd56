//! The tests against the local Slurm clusters (`scripts/dev-cluster up`), one module per
//! feature, built as one binary: each module was a test binary of its own, and every one
//! compiled `common` again and linked the whole crate (68 links of a clean build). nextest
//! still runs each test in a process of its own; `scripts/test-all` and
//! `.config/nextest.toml` pick tests by module (`test(/^pending_cluster::/)`).
//! Run one module: `cargo nextest run --test cluster -E 'test(/^pending_cluster::/)'`.

mod common;
mod guard_helpers;

mod actions;
mod adopt_cluster;
mod answers_default;
mod bastion_login;
mod budget_cluster;
mod chain_trust;
mod cli_cluster;
mod cluster_switch;
mod cmdlog_e2e;
mod cmds;
mod code_snapshot_cluster;
mod containers_cluster;
mod debug_log;
mod deps_cluster;
mod doctor_failover;
mod eff_cluster;
mod events_e2e;
mod exit_cleanup;
mod folded_arrays;
mod grep_e2e;
mod history_e2e;
mod job_files;
mod job_forward;
mod job_shell;
mod kept_script_cluster;
mod launch_app;
mod launch_cluster;
mod launch_multinode;
mod launch_timeout;
mod launch_tui;
mod live_cluster;
mod log_flood;
mod log_stream;
mod log_tail;
mod login_2fa;
mod login_refused;
mod login_shells;
mod multi_cluster;
mod mux_sessions;
mod odd_records;
mod overflow;
mod pending_cluster;
mod pending_e2e;
mod progress_e2e;
mod reconnect;
mod rerun_cluster;
mod resume_cluster;
mod retry;
mod retry_guard;
mod retry_guard_node;
mod retry_node_fail;
mod retry_requeue;
mod rpc_cost_cluster;
mod session_cluster;
mod shared_cluster;
mod shared_master;
mod sooner_tui;
mod submit_interrupt;
mod submit_script_cluster;
mod sweep_cluster;
mod templates_cluster;
mod top_e2e;
mod totp_login;
mod transport;
mod triage_cluster;
mod tui_e2e;
mod usage_cluster;
mod why_cluster;
