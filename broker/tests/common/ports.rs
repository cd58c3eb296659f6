//! Free loopback ports: a random port below the kernel's ephemeral range (so parallel test binaries
//! rarely collide, and a broker restarted on its port does not find it taken by some client's
//! outgoing connection) is taken when it can be bound on 127.0.0.1 and on 0.0.0.0.

use std::net::TcpListener;
use std::time::Instant;

fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok() && TcpListener::bind(("0.0.0.0", port)).is_ok()
}

/// The ports tests pick from: from 20000 up to the start of the ephemeral range (32768 by default),
/// or 20000..60000 where that range starts too low to leave room.
fn port_span() -> (i32, i32) {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<i32>().ok())
        .unwrap_or(32768);
    if ephemeral_low >= 25_000 {
        (20_000, ephemeral_low - 20_000 - 32)
    } else {
        (20_000, 40_000)
    }
}

/// A port p for which p + d is free for every d in `around`.
fn free_port_with(around: &[i32]) -> u16 {
    let (base, span) = port_span();
    let seed = std::process::id() as u64 ^ Instant::now().elapsed().as_nanos() as u64;
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as u64);
    for _ in 0..1000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let p = base + (x % span as u64) as i32;
        if around
            .iter()
            .all(|d| u16::try_from(p + d).is_ok_and(port_free))
        {
            return p as u16;
        }
    }
    panic!("no free port found");
}

/// The most shards a test broker may have: each is a broker of its own with ports of its own.
const MAX_TEST_SHARDS: i32 = 4;

/// A broker's listen port p with the ports of its shard-brokers (p + 4i and its fast port p + 4i - 2,
/// for up to `MAX_TEST_SHARDS` shards) and p + 1 (HA) free.
pub fn free_broker_port() -> u16 {
    let mut around: Vec<i32> = (0..MAX_TEST_SHARDS)
        .flat_map(|i| [4 * i - 2, 4 * i])
        .collect();
    around.push(1);
    free_port_with(&around)
}

/// The listen port of shard-broker `shard` of a broker listening on `port` (`shardRouting = direct`).
pub fn shard_broker_port(port: u16, shard: u16) -> u16 {
    port + 4 * shard
}

/// A single free port (a name server).
pub fn free_port() -> u16 {
    free_port_with(&[0])
}
