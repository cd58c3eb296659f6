//! Fuzz target: arbitrary bytes as the CommitLog of a shard that stopped uncleanly (abort marker
//! present), opened by the real store so recovery scans them. Opening must answer (Ok or an error),
//! never panic or hang, and what it keeps must lie within the bytes given and read back.
#![no_main]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};

use glommio::LocalExecutorBuilder;
use libfuzzer_sys::fuzz_target;
use storage::{MessageStore, StoreConfig};

/// Small segments so inputs cover several, and records can cross a segment end.
const SEGMENT: usize = 16 * 1024;
const SEGMENTS: usize = 2;

static RUN: AtomicU64 = AtomicU64::new(0);

/// O_DIRECT needs a real file system (not tmpfs): `FUZZ_STORE_DIR`, else `fuzz/target/recovery-store`.
fn scratch() -> PathBuf {
    let base = std::env::var_os("FUZZ_STORE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target").join("recovery-store"));
    base.join(format!("{}-{}", std::process::id(), RUN.fetch_add(1, Ordering::Relaxed)))
}

fn write_shard(root: &std::path::Path, data: &[u8]) {
    let log = root.join("commitlog");
    std::fs::create_dir_all(&log).expect("scratch dir");
    for (i, chunk) in data.chunks(SEGMENT).take(SEGMENTS).enumerate() {
        let mut seg = chunk.to_vec();
        seg.resize(SEGMENT, 0);
        std::fs::write(log.join(format!("{:020}", i * SEGMENT)), seg).expect("segment");
    }
    std::fs::write(root.join("abort"), b"").expect("abort marker");
}

/// Opens the shard in `root` (recovery runs) and checks what it kept; panics on a broken invariant.
async fn recover(root: PathBuf, given: i64) {
    let mut cfg = StoreConfig::new(root, 0);
    cfg.mapped_file_size_commit_log = SEGMENT as u64;
    cfg.max_message_size = 8 * 1024;
    cfg.mapped_file_size_consume_queue = 20 * 64;
    cfg.max_hash_slot_num = 64;
    cfg.max_index_num = 256;
    cfg.read_cache_bytes = 64 * 1024;
    let Ok(store) = MessageStore::open(cfg).await else {
        return;
    };
    let kept = store.max_physical_offset();
    assert!(kept <= given.max(0) + SEGMENT as i64, "kept {kept} of {given} bytes");
    for (topic, queue) in store.queues() {
        let min = store.min_offset(&topic, queue);
        let got = store
            .get_messages(&topic, queue, min, 32, 1 << 20, None)
            .await
            .expect("recovered queue reads back");
        for rec in got.records {
            assert!(rec.len() >= 4);
        }
    }
    store.shutdown().await;
}

/// One executor for the whole run (glommio keeps some memory per executor until exit, and starting
/// one per input would be slow): inputs go to it by channel, one at a time.
struct Worker {
    inputs: mpsc::Sender<(PathBuf, i64)>,
    done: mpsc::Receiver<()>,
}

fn worker() -> &'static Mutex<Worker> {
    static WORKER: OnceLock<Mutex<Worker>> = OnceLock::new();
    WORKER.get_or_init(|| {
        let (inputs, rx) = mpsc::channel::<(PathBuf, i64)>();
        let (tx, done) = mpsc::channel();
        let handle = LocalExecutorBuilder::default()
            .spawn(move || async move {
                while let Ok((root, given)) = rx.recv() {
                    recover(root, given).await;
                    if tx.send(()).is_err() {
                        return;
                    }
                }
            })
            .expect("executor");
        // The executor runs until the fuzzer exits.
        std::mem::forget(handle);
        Mutex::new(Worker { inputs, done })
    })
}

fuzz_target!(|data: &[u8]| {
    let root = scratch();
    write_shard(&root, data);
    let given = (data.len().min(SEGMENT * SEGMENTS)) as i64;
    {
        let w = worker().lock().expect("worker");
        w.inputs.send((root.clone(), given)).expect("worker alive");
        w.done.recv().expect("worker finished the input");
    }
    let _ = std::fs::remove_dir_all(&root);
});
