use std::process::ExitCode;

use clap::Parser;

use slurmdash::cli::{self, Cli};

fn main() -> ExitCode {
    if let Err(e) = color_eyre::install() {
        eprintln!("slurmdash: cannot install the error handler: {e}");
    }
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
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
