//! What a stored record contributes to its ConsumeQueue (tagsCode) and to the index (keys), computed
//! the same way on the put path, in recovery and for replicated data.

use protocol::message::properties::{self, DELAY, TAGS, UNIQ_KEY};
use protocol::message::record::sys_flag;

use crate::config::StoreConfig;

/// RocketMQ's topic for delayed messages; its tagsCode holds the delivery time.
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";

/// Prepared and rolled-back transactional records get no queue offset and no ConsumeQueue unit.
pub fn goes_to_consume_queue(flag: i32) -> bool {
    matches!(
        sys_flag::transaction_type(flag),
        sys_flag::TRANSACTION_NOT_TYPE | sys_flag::TRANSACTION_COMMIT
    )
}

/// Rolled-back transactional records are not indexed.
pub fn goes_to_index(flag: i32) -> bool {
    sys_flag::transaction_type(flag) != sys_flag::TRANSACTION_ROLLBACK
}

/// The properties dispatch needs, found in one pass over the properties string.
#[derive(Debug, Default, Clone, Copy)]
pub struct DispatchProps<'a> {
    pub tags: Option<&'a str>,
    pub uniq_key: Option<&'a str>,
    pub keys: Option<&'a str>,
    pub delay: Option<&'a str>,
}

impl<'a> DispatchProps<'a> {
    /// Scans `props` once; the first occurrence of each name wins, as in `properties::get`.
    pub fn scan(props: &'a str) -> DispatchProps<'a> {
        let mut out = DispatchProps::default();
        for (k, v) in properties::iter(props) {
            let slot = match k {
                TAGS => &mut out.tags,
                UNIQ_KEY => &mut out.uniq_key,
                properties::KEYS => &mut out.keys,
                DELAY => &mut out.delay,
                _ => continue,
            };
            slot.get_or_insert(v);
        }
        out
    }

    /// The ConsumeQueue tagsCode: the TAGS hash, or for the schedule topic the delivery time
    /// (store time + delay of the record's DELAY level, clamped to the configured levels).
    pub fn tags_code(&self, cfg: &StoreConfig, topic: &str, store_timestamp: i64) -> i64 {
        if topic == SCHEDULE_TOPIC {
            let level = self
                .delay
                .and_then(|v| v.trim().parse::<i64>().ok())
                .unwrap_or(0);
            if let Some(delay) = cfg.delay_of_level(level) {
                return store_timestamp.saturating_add(delay);
            }
        }
        self.tags.map_or(0, properties::tags_code)
    }

    /// The index keys of a record: its UNIQ_KEY, then each of its KEYS (space separated).
    pub fn index_keys(&self) -> impl Iterator<Item = &'a str> {
        self.uniq_key.filter(|k| !k.is_empty()).into_iter().chain(
            self.keys
                .unwrap_or("")
                .split(properties::KEY_SEPARATOR)
                .filter(|k| !k.is_empty()),
        )
    }
}

/// The ConsumeQueue tagsCode of a record (see [`DispatchProps::tags_code`]).
pub fn tags_code(cfg: &StoreConfig, topic: &str, props: &str, store_timestamp: i64) -> i64 {
    DispatchProps::scan(props).tags_code(cfg, topic, store_timestamp)
}

/// The index keys of a record: its UNIQ_KEY, then each of its KEYS.
pub fn index_keys(props: &str) -> impl Iterator<Item = &str> {
    DispatchProps::scan(props).index_keys()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_code_and_schedule_time() {
        let cfg = StoreConfig::new("/tmp/x", 0);
        let props = properties::encode([("TAGS", "TagA"), ("DELAY", "3")]);
        assert_eq!(tags_code(&cfg, "T", &props, 1000), 2_598_919);
        assert_eq!(tags_code(&cfg, SCHEDULE_TOPIC, &props, 1000), 11_000);
        let props = properties::encode([("DELAY", "99")]);
        assert_eq!(tags_code(&cfg, SCHEDULE_TOPIC, &props, 0), 7_200_000);
        let props = properties::encode([("UNIQ_KEY", "U1"), ("KEYS", "a b")]);
        assert_eq!(index_keys(&props).collect::<Vec<_>>(), vec!["U1", "a", "b"]);
        assert!(goes_to_consume_queue(sys_flag::TRANSACTION_COMMIT));
        assert!(!goes_to_consume_queue(sys_flag::TRANSACTION_PREPARED));
        assert!(!goes_to_index(sys_flag::TRANSACTION_ROLLBACK));
    }
}
