//! Config values changed at run time (UPDATE_BROKER_CONFIG) without a restart. The control shard
//! sends the updated config to every shard (`Shard::apply_config`); each shard keeps it in a
//! thread-local of its executor and hands the store its new flush and retention settings. Readers
//! ask here instead of the start-time `BrokerConfig`. The keys of `LIVE_KEYS` are in force at once;
//! every other changed key is pending until the next start (`pending`), which reads it from the
//! overlay file (`config::overlay`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::keys::BrokerConfig;

/// Keys UPDATE_BROKER_CONFIG applies at once on every shard; every other key takes effect at the
/// next start. Apache applies these at run time too (its flush and clean services and the send
/// path read them on each use).
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
];

thread_local! {
    static BROKER_PERMISSION: Cell<Option<u32>> = const { Cell::new(None) };
    /// The config as last updated: what the next start uses (its live keys are in force now).
    static UPDATED: RefCell<Option<Rc<BrokerConfig>>> = const { RefCell::new(None) };
}

/// The broker's permission in force on this shard (RocketMQ's perm bits: 4 read, 2 write).
pub fn broker_permission(cfg: &BrokerConfig) -> u32 {
    BROKER_PERMISSION
        .with(Cell::get)
        .unwrap_or(cfg.broker_permission)
}

/// Copies the values of `LIVE_KEYS` from `from` into `to`.
fn copy_live(from: &BrokerConfig, to: &mut BrokerConfig) {
    to.broker_permission = from.broker_permission;
    to.flush_interval_commit_log_ms = from.flush_interval_commit_log_ms;
    to.flush_commit_log_least_pages = from.flush_commit_log_least_pages;
    to.file_reserved_time_hours = from.file_reserved_time_hours;
    to.delete_when.clone_from(&from.delete_when);
    to.disk_max_used_space_ratio = from.disk_max_used_space_ratio;
    to.disk_space_warning_level_ratio = from.disk_space_warning_level_ratio;
    to.disk_space_clean_forcibly_ratio = from.disk_space_clean_forcibly_ratio;
    to.auto_create_subscription_group = from.auto_create_subscription_group;
}

/// `autoCreateSubscriptionGroup` in force on this shard: unknown consumer groups are created on
/// first use.
pub fn auto_create_subscription_group(cfg: &BrokerConfig) -> bool {
    UPDATED.with(|u| {
        u.borrow()
            .as_ref()
            .map_or(cfg.auto_create_subscription_group, |c| {
                c.auto_create_subscription_group
            })
    })
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
    }
}

/// Takes `cfg` (the updated config) on this shard: its live keys are in force from now on, and
/// `store` (this shard's) runs with its flush and retention settings.
pub fn apply(cfg: &BrokerConfig, store: Option<&storage::MessageStore>) {
    BROKER_PERMISSION.with(|p| p.set(Some(cfg.broker_permission)));
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
    out.broker_permission = broker_permission(cfg);
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
            max_message_size: 1024,
            ..BrokerConfig::default()
        };
        // Every live key gets a value other than its default.
        for key in LIVE_KEYS {
            let value = match *key {
                "brokerPermission" => "4",
                "deleteWhen" => "03",
                "diskMaxUsedSpaceRatio" | "diskSpaceWarningLevelRatio" => "61",
                "diskSpaceCleanForciblyRatio" => "62",
                "autoCreateSubscriptionGroup" => "false",
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
        assert_eq!(now.max_message_size, start.max_message_size);
        assert!(!auto_create_subscription_group(&start));
        assert_eq!(pending(&start), vec![("maxMessageSize", "1024".to_owned())]);
        assert_eq!(configured(&start).max_message_size, 1024);
        let t = store_tunables(&now);
        assert_eq!(
            (t.flush_interval_commit_log_ms, t.delete_when.as_str()),
            (7, "03")
        );
    }

    #[test]
    fn store_tunables_match_the_start_mapping() {
        let cfg = BrokerConfig {
            flush_commit_log_least_pages: 9,
            file_reserved_time_hours: 5,
            delete_when: "01;13".into(),
            ..BrokerConfig::default()
        };
        let sc = crate::startup::store_config(&cfg, 0).unwrap();
        assert_eq!(store_tunables(&cfg), storage::Tunables::from_config(&sc));
    }
}
