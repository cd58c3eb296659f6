//! The `namesrv` binary: parses the command line and runs the name server until SIGTERM/SIGINT.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;
use namesrv::Args;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let args = Args::parse();
    let (config, controller) = match args.resolve().and_then(|(config, warnings)| {
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        args.controller(&config).map(|c| (config, c))
    }) {
        Ok(resolved) => resolved,
        Err(e) => {
            eprintln!("namesrv: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = namesrv::run_with_controller(config, controller, |addr| {
        // One line on stdout so scripts and tests can learn the port when they passed port 0.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "namesrv listening on {addr}");
        let _ = out.flush();
        remoting::sd_notify::notify_ready(&format!("listening on {addr}"));
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("namesrv: {e}");
            ExitCode::FAILURE
        }
    }
}
