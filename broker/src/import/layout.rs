//! What a stopped Apache RocketMQ store directory holds, and the stores the import refuses: one still
//! running or stopped uncleanly (`abort`), a RocksDB consume queue or RocksDB metadata
//! (`storeType=defaultRocksDB`), a DLedger CommitLog, segments of mixed sizes or with gaps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The metadata files of Apache's `store/config` the import carries over.
pub const TOPICS: &str = "topics.json";
pub const GROUPS: &str = "subscriptionGroup.json";
pub const OFFSETS: &str = "consumerOffset.json";
pub const DELAY_OFFSETS: &str = "delayOffset.json";

/// Apache 5.x metadata the import does not carry, with what it means for the operator.
pub const NOT_CARRIED: &[(&str, &str)] = &[
    (
        "lmqConsumerOffset.json",
        "LMQ (light message queue) consumer offsets",
    ),
    ("consumerOrderInfo.json", "POP orderly consumption locks"),
    (
        "messageRequestMode.json",
        "per-group POP/PULL request mode (setConsumeMode)",
    ),
    ("topicQueueMapping.json", "static topic queue mappings"),
    (
        "consumerFilter.json",
        "SQL92 filter registrations (clients register them again)",
    ),
    (
        "timercheck",
        "the timer wheel's checkpoint (pending timers are found in the CommitLog instead)",
    ),
    ("timermetrics", "timer metrics"),
    ("transactionMetrics", "transaction metrics"),
];

/// A stopped Apache store, as found on disk.
#[derive(Debug)]
pub struct ApacheStore {
    pub root: PathBuf,
    /// Segment start offset -> file.
    pub segments: BTreeMap<u64, PathBuf>,
    /// The segments' common size: Apache's `mappedFileSizeCommitLog`.
    pub segment_size: u64,
    /// `abort` was present (accepted with `--force`).
    pub unclean: bool,
    /// RocketMQ 5's timer wheel files exist (`timerwheel`, `timerlog/`).
    pub has_timer_files: bool,
}

/// Checks `root` is a stopped Apache store we can import; `force` accepts an `abort` file.
pub fn detect(root: &Path, force: bool) -> Result<ApacheStore, String> {
    if !root.is_dir() {
        return Err(format!("{} is not a directory", root.display()));
    }
    let commitlog = root.join("commitlog");
    if !commitlog.is_dir() {
        if has_dledger(root) {
            return Err(format!(
                "{} holds a DLedger CommitLog (enableDLegerCommitLog): its records are wrapped in DLedger \
                 entries at other offsets; import is only for Apache's plain CommitLog",
                root.display()
            ));
        }
        return Err(format!(
            "{} has no commitlog/ directory: pass Apache's storePathRootDir (the directory holding \
             commitlog/, consumequeue/, config/); if storePathCommitLog pointed elsewhere, link that \
             directory here as commitlog",
            root.display()
        ));
    }
    refuse_rocksdb(root)?;
    let unclean = root.join("abort").exists();
    if unclean && !force {
        return Err(format!(
            "{} has an `abort` file: the Apache broker is still running or did not stop cleanly, so its \
             CommitLog tail and metadata may be incomplete. Stop it cleanly (bin/mqshutdown broker) and \
             retry, or pass --force to import what is on disk (the tail is checked record by record)",
            root.join("abort").display()
        ));
    }
    let (segments, segment_size) = segments(&commitlog)?;
    let has_timer_files = root.join("timerwheel").exists() || root.join("timerlog").is_dir();
    Ok(ApacheStore {
        root: root.to_path_buf(),
        segments,
        segment_size,
        unclean,
        has_timer_files,
    })
}

fn has_dledger(root: &Path) -> bool {
    std::fs::read_dir(root)
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("dledger"))
        })
        .unwrap_or(false)
}

/// Whether `dir` holds RocksDB's files (`CURRENT`, `MANIFEST-*`, `*.sst`, `OPTIONS-*`).
fn is_rocksdb_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name == "CURRENT"
                    || name.starts_with("MANIFEST-")
                    || name.starts_with("OPTIONS-")
                    || name.ends_with(".sst")
            })
        })
        .unwrap_or(false)
}

fn refuse_rocksdb(root: &Path) -> Result<(), String> {
    if is_rocksdb_dir(&root.join("consumequeue")) {
        return Err(format!(
            "{} is a RocksDB consume queue (storeType=defaultRocksDB); import is only for Apache's \
             file-based store. Move this broker with the in-place slave or expand-and-drain \
             (docs/migration.md) instead",
            root.join("consumequeue").display()
        ));
    }
    let config = root.join("config");
    for sub in ["topics", "subscriptionGroups", "consumerOffsets", "rdb"] {
        let dir = config.join(sub);
        if dir.is_dir() && is_rocksdb_dir(&dir) {
            return Err(format!(
                "{} holds RocksDB metadata (Apache 5.x's RocksDB config storage); import reads only the JSON \
                 metadata files. Move this broker with the in-place slave or expand-and-drain \
                 (docs/migration.md) instead",
                dir.display()
            ));
        }
    }
    Ok(())
}

/// The CommitLog's segments and their common size: contiguous, all of one size (Apache preallocates
/// each file whole), a multiple of 4096 (our O_DIRECT writes need it).
fn segments(dir: &Path) -> Result<(BTreeMap<u64, PathBuf>, u64), String> {
    let mut out = BTreeMap::new();
    let mut sizes = BTreeMap::<u64, Vec<String>>::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(start) = (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
            .then(|| name.parse::<u64>().ok())
            .flatten()
        else {
            return Err(format!(
                "{}: `{name}` is not a CommitLog segment (20 digits); remove it or import from a clean copy",
                dir.display()
            ));
        };
        let len = entry
            .metadata()
            .map_err(|e| format!("{}: {e}", entry.path().display()))?
            .len();
        sizes.entry(len).or_default().push(name);
        out.insert(start, entry.path());
    }
    let Some((&size, _)) = sizes.iter().next() else {
        return Err(format!(
            "{} holds no CommitLog segment: nothing to import",
            dir.display()
        ));
    };
    if sizes.len() > 1 {
        let listed: Vec<String> = sizes
            .iter()
            .map(|(len, names)| format!("{len} bytes: {}", names.join(", ")))
            .collect();
        return Err(format!(
            "{}: CommitLog segments of different sizes ({}); Apache writes every segment at \
             mappedFileSizeCommitLog, so some file is truncated or foreign",
            dir.display(),
            listed.join("; ")
        ));
    }
    if size == 0 || size % 4096 != 0 {
        return Err(format!(
            "{}: segments of {size} bytes; our CommitLog needs mappedFileSizeCommitLog to be a multiple \
             of 4096",
            dir.display()
        ));
    }
    let mut expected = None;
    for &start in out.keys() {
        if start % size != 0 || expected.is_some_and(|e| e != start) {
            return Err(format!(
                "{}: segment {start:020} does not follow on from the one before (segment size {size}); \
                 the CommitLog has a gap",
                dir.display()
            ));
        }
        expected = Some(start + size);
    }
    Ok((out, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(segments: &[(u64, u64)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("commitlog");
        std::fs::create_dir_all(&log).unwrap();
        for (start, len) in segments {
            let f = std::fs::File::create(log.join(format!("{start:020}"))).unwrap();
            f.set_len(*len).unwrap();
        }
        dir
    }

    #[test]
    fn detects_segment_size_and_order() {
        let dir = store_with(&[(0, 1 << 20), (1 << 20, 1 << 20)]);
        let store = detect(dir.path(), false).unwrap();
        assert_eq!(store.segment_size, 1 << 20);
        assert_eq!(
            store.segments.keys().copied().collect::<Vec<_>>(),
            vec![0, 1 << 20]
        );
        assert!(!store.unclean && !store.has_timer_files);
        // Retention removed the first segments: the rest still imports.
        let dir = store_with(&[(2 << 20, 1 << 20)]);
        assert_eq!(detect(dir.path(), false).unwrap().segments.len(), 1);
    }

    #[test]
    fn refuses_abort_unless_forced() {
        let dir = store_with(&[(0, 4096)]);
        std::fs::write(dir.path().join("abort"), b"").unwrap();
        let err = detect(dir.path(), false).unwrap_err();
        assert!(err.contains("abort") && err.contains("--force"), "{err}");
        assert!(detect(dir.path(), true).unwrap().unclean);
    }

    #[test]
    fn refuses_rocksdb_stores() {
        let dir = store_with(&[(0, 4096)]);
        let cq = dir.path().join("consumequeue");
        std::fs::create_dir_all(&cq).unwrap();
        std::fs::write(cq.join("CURRENT"), b"MANIFEST-000001\n").unwrap();
        let err = detect(dir.path(), false).unwrap_err();
        assert!(err.contains("RocksDB consume queue"), "{err}");

        let dir = store_with(&[(0, 4096)]);
        let topics = dir.path().join("config").join("topics");
        std::fs::create_dir_all(&topics).unwrap();
        std::fs::write(topics.join("000003.sst"), b"").unwrap();
        let err = detect(dir.path(), false).unwrap_err();
        assert!(err.contains("RocksDB metadata"), "{err}");
    }

    #[test]
    fn refuses_odd_segments() {
        let dir = store_with(&[(0, 1 << 20), (1 << 20, 4096)]);
        assert!(detect(dir.path(), false)
            .unwrap_err()
            .contains("different sizes"));
        let dir = store_with(&[(0, 1 << 20), (2 << 20, 1 << 20)]);
        assert!(detect(dir.path(), false).unwrap_err().contains("gap"));
        let dir = store_with(&[(0, 1000)]);
        assert!(detect(dir.path(), false)
            .unwrap_err()
            .contains("multiple of 4096"));
        let dir = store_with(&[]);
        assert!(detect(dir.path(), false)
            .unwrap_err()
            .contains("no CommitLog segment"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dledger-n0")).unwrap();
        assert!(detect(dir.path(), false).unwrap_err().contains("DLedger"));
        let dir = store_with(&[(0, 4096)]);
        std::fs::write(dir.path().join("commitlog").join("notes.txt"), b"").unwrap();
        assert!(detect(dir.path(), false)
            .unwrap_err()
            .contains("not a CommitLog segment"));
    }
}
