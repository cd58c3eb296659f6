//! `loadgen produce | consume | e2e | null-broker | verify | transaction | orderly | retry-dlq | omb`: see
//! `loadgen --help`.

use clap::Parser;
use loadgen::cli::{Cli, Command};
use loadgen::executor::RunSpec;
use loadgen::report::Sides;

// loadgen shares the machine with the broker it measures: every cycle it saves goes to the broker.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    // ROCKETMQ_TLS_ENABLE=true: every connection over TLS (as Apache's clients with -Dtls.enable=true).
    if let Err(e) = remoting::tls::set_default_client_from_env() {
        eprintln!("loadgen: TLS: {e}");
        std::process::exit(2);
    }
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let result = match cli.command {
        Command::Produce(a) => loadgen::run::run(
            Sides::Produce,
            RunSpec {
                common: a.common,
                produce: Some(a.produce),
                consume: None,
            },
            command_line,
        )
        .map(|_| ()),
        Command::Consume(a) => loadgen::run::run(
            Sides::Consume,
            RunSpec {
                common: a.common,
                produce: None,
                consume: Some(a.consume),
            },
            command_line,
        )
        .map(|_| ()),
        Command::E2e(a) => loadgen::run::run(
            Sides::Both,
            RunSpec {
                common: a.common,
                produce: Some(a.produce),
                consume: Some(a.consume),
            },
            command_line,
        )
        .map(|_| ()),
        Command::NullBroker(a) => loadgen::null_broker::serve(a),
        Command::Verify(a) => loadgen::verify::run(a).and_then(|r| {
            if r.ok() {
                Ok(())
            } else {
                Err("acknowledged messages lost".into())
            }
        }),
        Command::Transaction(a) => {
            loadgen::workload::transaction::run(a).and_then(|r| verdict(r.ok, "transaction"))
        }
        Command::Orderly(a) => {
            loadgen::workload::orderly::run(a).and_then(|r| verdict(r.ok, "orderly"))
        }
        Command::Omb(a) => loadgen::omb::run(a, command_line).map(|_| ()),
        Command::RetryDlq(a) => {
            loadgen::workload::retry_dlq::run(a).and_then(|r| verdict(r.ok, "retry-dlq"))
        }
    };
    if let Err(e) = result {
        eprintln!("loadgen: {e}");
        std::process::exit(1);
    }
}

/// A workload's verdict as the exit status.
fn verdict(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what} verdict failed"))
    }
}
