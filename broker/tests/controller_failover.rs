//! Controller mode with real processes: a controller, and three brokers of one group (SYNC_FLUSH,
//! `allAckInSyncStateSet`) that get their ids and roles from it.
//!
//! - The master is SIGKILLed under synchronous sends, right after it appended messages its stopped
//!   replicas never got (answered with an error, never SEND_OK): a replica of the SyncStateSet becomes
//!   master, sends resume on it, every acknowledged message is there at its queue offset; the old
//!   master restarts, cuts its unreplicated tail by epoch, and ends with the new master's messages.
//!   A topic attribute and an ACL 2.0 user made before the kill are on the new master.
//! - The master is cut off by a network partition (it runs in a network namespace of the test's, where
//!   nftables drops every packet): a new master is elected; after the heal the old one follows it.
//!
//! The SIGKILL case also checks a RocketMQ 5 topic attribute set on the old master is on the new one.
//!
//! Each prints the time from the master's death (or isolation) to the first acknowledged send on the
//! new master. After a SIGKILL it must be under 2 s, and the name server must route to the new
//! master within 2 s too: the controller reacts to the close of the master's heartbeat connection
//! instead of waiting for the heartbeat timeout (the test prints the controller's and the new
//! master's log lines as a timeline).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod fault_support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, pull_all, run_local, Broker};
use fault_support::netns::NetNs;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

const CONTROLLER_CONF_ENV: &str = "TEST_CONTROLLER_CONF";
const GROUP: &str = "broker-t";
const TOPIC: &str = "FailoverTopic";
/// Sends go to queue 0 of shard-broker 0 and of shard-broker 1 (two shards per broker).
const SHARD_BROKERS: usize = 2;
const LIMIT: Duration = Duration::from_secs(60);

#[test]
#[ignore = "not a test: the controller process the tests start and SIGKILL"]
fn controller_helper_process() {
    let Ok(path) = std::env::var(CONTROLLER_CONF_ENV) else {
        return;
    };
    let text = std::fs::read_to_string(&path).expect("controller config");
    let config = controller::config::ControllerConfig::from_file_text(&text).expect("config");
    // Timestamped lines in the controller's log: the failover tests print them as a timeline.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info,openraft=warn"))
        .with_ansi(false)
        .try_init();
    if let Err(e) = controller::server::run(config, |addr| println!("controller on {addr}")) {
        eprintln!("controller: {e}");
        std::process::exit(1);
    }
    std::process::exit(0);
}

/// Controllers in child processes (this test binary running the helper above), reached at `ip`.
struct Controllers {
    addrs: Vec<String>,
    children: Vec<Option<Child>>,
    dir: tempfile::TempDir,
}

impl Controllers {
    fn start(count: usize, ip: IpAddr) -> Controllers {
        let dir = tempfile::tempdir().unwrap();
        let mut ports: Vec<u16> = Vec::new();
        while ports.len() < count {
            let p = free_port();
            if !ports.contains(&p) {
                ports.push(p);
            }
        }
        let addrs: Vec<String> = ports.iter().map(|p| format!("{ip}:{p}")).collect();
        let peers: Vec<String> = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| format!("n{i}-{a}"))
            .collect();
        let mut c = Controllers {
            addrs,
            children: Vec::new(),
            dir,
        };
        for i in 0..count {
            let conf = c.dir.path().join(format!("controller-{i}.conf"));
            std::fs::write(
                &conf,
                format!(
                    "controllerDLegerGroup = test\ncontrollerDLegerPeers = {}\n\
                     controllerDLegerSelfId = n{i}\ncontrollerStorePath = {}\n",
                    peers.join(";"),
                    c.dir.path().join(format!("store-{i}")).display()
                ),
            )
            .unwrap();
            let log =
                std::fs::File::create(c.dir.path().join(format!("controller-{i}.log"))).unwrap();
            let child = Command::new(std::env::current_exe().unwrap())
                .args([
                    "controller_helper_process",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                ])
                .env(CONTROLLER_CONF_ENV, &conf)
                .stdout(Stdio::from(log.try_clone().unwrap()))
                .stderr(Stdio::from(log))
                .spawn()
                .unwrap();
            c.children.push(Some(child));
        }
        let start = Instant::now();
        while c.leader().is_none() && start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(100));
        }
        c
    }

    /// `controllerAddr` for the brokers.
    fn list(&self) -> String {
        self.addrs.join(";")
    }

    /// The raft leader's index, as it says itself.
    fn leader(&self) -> Option<usize> {
        (0..self.addrs.len()).find(|i| {
            let addr = self.addrs[*i].clone();
            self.children[*i].is_some()
                && run_local(async move {
                    let Ok(c) = Client::connect_str(&addr, Duration::from_secs(1)).await else {
                        return false;
                    };
                    c.invoke(
                        RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO),
                        Duration::from_secs(1),
                    )
                    .await
                    .is_ok_and(|r| {
                        r.code == response_code::SUCCESS && r.ext("isLeader") == Some("true")
                    })
                })
        })
    }

    fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.children[i].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn log(&self) -> String {
        (0..self.addrs.len())
            .map(|i| {
                let text =
                    std::fs::read_to_string(self.dir.path().join(format!("controller-{i}.log")));
                format!("---- controller {i}:\n{}", text.unwrap_or_default())
            })
            .collect()
    }

    /// What the first controller that answers as leader says about the group.
    fn replica_info(&self) -> Option<GroupInfo> {
        self.addrs
            .iter()
            .zip(&self.children)
            .filter(|(_, c)| c.is_some())
            .find_map(|(a, _)| replica_info(a))
    }
}

impl Drop for Controllers {
    fn drop(&mut self) {
        for i in 0..self.children.len() {
            self.kill(i);
        }
    }
}

/// The group as the controller says.
#[derive(Debug, Clone)]
struct GroupInfo {
    master_id: Option<u64>,
    master_addr: String,
    epoch: i32,
    sync_state_set: BTreeSet<u64>,
}

fn replica_info(controller: &str) -> Option<GroupInfo> {
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
        Some(GroupInfo {
            master_id: resp.ext("masterBrokerId").and_then(|v| v.parse().ok()),
            master_addr: resp.ext("masterAddress").unwrap_or_default().to_owned(),
            epoch: resp.ext("masterEpoch")?.parse().ok()?,
            sync_state_set: body["syncStateSet"]
                .as_array()?
                .iter()
                .filter_map(|v| v.as_u64())
                .collect(),
        })
    })
}

/// A controller, a name server and three brokers in controller mode.
struct Group {
    controllers: Controllers,
    brokers: Vec<Broker>,
    host_ip: Ipv4Addr,
    /// The name server, at `host_ip`.
    namesrv: SocketAddr,
}

impl Group {
    /// Brokers advertise (and the controller and name server are reached at) `host_ip`. Broker 0 is
    /// started first and becomes master; `ns` puts broker `index` in that network namespace; `extra`
    /// settings are added to every broker's.
    fn start(
        controllers: usize,
        host_ip: Ipv4Addr,
        ns: Option<(&NetNs, usize)>,
        extra: &str,
    ) -> Group {
        let namesrv = SocketAddr::from((Ipv4Addr::UNSPECIFIED, free_port()));
        common::start_namesrv_in_process_with(common::namesrv_config(namesrv));
        let controllers = Controllers::start(controllers, IpAddr::V4(host_ip));
        // slaveReadEnable: the checks read every replica's queues, which RocketMQ 5 refuses without it.
        let extra = format!(
            "enableControllerMode = true\ncontrollerAddr = \"{}\"\nnamesrvAddr = \"{host_ip}:{}\"\n\
             flushDiskType = \"SYNC_FLUSH\"\nallAckInSyncStateSet = true\nregisterNameServerPeriod = 1000\n\
             syncFlushTimeout = 3000\nslaveReadEnable = true\n{extra}\n",
            controllers.list(),
            namesrv.port()
        );
        let start_broker = |i: usize| match ns {
            Some((ns, index)) if index == i => Broker::builder()
                .extra(&extra)
                .netns(&ns.name, ns.ns_ip)
                .start(),
            _ => Broker::builder()
                .extra(&format!("{extra}brokerIP1 = \"{host_ip}\"\n"))
                .start(),
        };
        let mut group = Group {
            controllers,
            brokers: vec![start_broker(0)],
            host_ip,
            namesrv: SocketAddr::from((host_ip, namesrv.port())),
        };
        group.wait("the first broker to be master", |g| {
            (g.master_addr == group.addr(0)).then_some(())
        });
        for i in 1..3 {
            group.brokers.push(start_broker(i));
        }
        group.wait("3 replicas in sync", |g| {
            (g.sync_state_set.len() == 3).then_some(())
        });
        group
    }

    fn info(&self) -> Option<GroupInfo> {
        self.controllers.replica_info()
    }

    /// Waits until `probe` accepts what the controller says; panics with every log after `LIMIT`.
    fn wait<T>(&self, what: &str, mut probe: impl FnMut(&GroupInfo) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            let info = self.info();
            if let Some(v) = info.as_ref().and_then(&mut probe) {
                return v;
            }
            if start.elapsed() > LIMIT {
                for b in &self.brokers {
                    println!("---- broker {}:\n{}", b.addr(), b.log());
                }
                println!("{}", self.controllers.log());
                panic!("{what}: not within {LIMIT:?} (controller says {info:?})");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The address broker `i` advertises (its namespace's, or the host's).
    fn addr(&self, i: usize) -> String {
        let b = &self.brokers[i];
        let ip = if b.ip == Ipv4Addr::LOCALHOST {
            self.host_ip
        } else {
            b.ip
        };
        format!("{ip}:{}", b.port)
    }

    fn index_of(&self, addr: &str) -> usize {
        (0..self.brokers.len())
            .find(|i| self.addr(*i) == addr)
            .unwrap_or_else(|| panic!("{addr} is none of the test's brokers"))
    }
}

/// Shard-broker `i` of the broker listening on `addr`.
fn shard_broker(addr: &str, i: usize) -> SocketAddr {
    let a: SocketAddr = addr.parse().unwrap();
    SocketAddr::new(a.ip(), a.port() + 4 * i as u16)
}

/// An acknowledged send: shard-broker, queue offset, body.
type Acked = (usize, i64, Vec<u8>);

/// One synchronous send: its queue offset when acknowledged (SUCCESS), else why not.
fn send_one(addr: SocketAddr, body: &[u8], timeout: Duration) -> Result<i64, String> {
    let body = body.to_vec();
    run_local(async move {
        let c = Client::connect(addr, Duration::from_millis(500))
            .await
            .map_err(|e| e.to_string())?;
        let resp = c
            .invoke(common::send_request(TOPIC, 0, &body, ""), timeout)
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

struct Producer {
    acked: Vec<Acked>,
    seq: u64,
}

impl Producer {
    fn body(&mut self) -> Vec<u8> {
        self.seq += 1;
        format!("msg-{:06}-{}", self.seq, "x".repeat(200)).into_bytes()
    }

    /// `count` acknowledged sends to the master at `addr`, alternating shard-brokers; every one must
    /// succeed.
    fn send_ok(&mut self, addr: &str, count: usize) {
        for _ in 0..count {
            let i = self.acked.len() % SHARD_BROKERS;
            let body = self.body();
            let offset = send_one(shard_broker(addr, i), &body, Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("send to the master {addr} failed: {e}"));
            self.acked.push((i, offset, body));
        }
    }

    /// Sends to whoever the controller names master once it is not `old` (at an epoch above `epoch`),
    /// until `count` more are acknowledged; answers the new master and the time from `since` to its
    /// first acknowledged send.
    fn send_through_failover(
        &mut self,
        group: &Group,
        old: &str,
        epoch: i32,
        since: Instant,
        count: usize,
    ) -> (String, Duration) {
        let target = self.acked.len() + count;
        let mut new_master = String::new();
        let mut first_ok = None;
        let mut refused = 0;
        while self.acked.len() < target {
            if since.elapsed() > LIMIT {
                group.wait("a new master accepting sends", |_| None::<()>);
            }
            if let Some(g) = group.info() {
                if g.master_addr != old && g.epoch > epoch && g.master_id.is_some() {
                    new_master = g.master_addr;
                }
            }
            if new_master.is_empty() {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            let i = self.acked.len() % SHARD_BROKERS;
            let body = self.body();
            match send_one(shard_broker(&new_master, i), &body, Duration::from_secs(5)) {
                Ok(offset) => {
                    first_ok.get_or_insert_with(|| since.elapsed());
                    self.acked.push((i, offset, body));
                }
                Err(_) => {
                    refused += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        let took = first_ok.unwrap();
        println!(
            "new master {new_master}: first acknowledged send {took:?} after the old one's loss \
             ({refused} sends refused or unanswered meanwhile)"
        );
        (new_master, took)
    }

    /// Every acknowledged message is on the broker at `addr` at its queue offset.
    fn check_on(&self, addr: &str, who: &str) {
        for i in 0..SHARD_BROKERS {
            let stored = read_queue(shard_broker(addr, i));
            for (_, offset, body) in self.acked.iter().filter(|(s, _, _)| *s == i) {
                let got = stored.get(offset).unwrap_or_else(|| {
                    panic!("{who}: acknowledged offset {offset} of shard-broker {i} missing")
                });
                assert_eq!(
                    got, body,
                    "{who}: shard-broker {i} offset {offset} holds another message"
                );
            }
        }
    }
}

const TYPED_TOPIC: &str = "FailoverTyped";

/// Creates `topic` with RocketMQ 5 attribute changes (`+k=v`).
/// The brokerId 0 addresses of `TOPIC`'s route at the name server (empty when it has none).
async fn route_masters(namesrv: SocketAddr) -> BTreeSet<String> {
    let Ok(c) = Client::connect(namesrv, Duration::from_secs(1)).await else {
        return BTreeSet::new();
    };
    let req =
        RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", TOPIC);
    match c.invoke(req, Duration::from_secs(1)).await {
        Ok(r) if r.code == response_code::SUCCESS => {
            protocol::body::from_json::<protocol::body::TopicRouteData>(&r.body)
                .map(|route| {
                    route
                        .broker_datas
                        .into_iter()
                        .filter_map(|b| b.broker_addrs.get(&0).cloned())
                        .collect()
                })
                .unwrap_or_default()
        }
        _ => BTreeSet::new(),
    }
}

/// Polls the name server every 10 ms for 5 s from `since`: each change of the masters `TOPIC`'s
/// route names, with when it was seen (what a client polling its route would find).
fn watch_routes(
    namesrv: SocketAddr,
    since: Instant,
) -> std::thread::JoinHandle<Vec<(Duration, BTreeSet<String>)>> {
    std::thread::spawn(move || {
        run_local(async move {
            let mut seen: Vec<(Duration, BTreeSet<String>)> = Vec::new();
            while since.elapsed() < Duration::from_secs(5) {
                let masters = route_masters(namesrv).await;
                if seen.last().map(|(_, m)| m) != Some(&masters) {
                    seen.push((since.elapsed(), masters));
                }
                glommio::timer::sleep(Duration::from_millis(10)).await;
            }
            seen
        })
    })
}

/// The wall clock as the logs print it (RFC 3339, UTC, microseconds).
fn utc_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let secs = now.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        now.subsec_micros()
    )
}

/// Prints where a failover's time went: the kill, then the controller's and the new master's log
/// lines about it (the close, the election, the notice, the role switch, the name server
/// registration), in the order of their timestamps.
fn print_timeline(group: &Group, killed_at: &str, new_master: &str) {
    let controller_words = ["connection closed", "electing", "new master", "cannot tell"];
    let broker_words = [
        "notice of master",
        "master of",
        "master at epoch",
        "register",
        "SyncStateSet",
    ];
    let mut lines: Vec<String> = vec![format!("{killed_at} test: SIGKILL of the master")];
    for line in group.controllers.log().lines() {
        if line > killed_at && controller_words.iter().any(|w| line.contains(w)) {
            lines.push(format!("{line}   [controller]"));
        }
    }
    let new = &group.brokers[group.index_of(new_master)];
    for line in new.log().lines() {
        if line > killed_at && broker_words.iter().any(|w| line.contains(w)) {
            lines.push(format!("{line}   [new master]"));
        }
    }
    lines.sort();
    println!("failover timeline:");
    for line in lines.iter().take(40) {
        println!("  {line}");
    }
}

fn set_attribute(addr: SocketAddr, topic: &str, change: &str) {
    let header = protocol::header::CreateTopicRequestHeader {
        topic: topic.into(),
        default_topic: "TBW102".into(),
        read_queue_nums: 2,
        write_queue_nums: 2,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        topic_sys_flag: None,
        order: None,
        attributes: Some(change.into()),
        force: None,
    };
    let r = run_local(async move {
        let c = Client::connect(addr, Duration::from_secs(2)).await.unwrap();
        c.invoke(
            RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC)
                .with_ext_fields(protocol::header::CommandHeader::to_ext_fields(&header)),
            Duration::from_secs(5),
        )
        .await
        .unwrap()
    });
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
}

/// Waits until the broker at `addr` holds `message.type` = `want` for TYPED_TOPIC (GET_TOPIC_CONFIG).
fn wait_message_type(addr: SocketAddr, want: &str) {
    let start = Instant::now();
    loop {
        let got = run_local(async move {
            let c = Client::connect(addr, Duration::from_secs(2)).await.ok()?;
            let r = c
                .invoke(
                    RemotingCommand::request(request_code::GET_TOPIC_CONFIG)
                        .with_ext("topic", TYPED_TOPIC),
                    Duration::from_secs(2),
                )
                .await
                .ok()?;
            let tc: protocol::body::TopicConfig = protocol::body::from_json(&r.body).ok()?;
            tc.attributes.get("message.type").cloned()
        });
        if got.as_deref() == Some(want) {
            return;
        }
        assert!(
            start.elapsed() < LIMIT,
            "{addr} never held {TYPED_TOPIC} with message.type={want} (has {got:?})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Creates ACL 2.0 user `name` on the broker at `addr`.
fn create_user(addr: SocketAddr, name: &str) {
    let req = RemotingCommand::request(request_code::AUTH_CREATE_USER)
        .with_ext("username", name)
        .with_body(br#"{"password":"pw-1"}"#.to_vec());
    let r = run_local(async move {
        let c = Client::connect(addr, Duration::from_secs(2)).await.unwrap();
        c.invoke(req, Duration::from_secs(5)).await.unwrap()
    });
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
}

/// Waits until the broker at `addr` holds ACL 2.0 user `name` (AUTH_GET_USER).
fn wait_user(addr: SocketAddr, name: &'static str) {
    let start = Instant::now();
    loop {
        let found = run_local(async move {
            let c = Client::connect(addr, Duration::from_secs(2)).await.ok()?;
            let r = c
                .invoke(
                    RemotingCommand::request(request_code::AUTH_GET_USER)
                        .with_ext("username", name),
                    Duration::from_secs(2),
                )
                .await
                .ok()?;
            (r.code == response_code::SUCCESS && !r.body.is_empty()).then_some(())
        });
        if found.is_some() {
            return;
        }
        assert!(start.elapsed() < LIMIT, "{addr} never held user {name}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits until both brokers' queues are identical (a replica holds exactly its master's messages).
fn wait_same_queues(replica: &str, master: &str) {
    let start = Instant::now();
    while !(0..SHARD_BROKERS)
        .all(|i| read_queue(shard_broker(replica, i)) == read_queue(shard_broker(master, i)))
    {
        assert!(
            start.elapsed() < LIMIT,
            "{replica}'s queues never matched its master's"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn master_sigkill_under_sync_sends_elects_an_in_sync_replica_and_loses_nothing_acknowledged() {
    let mut group = Group::start(1, Ipv4Addr::LOCALHOST, None, "");
    let first = group.info().unwrap();
    let master_addr = first.master_addr.clone();
    let master = group.index_of(&master_addr);
    let mut producer = Producer {
        acked: Vec::new(),
        seq: 0,
    };
    producer.send_ok(&master_addr, 200);
    // A RocketMQ 5 topic attribute, copied to every replica with the topic table before the kill.
    set_attribute(
        shard_broker(&master_addr, 0),
        TYPED_TOPIC,
        "+message.type=FIFO",
    );
    // An ACL 2.0 user likewise (the replicas copy the master's users and ACLs).
    create_user(shard_broker(&master_addr, 0), "failover-user");
    for i in (0..group.brokers.len()).filter(|i| *i != master) {
        wait_message_type(shard_broker(&group.addr(i), 0), "FIFO");
        wait_user(shard_broker(&group.addr(i), 0), "failover-user");
    }
    group.brokers[master].kill9();
    let killed = Instant::now();
    let killed_at = utc_now();
    let routes = watch_routes(group.namesrv, killed);

    let (new_master, outage) =
        producer.send_through_failover(&group, &master_addr, first.epoch, killed, 200);
    print_timeline(&group, &killed_at, &new_master);
    // The controller takes the close of the master's heartbeat connection (its kernel closes it at
    // the SIGKILL) for its death and elects at once: first acknowledged send on the new master
    // 24 to 83 ms after the kill, the name server routing to it 22 to 68 ms after (2026-12-07,
    // 2-core VM, debug build). Waiting for the 3 s heartbeat timeout took 2.9 to 3.4 s for both. 2 s
    // leaves room for a loaded CI machine and still fails on the timeout path.
    assert!(
        outage < Duration::from_secs(2),
        "first acknowledged send {outage:?} after the SIGKILL (the close of the master's heartbeat \
         connection should start the election at once)"
    );
    let routed = routes
        .join()
        .unwrap()
        .into_iter()
        .find(|(_, masters)| masters.contains(&new_master))
        .map(|(at, _)| at);
    println!("name server routes {TOPIC} to the new master {routed:?} after the SIGKILL");
    assert!(
        routed.is_some_and(|at| at < Duration::from_secs(2)),
        "the name server did not route to the new master {new_master} within 2 s: {routed:?}"
    );
    producer.check_on(&new_master, "new master");
    wait_message_type(shard_broker(&new_master, 0), "FIFO");
    wait_user(shard_broker(&new_master, 0), "failover-user");

    // The old master returns as a replica of the new epoch and catches up.
    group.brokers[master].restart();
    group.wait("the old master back in the SyncStateSet", |g| {
        (g.master_addr == new_master && g.sync_state_set.len() == 3).then_some(())
    });
    producer.send_ok(&new_master, 20);
    wait_same_queues(&master_addr, &new_master);
    producer.check_on(&master_addr, "old master, now a replica");
}

#[test]
fn returning_old_master_cuts_the_tail_no_other_replica_got() {
    // A replica in the SyncStateSet stays there for haMaxTimeSlaveNotCatchup after its last
    // catch-up: long enough here that the paused one is never dropped while the sends wait for it.
    let mut group = Group::start(
        1,
        Ipv4Addr::LOCALHOST,
        None,
        "haMaxTimeSlaveNotCatchup = 60000\n",
    );
    let first = group.info().unwrap();
    let master_addr = first.master_addr.clone();
    let master = group.index_of(&master_addr);
    let mut producer = Producer {
        acked: Vec::new(),
        seq: 0,
    };
    producer.send_ok(&master_addr, 100);
    // The replicas acknowledge appends before their flush (500 ms): let them flush, then kill one
    // and pause the other. Killing both let the master's SyncStateSet shrink to itself within a
    // checkSyncStateSetPeriod (connections closed), after which it rightly acknowledges alone
    // (minInSyncReplicas 1), as Apache's does: on a loaded machine a later send came after that.
    std::thread::sleep(Duration::from_secs(1));
    let replicas: Vec<usize> = (0..3).filter(|i| *i != master).collect();
    group.brokers[replicas[0]].kill9();
    assert!(common::send_signal(
        group.brokers[replicas[1]].pid(),
        libc::SIGSTOP
    ));
    // The master stores (and syncs) what no replica will have, and acknowledges none of it: the
    // killed replica leaves the SyncStateSet, the paused one stays in it and never acks.
    for n in 0..4 {
        let body = producer.body();
        if let Ok(offset) = send_one(
            shard_broker(&master_addr, n % SHARD_BROKERS),
            &body,
            Duration::from_secs(5),
        ) {
            panic!("acknowledged at offset {offset} although no replica has it");
        }
        // Spread over more than a checkSyncStateSetPeriod (1 s): the later sends wait for the
        // paused replica alone, once the killed one has left the SyncStateSet.
        std::thread::sleep(Duration::from_millis(500));
    }
    group.brokers[master].kill9();
    let killed = Instant::now();
    group.brokers[replicas[1]].kill9();
    for i in &replicas {
        group.brokers[*i].restart();
    }
    let (new_master, _) =
        producer.send_through_failover(&group, &master_addr, first.epoch, killed, 100);

    group.brokers[master].restart();
    group.wait("the old master back in the SyncStateSet", |g| {
        (g.master_addr == new_master && g.sync_state_set.len() == 3).then_some(())
    });
    wait_same_queues(&master_addr, &new_master);
    producer.check_on(&master_addr, "old master, now a replica");
    assert!(
        group.brokers[master]
            .log()
            .contains("written in an older epoch"),
        "the old master never cut its unreplicated tail:\n{}",
        group.brokers[master].log()
    );
}

#[test]
fn partitioned_master_is_replaced_and_follows_the_new_master_after_the_heal() {
    if let Err(why) = NetNs::available() {
        println!("SKIPPED: {why}");
        return;
    }
    let ns = NetNs::create();
    let group = Group::start(1, ns.host_ip, Some((&ns, 0)), "");
    let first = group.info().unwrap();
    let old = first.master_addr.clone();
    assert_eq!(old, group.addr(0));
    let mut producer = Producer {
        acked: Vec::new(),
        seq: 0,
    };
    producer.send_ok(&old, 100);

    ns.set_loss(100);
    let cut = Instant::now();
    let (new_master, _) = producer.send_through_failover(&group, &old, first.epoch, cut, 100);
    producer.check_on(&new_master, "new master");

    ns.clear_loss();
    group.wait("the old master back in the SyncStateSet", |g| {
        (g.master_addr == new_master && g.sync_state_set.len() == 3).then_some(())
    });
    wait_same_queues(&old, &new_master);
    producer.check_on(&old, "old master, now a replica");
}

#[test]
fn master_and_controller_leader_killed_together_still_fail_over() {
    let mut group = Group::start(3, Ipv4Addr::LOCALHOST, None, "");
    let first = group.info().unwrap();
    let master_addr = first.master_addr.clone();
    let master = group.index_of(&master_addr);
    let mut producer = Producer {
        acked: Vec::new(),
        seq: 0,
    };
    producer.send_ok(&master_addr, 100);

    // The raft leader dies, and the master 0.2 s later, before the other controllers have elected
    // a new raft leader: the close of the master's connections reaches only followers, which keep
    // it, so the next raft leader elects a new master as soon as it leads (it does not wait for
    // the master's heartbeat timeout).
    let leader = group.controllers.leader().expect("a raft leader");
    group.controllers.kill(leader);
    std::thread::sleep(Duration::from_millis(200));
    group.brokers[master].kill9();
    let killed = Instant::now();
    let killed_at = utc_now();
    println!("raft leader n{leader} SIGKILLed 0.2 s before the master");

    let (new_master, took) =
        producer.send_through_failover(&group, &master_addr, first.epoch, killed, 100);
    print_timeline(&group, &killed_at, &new_master);
    // A new raft leader takes 0.5 to 1 s of election timeout plus detection; it checks the groups
    // as soon as it leads and elects at once: first acknowledged send 1.3 to 1.7 s after the
    // master's kill here (2026-12-07, 2-core VM, debug build). Waiting for the heartbeat timeout
    // and the next scan it was 2.2 to 2.6 s, with the master killed first 3.3 to 3.7 s.
    assert!(
        took < Duration::from_secs(3),
        "first acknowledged send {took:?} after the master's kill"
    );
    producer.check_on(&new_master, "new master");
    let info = group.info().unwrap();
    assert!(
        info.epoch > first.epoch,
        "epoch went from {} to {}",
        first.epoch,
        info.epoch
    );
}

/// A follower controller paused (SIGSTOP) for longer than a heartbeat round's call timeout must not
/// cost the healthy master its role: heartbeats to the live leader go on at their own period. Each
/// round used to wait for every controller's answer (3 s call timeout), so the leader heard the
/// master only every ~4 s, past the 3 s heartbeat timeout, and deposed it (chaos seed 2022551485).
#[test]
fn a_paused_follower_controller_does_not_depose_a_healthy_master() {
    let mut group = Group::start(3, Ipv4Addr::LOCALHOST, None, "");
    let first = group.info().unwrap();
    let leader = group.controllers.leader().expect("a raft leader");
    let follower = (0..3).find(|i| *i != leader).unwrap();
    let pid = group.controllers.children[follower].as_ref().unwrap().id() as i32;
    let mut producer = Producer {
        acked: Vec::new(),
        seq: 0,
    };
    producer.send_ok(&first.master_addr, 20);
    assert!(common::send_signal(pid, libc::SIGSTOP));
    let paused = Instant::now();
    while paused.elapsed() < Duration::from_secs(9) {
        producer.send_ok(&first.master_addr, 5);
        std::thread::sleep(Duration::from_millis(200));
    }
    // Asked before the follower runs again (it could answer from a stale view).
    let info = group.wait("the group's state", |g| Some(g.clone()));
    assert!(common::send_signal(pid, libc::SIGCONT));
    assert_eq!(
        (info.master_addr.as_str(), info.epoch),
        (first.master_addr.as_str(), first.epoch),
        "the master changed while controller n{follower} was paused"
    );
    producer.check_on(&first.master_addr, "master");
    group.controllers.kill(follower);
}

/// A send that must be refused: its answer code and remark.
fn send_refused(addr: SocketAddr, body: &[u8]) -> (i32, String) {
    let body = body.to_vec();
    run_local(async move {
        let c = Client::connect(addr, Duration::from_secs(1)).await.unwrap();
        let resp = c
            .invoke(
                common::send_request(TOPIC, 0, &body, ""),
                Duration::from_secs(5),
            )
            .await
            .unwrap();
        (resp.code, resp.remark.unwrap_or_default())
    })
}

#[test]
fn slow_replica_leaves_the_sync_state_set_and_is_never_elected() {
    if let Err(why) = NetNs::available() {
        println!("SKIPPED: {why}");
        return;
    }
    let ns = NetNs::create();
    let mut group = Group::start(
        1,
        ns.host_ip,
        Some((&ns, 2)),
        "haMaxTimeSlaveNotCatchup = 2000\n",
    );
    let first = group.info().unwrap();
    let master_addr = first.master_addr.clone();
    let (healthy, slow) = (group.addr(1), group.addr(2));
    let mut producer = Producer {
        acked: Vec::new(),
        seq: 0,
    };
    producer.send_ok(&master_addr, 20);

    // Replica 2's link loses most packets: it falls behind, the master drops it from the SyncStateSet
    // (haMaxTimeSlaveNotCatchup 2 s), and sends stop waiting for it.
    ns.set_loss(70);
    let slowed = Instant::now();
    let mut slowest_late = Duration::ZERO;
    let mut shrunk_after = None;
    let mut answers: BTreeMap<String, u32> = BTreeMap::new();
    while slowed.elapsed() < Duration::from_secs(12) {
        let i = producer.acked.len() % SHARD_BROKERS;
        let body = [producer.body(), vec![b'y'; 32 * 1024]].concat();
        let sent = Instant::now();
        match send_one(shard_broker(&master_addr, i), &body, Duration::from_secs(5)) {
            Ok(offset) => {
                producer.acked.push((i, offset, body));
                if shrunk_after.is_some() {
                    slowest_late = slowest_late.max(sent.elapsed());
                }
                *answers.entry("SEND_OK".into()).or_default() += 1;
            }
            Err(e) => *answers.entry(e.chars().take(40).collect()).or_default() += 1,
        }
        if shrunk_after.is_none() && group.info().is_some_and(|g| g.sync_state_set.len() == 2) {
            shrunk_after = Some(slowed.elapsed());
        }
    }
    let shrunk_after = shrunk_after.expect("the slow replica never left the SyncStateSet");
    println!(
        "slow replica out of the SyncStateSet {shrunk_after:?} after its link slowed; answers {answers:?}; \
         slowest acknowledged send after that {slowest_late:?}"
    );
    assert!(
        slowest_late < Duration::from_secs(2),
        "sends still waited for the slow replica"
    );

    // The master dies: the in-sync replica takes over, never the slow one (alive or not).
    let master = group.index_of(&master_addr);
    group.brokers[master].kill9();
    let killed = Instant::now();
    let (new_master, _) =
        producer.send_through_failover(&group, &master_addr, first.epoch, killed, 20);
    assert_eq!(
        new_master, healthy,
        "the new master must be the in-sync replica, not {slow}"
    );
    producer.check_on(&new_master, "new master");

    // The link heals: the slow replica catches up with the new master and is in sync again.
    ns.clear_loss();
    group.wait("the slow replica back in the SyncStateSet", |g| {
        (g.master_addr == new_master && g.sync_state_set.len() == 2).then_some(())
    });
    wait_same_queues(&slow, &new_master);
}

#[test]
fn too_few_in_sync_replicas_refuse_sends_instead_of_acknowledging_them() {
    let mut group = Group::start(
        1,
        Ipv4Addr::LOCALHOST,
        None,
        "minInSyncReplicas = 2\nhaMaxTimeSlaveNotCatchup = 1000\n",
    );
    let master_addr = group.info().unwrap().master_addr;
    let mut producer = Producer {
        acked: Vec::new(),
        seq: 0,
    };
    producer.send_ok(&master_addr, 10);
    group.brokers[1].kill9();
    group.brokers[2].kill9();
    group.wait("a SyncStateSet of the master alone", |g| {
        (g.sync_state_set.len() == 1).then_some(())
    });
    let body = producer.body();
    let (code, remark) = send_refused(shard_broker(&master_addr, 0), &body);
    assert_eq!(code, response_code::SYSTEM_ERROR, "{remark}");
    assert!(remark.contains("in-sync replicas not enough"), "{remark}");
    // A replica returns and catches up: sends are acknowledged again.
    group.brokers[1].restart();
    group.wait("two replicas in sync", |g| {
        (g.sync_state_set.len() == 2).then_some(())
    });
    producer.send_ok(&master_addr, 10);
    producer.check_on(&master_addr, "master");
}

#[test]
fn elect_master_hands_the_role_to_a_chosen_replica_and_the_running_old_master_follows_it() {
    let group = Group::start(1, Ipv4Addr::LOCALHOST, None, "");
    let first = group.info().unwrap();
    let old = first.master_addr.clone();
    let mut producer = Producer {
        acked: Vec::new(),
        seq: 0,
    };
    producer.send_ok(&old, 50);
    let chosen = *first
        .sync_state_set
        .iter()
        .find(|id| Some(**id) != first.master_id)
        .unwrap();
    // mqadmin electMaster: CONTROLLER_ELECT_MASTER designating a replica.
    let controller = group.controllers.addrs[0].clone();
    let answer = run_local(async move {
        let c = Client::connect_str(&controller, Duration::from_secs(2))
            .await
            .unwrap();
        c.invoke(
            RemotingCommand::request(request_code::CONTROLLER_ELECT_MASTER)
                .with_ext("clusterName", "TestCluster")
                .with_ext("brokerName", GROUP)
                .with_ext("brokerId", &chosen.to_string())
                .with_ext("designateElect", "true"),
            Duration::from_secs(5),
        )
        .await
        .unwrap()
    });
    assert_eq!(answer.code, response_code::SUCCESS, "{:?}", answer.remark);
    let new_master = group.wait("the chosen replica as master", |g| {
        (g.master_id == Some(chosen) && g.epoch > first.epoch).then(|| g.master_addr.clone())
    });
    // The old master, still running, turns replica: it refuses sends, the new master takes them.
    let start = Instant::now();
    loop {
        let body = producer.body();
        match send_one(shard_broker(&old, 0), &body, Duration::from_secs(2)) {
            Err(e)
                if e.contains("slave")
                    || e.contains(&response_code::SERVICE_NOT_AVAILABLE.to_string()) =>
            {
                break
            }
            Err(e) => panic!("unexpected answer from the old master: {e}"),
            Ok(offset) => {
                // Taken before it heard of the new epoch; a SEND_OK must then be on the new master.
                producer.acked.push((0, offset, body));
                assert!(
                    start.elapsed() < LIMIT,
                    "the old master never stopped taking sends"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    producer.send_ok(&new_master, 50);
    group.wait("three replicas in sync under the new master", |g| {
        (g.master_addr == new_master && g.sync_state_set.len() == 3).then_some(())
    });
    wait_same_queues(&old, &new_master);
    producer.check_on(&new_master, "new master");
    producer.check_on(&old, "old master, now a replica");
}

/// Right after a failover the controllers leave the new master alone in its SyncStateSet; with
/// allAckInSyncStateSet it then acknowledges alone until its replicas are added back. Under a steady
/// stream of sends a replica's ack never equalled the master's log end at the moment of the check,
/// so the connected, replicating survivor stayed out for 15-20 s (chaos, 2026-12-07: `SyncStateSet
/// {3} -> {1, 2, 3}` 16 s after the election). It must be back within a few check periods (1 s): here
/// under 6 s from the election (1.3-2.4 s seen on the loaded 2-core machine; the old rule: not within
/// 8 s in 3 runs of 3).
#[test]
fn the_surviving_replica_rejoins_the_new_masters_sync_state_set_under_continuous_sends() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let mut group = Group::start(1, Ipv4Addr::LOCALHOST, None, "");
    let first = group.info().unwrap();
    let master_addr = first.master_addr.clone();
    let master = group.index_of(&master_addr);
    let mut producer = Producer {
        acked: Vec::new(),
        seq: 0,
    };
    producer.send_ok(&master_addr, 20);
    group.brokers[master].kill9();
    // Producers keep whichever survivor is master busy from the start (32 connections sending one
    // after another on each shard-broker; the replica refuses them) until the replica is back.
    let stop = Arc::new(AtomicBool::new(false));
    let producers: Vec<_> = (0..3)
        .filter(|b| *b != master)
        .flat_map(|b| (0..SHARD_BROKERS).map(move |i| (b, i)))
        .map(|(b, i)| {
            let stop = stop.clone();
            let addr = shard_broker(&group.addr(b), i);
            std::thread::spawn(move || load(addr, i, stop))
        })
        .collect();
    let elected = group.wait("a new master", |g| {
        (g.master_addr != master_addr && g.epoch > first.epoch && g.master_id.is_some())
            .then(|| g.clone())
    });
    let new_master = elected.master_addr.clone();
    let start = Instant::now();
    let mut last = elected.clone();
    let rejoined = loop {
        if let Some(g) = group.info() {
            if g.master_addr == new_master && g.sync_state_set.len() == 2 {
                break Some(start.elapsed());
            }
            last = g;
        }
        if start.elapsed() > Duration::from_secs(8) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    stop.store(true, Ordering::Relaxed);
    for t in producers {
        producer.acked.extend(t.join().unwrap());
    }
    let sent = producer.acked.len();
    println!(
        "SyncStateSet at the election {:?}; survivor back {rejoined:?} after it ({sent} sends acknowledged)",
        elected.sync_state_set
    );
    let rejoined = rejoined.unwrap_or_else(|| {
        panic!("the surviving replica was not back in the SyncStateSet within 8 s under load: {last:?}")
    });
    assert!(
        rejoined < Duration::from_secs(6),
        "the surviving replica took {rejoined:?} to rejoin"
    );
    producer.check_on(&new_master, "new master");
    let survivor = (0..3)
        .map(|i| group.addr(i))
        .find(|a| *a != master_addr && *a != new_master)
        .unwrap();
    wait_same_queues(&survivor, &new_master);
    producer.check_on(&survivor, "surviving replica");
}

/// A replica paused (SIGSTOP: its connections stay open, as across a partition) while a send waits
/// for its ack: the master drops it from the SyncStateSet after `haMaxTimeSlaveNotCatchup`, and the
/// send already waiting must then be acknowledged, as Apache's GroupTransferService reads the set
/// again on every pass. The wait used to keep the members it started with, so every send in flight
/// at the fault waited out its whole `syncFlushTimeout` (3 s here) and failed: in the chaos runs of
/// 2026-12-07 a cut slave stopped sends for 4.0 s (two producer timeouts of 2 s) although the set
/// shrank after 2-3 s.
#[test]
fn a_send_waiting_for_a_paused_replica_is_acknowledged_once_it_leaves_the_sync_state_set() {
    let group = Group::start(
        1,
        Ipv4Addr::LOCALHOST,
        None,
        "haMaxTimeSlaveNotCatchup = 1000\ncheckSyncStateSetPeriod = 300\n",
    );
    let first = group.info().unwrap();
    let master_addr = first.master_addr.clone();
    let master = group.index_of(&master_addr);
    let mut producer = Producer {
        acked: Vec::new(),
        seq: 0,
    };
    producer.send_ok(&master_addr, 10);
    let paused = (0..3).find(|i| *i != master).unwrap();
    let pid = group.brokers[paused].pid();
    assert!(common::send_signal(pid, libc::SIGSTOP));
    let sent = Instant::now();
    let body = producer.body();
    let answer = send_one(shard_broker(&master_addr, 0), &body, Duration::from_secs(8));
    let took = sent.elapsed();
    let info = group.info();
    assert!(common::send_signal(pid, libc::SIGCONT));
    println!("send during the pause: {answer:?} after {took:?}; controller says {info:?}");
    let offset = answer.unwrap_or_else(|e| {
        panic!(
            "the send waiting for the paused replica failed after {took:?} ({e}): it still waited \
             for a replica that had left the SyncStateSet"
        )
    });
    producer.acked.push((0, offset, body));
    assert!(
        took < Duration::from_millis(2800),
        "acknowledged only after {took:?}, past the set's change (1 s + a 0.3 s check)"
    );
    assert!(
        info.is_some_and(|g| g.sync_state_set.len() == 2),
        "the paused replica should have left the SyncStateSet"
    );
    producer.check_on(&master_addr, "master");
}

/// Sends to shard-broker `i` at `addr` from 32 connections, each one send after another, until
/// `stop`: the acknowledged ones. A refused send (not master yet, or no longer) is retried 20 ms
/// later.
fn load(
    addr: SocketAddr,
    i: usize,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Vec<Acked> {
    run_local(async move {
        let senders = (0..32).map(|k| {
            let stop = stop.clone();
            async move {
                let mut acked: Vec<Acked> = Vec::new();
                let mut client: Option<Client> = None;
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if client.is_none() {
                        client = Client::connect(addr, Duration::from_secs(1)).await.ok();
                    }
                    let Some(c) = client.clone() else {
                        glommio::timer::sleep(Duration::from_millis(20)).await;
                        continue;
                    };
                    n += 1;
                    let body = format!("load-{addr}-{k}-{n:06}-{}", "z".repeat(1000)).into_bytes();
                    let request = common::send_request(TOPIC, 0, &body, "");
                    match c.invoke(request, Duration::from_secs(5)).await {
                        Ok(resp) if resp.code == response_code::SUCCESS => {
                            if let Some(o) = resp.ext("queueOffset").and_then(|v| v.parse().ok()) {
                                acked.push((i, o, body));
                            }
                        }
                        Ok(_) => glommio::timer::sleep(Duration::from_millis(20)).await,
                        Err(_) => {
                            client = None;
                            glommio::timer::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
                acked
            }
        });
        let mut tasks = Vec::new();
        for sender in senders {
            tasks.push(glommio::spawn_local(sender));
        }
        let mut acked = Vec::new();
        for t in tasks {
            acked.extend(t.await);
        }
        acked
    })
}
