use std::process::ExitCode;

use clap::Parser;

use slurmdash::cli::{self, Cli};

fn main() -> ExitCode {
    if let Err(e) = color_eyre::install() {
        eprintln!("slurmdash: cannot install the error handler: {e}");
    }
    let cli = Cli::parse();
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
            eprintln!("slurmdash: {e:#}");
            ExitCode::FAILURE
        }
    }
}
