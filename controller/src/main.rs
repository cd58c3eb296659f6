//! The `controller` binary: reads its config file and runs one controller until SIGTERM/SIGINT.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use controller::ControllerConfig;

/// `controller` command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "controller",
    version,
    about = "RocketMQ 5-compatible controller (controller mode)"
)]
struct Args {
    /// Config file with Apache's ControllerConfig keys (`key = value`), as `mqcontroller -c`.
    #[arg(short = 'c', long = "config")]
    config: PathBuf,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let args = Args::parse();
    let config = match std::fs::read_to_string(&args.config)
        .map_err(|e| format!("{}: {e}", args.config.display()))
        .and_then(|text| ControllerConfig::from_file_text(&text))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("controller: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = controller::run(config, |addr| {
        // One line on stdout so scripts and tests know it serves.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "controller listening on {addr}");
        let _ = out.flush();
        remoting::sd_notify::notify_ready(&format!("listening on {addr}"));
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("controller: {e}");
            ExitCode::FAILURE
        }
    }
}
