//! Helpers shared by the HA tests: master/slave configs, waiting on runtime info, sends that record
//! what was acknowledged, and comparison of queues between two brokers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use protocol::response_code;
use remoting::Client;

use crate::common::*;

/// Retention must not delete what a slave still needs because the shared test disk is fairly full.
const NO_DISK_PRESSURE: &str = "diskMaxUsedSpaceRatio = 99\n";

/// Extra config of a master.
pub fn master_extra(role: &str, flush: &str) -> String {
    format!(
        "brokerRole = \"{role}\"\nflushDiskType = \"{flush}\"\nsyncFlushTimeout = 5000\n{NO_DISK_PRESSURE}"
    )
}

/// Extra config of a slave of `master` (by haMasterAddress) or found through `namesrv`. The tests read
/// the replicated data back from the slave, which RocketMQ 5 refuses without `slaveReadEnable`.
pub fn slave_extra(master: Option<&Broker>, namesrv: Option<SocketAddr>) -> String {
    let mut s =
        format!("brokerRole = \"SLAVE\"\nbrokerId = 1\nslaveReadEnable = true\n{NO_DISK_PRESSURE}");
    if let Some(m) = master {
        s.push_str(&format!("haMasterAddress = \"{}\"\n", m.ha_addr()));
    }
    if let Some(ns) = namesrv {
        s.push_str(&format!("namesrvAddr = \"{ns}\"\n"));
    }
    s
}

/// Waits until every shard of the master has a slave connected.
pub async fn wait_slave_connected(master: SocketAddr, limit: Duration) {
    let start = Instant::now();
    while start.elapsed() < limit {
        let info = runtime_info(master).await;
        if info_i64(&info, "haSlaveConnections").unwrap_or(0) >= 1 {
            return;
        }
        glommio::timer::sleep(Duration::from_millis(100)).await;
    }
    panic!("no slave connected to every shard of {master} within {limit:?}");
}

/// Waits until the slave holds every shard's log up to the master's end (master still running).
pub async fn wait_caught_up(master: SocketAddr, slave: SocketAddr, shards: usize, limit: Duration) {
    let start = Instant::now();
    let mut last = (BTreeMap::new(), BTreeMap::new());
    while start.elapsed() < limit {
        let m = runtime_info(master).await;
        let s = runtime_info(slave).await;
        let same = (0..shards).all(|i| {
            let k = format!("shard{i}.commitLogMaxOffset");
            m.contains_key(&k) && m.get(&k) == s.get(&k)
        });
        if same {
            return;
        }
        last = (m, s);
        glommio::timer::sleep(Duration::from_millis(200)).await;
    }
    panic!(
        "slave did not catch up within {limit:?}: master {:?} slave {:?}",
        last.0, last.1
    );
}

/// A message the master acknowledged.
#[derive(Debug, Clone)]
pub struct Acked {
    pub queue_id: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub body: Vec<u8>,
}

pub fn body_of(task: usize, seq: usize, size: usize) -> Vec<u8> {
    let mut b = format!("task{task}-msg{seq}-").into_bytes();
    let mut x = (task as u64 + 1) * 1_000_003 + seq as u64;
    while b.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b.push(b'a' + (x % 26) as u8);
    }
    b
}

/// offsetMsgId: 16 hex digits of store host, then 16 of the physical offset.
pub fn phys_of_msg_id(msg_id: &str) -> i64 {
    i64::from_str_radix(msg_id.get(16..32).expect("msgId of 32 chars"), 16).expect("hex msgId")
}

/// Sends `count` messages of `size` bytes per task from `tasks` concurrent connections, round-robin
/// over `queues` queues; stops a task at its first transport error (broker gone). Returns every
/// SUCCESS answer and the other codes seen.
pub async fn send_load(
    addr: SocketAddr,
    topic: &str,
    queues: i32,
    tasks: usize,
    count: usize,
    size: usize,
) -> (Vec<Acked>, Vec<i32>) {
    let acked = Rc::new(std::cell::RefCell::new(Vec::new()));
    let codes = Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut handles = Vec::new();
    for t in 0..tasks {
        let acked = acked.clone();
        let codes = codes.clone();
        let topic = topic.to_owned();
        handles.push(glommio::spawn_local(async move {
            let Ok(c) = Client::connect(addr, TIMEOUT).await else {
                return;
            };
            for seq in 0..count {
                let queue_id = ((seq + t) % queues as usize) as i32;
                let body = body_of(t, seq, size);
                let req = send_request(&topic, queue_id, &body, "");
                match c.invoke(req, Duration::from_secs(15)).await {
                    Ok(r) if r.code == response_code::SUCCESS => {
                        acked.borrow_mut().push(Acked {
                            queue_id,
                            queue_offset: r.ext("queueOffset").unwrap().parse().unwrap(),
                            physical_offset: phys_of_msg_id(r.ext("msgId").unwrap()),
                            body,
                        });
                    }
                    Ok(r) => codes.borrow_mut().push(r.code),
                    Err(_) => return,
                }
            }
        }));
    }
    for h in handles {
        h.await;
    }
    let a = acked.borrow().clone();
    let c = codes.borrow().clone();
    (a, c)
}

/// Sends one message until the master answers SUCCESS (the slave connected), bounded in time.
pub async fn send_until_success(addr: SocketAddr, topic: &str, limit: Duration) {
    let c = connect(addr).await;
    let start = Instant::now();
    let mut last = 0;
    while start.elapsed() < limit {
        let r = send(&c, topic, 0, b"warm-up", "").await;
        if r.code == response_code::SUCCESS {
            return;
        }
        last = r.code;
        glommio::timer::sleep(Duration::from_millis(100)).await;
    }
    panic!("no SUCCESS within {limit:?}; last code {last}");
}

/// Raw pull bodies of a queue from offset 0 (concatenated stored records), at most `limit` tries of
/// TOPIC_NOT_EXIST while a slave learns the topic.
pub async fn pull_raw_all(addr: SocketAddr, topic: &str, queue_id: i32) -> Vec<u8> {
    let client = connect(addr).await;
    let mut offset = 0;
    let mut out = Vec::new();
    loop {
        let r = pull(&client, topic, queue_id, offset).await;
        if r.code != response_code::SUCCESS {
            if r.code != response_code::PULL_NOT_FOUND {
                eprintln!(
                    "pull_raw_all {addr} {topic}/{queue_id}: stopped at {offset} with code {} {:?}",
                    r.code, r.remark
                );
            }
            return out;
        }
        out.extend_from_slice(&r.body);
        let next: i64 = r.ext("nextBeginOffset").unwrap().parse().unwrap();
        assert!(next > offset);
        offset = next;
    }
}
