//! A master that goes silent with its heartbeat connection open (a partition, a hung process) is
//! replaced when its heartbeat timeout ends, not at the leader's next scan: one controller process
//! whose scan interval (30 s) is far past anything the test waits for, brokers heartbeating with a
//! 1 s timeout. Without the deadline in the scan's sleep the election waits for the next scan.

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
/// Far past the test: an election it sees comes from the master's deadline, not from a scan.
const SCAN_MS: u64 = 30_000;
const HEARTBEAT_TIMEOUT_MS: u64 = 1000;

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

fn start() -> Controller {
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("127.0.0.1:{}", ports::free_port());
    let conf = dir.path().join("controller.conf");
    std::fs::write(
        &conf,
        format!(
            "controllerDLegerGroup = test\ncontrollerDLegerPeers = n0-{addr}\n\
             controllerDLegerSelfId = n0\ncontrollerStorePath = {}\n\
             scanNotActiveBrokerInterval = {SCAN_MS}\n",
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

async fn ask(client: &mut PeerClient, request: RemotingCommand) -> RemotingCommand {
    client.call(request, RPC).await.unwrap()
}

fn heartbeat(id: u64) -> RemotingCommand {
    req(
        request_code::BROKER_HEARTBEAT,
        &[
            ("clusterName", "c".into()),
            ("brokerName", "broker-a".into()),
            ("brokerAddr", format!("127.0.0.1:{}", 1000 + id)),
            ("brokerId", id.to_string()),
            ("epoch", "1".into()),
            ("maxOffset", "100".into()),
            ("heartbeatTimeoutMills", HEARTBEAT_TIMEOUT_MS.to_string()),
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

#[test]
fn a_silent_master_is_replaced_when_its_timeout_ends_not_at_the_next_scan() {
    let controller = start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let addr = controller.addr.clone();
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
        // Brokers 1, 2 and 3, each on its own connection, kept open throughout.
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
            assert_eq!(ask(b, heartbeat(id)).await.code, 0);
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
        assert_eq!(ask(&mut brokers[0], alter).await.code, 0);

        // Master 1 sends its last heartbeat now; 2 and 3 go on heartbeating every 200 ms.
        assert_eq!(ask(&mut brokers[0], heartbeat(1)).await.code, 0);
        let silent = Instant::now();
        let took = loop {
            for (i, b) in brokers.iter_mut().enumerate().skip(1) {
                assert_eq!(ask(b, heartbeat(i as u64 + 1)).await.code, 0);
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
