//! What each shard counts for the admin statistics, in a thread-local of its executor (each shard
//! writes only its own): pulls that found or missed messages, the slowest send, and the keyed items
//! of RocketMQ's `BrokerStatsManager` (`TOPIC_PUT_NUMS`, `TOPIC_PUT_SIZE`, `GROUP_GET_NUMS`,
//! `GROUP_GET_SIZE`; group items are keyed `topic@group`).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use super::item::{ItemWindows, StatsItem};

pub const TOPIC_PUT_NUMS: &str = "TOPIC_PUT_NUMS";
pub const TOPIC_PUT_SIZE: &str = "TOPIC_PUT_SIZE";
pub const GROUP_GET_NUMS: &str = "GROUP_GET_NUMS";
pub const GROUP_GET_SIZE: &str = "GROUP_GET_SIZE";

/// The stats names this broker keeps.
pub const STATS_NAMES: [&str; 4] = [
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
];

/// Most keys kept per stats name on one shard, so that a flood of topic or group names cannot
/// grow the tables without limit (keys past it are not counted).
const MAX_KEYS: usize = 100_000;

#[derive(Default)]
struct Local {
    get_found: Cell<u64>,
    get_miss: Cell<u64>,
    put_time_max_ms: Cell<u64>,
    /// Per stats name (index into `STATS_NAMES`): key -> item.
    items: [RefCell<HashMap<String, StatsItem>>; 4],
}

thread_local! {
    static LOCAL: Local = Local::default();
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn add(name: usize, key: &str, value: u64, now_ms: u64) {
    LOCAL.with(|l| {
        let Some(table) = l.items.get(name) else {
            return;
        };
        let mut table = table.borrow_mut();
        if let Some(item) = table.get_mut(key) {
            item.add(now_ms, value);
        } else if table.len() < MAX_KEYS {
            table.entry(key.to_owned()).or_default().add(now_ms, value);
        }
    });
}

/// A client's send stored `msgs` messages of `bytes` bytes on `topic`.
pub fn record_send(topic: &str, msgs: u64, bytes: u64) {
    let now = wall_ms();
    add(0, topic, msgs, now);
    add(1, topic, bytes, now);
}

/// How long a send took (for `putMessageEntireTimeMax`).
pub fn record_send_time(elapsed: std::time::Duration) {
    let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    LOCAL.with(|l| l.put_time_max_ms.set(l.put_time_max_ms.get().max(ms)));
}

/// A pull of `group` on `topic` answered `msgs` messages of `bytes` bytes (0: nothing found).
pub fn record_pull(topic: &str, group: &str, msgs: u64, bytes: u64) {
    crate::feature::metrics::apache_local::record_out(topic, group, msgs, bytes);
    LOCAL.with(|l| {
        let c = if msgs > 0 { &l.get_found } else { &l.get_miss };
        c.set(c.get().wrapping_add(1));
    });
    if msgs > 0 {
        let now = wall_ms();
        let key = format!("{topic}@{group}");
        add(2, &key, msgs, now);
        add(3, &key, bytes, now);
    }
}

/// This shard's pull counters: (found, missed).
pub fn pulls() -> (u64, u64) {
    LOCAL.with(|l| (l.get_found.get(), l.get_miss.get()))
}

/// This shard's slowest send so far, in ms.
pub fn put_time_max_ms() -> u64 {
    LOCAL.with(|l| l.put_time_max_ms.get())
}

/// This shard's windows of one item; `None` when the name or key is unknown here.
pub fn item_windows(name: &str, key: &str, since_ms: u64) -> Option<ItemWindows> {
    let index = STATS_NAMES.iter().position(|n| *n == name)?;
    let now = wall_ms();
    LOCAL.with(|l| {
        l.items
            .get(index)
            .and_then(|t| t.borrow().get(key).map(|i| i.windows(now, since_ms)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_and_pulls_are_counted_per_key() {
        record_send("TopicA", 3, 300);
        record_send("TopicA", 1, 100);
        record_pull("TopicA", "G1", 2, 200);
        record_pull("TopicA", "G1", 0, 0);
        let w = item_windows(TOPIC_PUT_NUMS, "TopicA", 0).expect("item");
        assert_eq!((w.minute.sum, w.minute.times), (4, 2));
        let w = item_windows(TOPIC_PUT_SIZE, "TopicA", 0).expect("item");
        assert_eq!(w.day.sum, 400);
        let w = item_windows(GROUP_GET_NUMS, "TopicA@G1", 0).expect("item");
        assert_eq!(w.hour.sum, 2);
        assert!(item_windows(GROUP_GET_NUMS, "TopicB@G1", 0).is_none());
        assert!(item_windows("NO_SUCH_STATS", "TopicA", 0).is_none());
        assert_eq!(pulls(), (1, 1));
    }
}
