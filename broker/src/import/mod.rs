//! `broker --import-apache-store DIR --target DIR`: turns a stopped Apache RocketMQ store (4.x, or
//! 5.x file-based) into a one-shard store of ours. The CommitLog segments are copied as they are (our
//! records are Apache's byte for byte and shard 0's physical offsets are Apache's offsets), so every
//! message keeps its physical offset, queue and queue offset; the first start rebuilds ConsumeQueues
//! and the index from them (no checkpoint: recovery dispatches the whole log). Topics, subscription
//! groups, consumer offsets and delay offsets are copied once our parsers accept them; RocketMQ 5
//! timer messages still waiting are found in the CommitLog and our timer's watermark set to them.

pub mod layout;
pub mod metadata;
pub mod scan;

use std::fmt::Write as _;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::state::persist::write_atomic;

/// Apache's default `maxMessageSize` (and ours).
const DEFAULT_MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// What to import, and where.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Apache's `storePathRootDir` (holding commitlog/, config/, ...), its broker stopped.
    pub source: PathBuf,
    /// Our `storePathRootDir` to create: absent or an empty directory.
    pub target: PathBuf,
    /// Import although Apache's `abort` file says it did not stop cleanly.
    pub force: bool,
}

/// Imports, and returns the report for the operator (what was carried, what was not, the config).
pub fn import_apache_store(opts: &ImportOptions) -> Result<String, String> {
    let store = layout::detect(&opts.source, opts.force)?;
    check_target(&opts.source, &opts.target)?;
    let scan = scan::scan(&store.segments, store.segment_size, opts.force)?;
    if !scan.timer.other_queues.is_empty() {
        return Err(format!(
            "timer messages on rmq_sys_wheel_timer queues {:?}: Apache parks them on queue 0 only, so this \
             store is not one we know how to import",
            scan.timer.other_queues
        ));
    }
    write_store(opts, &store, &scan).map_err(|e| {
        format!(
            "{e} (the partial store in {} can be deleted; import again into an empty directory)",
            opts.target.display()
        )
    })
}

/// Writes the target store from the checked source; returns the report.
fn write_store(
    opts: &ImportOptions,
    store: &layout::ApacheStore,
    scan: &scan::Scan,
) -> Result<String, String> {
    let shard = opts.target.join("shard-0").join("commitlog");
    std::fs::create_dir_all(&shard).map_err(|e| format!("{}: {e}", shard.display()))?;
    let mut copied = Vec::new();
    for (&start, path) in store.segments.range(..scan.end) {
        let to = shard.join(format!("{start:020}"));
        copy_segment(path, &to, (scan.end - start).min(store.segment_size))?;
        copied.push(start);
    }
    let carried = metadata::carry(&opts.source, &opts.target)?;
    let watermark = scan.timer.watermark();
    if scan.timer.queue_end > 0 {
        let path = opts.target.join("config").join("timerWatermark.0");
        write_atomic(&path, watermark.to_string().as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let shards = opts.target.join("shards.json");
    write_atomic(&shards, br#"{"shardCount":1,"shardRouting":"direct"}"#)
        .map_err(|e| format!("{}: {e}", shards.display()))?;
    Ok(report(opts, store, scan, &carried, &copied))
}

/// The target must be absent or an empty directory, and not inside the source.
fn check_target(source: &Path, target: &Path) -> Result<(), String> {
    if let Ok(mut entries) = std::fs::read_dir(target) {
        if entries.next().is_some() {
            return Err(format!(
                "{} is not empty: import writes a new store; give an absent or empty directory",
                target.display()
            ));
        }
    } else if target.exists() {
        return Err(format!(
            "{} exists and is not a directory",
            target.display()
        ));
    }
    std::fs::create_dir_all(target).map_err(|e| format!("{}: {e}", target.display()))?;
    let (s, t) = (source.canonicalize(), target.canonicalize());
    if let (Ok(s), Ok(t)) = (s, t) {
        if t.starts_with(&s) || s.starts_with(&t) {
            let _ = std::fs::remove_dir(&t);
            return Err(format!(
                "{} and {} overlap: write the new store outside Apache's",
                t.display(),
                s.display()
            ));
        }
    }
    Ok(())
}

/// Copies a segment and zeroes it from `keep` bytes on (the part past a cut tail), then syncs it.
fn copy_segment(from: &Path, to: &Path, keep: u64) -> Result<(), String> {
    let err = |e: std::io::Error| format!("copying {} to {}: {e}", from.display(), to.display());
    let len = std::fs::copy(from, to).map_err(err)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(to)
        .map_err(err)?;
    if keep < len {
        file.seek(SeekFrom::Start(keep)).map_err(err)?;
        let zeros = vec![0u8; 1 << 20];
        let mut left = len - keep;
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            file.write_all(zeros.get(..n).unwrap_or_default())
                .map_err(err)?;
            left -= n as u64;
        }
    }
    file.sync_all().map_err(err)
}

fn report(
    opts: &ImportOptions,
    store: &layout::ApacheStore,
    scan: &scan::Scan,
    carried: &metadata::Carried,
    copied: &[u64],
) -> String {
    let mut r = String::new();
    let _ = writeln!(
        r,
        "imported {} into {}: {} CommitLog segment(s) of {} bytes, {} records, offsets {}..{}",
        opts.source.display(),
        opts.target.display(),
        copied.len(),
        store.segment_size,
        scan.records,
        copied.first().copied().unwrap_or(scan.end),
        scan.end
    );
    if store.unclean {
        let _ = writeln!(
            r,
            "WARNING: imported with --force although `abort` was present (unclean stop)"
        );
    }
    if let Some(cut) = &scan.cut {
        let _ = writeln!(
            r,
            "WARNING: the CommitLog was cut at offset {}: {cut}",
            scan.end
        );
    }
    let _ = writeln!(
        r,
        "metadata: {} topics, {} subscription groups, {} consumer offset entries, {} delay levels",
        carried.topics,
        carried.groups,
        carried.offset_entries,
        carried.delay_offsets.len()
    );
    for (qid, end) in &scan.schedule_ends {
        let done = carried.delay_offsets.get(&(qid + 1)).copied().unwrap_or(0);
        if *end > done {
            let _ = writeln!(
                r,
                "delay level {}: {} message(s) still waiting; ours delivers them when due",
                qid + 1,
                end - done
            );
        }
    }
    if scan.half_messages > 0 {
        let _ = writeln!(
            r,
            "transactions: {} half message(s) and {} op record(s) in the CommitLog; our checker resumes \
             from the CID_RMQ_SYS_TRANS offset and checks the unresolved ones back with their producer group",
            scan.half_messages, scan.op_messages
        );
    }
    let t = &scan.timer;
    if t.queue_end > 0 {
        let _ = writeln!(
            r,
            "timer messages: {} parked, {} still waiting (ours delivers them when due, from queue offset {})",
            t.queue_end,
            t.pending.len(),
            t.watermark()
        );
        if t.redelivered() > 0 {
            let _ = writeln!(
                r,
                "WARNING: {} timer message(s) Apache already delivered are parked after the first waiting one \
                 and will be delivered once more",
                t.redelivered()
            );
        }
    }
    if store.has_timer_files {
        let _ = writeln!(
            r,
            "not carried: Apache's timer wheel files (timerwheel, timerlog/, config/timercheck); waiting timers \
             come from the CommitLog instead (above)"
        );
    }
    for (file, what) in &carried.left {
        let _ = writeln!(r, "not carried: config/{file} ({what})");
    }
    let _ = writeln!(
        r,
        "not carried: ConsumeQueues and index (rebuilt from the CommitLog at the first start), the checkpoint, \
         POP in-flight state (invisible times, revive progress) and statistics"
    );
    let _ = writeln!(
        r,
        "\nstart our broker on it with (next to your other settings):"
    );
    let _ = writeln!(r, "  storePathRootDir = \"{}\"", opts.target.display());
    let _ = writeln!(r, "  shardCount = 1");
    let _ = writeln!(r, "  mappedFileSizeCommitLog = {}", store.segment_size);
    if scan.max_record > DEFAULT_MAX_MESSAGE {
        let _ = writeln!(
            r,
            "  maxMessageSize = {}   # the largest record found",
            scan.max_record
        );
    }
    let _ = writeln!(r, "  brokerName = \"...\"      # the Apache broker's, so clients' routes and msgIds keep working");
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::topics::{SCHEDULE_TOPIC, TIMER_TOPIC};
    use protocol::message::properties;

    fn apache_store(dir: &Path) -> u64 {
        let p = |u: &str| properties::with("", properties::UNIQ_KEY, u);
        let records: Vec<_> = (0..50)
            .map(|i: i32| ("T", i % 4, i64::from(i / 4), p(&format!("u{i}"))))
            .chain([(SCHEDULE_TOPIC, 1, 0, p("d")), (TIMER_TOPIC, 0, 0, p("t"))])
            .collect();
        let end = scan::tests::write_log(dir, 4096, &records);
        let config = dir.join("config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("topics.json"),
            r#"{"topicConfigTable":{"T":{"topicName":"T","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false,"attributes":{"message.type":"NORMAL"}}},"dataVersion":{"timestamp":1,"counter":2}}"#,
        )
        .unwrap();
        std::fs::write(
            config.join("consumerOffset.json"),
            r#"{"offsetTable":{"T@G":{0:3,1:5}}}"#,
        )
        .unwrap();
        std::fs::write(config.join("delayOffset.json"), r#"{"offsetTable":{2:0}}"#).unwrap();
        std::fs::write(
            config.join("messageRequestMode.json"),
            r#"{"messageRequestModeMap":{"x":{}}}"#,
        )
        .unwrap();
        end
    }

    #[test]
    fn imports_a_store_into_one_shard() {
        let src = tempfile::tempdir().unwrap();
        let dst = tempfile::tempdir().unwrap();
        let end = apache_store(src.path());
        let target = dst.path().join("ours");
        let opts = ImportOptions {
            source: src.path().to_path_buf(),
            target: target.clone(),
            force: false,
        };
        let report = import_apache_store(&opts).unwrap();
        assert!(
            report.contains("mappedFileSizeCommitLog = 4096"),
            "{report}"
        );
        assert!(
            report.contains("delay level 2: 1 message(s) still waiting"),
            "{report}"
        );
        assert!(report.contains("1 still waiting"), "{report}");
        assert!(report.contains("messageRequestMode.json"), "{report}");
        for start in (0..end).step_by(4096) {
            let name = format!("{start:020}");
            let ours = std::fs::read(target.join("shard-0/commitlog").join(&name)).unwrap();
            assert_eq!(
                ours,
                std::fs::read(src.path().join("commitlog").join(&name)).unwrap()
            );
        }
        assert_eq!(
            std::fs::read_to_string(target.join("config/consumerOffset-0.json")).unwrap(),
            r#"{"offsetTable":{"T@G":{0:3,1:5}}}"#
        );
        assert!(std::fs::read_to_string(target.join("config/topics.json"))
            .unwrap()
            .contains("message.type"));
        assert_eq!(
            std::fs::read_to_string(target.join("config/timerWatermark.0")).unwrap(),
            "0"
        );
        assert!(std::fs::read_to_string(target.join("shards.json"))
            .unwrap()
            .contains("\"shardCount\":1"));
        // A second import into the same directory is refused: it is not empty.
        let err = import_apache_store(&opts).unwrap_err();
        assert!(err.contains("not empty"), "{err}");
    }

    #[test]
    fn refuses_bad_metadata_and_overlapping_target() {
        let src = tempfile::tempdir().unwrap();
        apache_store(src.path());
        let inside = ImportOptions {
            source: src.path().to_path_buf(),
            target: src.path().join("ours"),
            force: false,
        };
        assert!(import_apache_store(&inside)
            .unwrap_err()
            .contains("overlap"));
        std::fs::write(src.path().join("config/consumerOffset.json"), "{not json").unwrap();
        let dst = tempfile::tempdir().unwrap();
        let opts = ImportOptions {
            source: src.path().to_path_buf(),
            target: dst.path().join("ours"),
            force: false,
        };
        assert!(import_apache_store(&opts)
            .unwrap_err()
            .contains("consumerOffset.json"));
    }
}
