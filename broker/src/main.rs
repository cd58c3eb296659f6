//! `broker --config FILE`: loads the config (TOML or .properties), reports unused keys, runs the broker.

use std::path::PathBuf;

use clap::Parser;

// Requests allocate and free many small buffers across a shard's tasks; glibc's malloc spent ~10% of
// the broker's CPU in S3 (bench/ab.sh measures the difference).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "broker", about = "RocketMQ-compatible thread-per-core broker")]
struct Args {
    /// Config file: flat TOML with RocketMQ key names, or a RocketMQ broker.properties.
    #[arg(short = 'c', long = "config")]
    config: PathBuf,
}

/// Logs go to stderr (the journal under systemd); RUST_LOG wins over the config's `logLevel`.
fn init_logging(log_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(log_level))
        .unwrap_or_else(|_| {
            eprintln!("broker: logLevel `{log_level}` is not a valid filter; using info");
            tracing_subscriber::EnvFilter::new("info")
        });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
}

fn main() {
    let args = Args::parse();
    let (cfg, issues) = match broker::config::load(&args.config) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("broker: {e}");
            std::process::exit(2);
        }
    };
    init_logging(&cfg.log_level);
    match storage::fault::setup_from_env() {
        Ok(0) => {}
        Ok(n) => tracing::warn!("{n} storage fail points configured from FAILPOINTS (test build)"),
        Err(e) => {
            eprintln!("broker: {e}");
            std::process::exit(2);
        }
    }
    for issue in issues {
        tracing::warn!("{issue}");
    }
    if let Err(e) = broker::start_tls(&cfg) {
        eprintln!("broker: {e}");
        std::process::exit(2);
    }
    if let Err(e) = broker::check_acl_at_start(&cfg) {
        eprintln!("broker: {e}");
        std::process::exit(2);
    }
    if let Err(e) = broker::run(cfg) {
        tracing::error!("{e}");
        eprintln!("broker: {e}");
        std::process::exit(1);
    }
}
