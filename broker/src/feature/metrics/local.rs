//! Per-shard figures the hot paths record for the metrics endpoint: put latency histogram, parked
//! long-poll pulls, open connections. Each shard writes only its own slot (a thread-local `Arc`,
//! relaxed atomics on its own cache lines); shard 0 reads every slot when scraped.

use std::cell::OnceCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Upper bounds (microseconds) of the put latency histogram buckets; one more bucket holds the rest.
pub const PUT_LATENCY_BOUNDS_US: [u64; 14] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000,
];

/// The slot of one shard.
#[derive(Debug)]
#[repr(align(128))]
pub struct ShardMetrics {
    pub shard: usize,
    /// Non-cumulative bucket counts; the last one is above every bound.
    pub put_latency_buckets: [AtomicU64; PUT_LATENCY_BOUNDS_US.len() + 1],
    pub put_latency_sum_us: AtomicU64,
    pub put_requests: AtomicU64,
    pub pull_parked: AtomicU64,
    pub connections_open: AtomicU64,
    pub connections_accepted: AtomicU64,
}

impl ShardMetrics {
    fn new(shard: usize) -> ShardMetrics {
        ShardMetrics {
            shard,
            put_latency_buckets: Default::default(),
            put_latency_sum_us: AtomicU64::new(0),
            put_requests: AtomicU64::new(0),
            pull_parked: AtomicU64::new(0),
            connections_open: AtomicU64::new(0),
            connections_accepted: AtomicU64::new(0),
        }
    }
}

/// Every registered slot (locked only when a shard starts and when the endpoint is scraped).
static REGISTRY: Mutex<Vec<Arc<ShardMetrics>>> = Mutex::new(Vec::new());

thread_local! {
    static LOCAL: OnceCell<Arc<ShardMetrics>> = const { OnceCell::new() };
}

/// Gives the calling thread (a shard's executor) its slot. Call once when the shard starts.
pub fn register_shard(shard: usize) {
    let slot = Arc::new(ShardMetrics::new(shard));
    LOCAL.with(|cell| {
        if cell.set(slot.clone()).is_ok() {
            if let Ok(mut all) = REGISTRY.lock() {
                all.retain(|s| s.shard != shard);
                all.push(slot);
            }
        }
    });
}

/// Every shard's slot, by shard id.
pub fn all_shards() -> Vec<Arc<ShardMetrics>> {
    let mut all = REGISTRY.lock().map(|a| a.clone()).unwrap_or_default();
    all.sort_by_key(|s| s.shard);
    all
}

fn with_local(f: impl FnOnce(&ShardMetrics)) {
    LOCAL.with(|cell| {
        if let Some(slot) = cell.get() {
            f(slot);
        }
    });
}

/// Records one send request's time from decode to answer.
pub fn record_put(elapsed: Duration) {
    let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
    let bucket = PUT_LATENCY_BOUNDS_US
        .iter()
        .position(|bound| us <= *bound)
        .unwrap_or(PUT_LATENCY_BOUNDS_US.len());
    with_local(|m| {
        if let Some(b) = m.put_latency_buckets.get(bucket) {
            b.fetch_add(1, Relaxed);
        }
        m.put_latency_sum_us.fetch_add(us, Relaxed);
        m.put_requests.fetch_add(1, Relaxed);
    });
}

/// Counts a long-poll pull as parked while it lives.
pub struct Parked(());

impl Parked {
    pub fn new() -> Parked {
        super::long_polling::mark();
        with_local(|m| {
            m.pull_parked.fetch_add(1, Relaxed);
        });
        Parked(())
    }
}

impl Default for Parked {
    fn default() -> Self {
        Parked::new()
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        with_local(|m| {
            m.pull_parked.fetch_sub(1, Relaxed);
        });
    }
}

/// Counts a client connection as open while it lives.
pub struct OpenConnection(());

impl OpenConnection {
    pub fn new() -> OpenConnection {
        with_local(|m| {
            m.connections_open.fetch_add(1, Relaxed);
            m.connections_accepted.fetch_add(1, Relaxed);
        });
        OpenConnection(())
    }
}

impl Default for OpenConnection {
    fn default() -> Self {
        OpenConnection::new()
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        with_local(|m| {
            m.connections_open.fetch_sub(1, Relaxed);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_thread_records_into_its_own_slot() {
        // Not registered: recording is a no-op, not a panic.
        record_put(Duration::from_micros(10));
        std::thread::spawn(|| {
            register_shard(7);
            record_put(Duration::from_micros(40));
            record_put(Duration::from_micros(700));
            record_put(Duration::from_secs(5));
            let parked = Parked::new();
            let conn = OpenConnection::new();
            let mine = all_shards().into_iter().find(|s| s.shard == 7).unwrap();
            assert_eq!(mine.pull_parked.load(Relaxed), 1);
            assert_eq!(mine.connections_open.load(Relaxed), 1);
            drop((parked, conn));
            assert_eq!(mine.pull_parked.load(Relaxed), 0);
            assert_eq!(mine.connections_open.load(Relaxed), 0);
            assert_eq!(mine.connections_accepted.load(Relaxed), 1);
            assert_eq!(mine.put_requests.load(Relaxed), 3);
            assert_eq!(mine.put_latency_buckets[0].load(Relaxed), 1);
            assert_eq!(mine.put_latency_buckets[4].load(Relaxed), 1);
            assert_eq!(
                mine.put_latency_buckets[PUT_LATENCY_BOUNDS_US.len()].load(Relaxed),
                1
            );
            assert_eq!(mine.put_latency_sum_us.load(Relaxed), 40 + 700 + 5_000_000);
        })
        .join()
        .unwrap();
    }
}
