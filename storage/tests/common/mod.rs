//! Helpers shared by the storage integration tests: executors, configs, messages.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)]

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use glommio::LocalExecutorBuilder;
use protocol::message::properties;
use protocol::message::record::MessageRecord;
use storage::{FlushDiskType, StoreConfig};

/// Runs `f` to completion in a fresh glommio executor on its own thread.
pub fn run<F, Fut, T>(f: F) -> T
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T> + 'static,
    T: Send + 'static,
{
    LocalExecutorBuilder::default()
        .spawn(move || async move {
            let out = f().await;
            // Files dropped with the test's store are closed by the executor's next I/O cycle; one
            // more cycle before the executor ends, or their descriptors stay open for the life of
            // the test process (a long model run ran out of them).
            glommio::timer::sleep(Duration::from_millis(1)).await;
            out
        })
        .expect("spawn executor")
        .join()
        .expect("executor thread")
}

/// Small segments so tests cross boundaries quickly.
pub fn small_config(dir: &Path, flush: FlushDiskType) -> StoreConfig {
    let mut cfg = StoreConfig::new(dir, 3);
    cfg.mapped_file_size_commit_log = 64 * 1024;
    cfg.mapped_file_size_consume_queue = 50 * 20;
    cfg.max_message_size = 16 * 1024;
    cfg.flush_disk_type = flush;
    cfg.flush_interval_commit_log_ms = 20;
    cfg.flush_interval_consume_queue_ms = 50;
    cfg.max_hash_slot_num = 64;
    cfg.max_index_num = 200;
    cfg.read_cache_bytes = 8 * 1024;
    cfg
}

pub fn message(
    topic: &str,
    queue_id: i32,
    body: &[u8],
    tags: &str,
    keys: &str,
    uniq: &str,
) -> MessageRecord {
    let mut props = Vec::new();
    if !tags.is_empty() {
        props.push((properties::TAGS, tags));
    }
    if !keys.is_empty() {
        props.push((properties::KEYS, keys));
    }
    if !uniq.is_empty() {
        props.push((properties::UNIQ_KEY, uniq));
    }
    MessageRecord {
        topic: topic.to_owned(),
        queue_id,
        body: Bytes::copy_from_slice(body),
        properties: properties::encode(props),
        born_timestamp: 1_700_000_000_000,
        born_host: "10.0.0.1:5000".parse().expect("addr"),
        store_host: "127.0.0.1:10911".parse().expect("addr"),
        ..MessageRecord::default()
    }
}

/// A body whose bytes depend on `seed`, of `len` bytes.
pub fn body(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
