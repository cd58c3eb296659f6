//! What each shard counts for Apache RocketMQ 5's metric names (`metricsExporterType = PROM`), in a
//! thread-local of its executor: messages and bytes in per (topic, message type) with the message
//! size histogram, messages and bytes out per (topic, group), messages sent to a dead-letter queue,
//! and the rpc latency histogram per (request code, response code). Only the shard writes its tables
//! (no lock, no atomic); shard 0 asks every shard for a copy (`snapshot`) over the mesh when
//! scraped. Nothing is recorded while the exporter is off (one relaxed load of a flag set at start).

use ahash::AHashMap as HashMap;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use protocol::message::properties;

/// Upper bounds of `rocketmq_message_size` (bytes): Apache's 1 KiB, 4 KiB, 512 KiB, 1, 2, 4 MiB.
pub const MESSAGE_SIZE_BOUNDS: [u64; 6] = [
    1024,
    4 * 1024,
    512 * 1024,
    1024 * 1024,
    2 * 1024 * 1024,
    4 * 1024 * 1024,
];

/// Upper bounds of `rocketmq_rpc_latency` (milliseconds), Apache's.
pub const RPC_LATENCY_BOUNDS_MS: [u64; 9] = [1, 3, 5, 7, 10, 100, 1_000, 2_000, 3_000];

/// Apache's `message_type` values (`TopicMessageType.getMetricsValue()`), in table order.
pub const MESSAGE_TYPES: [&str; 4] = ["normal", "fifo", "delay", "transaction"];

/// Most distinct keys kept per table on one shard (keys past it are not counted).
const MAX_KEYS: usize = 100_000;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns recording on (the broker does so at start when `metricsExporterType = PROM`).
pub fn enable() {
    ENABLED.store(true, Relaxed);
}

/// Whether the exporter is on (callers skip preparing what they would record).
pub fn enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// A histogram: non-cumulative bucket counts (the last above every bound), sum and count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    pub buckets: Vec<u64>,
    pub sum: u64,
    pub count: u64,
}

impl Histogram {
    fn observe(&mut self, bounds: &[u64], value: u64) {
        if self.buckets.len() != bounds.len() + 1 {
            self.buckets = vec![0; bounds.len() + 1];
        }
        let i = bounds
            .iter()
            .position(|b| value <= *b)
            .unwrap_or(bounds.len());
        if let Some(b) = self.buckets.get_mut(i) {
            *b = b.wrapping_add(1);
        }
        self.sum = self.sum.wrapping_add(value);
        self.count = self.count.wrapping_add(1);
    }

    /// Adds another shard's counts of the same bounds.
    pub fn merge(&mut self, other: &Histogram) {
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine = mine.wrapping_add(*theirs);
        }
        self.sum = self.sum.wrapping_add(other.sum);
        self.count = self.count.wrapping_add(other.count);
    }
}

/// Messages stored for one (topic, message type).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InFigures {
    pub messages: u64,
    pub bytes: u64,
    pub size: Histogram,
}

/// Messages returned for one (topic, group).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutFigures {
    pub messages: u64,
    pub bytes: u64,
}

/// One shard's tables, copied for a scrape.
#[derive(Debug, Clone, Default)]
pub struct ApacheShardFigures {
    /// (topic, index into `MESSAGE_TYPES`) -> figures.
    pub messages_in: Vec<((String, usize), InFigures)>,
    /// (topic, group) -> figures.
    pub messages_out: Vec<((String, String), OutFigures)>,
    /// (group, topic) -> messages sent to `%DLQ%group`.
    pub sent_to_dlq: Vec<((String, String), u64)>,
    /// (request code, response code, parked as a long poll) -> latency in ms.
    pub rpc_latency: Vec<((i32, i32, bool), Histogram)>,
}

#[derive(Default)]
struct Tables {
    messages_in: HashMap<String, [InFigures; 4]>,
    messages_out: HashMap<String, HashMap<String, OutFigures>>,
    sent_to_dlq: HashMap<(String, String), u64>,
    rpc_latency: HashMap<(i32, i32, bool), Histogram>,
}

thread_local! {
    static TABLES: RefCell<Tables> = RefCell::new(Tables::default());
}

/// Apache's `TopicMessageType` (an index into `MESSAGE_TYPES`) and `REAL_TOPIC` (set on a transactional half or delayed record, stored under a
/// system topic) of a record's properties, in one pass over them.
pub fn classify(props: &str) -> (usize, Option<&str>) {
    let (mut transaction, mut fifo, mut delay, mut real_topic) = (false, false, false, None);
    for (k, v) in properties::iter(props) {
        match k {
            properties::TRANSACTION_PREPARED => transaction |= v == "true",
            properties::SHARDING_KEY => fifo = true,
            "__STARTDELIVERTIME"
            | properties::DELAY
            | properties::TIMER_DELIVER_MS
            | properties::TIMER_DELAY_SEC
            | properties::TIMER_DELAY_MS => delay = true,
            properties::REAL_TOPIC if !v.is_empty() => real_topic = Some(v),
            _ => {}
        }
    }
    let kind = if transaction {
        3
    } else if fifo {
        1
    } else if delay {
        2
    } else {
        0
    };
    (kind, real_topic)
}

/// The message type of a record and the topic its producer sent it to when that is not the record's
/// own (`None`: the record's topic).
pub fn type_and_real_topic(
    record: &protocol::message::record::MessageRecord,
) -> (usize, Option<String>) {
    let (kind, real) = classify(&record.properties);
    (kind, real.map(str::to_owned))
}

/// Apache counts neither retry nor dead-letter topics in the message counters.
pub fn is_retry_or_dlq(topic: &str) -> bool {
    topic.starts_with("%RETRY%") || topic.starts_with("%DLQ%")
}

/// A send stored `messages` messages of `bytes` bytes (as stored) on `topic`: one size observation
/// per request, the mean size, as Apache's.
pub fn record_in(topic: &str, message_type: usize, messages: u64, bytes: u64) {
    if !enabled() || messages == 0 || is_retry_or_dlq(topic) {
        return;
    }
    TABLES.with(|t| {
        let mut t = t.borrow_mut();
        let len = t.messages_in.len();
        let entry = match t.messages_in.get_mut(topic) {
            Some(e) => e,
            None if len < MAX_KEYS => t.messages_in.entry(topic.to_owned()).or_default(),
            None => return,
        };
        if let Some(f) = entry.get_mut(message_type) {
            f.messages = f.messages.wrapping_add(messages);
            f.bytes = f.bytes.wrapping_add(bytes);
            f.size.observe(&MESSAGE_SIZE_BOUNDS, bytes / messages);
        }
    });
}

/// A pull or pop of `group` on `topic` returned `messages` messages of `bytes` bytes.
pub fn record_out(topic: &str, group: &str, messages: u64, bytes: u64) {
    if !enabled() || messages == 0 || is_retry_or_dlq(topic) {
        return;
    }
    TABLES.with(|t| {
        let mut t = t.borrow_mut();
        let len = t.messages_out.len();
        let groups = match t.messages_out.get_mut(topic) {
            Some(g) => g,
            None if len < MAX_KEYS => t.messages_out.entry(topic.to_owned()).or_default(),
            None => return,
        };
        if !groups.contains_key(group) {
            if groups.len() >= MAX_KEYS {
                return;
            }
            groups.insert(group.to_owned(), OutFigures::default());
        }
        let Some(f) = groups.get_mut(group) else {
            return;
        };
        f.messages = f.messages.wrapping_add(messages);
        f.bytes = f.bytes.wrapping_add(bytes);
    });
}

/// A message of `topic` consumed by `group` went to the group's dead-letter queue.
pub fn record_dlq(group: &str, topic: &str) {
    if !enabled() {
        return;
    }
    TABLES.with(|t| {
        let mut t = t.borrow_mut();
        let key = (group.to_owned(), topic.to_owned());
        if t.sent_to_dlq.len() < MAX_KEYS || t.sent_to_dlq.contains_key(&key) {
            let n = t.sent_to_dlq.entry(key).or_insert(0);
            *n = n.wrapping_add(1);
        }
    });
}

/// A request of `request_code` was answered with `response_code` after `elapsed`; `long_polling`: it
/// was parked waiting for messages.
pub fn record_rpc(request_code: i32, response_code: i32, long_polling: bool, elapsed: Duration) {
    if !enabled() {
        return;
    }
    let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    TABLES.with(|t| {
        let mut t = t.borrow_mut();
        let key = (request_code, response_code, long_polling);
        let len = t.rpc_latency.len();
        let h = match t.rpc_latency.get_mut(&key) {
            Some(h) => h,
            None if len < MAX_KEYS => t.rpc_latency.entry(key).or_default(),
            None => return,
        };
        h.observe(&RPC_LATENCY_BOUNDS_MS, ms);
    });
}

/// A copy of this shard's tables.
pub fn snapshot() -> ApacheShardFigures {
    TABLES.with(|t| {
        let t = t.borrow();
        let mut out = ApacheShardFigures::default();
        for (topic, by_type) in &t.messages_in {
            for (i, f) in by_type.iter().enumerate() {
                if f.messages > 0 {
                    out.messages_in.push(((topic.clone(), i), f.clone()));
                }
            }
        }
        for (topic, groups) in &t.messages_out {
            for (group, f) in groups {
                out.messages_out.push(((topic.clone(), group.clone()), *f));
            }
        }
        out.sent_to_dlq = t.sent_to_dlq.iter().map(|(k, v)| (k.clone(), *v)).collect();
        out.rpc_latency = t.rpc_latency.iter().map(|(k, v)| (*k, v.clone())).collect();
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_kept_per_key_once_enabled() {
        std::thread::spawn(|| {
            record_in("T", 0, 1, 10);
            assert!(snapshot().messages_in.is_empty(), "off until enabled");
            enable();
            record_in("T", 0, 2, 3000);
            record_in("T", 2, 1, 5_000_000);
            record_in("%RETRY%g", 0, 1, 10);
            record_out("T", "g", 2, 3000);
            record_out("%DLQ%g", "g", 2, 3000);
            record_dlq("g", "T");
            record_rpc(310, 0, false, Duration::from_millis(4));
            record_rpc(310, 0, false, Duration::from_secs(9));
            let s = snapshot();
            assert_eq!(s.messages_in.len(), 2);
            let normal = s.messages_in.iter().find(|(k, _)| k.1 == 0).unwrap();
            assert_eq!((normal.1.messages, normal.1.bytes), (2, 3000));
            // One observation of the mean size (1500 bytes: the 4 KiB bucket).
            assert_eq!(normal.1.size.buckets, vec![0, 1, 0, 0, 0, 0, 0]);
            let delay = s.messages_in.iter().find(|(k, _)| k.1 == 2).unwrap();
            assert_eq!(delay.1.size.buckets[6], 1);
            assert_eq!(s.messages_out.len(), 1);
            assert_eq!(s.sent_to_dlq, vec![(("g".into(), "T".into()), 1)]);
            let rpc = &s.rpc_latency[0].1;
            assert_eq!((rpc.count, rpc.sum), (2, 9004));
            assert_eq!(rpc.buckets[2], 1);
            assert_eq!(rpc.buckets[9], 1);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn message_types_by_properties() {
        let p = |k: &str, v: &str| properties::encode([(k, v)]);
        assert_eq!(classify(""), (0, None));
        assert_eq!(classify(&p("TRAN_MSG", "true")), (3, None));
        assert_eq!(classify(&p("__SHARDINGKEY", "k")), (1, None));
        assert_eq!(classify(&p("DELAY", "3")), (2, None));
        assert_eq!(classify(&p("TIMER_DELIVER_MS", "1")), (2, None));
        let half = properties::encode([("TRAN_MSG", "true"), ("REAL_TOPIC", "Orders")]);
        assert_eq!(classify(&half), (3, Some("Orders")));
    }
}
