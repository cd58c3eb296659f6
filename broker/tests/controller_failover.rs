//! Controller mode with real processes: a controller, and three brokers of one group (SYNC_FLUSH,
//! `allAckInSyncStateSet`) that get their ids and roles from it. The master is SIGKILLed under
//! synchronous sends; a replica of the SyncStateSet becomes master, sends resume on it, and every
//! acknowledged message is there at its queue offset. The old master restarts, rejoins as a slave
//! of the new epoch, and ends with the same messages as the new master.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, pull_all, run_local, Broker};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

const CONTROLLER_CONF_ENV: &str = "TEST_CONTROLLER_CONF";
const GROUP: &str = "broker-t";
const TOPIC: &str = "FailoverTopic";
/// Sends go to queue 0 of shard-broker 0 and of shard-broker 1 (two shards per broker).
const SHARD_BROKERS: usize = 2;

#[test]
#[ignore = "not a test: the controller process the tests start and SIGKILL"]
fn controller_helper_process() {
    let Ok(path) = std::env::var(CONTROLLER_CONF_ENV) else {
        return;
    };
    let text = std::fs::read_to_string(&path).expect("controller config");
    let config = controller::config::ControllerConfig::from_file_text(&text).expect("config");
    if let Err(e) = controller::server::run(config, |addr| println!("controller on {addr}")) {
        eprintln!("controller: {e}");
        std::process::exit(1);
    }
    std::process::exit(0);
}

/// One controller in a child process (this test binary running the helper above).
struct ControllerProc {
    addr: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl ControllerProc {
    fn start() -> ControllerProc {
        let dir = tempfile::tempdir().unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let conf = dir.path().join("controller.conf");
        std::fs::write(
            &conf,
            format!(
                "controllerDLegerGroup = test\ncontrollerDLegerPeers = n0-{addr}\n\
                 controllerDLegerSelfId = n0\ncontrollerStorePath = {}\n",
                dir.path().join("store").display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("controller.log")).unwrap();
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["controller_helper_process", "--exact", "--ignored", "--nocapture"])
            .env(CONTROLLER_CONF_ENV, &conf)
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        let c = ControllerProc {
            addr,
            child,
            _dir: dir,
        };
        let start = Instant::now();
        while replica_info(&c.addr).is_none() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(100));
        }
        c
    }
}

impl Drop for ControllerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The group's master as the controller says: (brokerId, address, epoch, SyncStateSet). `None` while
/// the controller has no leader or does not know the group.
fn replica_info(controller: &str) -> Option<(Option<u64>, String, i32, BTreeSet<u64>)> {
    let controller = controller.to_owned();
    run_local(async move {
        let c = Client::connect_str(&controller, Duration::from_secs(2))
            .await
            .ok()?;
        let resp = c
            .invoke(
                RemotingCommand::request(request_code::CONTROLLER_GET_REPLICA_INFO)
                    .with_ext("brokerName", GROUP),
                Duration::from_secs(2),
            )
            .await
            .ok()?;
        if resp.code != response_code::SUCCESS {
            return None;
        }
        let body: serde_json::Value = serde_json::from_slice(&resp.body).ok()?;
        let set = body["syncStateSet"]
            .as_array()?
            .iter()
            .filter_map(|v| v.as_u64())
            .collect();
        Some((
            resp.ext("masterBrokerId").and_then(|v| v.parse().ok()),
            resp.ext("masterAddress").unwrap_or_default().to_owned(),
            resp.ext("masterEpoch")?.parse().ok()?,
            set,
        ))
    })
}

fn wait_for<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Shard-broker `i` of the broker listening on `addr`.
fn shard_broker(addr: &str, i: usize) -> SocketAddr {
    let a: SocketAddr = addr.parse().unwrap();
    SocketAddr::new(a.ip(), a.port() + 4 * i as u16)
}

/// An acknowledged send: shard-broker, queue offset, body.
type Acked = (usize, i64, Vec<u8>);

/// One synchronous send; `Some` with its queue offset when acknowledged (SUCCESS).
fn send_one(addr: SocketAddr, body: &[u8]) -> Result<i64, String> {
    let body = body.to_vec();
    run_local(async move {
        let c = Client::connect(addr, Duration::from_millis(500))
            .await
            .map_err(|e| e.to_string())?;
        let resp = c
            .invoke(
                common::send_request(TOPIC, 0, &body, ""),
                Duration::from_secs(3),
            )
            .await
            .map_err(|e| e.to_string())?;
        if resp.code != response_code::SUCCESS {
            return Err(format!("code {} {:?}", resp.code, resp.remark));
        }
        resp.ext("queueOffset")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| "no queueOffset".to_owned())
    })
}

/// Queue 0's messages on one shard-broker: queue offset -> body.
fn read_queue(addr: SocketAddr) -> BTreeMap<i64, Vec<u8>> {
    run_local(async move {
        let c = Client::connect(addr, Duration::from_secs(2)).await.unwrap();
        pull_all(&c, TOPIC, 0)
            .await
            .into_iter()
            .map(|r| (r.queue_offset, r.body.to_vec()))
            .collect()
    })
}

#[test]
fn master_sigkill_under_sync_sends_elects_an_in_sync_replica_and_loses_nothing_acknowledged() {
    let namesrv = common::start_namesrv_in_process();
    let controller = ControllerProc::start();
    let extra = format!(
        "enableControllerMode = true\ncontrollerAddr = \"{}\"\nnamesrvAddr = \"{namesrv}\"\n\
         flushDiskType = \"SYNC_FLUSH\"\nallAckInSyncStateSet = true\nregisterNameServerPeriod = 1000\n\
         syncFlushTimeout = 3000\n",
        controller.addr
    );
    let mut brokers: Vec<Broker> = (0..3).map(|_| Broker::start(&extra)).collect();
    let addr_of = |brokers: &[Broker], addr: &str| brokers.iter().position(|b| b.addr().to_string() == addr);

    // A master, and every replica in its SyncStateSet.
    let start = Instant::now();
    let (master_id, master_addr, epoch, _) = loop {
        let info = replica_info(&controller.addr);
        if let Some(found) = info.clone().filter(|(m, a, _, set)| m.is_some() && !a.is_empty() && set.len() == 3) {
            break found;
        }
        if start.elapsed() > Duration::from_secs(60) {
            for b in &brokers {
                println!("---- broker {}:\n{}", b.addr(), b.log());
            }
            panic!("no master with 3 in-sync replicas within 60 s: {info:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let master = addr_of(&brokers, &master_addr).expect("the master is one of ours");
    println!("master: brokerId {master_id:?} at {master_addr}, epoch {epoch}");

    // Sends, acknowledged only when all three have them, then the master is SIGKILLed mid-stream.
    let mut acked: Vec<Acked> = Vec::new();
    let mut seq = 0u64;
    let mut next_body = || {
        seq += 1;
        format!("msg-{seq:06}-{}", "x".repeat(200)).into_bytes()
    };
    while acked.len() < 200 {
        let i = acked.len() % SHARD_BROKERS;
        let body = next_body();
        match send_one(shard_broker(&master_addr, i), &body) {
            Ok(offset) => acked.push((i, offset, body)),
            Err(e) => panic!("send to the master before the failover failed: {e}"),
        }
    }
    brokers[master].kill9();
    let killed = Instant::now();

    // Keep sending to whoever the controller names, until sends succeed again.
    let mut failures = 0;
    let mut new_master = String::new();
    let mut first_ok = None;
    while acked.len() < 400 {
        assert!(killed.elapsed() < Duration::from_secs(60), "no new master accepting sends within 60 s ({failures} failed sends)");
        if let Some((Some(_), addr, e, _)) = replica_info(&controller.addr) {
            if addr != master_addr && e > epoch {
                new_master = addr;
            }
        }
        if new_master.is_empty() {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        let i = acked.len() % SHARD_BROKERS;
        let body = next_body();
        match send_one(shard_broker(&new_master, i), &body) {
            Ok(offset) => {
                first_ok.get_or_insert_with(|| killed.elapsed());
                acked.push((i, offset, body));
            }
            Err(_) => {
                failures += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    let failover = first_ok.unwrap();
    println!("master death to the first acknowledged send on the new master {new_master}: {failover:?} ({failures} sends refused meanwhile)");

    // Every acknowledged message is on the new master at its queue offset; no offset holds two.
    let check = |addr: &str, who: &str| {
        for i in 0..SHARD_BROKERS {
            let stored = read_queue(shard_broker(addr, i));
            for (shard, offset, body) in acked.iter().filter(|(s, _, _)| *s == i) {
                let got = stored.get(offset).unwrap_or_else(|| panic!("{who}: acknowledged offset {offset} of shard-broker {shard} missing"));
                assert_eq!(got, body, "{who}: shard-broker {shard} offset {offset} holds another message");
            }
        }
    };
    check(&new_master, "new master");

    // The old master comes back: a slave of the new epoch, with the new master's messages.
    brokers[master].restart();
    let old = brokers[master].addr().to_string();
    wait_for("the old master back in the SyncStateSet", Duration::from_secs(60), || {
        replica_info(&controller.addr).filter(|(_, a, _, set)| *a == new_master && set.len() == 3)
    });
    check(&old, "old master, now a slave");
    for i in 0..SHARD_BROKERS {
        assert_eq!(
            read_queue(shard_broker(&old, i)),
            read_queue(shard_broker(&new_master, i)),
            "shard-broker {i}: the old master's queue differs from the new master's"
        );
    }
}
