//! Three controller processes on loopback: a broker group of three replicas registers and
//! heartbeats; the master goes silent and a new one comes from the SyncStateSet; the raft leader is
//! SIGKILLed while a master is dying; all three restart with their state; an out-of-sync replica is
//! never elected unless enableElectUncleanMaster.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use controller::raft::peer_client::PeerClient;
use protocol::{request_code, response_code, RemotingCommand};

// Ports below the ephemeral range, so a restarted controller does not find its port taken by an
// outgoing connection (the broker tests' picker).
#[path = "../../broker/tests/common/ports.rs"]
#[allow(dead_code)]
mod ports;

const HEARTBEAT_TIMEOUT_MS: u64 = 1500;
const SCAN_MS: u64 = 300;
const RPC: Duration = Duration::from_secs(5);

struct Cluster {
    dir: tempfile::TempDir,
    addrs: Vec<String>,
    procs: Vec<Option<Child>>,
}

impl Cluster {
    fn new() -> Cluster {
        let mut ports: Vec<u16> = Vec::new();
        while ports.len() < 3 {
            let p = ports::free_port();
            if !ports.contains(&p) {
                ports.push(p);
            }
        }
        let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let dir = tempfile::tempdir().unwrap();
        let peers: Vec<String> = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| format!("n{i}-{a}"))
            .collect();
        for i in 0..3 {
            let conf = format!(
                "controllerDLegerGroup = test\ncontrollerDLegerPeers = {}\ncontrollerDLegerSelfId = n{i}\ncontrollerStorePath = {}\nscanNotActiveBrokerInterval = {SCAN_MS}\ncontrollerHeartBeatTimeoutMills = {HEARTBEAT_TIMEOUT_MS}\nraftSnapshotLogs = 2\n",
                peers.join(";"),
                dir.path().join(format!("store-{i}")).display()
            );
            std::fs::write(dir.path().join(format!("controller-{i}.conf")), conf).unwrap();
        }
        let mut c = Cluster {
            dir,
            addrs,
            procs: vec![None, None, None],
        };
        for i in 0..3 {
            c.start(i);
        }
        c
    }

    fn start(&mut self, i: usize) {
        let log =
            std::fs::File::create(self.dir.path().join(format!("controller-{i}.log"))).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_controller"))
            .arg("-c")
            .arg(self.dir.path().join(format!("controller-{i}.conf")))
            .stdout(Stdio::null())
            .env(
                "RUST_LOG",
                "info,openraft=warn,controller::raft::store=debug",
            )
            .stderr(log)
            .spawn()
            .unwrap();
        self.procs[i] = Some(child);
    }

    fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.procs[i].take() {
            // SAFETY: signalling a child process this test started.
            unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
            let _ = c.wait();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..3 {
            self.kill(i);
        }
        if std::thread::panicking() {
            for i in 0..3 {
                let log =
                    std::fs::read_to_string(self.dir.path().join(format!("controller-{i}.log")));
                eprintln!("--- controller n{i} log:\n{}", log.unwrap_or_default());
            }
        }
    }
}

async fn call(addr: &str, request: RemotingCommand) -> Option<RemotingCommand> {
    PeerClient::new(addr.to_string())
        .call(request, RPC)
        .await
        .ok()
}

/// The raft leader's index, waiting up to `limit` for one the live controllers agree on.
async fn leader(c: &Cluster, limit: Duration) -> usize {
    let start = Instant::now();
    loop {
        for (i, addr) in c.addrs.iter().enumerate() {
            if c.procs[i].is_none() {
                continue;
            }
            let r = call(
                addr,
                RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO),
            )
            .await;
            if r.as_ref().and_then(|r| r.ext("isLeader")) == Some("true") {
                return i;
            }
        }
        assert!(
            start.elapsed() < limit,
            "no controller leader within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A leader every live controller agrees on (right after start two may both think they lead, briefly).
async fn agreed_leader(c: &Cluster, limit: Duration) -> usize {
    let start = Instant::now();
    loop {
        let l = leader(c, limit).await;
        let mut agree = true;
        for (i, addr) in c.addrs.iter().enumerate() {
            if c.procs[i].is_none() {
                continue;
            }
            let r = call(
                addr,
                RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO),
            )
            .await;
            agree &= r.as_ref().and_then(|r| r.ext("controllerLeaderAddress"))
                == Some(c.addrs[l].as_str());
        }
        if agree {
            return l;
        }
        assert!(
            start.elapsed() < limit,
            "controllers disagree on the leader after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn req(code: i32, fields: &[(&str, String)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(code);
    for (k, v) in fields {
        r.set_ext(k, v);
    }
    r
}

/// Sends to the leader, following CONTROLLER_NOT_LEADER answers.
async fn to_leader(c: &Cluster, request: RemotingCommand) -> RemotingCommand {
    let start = Instant::now();
    loop {
        let l = leader(c, Duration::from_secs(15)).await;
        if let Some(r) = call(&c.addrs[l], request.clone()).await {
            if r.code != response_code::CONTROLLER_NOT_LEADER {
                return r;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no leader answered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[derive(Debug, Clone, PartialEq)]
struct ReplicaInfo {
    master: Option<u64>,
    master_epoch: i32,
    sync_state_set: Vec<u64>,
    sync_state_set_epoch: i32,
}

async fn replica_info(c: &Cluster) -> ReplicaInfo {
    let r = to_leader(
        c,
        req(
            request_code::CONTROLLER_GET_REPLICA_INFO,
            &[("brokerName", "broker-a".into())],
        ),
    )
    .await;
    assert_eq!(r.code, 0, "{r:?}");
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    ReplicaInfo {
        master: r.ext("masterBrokerId").map(|m| m.parse().unwrap()),
        master_epoch: r.ext("masterEpoch").unwrap().parse().unwrap(),
        sync_state_set: serde_json::from_value(body["syncStateSet"].clone()).unwrap(),
        sync_state_set_epoch: body["syncStateSetEpoch"].as_i64().unwrap() as i32,
    }
}

/// Notices the controllers sent, by broker id.
type Notices = Arc<Mutex<Vec<(u64, RemotingCommand)>>>;

/// Stand-ins for the three replicas' listening ports: they record the requests they get
/// (NOTIFY_BROKER_ROLE_CHANGED). Returns their addresses, for broker ids 1..=3.
fn broker_listeners(notices: Notices) -> Vec<String> {
    (1..=3u64)
        .map(|id| {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let notices = notices.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let notices = notices.clone();
                    std::thread::spawn(move || {
                        use std::io::Read;
                        let mut stream = stream;
                        loop {
                            let mut len = [0u8; 4];
                            if stream.read_exact(&mut len).is_err() {
                                return;
                            }
                            let n = u32::from_be_bytes(len) as usize;
                            let mut frame = bytes::BytesMut::from(&len[..]);
                            frame.resize(4 + n, 0);
                            if stream.read_exact(&mut frame[4..]).is_err() {
                                return;
                            }
                            if let Ok(Some(cmd)) = protocol::decode_frame(&mut frame) {
                                notices.lock().unwrap().push((id, cmd));
                            }
                        }
                    });
                }
            });
            addr
        })
        .collect()
}

/// Heartbeats of replicas 1..=3 of broker-a to every controller, each switchable.
fn heartbeats(
    c: &Cluster,
    brokers: Vec<String>,
    beating: Arc<[AtomicBool; 3]>,
) -> tokio::task::JoinHandle<()> {
    let addrs = c.addrs.clone();
    tokio::spawn(async move {
        let mut clients: Vec<PeerClient> =
            addrs.iter().map(|a| PeerClient::new(a.clone())).collect();
        loop {
            for id in 1..=3u64 {
                if !beating[(id - 1) as usize].load(Ordering::SeqCst) {
                    continue;
                }
                let request = req(
                    request_code::BROKER_HEARTBEAT,
                    &[
                        ("clusterName", "c".into()),
                        ("brokerName", "broker-a".into()),
                        ("brokerAddr", brokers[(id - 1) as usize].clone()),
                        ("brokerId", id.to_string()),
                        ("epoch", "1".into()),
                        // Replica 3 claims the most data: it must still lose to in-sync replicas.
                        (
                            "maxOffset",
                            (if id == 3 { 1_000_000 } else { 100 }).to_string(),
                        ),
                        ("heartbeatTimeoutMills", HEARTBEAT_TIMEOUT_MS.to_string()),
                    ],
                );
                for client in clients.iter_mut() {
                    let _ = client
                        .call(request.clone(), Duration::from_millis(300))
                        .await;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
}

/// Waits until the group's master satisfies `done`; returns the info and how long it took.
async fn wait_master(
    c: &Cluster,
    limit: Duration,
    done: impl Fn(&ReplicaInfo) -> bool,
) -> (ReplicaInfo, Duration) {
    let start = Instant::now();
    loop {
        let info = replica_info(c).await;
        if done(&info) {
            return (info, start.elapsed());
        }
        assert!(
            start.elapsed() < limit,
            "master not as expected within {limit:?}: {info:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn alter(c: &Cluster, info: &ReplicaInfo, set: &[u64]) -> RemotingCommand {
    let mut r = req(
        request_code::CONTROLLER_ALTER_SYNC_STATE_SET,
        &[
            ("brokerName", "broker-a".into()),
            ("masterBrokerId", info.master.unwrap().to_string()),
            ("masterEpoch", info.master_epoch.to_string()),
        ],
    );
    r.set_body(
        serde_json::json!({"syncStateSet": set, "syncStateSetEpoch": info.sync_state_set_epoch})
            .to_string(),
    );
    to_leader(c, r).await
}

#[test]
fn three_controllers_fail_over_masters_and_keep_state() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = Cluster::new();
        let first = agreed_leader(&c, Duration::from_secs(20)).await;
        let notices: Notices = Arc::default();
        let brokers = broker_listeners(notices.clone());
        eprintln!("raft leader: n{first}");
        // A follower redirects writes to the leader.
        let follower = (first + 1) % 3;
        let apply = |id: u64| {
            req(
                request_code::CONTROLLER_APPLY_BROKER_ID,
                &[
                    ("clusterName", "c".into()),
                    ("brokerName", "broker-a".into()),
                    ("appliedBrokerId", id.to_string()),
                    ("registerCheckCode", format!("{};{id}", brokers[(id - 1) as usize])),
                ],
            )
        };
        let r = call(&c.addrs[follower], apply(1)).await.unwrap();
        assert_eq!(r.code, response_code::CONTROLLER_NOT_LEADER, "{r:?}");
        assert_eq!(r.ext("controllerLeaderAddress"), Some(c.addrs[first].as_str()));

        let beating = Arc::new([AtomicBool::new(true), AtomicBool::new(true), AtomicBool::new(true)]);
        let _beats = heartbeats(&c, brokers.clone(), beating.clone());
        for id in 1..=3 {
            let r = to_leader(&c, apply(id)).await;
            assert_eq!(r.code, 0, "apply {id}: {r:?}");
            let r = to_leader(
                &c,
                req(
                    request_code::CONTROLLER_REGISTER_BROKER,
                    &[
                        ("clusterName", "c".into()),
                        ("brokerName", "broker-a".into()),
                        ("brokerId", id.to_string()),
                        ("brokerAddress", brokers[(id - 1) as usize].clone()),
                    ],
                ),
            )
            .await;
            assert_eq!(r.code, 0, "register {id}: {r:?}");
        }
        // Broker 1 asks first: it becomes the first master.
        let r = to_leader(
            &c,
            req(
                request_code::CONTROLLER_ELECT_MASTER,
                &[("clusterName", "c".into()), ("brokerName", "broker-a".into()), ("brokerId", "1".into())],
            ),
        )
        .await;
        assert_eq!((r.code, r.ext("masterBrokerId")), (0, Some("1")), "{r:?}");
        let info = replica_info(&c).await;
        assert_eq!((info.master, info.master_epoch), (Some(1), 1));
        let r = alter(&c, &info, &[1, 2]).await;
        assert_eq!((r.code, r.ext("newSyncStateSetEpoch")), (0, Some("2")), "{r:?}");
        // A stale SyncStateSet epoch is fenced.
        let r = alter(&c, &info, &[1, 2, 3]).await;
        assert_eq!(r.code, response_code::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH, "{r:?}");
        // Bad input is refused and the controller keeps serving.
        let mut bad = req(
            request_code::CONTROLLER_ALTER_SYNC_STATE_SET,
            &[("brokerName", "broker-a".into()), ("masterBrokerId", "x".into())],
        );
        bad.set_body("{not json");
        let r = to_leader(&c, bad).await;
        assert_eq!(r.code, response_code::CONTROLLER_INVALID_REQUEST, "{r:?}");
        let r = to_leader(&c, req(request_code::BROKER_HEARTBEAT, &[("brokerName", "broker-a".into())])).await;
        assert_eq!(r.code, response_code::CONTROLLER_INVALID_REQUEST, "{r:?}");
        let now = replica_info(&c).await;
        assert_eq!((now.sync_state_set, now.sync_state_set_epoch), (vec![1, 2], 2));

        // Master 1 goes silent: 2 (in sync) takes over, not 3 (out of sync, more data).
        beating[0].store(false, Ordering::SeqCst);
        let limit = Duration::from_millis(HEARTBEAT_TIMEOUT_MS + SCAN_MS + 3000);
        let (info, took) = wait_master(&c, limit, |i| i.master != Some(1)).await;
        eprintln!("master 1 silent -> new master {:?} in {} ms (heartbeat timeout {HEARTBEAT_TIMEOUT_MS} ms, scan {SCAN_MS} ms)", info.master, took.as_millis());
        assert_eq!(info.master, Some(2), "{info:?}");
        assert_eq!((info.master_epoch, info.sync_state_set.clone()), (2, vec![2]));
        // The live replicas were told (NOTIFY_BROKER_ROLE_CHANGED), the dead master was not.
        let start = Instant::now();
        loop {
            let told: Vec<u64> = notices
                .lock()
                .unwrap()
                .iter()
                .filter(|(_, n)| {
                    n.code == request_code::NOTIFY_BROKER_ROLE_CHANGED
                        && n.ext("masterBrokerId") == Some("2")
                        && n.ext("masterEpoch") == Some("2")
                        && n.ext("masterAddress") == Some(brokers[1].as_str())
                })
                .map(|(id, _)| *id)
                .collect();
            if told.contains(&2) && told.contains(&3) {
                assert!(!told.contains(&1), "the dead master was notified: {told:?}");
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(5), "brokers not notified: {told:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let r = alter(&c, &info, &[2, 3]).await;
        assert_eq!(r.code, 0, "{r:?}");
        let before_kill = replica_info(&c).await;

        // Master 2 goes silent and, half-way through its timeout, the raft leader is SIGKILLed.
        beating[1].store(false, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(HEARTBEAT_TIMEOUT_MS / 2)).await;
        let old_leader = leader(&c, Duration::from_secs(5)).await;
        c.kill(old_leader);
        let killed_at = Instant::now();
        let new_leader = leader(&c, Duration::from_secs(10)).await;
        assert_ne!(new_leader, old_leader);
        eprintln!("raft leader n{old_leader} killed -> n{new_leader} leads after {} ms", killed_at.elapsed().as_millis());
        let (info, took) = wait_master(&c, Duration::from_secs(10), |i| i.master != Some(2)).await;
        eprintln!("with the leader killed, new master {:?} {} ms after the kill (seen {} ms after the new leader)", info.master, killed_at.elapsed().as_millis(), took.as_millis());
        assert_eq!(info.master, Some(3), "{info:?}");
        assert!(info.master_epoch > before_kill.master_epoch, "{info:?} vs {before_kill:?}");
        assert!(info.sync_state_set_epoch > before_kill.sync_state_set_epoch);

        // The killed controller comes back; then all three are killed and restarted.
        c.start(old_leader);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before_restart = replica_info(&c).await;
        for i in 0..3 {
            c.kill(i);
        }
        for i in 0..3 {
            c.start(i);
        }
        leader(&c, Duration::from_secs(20)).await;
        let after = replica_info(&c).await;
        assert_eq!(after, before_restart, "state after restarting all controllers");

        // Master 3 goes silent; 1 is alive again but out of sync: no master...
        beating[0].store(true, Ordering::SeqCst);
        beating[2].store(false, Ordering::SeqCst);
        let (info, _) = wait_master(&c, Duration::from_secs(10), |i| i.master != Some(3)).await;
        assert_eq!(info.master, None, "an out-of-sync replica was elected: {info:?}");
        assert!(info.master_epoch > after.master_epoch);
        tokio::time::sleep(Duration::from_millis(3 * SCAN_MS)).await;
        assert_eq!(replica_info(&c).await.master, None);
        // ...until unclean elections are allowed.
        for addr in &c.addrs {
            let mut r = RemotingCommand::request(request_code::UPDATE_CONTROLLER_CONFIG);
            r.set_body("enableElectUncleanMaster=true");
            let r = call(addr, r).await.unwrap();
            assert_eq!(r.code, 0, "{r:?}");
        }
        let (info, _) = wait_master(&c, Duration::from_secs(10), |i| i.master.is_some()).await;
        assert_eq!(info.master, Some(1), "{info:?}");
        let epochs = [before_kill.master_epoch, after.master_epoch, info.master_epoch];
        assert!(epochs.windows(2).all(|w| w[0] < w[1]), "master epochs did not grow: {epochs:?}");

        // Snapshots were taken (every 2 entries here) and the state came back through them.
        for i in 0..3 {
            let snapshot = c.dir.path().join(format!("store-{i}/snapshot.json"));
            assert!(snapshot.is_file(), "{} missing", snapshot.display());
        }

        // GET_SYNC_STATE_DATA answers Apache's BrokerReplicasInfo.
        let mut r = RemotingCommand::request(request_code::CONTROLLER_GET_SYNC_STATE_DATA);
        r.set_body(r#"["broker-a"]"#);
        let r = to_leader(&c, r).await;
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        let group = &body["replicasInfoTable"]["broker-a"];
        assert_eq!(group["masterBrokerId"], 1, "{body}");
        let in_sync: BTreeMap<u64, bool> = group["inSyncReplicas"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["brokerId"].as_u64().unwrap(), r["alive"].as_bool().unwrap()))
            .collect();
        assert_eq!(in_sync, BTreeMap::from([(1, true)]), "{body}");
    });
}
