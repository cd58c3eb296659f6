//! Injected disk faults for tests: fail points (tikv's `fail` crate) on the writes and fdatasyncs of
//! the CommitLog, the ConsumeQueues, the index files and the checkpoint, and on CommitLog segment
//! reads. They exist only in builds with the `failpoints` feature; without it every function here is
//! an empty inline that returns "no fault".
//!
//! Points are configured with `FAILPOINTS="name=actions;name=actions"` (read once at start) and, to
//! switch them while the process runs, with `FAILPOINTS_FILE=PATH`: a file of `name=actions` lines
//! (`#` comments) that a thread re-reads every 0.5 s; a changed line is applied, a point that leaves
//! the file is turned off (points set by `FAILPOINTS` are left alone), each change is logged. Both are
//! read by [`setup_from_env`]. Only the `return` forms are meant (`sleep` and `pause` would block the
//! whole shard's executor):
//!
//! | point | `return(arg)` means |
//! | --- | --- |
//! | `commitlog_write@<shard>` | the next CommitLog flush write fails with errno `arg` (default EIO) |
//! | `commitlog_fdatasync@<shard>` | the CommitLog fdatasync fails with errno `arg` (default EIO) after its writes succeeded |
//! | `commitlog_stall@<shard>` | the CommitLog fdatasync finishes `arg` ms late (default 1000; the executor keeps serving meanwhile, as with a slow io_uring request) |
//! | `consume_queue_write@<shard>` | a ConsumeQueue flush write fails with errno `arg` (default EIO; 28 is ENOSPC) |
//! | `consume_queue_fdatasync@<shard>` | a ConsumeQueue file's fdatasync fails with errno `arg` after its writes succeeded |
//! | `consume_queue_stall@<shard>` | each queue's flush waits `arg` ms (default 1000) before its fdatasyncs |
//! | `index_write@<shard>` | an index file page write fails with errno `arg` |
//! | `index_fdatasync@<shard>` | an index file fdatasync fails with errno `arg` |
//! | `checkpoint_write@<shard>` | the checkpoint slot write fails with errno `arg` |
//! | `checkpoint_fdatasync@<shard>` | the checkpoint fdatasync fails with errno `arg` |
//! | `segment_read` | a read of a CommitLog segment file whose path contains `arg` (every segment when empty) fails with EIO |
//! | `truncate_begin@<shard>` | `truncate_tail` fails with errno `arg` (default EIO) before it changes anything (as a flush it cannot finish) |
//! | `truncate_queue@<shard>` | `truncate_tail` fails with errno `arg` (default EIO) when it cuts a ConsumeQueue, after the CommitLog was cut |
//!
//! A failed ConsumeQueue, index or checkpoint flush fails that maintenance round (logged); the round
//! after writes the same data again and the checkpoint only moves once everything below it is
//! durable, so recovery rebuilds from the CommitLog whatever did not reach the disk.
//!
//! Counts and chains come from the `fail` crate, e.g. `commitlog_fdatasync@0=20*off->1*return->off`:
//! the 21st sync of shard 0 fails, the ones after succeed.

/// The errno of an injected failure at `point` of shard `shard`, if that point fires now.
#[cfg(feature = "failpoints")]
pub(crate) fn injected_error(point: &str, shard: u16) -> Option<std::io::Error> {
    let name = format!("{point}@{shard}");
    fail::eval(&name, |arg| {
        let errno = arg
            .and_then(|a| a.trim().parse::<i32>().ok())
            .unwrap_or(libc::EIO);
        std::io::Error::from_raw_os_error(errno)
    })
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn injected_error(_point: &str, _shard: u16) -> Option<std::io::Error> {
    None
}

/// Waits out an injected stall of shard `shard`'s CommitLog sync, if `commitlog_stall` fires now.
pub(crate) async fn injected_stall(shard: u16) {
    injected_stall_at("commitlog_stall", shard).await
}

/// Waits out an injected stall at `point@shard` (`return(ms)`, default 1000 ms), if it fires now.
#[cfg(feature = "failpoints")]
pub(crate) async fn injected_stall_at(point: &str, shard: u16) {
    let name = format!("{point}@{shard}");
    let ms = fail::eval(&name, |arg| {
        arg.and_then(|a| a.trim().parse::<u64>().ok())
            .unwrap_or(1000)
    });
    if let Some(ms) = ms {
        tracing::warn!("shard {shard}: injected fault: {point} {ms} ms");
        glommio::timer::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) async fn injected_stall_at(_point: &str, _shard: u16) {}

/// An injected EIO for a read of the segment file at `path`, if `segment_read` fires for it.
#[cfg(feature = "failpoints")]
pub(crate) fn injected_read_error(path: &std::path::Path) -> Option<std::io::Error> {
    let path = path.to_string_lossy();
    fail::eval("segment_read", |arg| {
        let pattern = arg.unwrap_or_default();
        path.contains(pattern.trim())
            .then(|| std::io::Error::from_raw_os_error(libc::EIO))
    })
    .flatten()
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn injected_read_error(_path: &std::path::Path) -> Option<std::io::Error> {
    None
}

/// Configures the fail points named in `FAILPOINTS` (the `fail` crate's syntax) and, when
/// `FAILPOINTS_FILE` names a file, follows that file (see [`follow_file`]); the number set now.
/// Without the `failpoints` feature a set `FAILPOINTS` or `FAILPOINTS_FILE` is an error: the faults
/// would silently not happen.
pub fn setup_from_env() -> Result<usize, String> {
    let mut n = 0;
    if let Ok(spec) = std::env::var("FAILPOINTS") {
        n += configure(&spec)?;
    }
    if let Some(path) = std::env::var_os("FAILPOINTS_FILE").filter(|p| !p.is_empty()) {
        n += follow_file(std::path::Path::new(&path))?;
    }
    Ok(n)
}

#[cfg(feature = "failpoints")]
fn configure(spec: &str) -> Result<usize, String> {
    let mut n = 0;
    for item in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, actions) = item
            .split_once('=')
            .ok_or_else(|| format!("FAILPOINTS: `{item}` is not name=actions"))?;
        fail::cfg(name.trim(), actions.trim()).map_err(|e| format!("FAILPOINTS: {name}: {e}"))?;
        n += 1;
    }
    Ok(n)
}

#[cfg(not(feature = "failpoints"))]
fn configure(spec: &str) -> Result<usize, String> {
    if spec.trim().is_empty() {
        return Ok(0);
    }
    Err("FAILPOINTS is set but this build has no fail points (feature `failpoints`)".to_owned())
}

/// Sets one fail point (`fail` crate syntax), e.g. `set("index_write@3", "1*return")`.
#[cfg(feature = "failpoints")]
pub fn set(name: &str, actions: &str) -> Result<(), String> {
    fail::cfg(name, actions)
}

/// Turns one fail point off.
#[cfg(feature = "failpoints")]
pub fn clear(name: &str) {
    fail::remove(name);
}

/// Applies the fail points listed in the file at `path` now (a missing file lists none) and starts
/// a thread that applies its changes, checking every 0.5 s for as long as the process runs; returns
/// the number of points set now. A line that does not parse is logged and skipped.
#[cfg(feature = "failpoints")]
pub fn follow_file(path: &std::path::Path) -> Result<usize, String> {
    let mut follower = follow::Follower::new(path.to_path_buf());
    let n = follower.apply();
    tracing::warn!(
        "fail points: following the file {} (test build)",
        path.display()
    );
    std::thread::Builder::new()
        .name("failpoints-file".to_owned())
        .spawn(move || loop {
            std::thread::sleep(follow::PERIOD);
            follower.apply();
        })
        .map_err(|e| format!("FAILPOINTS_FILE: cannot start its thread: {e}"))?;
    Ok(n)
}

#[cfg(not(feature = "failpoints"))]
pub fn follow_file(_path: &std::path::Path) -> Result<usize, String> {
    Err(
        "FAILPOINTS_FILE is set but this build has no fail points (feature `failpoints`)"
            .to_owned(),
    )
}

#[cfg(feature = "failpoints")]
mod follow {
    use std::collections::BTreeMap;
    use std::path::PathBuf;
    use std::time::Duration;

    /// How often the file is read again.
    pub(super) const PERIOD: Duration = Duration::from_millis(500);

    /// What the file said when last read, and the points it set.
    pub(super) struct Follower {
        path: PathBuf,
        last: Option<String>,
        applied: BTreeMap<String, String>,
    }

    impl Follower {
        pub(super) fn new(path: PathBuf) -> Follower {
            Follower {
                path,
                last: None,
                applied: BTreeMap::new(),
            }
        }

        /// Reads the file and applies what changed since the last read; the points set now.
        pub(super) fn apply(&mut self) -> usize {
            let text = match std::fs::read_to_string(&self.path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => {
                    tracing::warn!("fail points: cannot read {}: {e}", self.path.display());
                    return self.applied.len();
                }
            };
            if self.last.as_deref() == Some(text.as_str()) {
                return self.applied.len();
            }
            let mut wanted = BTreeMap::new();
            for line in text.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                match line.split_once('=') {
                    Some((name, actions)) if !name.trim().is_empty() => {
                        wanted.insert(name.trim().to_owned(), actions.trim().to_owned());
                    }
                    _ => tracing::warn!(
                        "fail points: {}: `{line}` is not name=actions",
                        self.path.display()
                    ),
                }
            }
            let gone: Vec<String> = self
                .applied
                .keys()
                .filter(|k| !wanted.contains_key(*k))
                .cloned()
                .collect();
            for name in gone {
                fail::remove(&name);
                self.applied.remove(&name);
                tracing::warn!("fail points: {name} off ({})", self.path.display());
            }
            for (name, actions) in wanted {
                if self.applied.get(&name) == Some(&actions) {
                    // Unchanged: setting it again would restart its counts.
                    continue;
                }
                match fail::cfg(name.as_str(), &actions) {
                    Ok(()) => {
                        tracing::warn!("fail points: {name}={actions} ({})", self.path.display());
                        self.applied.insert(name, actions);
                    }
                    Err(e) => {
                        tracing::warn!("fail points: {}: {name}: {e}", self.path.display());
                        if self.applied.remove(&name).is_some() {
                            fail::remove(&name);
                        }
                    }
                }
            }
            self.last = Some(text);
            self.applied.len()
        }
    }
}

#[cfg(all(test, not(feature = "failpoints")))]
mod tests {
    #[test]
    fn a_fail_point_file_without_the_feature_is_an_error() {
        let err = super::follow_file(std::path::Path::new("/nonexistent")).unwrap_err();
        assert!(err.contains("FAILPOINTS_FILE"), "{err}");
    }
}
