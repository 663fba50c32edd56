//! The signals that end slurmdash the way `q` does: SIGHUP (the terminal window closed),
//! SIGTERM and SIGINT. Whoever receives one returns normally, so the SSH master is closed
//! and temporary files are removed on the way out.

use color_eyre::eyre::{Result, WrapErr};

/// SIGHUP, SIGTERM and SIGINT, as one stream of "stop now".
pub struct Stop {
    hup: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Stop {
    pub fn new() -> Result<Stop> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Stop {
            hup: signal(SignalKind::hangup()).wrap_err("listening for SIGHUP")?,
            term: signal(SignalKind::terminate()).wrap_err("listening for SIGTERM")?,
            int: signal(SignalKind::interrupt()).wrap_err("listening for SIGINT")?,
        })
    }

    /// `work`'s result, unless one of these signals arrives first (then its name and
    /// number, and `work` is dropped).
    pub async fn or_stop<T>(
        &mut self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, (&'static str, i32)> {
        tokio::select! {
            r = work => Ok(r),
            s = self.recv() => Err(s),
        }
    }

    /// The name and number of the next of these signals to arrive.
    pub async fn recv(&mut self) -> (&'static str, i32) {
        tokio::select! {
            _ = self.hup.recv() => ("SIGHUP", libc::SIGHUP),
            _ = self.term.recv() => ("SIGTERM", libc::SIGTERM),
            _ = self.int.recv() => ("SIGINT", libc::SIGINT),
        }
    }
}

/// Runs a command-line subcommand until it ends or one of the signals arrives. On a signal
/// the subcommand is dropped (its SSH master is closed and its temporary directory removed
/// as its transport is dropped) and the exit code is 128 + the signal, as a shell reports it.
pub async fn until_stopped<F>(work: F) -> Result<std::process::ExitCode>
where
    F: std::future::Future<Output = Result<std::process::ExitCode>>,
{
    let mut stop = Stop::new()?;
    tokio::select! {
        r = work => r,
        (name, num) = stop.recv() => {
            eprintln!("slurmdash: stopped by {name}");
            Ok(std::process::ExitCode::from(128 + num as u8))
        }
    }
}
