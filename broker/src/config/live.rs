//! Config values changed at run time (UPDATE_BROKER_CONFIG) without a restart. Each shard keeps the
//! overrides in a thread-local of its executor, set on every shard by the control shard; readers
//! ask here instead of the start-time `BrokerConfig`. Only `brokerPermission` is live today.

use std::cell::Cell;

use super::keys::BrokerConfig;

/// Keys UPDATE_BROKER_CONFIG applies at once; every other key takes effect at the next start.
pub const LIVE_KEYS: &[&str] = &["brokerPermission"];

thread_local! {
    static BROKER_PERMISSION: Cell<Option<u32>> = const { Cell::new(None) };
}

/// The broker's permission in force on this shard (RocketMQ's perm bits: 4 read, 2 write).
pub fn broker_permission(cfg: &BrokerConfig) -> u32 {
    BROKER_PERMISSION
        .with(Cell::get)
        .unwrap_or(cfg.broker_permission)
}

/// Applies the live keys of `cfg` (the updated config) on this shard.
pub fn apply(cfg: &BrokerConfig) {
    BROKER_PERMISSION.with(|p| p.set(Some(cfg.broker_permission)));
}

/// `cfg` with this shard's live values in place (what GET_BROKER_CONFIG reports).
pub fn effective(cfg: &BrokerConfig) -> BrokerConfig {
    let mut out = cfg.clone();
    out.broker_permission = broker_permission(cfg);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_wins_over_the_start_config() {
        let start = BrokerConfig::default();
        assert_eq!(broker_permission(&start), 6);
        let updated = BrokerConfig {
            broker_permission: 4,
            ..BrokerConfig::default()
        };
        apply(&updated);
        assert_eq!(broker_permission(&start), 4);
        assert_eq!(effective(&start).broker_permission, 4);
    }
}
