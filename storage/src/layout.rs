//! The on-disk layout of one shard directory: every directory and file name the store uses.
//!
//! ```text
//! <root>/commitlog/<20-digit shard-local start offset>      CommitLog segments
//! <root>/commitlog/<20-digit start offset>.corrupt          a segment recovery set aside
//! <root>/consumequeue/<topic>/<queueId>/<20-digit offset>   ConsumeQueue files (byte offset of the first unit)
//! <root>/index/<20-digit creation time in ms>               IndexFiles
//! <root>/compaction/<topic>/<queueId>/compacted            a compacted topic's queue: newest record per key
//! <root>/checkpoint                                         durable points of the CommitLog and dispatch
//! <root>/abort                                              present while the store runs
//! <root>/epochFileCheckpoint                                controller mode: (epoch, start offset) history
//! <root>/.dma-probe                                         read first to prime glommio's DMA detection
//! ```

use std::path::{Path, PathBuf};

/// Sub-directory of the shard directory that holds CommitLog segments.
pub const COMMITLOG_DIR: &str = "commitlog";
/// Sub-directory of the shard directory that holds ConsumeQueues (`<topic>/<queueId>/<files>`).
pub const CONSUME_QUEUE_DIR: &str = "consumequeue";
/// Sub-directory of the shard directory that holds IndexFiles.
pub const INDEX_DIR: &str = "index";
/// The checkpoint file in the shard directory.
pub const CHECKPOINT_FILE: &str = "checkpoint";
/// Marker present while the store runs; found at open it means the last stop was unclean.
pub const ABORT_FILE: &str = "abort";
/// The epoch history of the shard's CommitLog (controller mode), RocketMQ 5's name.
pub const EPOCH_FILE: &str = "epochFileCheckpoint";
/// Sub-directory of the shard directory that holds compacted logs (`<topic>/<queueId>/compacted`).
pub const COMPACTION_DIR: &str = "compaction";
/// The DMA probe file in the shard directory.
pub const PROBE_FILE: &str = ".dma-probe";
/// Suffix of a CommitLog segment that recovery moved aside (data past a cut).
const SET_ASIDE_SUFFIX: &str = ".corrupt";

pub fn commitlog_dir(root: &Path) -> PathBuf {
    root.join(COMMITLOG_DIR)
}

pub fn consume_queue_root(root: &Path) -> PathBuf {
    root.join(CONSUME_QUEUE_DIR)
}

/// The directory of one ConsumeQueue under the ConsumeQueue root.
pub fn consume_queue_dir(cq_root: &Path, topic: &str, queue_id: i32) -> PathBuf {
    cq_root.join(topic).join(queue_id.to_string())
}

pub fn compaction_root(root: &Path) -> PathBuf {
    root.join(COMPACTION_DIR)
}

/// A queue's compacted log directory; the topic was checked by `topic_is_storable`.
pub fn compaction_dir(root: &Path, topic: &str, queue_id: i32) -> PathBuf {
    compaction_root(root).join(topic).join(queue_id.to_string())
}

pub fn index_dir(root: &Path) -> PathBuf {
    root.join(INDEX_DIR)
}

pub fn checkpoint_path(root: &Path) -> PathBuf {
    root.join(CHECKPOINT_FILE)
}

pub fn epoch_path(root: &Path) -> PathBuf {
    root.join(EPOCH_FILE)
}

pub fn abort_marker(root: &Path) -> PathBuf {
    root.join(ABORT_FILE)
}

pub fn probe_path(root: &Path) -> PathBuf {
    root.join(PROBE_FILE)
}

/// Name of a file that starts at `offset`: 20 zero-padded digits, as RocketMQ names its files.
pub fn file_name(offset: u64) -> String {
    format!("{offset:020}")
}

/// Parses a 20-digit file name.
pub fn parse_file_name(name: &str) -> Option<u64> {
    if name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()) {
        name.parse().ok()
    } else {
        None
    }
}

/// Where recovery moves the segment at `segment_path` (starting at `start`) aside.
pub fn set_aside_path(segment_path: &Path, start: u64) -> PathBuf {
    segment_path.with_file_name(format!("{}{SET_ASIDE_SUFFIX}", file_name(start)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names() {
        assert_eq!(file_name(1073741824), "00000000001073741824");
        assert_eq!(parse_file_name("00000000001073741824"), Some(1073741824));
        assert_eq!(parse_file_name("abc"), None);
        assert_eq!(parse_file_name("0000000000107374182x"), None);
    }

    #[test]
    fn paths_under_the_shard_directory() {
        let root = Path::new("/data/shard-0");
        assert_eq!(commitlog_dir(root), Path::new("/data/shard-0/commitlog"));
        assert_eq!(
            consume_queue_dir(&consume_queue_root(root), "TopicA", 3),
            Path::new("/data/shard-0/consumequeue/TopicA/3")
        );
        assert_eq!(index_dir(root), Path::new("/data/shard-0/index"));
        assert_eq!(checkpoint_path(root), Path::new("/data/shard-0/checkpoint"));
        assert_eq!(abort_marker(root), Path::new("/data/shard-0/abort"));
        assert_eq!(probe_path(root), Path::new("/data/shard-0/.dma-probe"));
        let seg = commitlog_dir(root).join(file_name(1 << 30));
        assert_eq!(
            set_aside_path(&seg, 1 << 30),
            Path::new("/data/shard-0/commitlog/00000000001073741824.corrupt")
        );
    }
}
