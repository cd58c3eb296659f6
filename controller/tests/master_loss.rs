//! How the controller notices that a master is gone: its heartbeat connection closing (its process
//! killed: the kernel closes its sockets) elects at once, as Apache's onBrokerChannelClose; a master
//! that goes silent with its connection open (a partition, a hung process) keeps the role until its
//! heartbeat timeout, and is replaced when that timeout ends, not at the leader's next scan. One
//! controller process per test; each test's timeout and scan interval leave only one explanation for
//! the election it sees.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use controller::raft::peer_client::PeerClient;
use protocol::{request_code, RemotingCommand};

#[path = "../../broker/tests/common/ports.rs"]
#[allow(dead_code)]
mod ports;

const RPC: Duration = Duration::from_secs(5);

struct Controller {
    _dir: tempfile::TempDir,
    addr: String,
    child: Child,
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One controller process scanning for inactive brokers every `scan_ms`.
fn start(scan_ms: u64) -> Controller {
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("127.0.0.1:{}", ports::free_port());
    let conf = dir.path().join("controller.conf");
    std::fs::write(
        &conf,
        format!(
            "controllerDLegerGroup = test\ncontrollerDLegerPeers = n0-{addr}\n\
             controllerDLegerSelfId = n0\ncontrollerStorePath = {}\n\
             scanNotActiveBrokerInterval = {scan_ms}\n",
            dir.path().join("store").display()
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_controller"))
        .arg("-c")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Controller {
        _dir: dir,
        addr,
        child,
    }
}

fn req(code: i32, fields: &[(&str, String)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(code);
    for (k, v) in fields {
        r.set_ext(k, v);
    }
    r
}

/// One broker's connection to the controller, kept open between requests.
async fn ask(client: &mut PeerClient, request: RemotingCommand) -> RemotingCommand {
    client.call(request, RPC).await.unwrap()
}

fn heartbeat(id: u64, timeout_ms: u64) -> RemotingCommand {
    req(
        request_code::BROKER_HEARTBEAT,
        &[
            ("clusterName", "c".into()),
            ("brokerName", "broker-a".into()),
            ("brokerAddr", format!("127.0.0.1:{}", 1000 + id)),
            ("brokerId", id.to_string()),
            ("epoch", "1".into()),
            ("maxOffset", "100".into()),
            ("heartbeatTimeoutMills", timeout_ms.to_string()),
        ],
    )
}

async fn master(addr: &str) -> Option<u64> {
    let mut c = PeerClient::new(addr.to_string());
    let r = ask(
        &mut c,
        req(
            request_code::CONTROLLER_GET_REPLICA_INFO,
            &[("brokerName", "broker-a".into())],
        ),
    )
    .await;
    assert_eq!(r.code, 0, "{r:?}");
    r.ext("masterBrokerId").map(|m| m.parse().unwrap())
}

/// Waits for the raft leader, then brokers 1, 2 and 3 of broker-a, each on its own connection (kept
/// open), heartbeating with `timeout_ms`; 1 elected master with SyncStateSet {1, 2, 3}.
async fn group_of_three(addr: &str, timeout_ms: u64) -> Vec<PeerClient> {
    let addr = addr.to_string();
    let start = Instant::now();
    loop {
        let mut c = PeerClient::new(addr.clone());
        let leads = c
            .call(req(request_code::CONTROLLER_GET_METADATA_INFO, &[]), RPC)
            .await
            .ok()
            .is_some_and(|r| r.ext("isLeader") == Some("true"));
        if leads {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no raft leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Brokers 1, 2 and 3, each on its own connection.
    let mut brokers: Vec<PeerClient> = (0..3).map(|_| PeerClient::new(addr.clone())).collect();
    for (i, b) in brokers.iter_mut().enumerate() {
        let id = i as u64 + 1;
        let broker_addr = format!("127.0.0.1:{}", 1000 + id);
        let r = ask(
            b,
            req(
                request_code::CONTROLLER_APPLY_BROKER_ID,
                &[
                    ("clusterName", "c".into()),
                    ("brokerName", "broker-a".into()),
                    ("appliedBrokerId", id.to_string()),
                    ("registerCheckCode", format!("{broker_addr};{id}")),
                ],
            ),
        )
        .await;
        assert_eq!(r.code, 0, "apply {id}: {r:?}");
        assert_eq!(ask(b, heartbeat(id, timeout_ms)).await.code, 0);
    }
    let r = ask(
        &mut brokers[0],
        req(
            request_code::CONTROLLER_ELECT_MASTER,
            &[
                ("clusterName", "c".into()),
                ("brokerName", "broker-a".into()),
                ("brokerId", "1".into()),
            ],
        ),
    )
    .await;
    assert_eq!((r.code, r.ext("masterBrokerId")), (0, Some("1")), "{r:?}");
    let mut alter = req(
        request_code::CONTROLLER_ALTER_SYNC_STATE_SET,
        &[
            ("brokerName", "broker-a".into()),
            ("masterBrokerId", "1".into()),
            ("masterEpoch", "1".into()),
        ],
    );
    alter.set_body(
        serde_json::json!({"syncStateSet": [1, 2, 3], "syncStateSetEpoch": 1}).to_string(),
    );
    let r = ask(&mut brokers[0], alter).await;
    assert_eq!(r.code, 0, "{r:?}");
    brokers
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The heartbeat timeout is 30 s: only the close can explain a quick election.
#[test]
fn a_closed_heartbeat_connection_elects_at_once_and_a_silent_open_one_does_not() {
    const SCAN_MS: u64 = 200;
    const HEARTBEAT_TIMEOUT_MS: u64 = 30_000;
    let controller = start(SCAN_MS);
    runtime().block_on(async {
        let addr = controller.addr.clone();
        let mut brokers = group_of_three(&addr, HEARTBEAT_TIMEOUT_MS).await;

        // Master 1 goes silent with its connection open (as behind a partition): still master
        // after many scans, since its 30 s timeout has not passed.
        tokio::time::sleep(Duration::from_millis(SCAN_MS * 8)).await;
        assert_eq!(master(&addr).await, Some(1));

        // Master 1's connection closes: a new master at once, from the SyncStateSet.
        let closed = Instant::now();
        drop(brokers.remove(0));
        let took = loop {
            if let Some(m) = master(&addr).await.filter(|m| *m != 1) {
                assert!([2, 3].contains(&m), "{m}");
                break closed.elapsed();
            }
            assert!(
                closed.elapsed() < Duration::from_secs(5),
                "no election after the master's connection closed"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        eprintln!("master's heartbeat connection closed -> new master in {took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");

        // A closed connection that is not the one a broker last heartbeated on changes nothing:
        // broker 2 or 3 (the new master) heartbeats on a second connection, the first closes.
        let m = master(&addr).await.unwrap();
        let idx = (m - 2) as usize;
        let mut second = PeerClient::new(addr.clone());
        assert_eq!(
            ask(&mut second, heartbeat(m, HEARTBEAT_TIMEOUT_MS))
                .await
                .code,
            0
        );
        drop(brokers.remove(idx));
        tokio::time::sleep(Duration::from_millis(SCAN_MS * 5)).await;
        assert_eq!(
            master(&addr).await,
            Some(m),
            "a stale connection's close deposed {m}"
        );
    });
}

/// The scan interval (30 s) is far past anything the test waits for: the election comes from the
/// master's deadline in the scan's sleep, not from a scan.
#[test]
fn a_silent_master_is_replaced_when_its_timeout_ends_not_at_the_next_scan() {
    const SCAN_MS: u64 = 30_000;
    const HEARTBEAT_TIMEOUT_MS: u64 = 1000;
    let controller = start(SCAN_MS);
    runtime().block_on(async {
        let addr = controller.addr.clone();
        let mut brokers = group_of_three(&addr, HEARTBEAT_TIMEOUT_MS).await;

        // Master 1 sends its last heartbeat now; 2 and 3 go on heartbeating every 200 ms.
        assert_eq!(
            ask(&mut brokers[0], heartbeat(1, HEARTBEAT_TIMEOUT_MS))
                .await
                .code,
            0
        );
        let silent = Instant::now();
        let took = loop {
            for (i, b) in brokers.iter_mut().enumerate().skip(1) {
                assert_eq!(
                    ask(b, heartbeat(i as u64 + 1, HEARTBEAT_TIMEOUT_MS))
                        .await
                        .code,
                    0
                );
            }
            if let Some(m) = master(&addr).await.filter(|m| *m != 1) {
                assert!([2, 3].contains(&m), "{m}");
                break silent.elapsed();
            }
            assert!(
                silent.elapsed() < Duration::from_secs(5),
                "no election 5 s after the master went silent (its timeout is 1 s)"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        eprintln!("master silent -> new master in {took:?} (timeout {HEARTBEAT_TIMEOUT_MS} ms)");
        assert!(
            took >= Duration::from_millis(HEARTBEAT_TIMEOUT_MS),
            "{took:?}"
        );
        assert!(
            took < Duration::from_millis(HEARTBEAT_TIMEOUT_MS + 800),
            "{took:?}"
        );
        // The master's connection stayed open all along: only the timeout can have deposed it.
        drop(brokers);
    });
}
