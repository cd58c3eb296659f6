//! Figures of this process read where they are kept: the hot-path slots of every shard (`local`)
//! and the store's disk usage. The exporter and GET_BROKER_RUNTIME_INFO both report them.

use std::sync::atomic::Ordering::Relaxed;

/// Hot-path figures of one shard, copied out of its slot.
#[derive(Debug, Clone, Default)]
pub struct LocalFigures {
    pub shard: usize,
    pub put_latency_buckets: Vec<u64>,
    pub put_latency_sum_us: u64,
    pub put_requests: u64,
    pub pull_parked: u64,
    pub connections_open: u64,
    pub connections_accepted: u64,
}

/// Filesystem figures of the store root (statvfs).
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskFigures {
    pub total_bytes: u64,
    pub free_bytes: u64,
}

pub fn local_figures() -> Vec<LocalFigures> {
    super::local::all_shards()
        .iter()
        .map(|m| LocalFigures {
            shard: m.shard,
            put_latency_buckets: m
                .put_latency_buckets
                .iter()
                .map(|b| b.load(Relaxed))
                .collect(),
            put_latency_sum_us: m.put_latency_sum_us.load(Relaxed),
            put_requests: m.put_requests.load(Relaxed),
            pull_parked: m.pull_parked.load(Relaxed),
            connections_open: m.connections_open.load(Relaxed),
            connections_accepted: m.connections_accepted.load(Relaxed),
        })
        .collect()
}

pub fn disk_figures(path: &std::path::Path) -> Option<DiskFigures> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills a zeroed, locally owned struct from a NUL-terminated path; rc is checked.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c_path.as_ptr(), &mut st) != 0 {
            return None;
        }
        st
    };
    let frsize = st.f_frsize as u64;
    Some(DiskFigures {
        total_bytes: (st.f_blocks as u64).saturating_mul(frsize),
        free_bytes: (st.f_bavail as u64).saturating_mul(frsize),
    })
}
