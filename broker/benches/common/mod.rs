//! The in-process broker of the allocation benches: one shard with its own temp store on a free
//! loopback port, started on a thread of its own, and a blocking client connection to it.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    // The broker also listens on port - 2 (RocketMQ's fast port) and port + 1 (HA).
    loop {
        let port = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if port > 2048
            && port < u16::MAX
            && TcpListener::bind((Ipv4Addr::UNSPECIFIED, port - 2)).is_ok()
            && TcpListener::bind((Ipv4Addr::UNSPECIFIED, port + 1)).is_ok()
        {
            return port;
        }
    }
}

/// Starts the broker (CommitLog segments of `commitlog_segment` bytes) and connects to it; the temp
/// dir holding its store lives as long as the returned guard.
pub fn start_broker(commitlog_segment: u64) -> (tempfile::TempDir, TcpStream) {
    let store = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = store.path().join("broker.toml");
    std::fs::write(
        &config,
        format!(
            "brokerName = \"broker-a\"\nbrokerClusterName = \"AllocCluster\"\nbrokerIP1 = \"127.0.0.1\"\n\
             listenPort = {port}\nstorePathRootDir = \"{}\"\nshardCount = 1\nnamesrvAddr = \"\"\n\
             mappedFileSizeCommitLog = {commitlog_segment}\n",
            store.path().join("store").display()
        ),
    )
    .unwrap();
    let (cfg, _) = broker::config::load(&config).unwrap();
    std::thread::spawn(move || broker::run(cfg));
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let started = Instant::now();
    let stream = loop {
        match TcpStream::connect(addr) {
            Ok(s) => break s,
            Err(_) if started.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("broker did not start: {e}"),
        }
    };
    stream.set_nodelay(true).unwrap();
    (store, stream)
}
