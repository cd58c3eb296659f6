//! Injected disk faults for tests: fail points (tikv's `fail` crate) on the CommitLog's writes,
//! fdatasyncs and segment reads. They exist only in builds with the `failpoints` feature; without it
//! every function here is an empty inline that returns "no fault".
//!
//! Points (configured with `FAILPOINTS="name=actions;name=actions"`, read by [`setup_from_env`]);
//! only the `return` forms are meant (`sleep` and `pause` would block the whole shard's executor):
//!
//! | point | `return(arg)` means |
//! | --- | --- |
//! | `commitlog_write@<shard>` | the next CommitLog flush write fails with errno `arg` (default EIO) |
//! | `commitlog_fdatasync@<shard>` | the CommitLog fdatasync fails with errno `arg` (default EIO) after its writes succeeded |
//! | `commitlog_stall@<shard>` | the CommitLog fdatasync finishes `arg` ms late (the executor keeps serving meanwhile, as with a slow io_uring request) |
//! | `segment_read` | a read of a CommitLog segment file whose path contains `arg` (every segment when empty) fails with EIO |
//! | `truncate_queue@<shard>` | `truncate_tail` fails with errno `arg` (default EIO) when it cuts a ConsumeQueue, after the CommitLog was cut |
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

/// Waits out an injected stall of shard `shard`'s sync, if `commitlog_stall` fires now.
#[cfg(feature = "failpoints")]
pub(crate) async fn injected_stall(shard: u16) {
    let name = format!("commitlog_stall@{shard}");
    let ms = fail::eval(&name, |arg| {
        arg.and_then(|a| a.trim().parse::<u64>().ok())
            .unwrap_or(1000)
    });
    if let Some(ms) = ms {
        tracing::warn!("shard {shard}: injected fault: CommitLog fdatasync stalls {ms} ms");
        glommio::timer::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) async fn injected_stall(_shard: u16) {}

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

/// Configures the fail points named in `FAILPOINTS` (the `fail` crate's syntax); the number set.
/// Without the `failpoints` feature a set `FAILPOINTS` is an error: the faults would silently not
/// happen.
pub fn setup_from_env() -> Result<usize, String> {
    let Ok(spec) = std::env::var("FAILPOINTS") else {
        return Ok(0);
    };
    configure(&spec)
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
