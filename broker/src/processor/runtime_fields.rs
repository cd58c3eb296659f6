//! The fields of GET_BROKER_RUNTIME_INFO that Apache RocketMQ 4.9.8's broker fills and its tools
//! read (`clusterList` splits `putTps` and `getTransferedTps`; `brokerStatus` prints them all):
//! rates, put sizes and latencies, disk figures, the earliest stored message. Thread-pool queues,
//! page-cache locks and dispatch lag do not exist in this broker and are reported as 0.

use std::rc::Rc;

use protocol::message::record::MessageRecord;

use crate::feature::broker_stats::{self, sampler};
use crate::feature::metrics::figures::{disk_figures, local_figures};
use crate::feature::metrics::local::PUT_LATENCY_BOUNDS_US;
use crate::shard::mesh::join_all;
use crate::shard::stats::ShardStats;
use crate::shard::Shard;

/// Apache's default capacities of the thread-pool queues it reports (this broker has none).
const POOL_CAPACITIES: [(&str, u32); 4] = [
    ("sendThreadPoolQueueCapacity", 10_000),
    ("pullThreadPoolQueueCapacity", 100_000),
    ("queryThreadPoolQueueCapacity", 20_000),
    ("EndTransactionThreadPoolQueueCapacity", 100_000),
];

/// Adds Apache's runtime fields to `put`.
pub async fn add(
    shard: &Rc<Shard>,
    receiver: usize,
    stats: &[ShardStats],
    put: &mut impl FnMut(&str, String),
) {
    let sum = |f: fn(&ShardStats) -> u64| stats.iter().map(f).fold(0u64, u64::wrapping_add);
    let now = crate::state::topics::now_ms();
    put(
        "runtime",
        format_runtime(now.saturating_sub(shard.boot_ms).max(0) as u64),
    );
    for (key, value) in sampler::rate_fields(shard, receiver).await {
        put(key, value);
    }
    let msgs = sum(|s| s.msgs_put);
    let bytes = sum(|s| s.bytes_put);
    put("putMessageTimesTotal", msgs.to_string());
    put("putMessageSizeTotal", bytes.to_string());
    put("putMessageFailedTimes", sum(|s| s.send_errors).to_string());
    put(
        "putMessageAverageSize",
        (bytes as f64 / msgs.max(1) as f64).to_string(),
    );
    put(
        "putMessageEntireTimeMax",
        broker_stats::put_time_max_ms(shard, receiver)
            .await
            .to_string(),
    );
    let buckets = put_latency_buckets();
    put("putMessageDistributeTime", distribution(&buckets));
    put(
        "putLatency99",
        format!("{:.2}", percentile_ms(&buckets, 0.99)),
    );
    put(
        "putLatency999",
        format!("{:.2}", percentile_ms(&buckets, 0.999)),
    );
    for key in [
        "getMessageEntireTimeMax",
        "dispatchMaxBuffer",
        "dispatchBehindBytes",
        "pageCacheLockTimeMills",
        "sendThreadPoolQueueSize",
        "pullThreadPoolQueueSize",
        "queryThreadPoolQueueSize",
        "EndTransactionQueueSize",
        "sendThreadPoolQueueHeadWaitTimeMills",
        "pullThreadPoolQueueHeadWaitTimeMills",
        "queryThreadPoolQueueHeadWaitTimeMills",
        "startAcceptSendRequestTimeStamp",
        "remainTransientStoreBufferNumbs",
    ] {
        put(key, "0".to_owned());
    }
    for (key, capacity) in POOL_CAPACITIES {
        put(key, capacity.to_string());
    }
    let unflushed = stats.iter().fold(0u64, |acc, s| {
        let behind = s
            .commit_log_max_offset
            .saturating_sub(s.commit_log_flushed_offset);
        acc.saturating_add(behind.max(0) as u64)
    });
    put("remainHowManyDataToFlush", human_bytes(unflushed));
    let root = &shard.cfg.store_path_root_dir;
    if let Some(disk) = disk_figures(root) {
        let used = used_ratio(disk.total_bytes, disk.free_bytes).to_string();
        put("commitLogDiskRatio", used.clone());
        put(
            &format!("commitLogDiskRatio_{}", root.display()),
            used.clone(),
        );
        put("consumeQueueDiskRatio", used);
        put(
            "commitLogDirCapacity",
            format!(
                "Total : {}, Free : {}.",
                human_bytes(disk.total_bytes),
                human_bytes(disk.free_bytes)
            ),
        );
    }
    put(
        "earliestMessageTimeStamp",
        earliest_store_time(shard, stats).await.to_string(),
    );
}

/// Apache's "[ D days, H hours, M minutes, S seconds ]".
pub fn format_runtime(ms: u64) -> String {
    let s = ms / 1000;
    format!(
        "[ {} days, {} hours, {} minutes, {} seconds ]",
        s / 86_400,
        s % 86_400 / 3600,
        s % 3600 / 60,
        s % 60
    )
}

/// Java's `MixAll.humanReadableByteCount(bytes, false)`: binary units, one decimal ("1.5 GiB").
pub fn human_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = "B";
    for u in units {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    format!("{value:.1} {unit}")
}

/// The used part of a filesystem, 0.0 to 1.0 (Apache's `getDiskPartitionSpaceUsedPercent`).
pub fn used_ratio(total: u64, free: u64) -> f64 {
    if total == 0 {
        return -1.0;
    }
    total.saturating_sub(free) as f64 / total as f64
}

/// Every shard's put latency histogram, summed.
fn put_latency_buckets() -> Vec<u64> {
    let mut out = vec![0u64; PUT_LATENCY_BOUNDS_US.len() + 1];
    for shard in local_figures() {
        for (sum, b) in out.iter_mut().zip(shard.put_latency_buckets) {
            *sum = sum.wrapping_add(b);
        }
    }
    out
}

fn bound_label(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{}s", us / 1_000_000)
    } else if us >= 1000 {
        format!("{}ms", us / 1000)
    } else {
        format!("{us}us")
    }
}

/// The put latency histogram in Apache's "[a~b]:n" form, with this broker's bucket bounds.
pub fn distribution(buckets: &[u64]) -> String {
    let mut parts = Vec::with_capacity(buckets.len());
    let mut lower: Option<u64> = None;
    for (i, count) in buckets.iter().enumerate() {
        let label = match (lower, PUT_LATENCY_BOUNDS_US.get(i)) {
            (None, Some(b)) => format!("[<={}]", bound_label(*b)),
            (Some(l), Some(b)) => format!("[{}~{}]", bound_label(l), bound_label(*b)),
            (Some(l), None) => format!("[{}~]", bound_label(l)),
            (None, None) => "[all]".to_owned(),
        };
        parts.push(format!("{label}:{count}"));
        lower = PUT_LATENCY_BOUNDS_US.get(i).copied();
    }
    parts.join(" ")
}

/// The upper bound (ms) of the bucket holding the `p` quantile; the last bound when beyond all.
pub fn percentile_ms(buckets: &[u64], p: f64) -> f64 {
    let total: u64 = buckets.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let rank = (total as f64 * p).ceil() as u64;
    let mut seen = 0u64;
    let last = PUT_LATENCY_BOUNDS_US.last().copied().unwrap_or(0);
    for (i, count) in buckets.iter().enumerate() {
        seen += count;
        if seen >= rank {
            return PUT_LATENCY_BOUNDS_US.get(i).copied().unwrap_or(last) as f64 / 1000.0;
        }
    }
    last as f64 / 1000.0
}

/// The store time of the oldest record any shard holds (0 when none).
pub(crate) async fn earliest_store_time(shard: &Rc<Shard>, stats: &[ShardStats]) -> i64 {
    let reads = stats
        .iter()
        .filter(|s| s.commit_log_max_offset > s.commit_log_min_offset)
        .map(|s| shard.on(s.shard).read_record(s.commit_log_min_offset));
    join_all(reads)
        .await
        .into_iter()
        .filter_map(|r| r.ok().flatten())
        .filter_map(|bytes| MessageRecord::decode(&bytes, false).ok())
        .map(|(record, _)| record.store_timestamp)
        .filter(|t| *t > 0)
        .min()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_and_sizes_in_apache_form() {
        assert_eq!(
            format_runtime(0),
            "[ 0 days, 0 hours, 0 minutes, 0 seconds ]"
        );
        assert_eq!(
            format_runtime(((2 * 24 + 3) * 3600 + 4 * 60 + 5) * 1000 + 999),
            "[ 2 days, 3 hours, 4 minutes, 5 seconds ]"
        );
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(270_415_082_291), "251.8 GiB");
        assert_eq!(used_ratio(100, 25), 0.75);
        assert_eq!(used_ratio(0, 0), -1.0);
    }

    #[test]
    fn latency_distribution_and_percentiles() {
        let mut buckets = vec![0u64; PUT_LATENCY_BOUNDS_US.len() + 1];
        assert_eq!(percentile_ms(&buckets, 0.99), 0.0);
        buckets[0] = 990; // <= 50 us
        buckets[4] = 9; // 500 us .. 1 ms
        buckets[PUT_LATENCY_BOUNDS_US.len()] = 1; // over 1 s
        assert_eq!(percentile_ms(&buckets, 0.99), 0.05);
        assert_eq!(percentile_ms(&buckets, 0.999), 1.0);
        assert_eq!(percentile_ms(&buckets, 1.0), 1000.0);
        let text = distribution(&buckets);
        assert!(text.starts_with("[<=50us]:990 [50us~100us]:0 "), "{text}");
        assert!(text.contains("[500us~1ms]:9"), "{text}");
        assert!(text.ends_with("[1s~]:1"), "{text}");
    }
}
