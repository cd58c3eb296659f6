//! The `mqadmin` binary: parses the command line, runs the command on a glommio executor, prints a
//! table (or JSON with `--json`); errors go to stderr with exit status 1.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use mqadmin::cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse_from(mqadmin::ops_cmds::rewrite_two_letter_flags(std::env::args()));
    match mqadmin::credentials::from_environment() {
        Ok(credentials) => mqadmin::admin::set_default_credentials(credentials),
        Err(e) => {
            eprintln!("mqadmin: credentials: {e}");
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = mqadmin::tls::from_environment() {
        eprintln!("mqadmin: TLS: {e}");
        return ExitCode::FAILURE;
    }
    let json = cli.json;
    let timeout = Duration::from_millis(cli.timeout_ms.max(1));
    let executor = match glommio::LocalExecutorBuilder::default()
        .name("mqadmin")
        .make()
    {
        Ok(e) => e,
        Err(e) => {
            eprintln!("mqadmin: cannot start the I/O executor: {e}");
            return ExitCode::FAILURE;
        }
    };
    match executor.run(mqadmin::run(cli.command, timeout)) {
        Ok(report) => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(report.render(json).as_bytes());
            let _ = out.flush();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mqadmin: {e}");
            ExitCode::FAILURE
        }
    }
}
