//! `broker --config FILE`: loads the config (TOML or .properties), reports unused keys, runs the broker.
//! `broker --import-apache-store DIR --target DIR [--force]`: writes a one-shard store of ours from a
//! stopped Apache RocketMQ store (docs/migration.md) and exits.

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
    #[arg(
        short = 'c',
        long = "config",
        required_unless_present = "import_apache_store"
    )]
    config: Option<PathBuf>,
    /// Import a stopped Apache RocketMQ store (its storePathRootDir) into --target, then exit.
    #[arg(
        long = "import-apache-store",
        value_name = "DIR",
        requires = "target",
        conflicts_with = "config"
    )]
    import_apache_store: Option<PathBuf>,
    /// The storePathRootDir the import creates (absent or empty).
    #[arg(long = "target", value_name = "DIR", requires = "import_apache_store")]
    target: Option<PathBuf>,
    /// Import although the Apache store's `abort` file says it did not stop cleanly.
    #[arg(long = "force", requires = "import_apache_store")]
    force: bool,
}

/// `--import-apache-store`: prints the report, or the refusal, and exits.
fn import(source: PathBuf, target: PathBuf, force: bool) -> ! {
    let opts = broker::import::ImportOptions {
        source,
        target,
        force,
    };
    match broker::import::import_apache_store(&opts) {
        Ok(report) => {
            print!("{report}");
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("broker: import refused: {e}");
            std::process::exit(2);
        }
    }
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
    let (Some(config), None) = (args.config, args.import_apache_store.clone()) else {
        let (Some(source), Some(target)) = (args.import_apache_store, args.target) else {
            eprintln!("broker: --config FILE, or --import-apache-store DIR --target DIR");
            std::process::exit(2);
        };
        import(source, target, args.force);
    };
    let (cfg, issues) = match broker::config::load(&config) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("broker: {e}");
            std::process::exit(2);
        }
    };
    init_logging(&cfg.log_level);
    match storage::fault::setup_from_env() {
        Ok(n) => {
            if n > 0 {
                tracing::warn!(
                    "{n} storage fail points configured from FAILPOINTS or FAILPOINTS_FILE (test build)"
                );
            }
            if let Some(path) = std::env::var_os("FAILPOINTS_FILE").filter(|p| !p.is_empty()) {
                tracing::warn!(
                    "storage fail points follow {} (FAILPOINTS_FILE, test build)",
                    std::path::Path::new(&path).display()
                );
            }
        }
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
