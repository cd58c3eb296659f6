//! What the HA tests share: an executor to run a test in, a small store config and numbered records.

// Each test binary uses the part it needs.
#![allow(dead_code)]

use glommio::LocalExecutorBuilder;
use protocol::message::record::MessageRecord;
use storage::{FlushDiskType, StoreConfig};

/// CommitLog segment size of the test stores: small, so a test crosses segment ends.
pub const SEGMENT: usize = 64 * 1024;

/// Runs `f` on a fresh glommio executor and waits for it.
pub fn run<F, Fut>(f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    LocalExecutorBuilder::default()
        .spawn(f)
        .expect("executor")
        .join()
        .expect("executor thread");
}

/// A small store of shard `shard` in `dir`.
pub fn config(dir: &std::path::Path, shard: u16) -> StoreConfig {
    let mut cfg = StoreConfig::new(dir, shard);
    cfg.mapped_file_size_commit_log = SEGMENT as u64;
    cfg.mapped_file_size_consume_queue = 50 * 20;
    cfg.max_message_size = 16 * 1024;
    cfg.flush_disk_type = FlushDiskType::AsyncFlush;
    cfg.max_hash_slot_num = 64;
    cfg.max_index_num = 200;
    cfg.read_cache_bytes = 8 * 1024;
    cfg
}

/// Record `i` of `topic`: bodies of varied sizes over two queues.
pub fn record(topic: &str, i: usize) -> MessageRecord {
    let mut body = format!("message {i} ").into_bytes();
    body.resize(300 + (i % 50) * 7, b'x');
    MessageRecord {
        topic: topic.into(),
        queue_id: (i % 2) as i32,
        body: body.into(),
        born_timestamp: 1_700_000_000_000,
        ..MessageRecord::default()
    }
}
