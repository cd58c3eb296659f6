//! The `console` binary: parses the command line and serves the web console on one glommio executor.

use std::process::ExitCode;

use clap::Parser;
use console::cli::Cli;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    if cli.access_key.is_some() != cli.secret_key.is_some() {
        eprintln!("console: give both --accessKey and --secretKey, or neither");
        return ExitCode::from(2);
    }
    let executor = match glommio::LocalExecutorBuilder::default()
        .name("console")
        .make()
    {
        Ok(e) => e,
        Err(e) => {
            eprintln!("console: cannot start the I/O executor: {e}");
            return ExitCode::FAILURE;
        }
    };
    let listen = cli.listen;
    match executor.run(console::serve(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("console: cannot listen on {listen}: {e}");
            ExitCode::FAILURE
        }
    }
}
