use std::process::ExitCode;

use clap::Parser;

use slurmdash::cli::{self, Cli};

fn main() -> ExitCode {
    slurmdash::memory::tune();
    // Run by ssh as its SSH_ASKPASS during an interactive login: ask, answer, exit.
    if let Some(state) = std::env::var_os(slurmdash::remote::askpass::ENV) {
        let prompt = std::env::args().nth(1).unwrap_or_default();
        return slurmdash::remote::askpass::run(state.into(), prompt);
    }
    if let Err(e) = color_eyre::install() {
        eprintln!("slurmdash: cannot install the error handler: {e}");
    }
    let cli = Cli::parse();
    if let Some(path) = cli.log.as_deref().filter(|p| !p.as_os_str().is_empty()) {
        if let Err(e) = slurmdash::debug_log::start(path) {
            eprintln!(
                "slurmdash: cannot write the log file {}: {e}",
                path.display()
            );
            return ExitCode::FAILURE;
        }
        // Redacted like every line (see debug_log): a URL or token on the command line
        // does not reach the file.
        tracing::info!(
            version = env!("CARGO_PKG_VERSION"),
            args = ?std::env::args().skip(1).collect::<Vec<_>>(),
            "slurmdash started"
        );
    }
    // One thread: the work is waiting on SSH and the terminal, never computing in parallel,
    // and each extra worker thread costs memory (its stack) for nothing.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("slurmdash: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "slurmdash stopped with an error");
            eprintln!("slurmdash: {e:#}");
            ExitCode::FAILURE
        }
    }
}
