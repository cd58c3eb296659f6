//! Config values changed at run time (UPDATE_BROKER_CONFIG) without a restart. The control shard
//! sends the updated config to every shard (`Shard::apply_config`); each shard keeps it in a
//! thread-local of its executor and hands the store its new flush, retention and size settings.
//! Readers ask here instead of the start-time `BrokerConfig`: the values a request reads (`Hot`) sit
//! in a `Cell` of the shard's thread, so a read per request is a copy, with no lock and nothing
//! shared between shards. The keys of `LIVE_KEYS` are in force at once; every other changed key is
//! pending until the next start (`pending`), which reads it from the overlay file
//! (`config::overlay`).
//!
//! `autoCreateTopicEnable` is live for sends (as Apache's send path reads it each time), but the
//! template topic TBW102 exists or not as at the start: turned on at run time, it creates topics only
//! where the broker started with it on (or kept TBW102 from an earlier run).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::keys::BrokerConfig;

/// Keys UPDATE_BROKER_CONFIG applies at once on every shard; every other key takes effect at the
/// next start. Apache 5 applies these at run time too (its flush and clean services, the send, pull
/// and transaction check paths read them on each use).
pub const LIVE_KEYS: &[&str] = &[
    "brokerPermission",
    "flushIntervalCommitLog",
    "flushCommitLogLeastPages",
    "fileReservedTime",
    "deleteWhen",
    "diskMaxUsedSpaceRatio",
    "diskSpaceWarningLevelRatio",
    "diskSpaceCleanForciblyRatio",
    "autoCreateSubscriptionGroup",
    "maxMessageSize",
    "traceOn",
    "longPollingEnable",
    "shortPollingTimeMills",
    "maxTransferCountOnMessageInMemory",
    "maxTransferBytesOnMessageInMemory",
    "slaveReadEnable",
    "transactionTimeOut",
    "transactionCheckMax",
    "transactionCheckInterval",
    "autoCreateTopicEnable",
];

/// The live values requests read, copied out of the updated config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hot {
    broker_permission: u32,
    auto_create_subscription_group: bool,
    auto_create_topic_enable: bool,
    max_message_size: usize,
    trace_on: bool,
    long_polling_enable: bool,
    short_polling_time_mills: u64,
    max_transfer_count_on_message_in_memory: i32,
    max_transfer_bytes_on_message_in_memory: usize,
    slave_read_enable: bool,
    transaction_timeout_ms: u64,
    transaction_check_max: u32,
    transaction_check_interval_ms: u64,
}

impl Hot {
    fn of(cfg: &BrokerConfig) -> Hot {
        Hot {
            broker_permission: cfg.broker_permission,
            auto_create_subscription_group: cfg.auto_create_subscription_group,
            auto_create_topic_enable: cfg.auto_create_topic_enable,
            max_message_size: cfg.max_message_size,
            trace_on: cfg.trace_on,
            long_polling_enable: cfg.long_polling_enable,
            short_polling_time_mills: cfg.short_polling_time_mills,
            max_transfer_count_on_message_in_memory: cfg.max_transfer_count_on_message_in_memory,
            max_transfer_bytes_on_message_in_memory: cfg.max_transfer_bytes_on_message_in_memory,
            slave_read_enable: cfg.slave_read_enable,
            transaction_timeout_ms: cfg.transaction_timeout_ms,
            transaction_check_max: cfg.transaction_check_max,
            transaction_check_interval_ms: cfg.transaction_check_interval_ms,
        }
    }

    /// Writes these values into `to` (what GET_BROKER_CONFIG then reports).
    fn write_to(self, to: &mut BrokerConfig) {
        to.broker_permission = self.broker_permission;
        to.auto_create_subscription_group = self.auto_create_subscription_group;
        to.auto_create_topic_enable = self.auto_create_topic_enable;
        to.max_message_size = self.max_message_size;
        to.trace_on = self.trace_on;
        to.long_polling_enable = self.long_polling_enable;
        to.short_polling_time_mills = self.short_polling_time_mills;
        to.max_transfer_count_on_message_in_memory = self.max_transfer_count_on_message_in_memory;
        to.max_transfer_bytes_on_message_in_memory = self.max_transfer_bytes_on_message_in_memory;
        to.slave_read_enable = self.slave_read_enable;
        to.transaction_timeout_ms = self.transaction_timeout_ms;
        to.transaction_check_max = self.transaction_check_max;
        to.transaction_check_interval_ms = self.transaction_check_interval_ms;
    }
}

thread_local! {
    /// The live values on this shard once an update came (before that: the start config's).
    static HOT: Cell<Option<Hot>> = const { Cell::new(None) };
    /// The config as last updated: what the next start uses (its live keys are in force now).
    static UPDATED: RefCell<Option<Rc<BrokerConfig>>> = const { RefCell::new(None) };
}

/// One live value: this shard's updated one, else `cfg`'s (the start config).
fn hot<T>(
    cfg: &BrokerConfig,
    updated: impl FnOnce(Hot) -> T,
    start: impl FnOnce(&BrokerConfig) -> T,
) -> T {
    match HOT.with(Cell::get) {
        Some(h) => updated(h),
        None => start(cfg),
    }
}

/// The broker's permission in force on this shard (RocketMQ's perm bits: 4 read, 2 write).
pub fn broker_permission(cfg: &BrokerConfig) -> u32 {
    hot(cfg, |h| h.broker_permission, |c| c.broker_permission)
}

/// `autoCreateSubscriptionGroup` in force on this shard: unknown consumer groups are created on
/// first use.
pub fn auto_create_subscription_group(cfg: &BrokerConfig) -> bool {
    hot(
        cfg,
        |h| h.auto_create_subscription_group,
        |c| c.auto_create_subscription_group,
    )
}

/// `autoCreateTopicEnable` in force on this shard: a send to an unknown topic creates it from the
/// template topic the producer names (TBW102), where that template exists.
pub fn auto_create_topic_enable(cfg: &BrokerConfig) -> bool {
    hot(
        cfg,
        |h| h.auto_create_topic_enable,
        |c| c.auto_create_topic_enable,
    )
}

/// `maxMessageSize` in force on this shard: the largest message body (or batch body) a send may carry.
pub fn max_message_size(cfg: &BrokerConfig) -> usize {
    hot(cfg, |h| h.max_message_size, |c| c.max_message_size)
}

/// `traceOn` in force on this shard: what send answers tell clients in their TRACE_ON field.
pub fn trace_on(cfg: &BrokerConfig) -> bool {
    hot(cfg, |h| h.trace_on, |c| c.trace_on)
}

/// `longPollingEnable` in force on this shard: a suspended pull parks for its own timeout; without,
/// for `short_polling_time_mills`.
pub fn long_polling_enable(cfg: &BrokerConfig) -> bool {
    hot(cfg, |h| h.long_polling_enable, |c| c.long_polling_enable)
}

/// `shortPollingTimeMills` in force on this shard: how long a suspended pull parks without long polling.
pub fn short_polling_time_mills(cfg: &BrokerConfig) -> u64 {
    hot(
        cfg,
        |h| h.short_polling_time_mills,
        |c| c.short_polling_time_mills,
    )
}

/// `maxTransferCountOnMessageInMemory` in force on this shard: most messages one pull answers.
pub fn max_transfer_count_on_message_in_memory(cfg: &BrokerConfig) -> i32 {
    hot(
        cfg,
        |h| h.max_transfer_count_on_message_in_memory,
        |c| c.max_transfer_count_on_message_in_memory,
    )
}

/// `maxTransferBytesOnMessageInMemory` in force on this shard: most bytes one pull answers.
pub fn max_transfer_bytes_on_message_in_memory(cfg: &BrokerConfig) -> usize {
    hot(
        cfg,
        |h| h.max_transfer_bytes_on_message_in_memory,
        |c| c.max_transfer_bytes_on_message_in_memory,
    )
}

/// `slaveReadEnable` in force on this shard: a slave serves pulls, a master suggests its slave to
/// slow consumers.
pub fn slave_read_enable(cfg: &BrokerConfig) -> bool {
    hot(cfg, |h| h.slave_read_enable, |c| c.slave_read_enable)
}

/// The transaction check settings in force on this shard, in milliseconds: (`transactionTimeOut`,
/// `transactionCheckInterval`, `transactionCheckMax`). The check service reads them each round.
pub fn transaction_check(cfg: &BrokerConfig) -> (u64, u64, u32) {
    hot(
        cfg,
        |h| {
            (
                h.transaction_timeout_ms,
                h.transaction_check_interval_ms,
                h.transaction_check_max,
            )
        },
        |c| {
            (
                c.transaction_timeout_ms,
                c.transaction_check_interval_ms,
                c.transaction_check_max,
            )
        },
    )
}

/// Copies the values of `LIVE_KEYS` from `from` into `to`.
fn copy_live(from: &BrokerConfig, to: &mut BrokerConfig) {
    Hot::of(from).write_to(to);
    to.flush_interval_commit_log_ms = from.flush_interval_commit_log_ms;
    to.flush_commit_log_least_pages = from.flush_commit_log_least_pages;
    to.file_reserved_time_hours = from.file_reserved_time_hours;
    to.delete_when.clone_from(&from.delete_when);
    to.disk_max_used_space_ratio = from.disk_max_used_space_ratio;
    to.disk_space_warning_level_ratio = from.disk_space_warning_level_ratio;
    to.disk_space_clean_forcibly_ratio = from.disk_space_clean_forcibly_ratio;
}

/// Apache's room for a record's header, topic and properties beyond `maxMessageSize`, which limits the
/// body (its `MessageExtEncoder`: bodies up to the limit, records up to the limit + 64 KiB).
const RECORD_ALLOWANCE: usize = 64 * 1024;

/// The largest record the store takes for `cfg`'s `maxMessageSize`: the limit plus Apache's
/// allowance, within one CommitLog segment. A limit whose body alone cannot fit a segment is passed
/// on as it is, for the store to refuse at start.
pub fn record_limit(max_message_size: usize, cfg: &BrokerConfig) -> usize {
    let fits =
        usize::try_from(cfg.mapped_file_size_commit_log.saturating_sub(8)).unwrap_or(usize::MAX);
    if max_message_size > fits {
        return max_message_size;
    }
    max_message_size.saturating_add(RECORD_ALLOWANCE).min(fits)
}

/// The store settings of `cfg` that a running store takes (`storage::Tunables`).
pub fn store_tunables(cfg: &BrokerConfig) -> storage::Tunables {
    storage::Tunables {
        flush_interval_commit_log_ms: cfg.flush_interval_commit_log_ms,
        flush_commit_log_least_pages: u64::from(cfg.flush_commit_log_least_pages),
        file_reserved_time_hours: cfg.file_reserved_time_hours,
        delete_when: cfg.delete_when.clone(),
        disk_max_used_space_ratio: cfg.disk_max_used_space_ratio,
        disk_space_warning_level_ratio: cfg.disk_space_warning_level_ratio,
        disk_space_clean_forcibly_ratio: cfg.disk_space_clean_forcibly_ratio,
        max_message_size: record_limit(cfg.max_message_size, cfg),
    }
}

/// Takes `cfg` (the updated config) on this shard: its live keys are in force from now on, and
/// `store` (this shard's) runs with its flush, retention and size settings.
pub fn apply(cfg: &BrokerConfig, store: Option<&storage::MessageStore>) {
    HOT.with(|h| h.set(Some(Hot::of(cfg))));
    UPDATED.with(|u| *u.borrow_mut() = Some(Rc::new(cfg.clone())));
    if let Some(store) = store {
        store.set_tunables(store_tunables(cfg));
    }
}

/// `cfg` (the start config) with this shard's live values in place: what GET_BROKER_CONFIG reports.
pub fn effective(cfg: &BrokerConfig) -> BrokerConfig {
    let mut out = cfg.clone();
    if let Some(updated) = UPDATED.with(|u| u.borrow().clone()) {
        copy_live(&updated, &mut out);
    }
    out
}

/// The config the next start will use as far as updates go: the last updated one, else `effective`.
/// Updates build on it, so a pending key stays pending through later updates.
pub fn configured(cfg: &BrokerConfig) -> BrokerConfig {
    match UPDATED.with(|u| u.borrow().clone()) {
        Some(updated) => {
            let mut out = BrokerConfig::clone(&updated);
            // What is in force is this shard's (the role may change at run time in controller mode).
            out.broker_role = cfg.broker_role;
            out.broker_id = cfg.broker_id;
            out
        }
        None => effective(cfg),
    }
}

/// Keys updated since the start whose new value is not in force until a restart, with that value.
pub fn pending(cfg: &BrokerConfig) -> Vec<(&'static str, String)> {
    let Some(updated) = UPDATED.with(|u| u.borrow().clone()) else {
        return Vec::new();
    };
    let in_force = effective(cfg).to_pairs();
    updated
        .to_pairs()
        .into_iter()
        .filter(|(key, value)| {
            !LIVE_KEYS.contains(key) && !in_force.iter().any(|(k, v)| k == key && v == value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_keys_are_in_force_and_the_rest_pending() {
        let start = BrokerConfig::default();
        assert_eq!(broker_permission(&start), 6);
        assert!(pending(&start).is_empty());
        let mut updated = BrokerConfig {
            broker_permission: 4,
            default_topic_queue_nums: 3,
            ..BrokerConfig::default()
        };
        // Every live key gets a value other than its default.
        for key in LIVE_KEYS {
            let value = match *key {
                "brokerPermission" => "4",
                "deleteWhen" => "03",
                "diskMaxUsedSpaceRatio" | "diskSpaceWarningLevelRatio" => "61",
                "diskSpaceCleanForciblyRatio" => "62",
                "autoCreateSubscriptionGroup" | "autoCreateTopicEnable" => "false",
                "traceOn" | "longPollingEnable" => "false",
                "slaveReadEnable" => "true",
                _ => "7",
            };
            assert!(updated.set(key, value).unwrap().is_none(), "{key}");
        }
        apply(&updated, None);
        assert_eq!(broker_permission(&start), 4);
        let now = effective(&start);
        let pairs = now.to_pairs();
        let start_pairs = start.to_pairs();
        for key in LIVE_KEYS {
            let now = pairs.iter().find(|(k, _)| k == key);
            let before = start_pairs.iter().find(|(k, _)| k == key);
            assert!(now.is_some() && now != before, "{key} not applied");
        }
        assert_eq!(now.default_topic_queue_nums, start.default_topic_queue_nums);
        assert!(!auto_create_subscription_group(&start));
        assert!(!auto_create_topic_enable(&start));
        assert_eq!(max_message_size(&start), 7);
        assert!(!trace_on(&start) && !long_polling_enable(&start) && slave_read_enable(&start));
        assert_eq!(short_polling_time_mills(&start), 7);
        assert_eq!(max_transfer_count_on_message_in_memory(&start), 7);
        assert_eq!(max_transfer_bytes_on_message_in_memory(&start), 7);
        assert_eq!(transaction_check(&start), (7, 7, 7));
        assert_eq!(
            pending(&start),
            vec![("defaultTopicQueueNums", "3".to_owned())]
        );
        assert_eq!(configured(&start).default_topic_queue_nums, 3);
        let t = store_tunables(&now);
        assert_eq!(
            (
                t.flush_interval_commit_log_ms,
                t.delete_when.as_str(),
                t.max_message_size
            ),
            // A record may hold a 7-byte body plus Apache's 64 KiB for header and properties.
            (7, "03", 7 + 64 * 1024)
        );
    }

    #[test]
    fn the_record_limit_is_the_body_limit_plus_apaches_allowance_within_a_segment() {
        let cfg = BrokerConfig {
            mapped_file_size_commit_log: 1 << 20,
            ..BrokerConfig::default()
        };
        assert_eq!(record_limit(4096, &cfg), 4096 + 65536);
        assert_eq!(record_limit((1 << 20) - 100, &cfg), (1 << 20) - 8);
        // A body limit no segment holds is left for the store to refuse.
        assert_eq!(record_limit(2 << 20, &cfg), 2 << 20);
    }

    #[test]
    fn store_tunables_match_the_start_mapping() {
        let cfg = BrokerConfig {
            flush_commit_log_least_pages: 9,
            file_reserved_time_hours: 5,
            delete_when: "01;13".into(),
            ..BrokerConfig::default()
        };
        let sc = crate::startup::store_config::store_config(&cfg, 0).unwrap();
        assert_eq!(store_tunables(&cfg), storage::Tunables::from_config(&sc));
    }
}
