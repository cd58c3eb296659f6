//! One shard's store settings (`storage::StoreConfig`) from the broker's config: at start, and when
//! UPDATE_BROKER_CONFIG checks that the store could open with an updated config.

use storage::StoreConfig;

use crate::config::{BrokerConfig, FlushDiskType};
use crate::error::BrokerError;

/// The store settings of one shard, from the broker's config.
pub fn store_config(cfg: &BrokerConfig, shard: usize) -> Result<StoreConfig, BrokerError> {
    let shard_id = u16::try_from(shard)
        .map_err(|_| BrokerError::ShardCount(format!("too many shards: {shard}")))?;
    let mut sc = StoreConfig::new(
        cfg.store_path_root_dir.join(format!("shard-{shard}")),
        shard_id,
    );
    sc.mapped_file_size_commit_log = cfg.mapped_file_size_commit_log;
    sc.mapped_file_size_consume_queue = cfg.mapped_file_size_consume_queue;
    sc.flush_disk_type = match cfg.flush_disk_type {
        FlushDiskType::SyncFlush => storage::FlushDiskType::SyncFlush,
        FlushDiskType::AsyncFlush => storage::FlushDiskType::AsyncFlush,
    };
    sc.flush_interval_commit_log_ms = cfg.flush_interval_commit_log_ms;
    sc.flush_commit_log_least_pages = u64::from(cfg.flush_commit_log_least_pages);
    sc.sync_flush_timeout_ms = cfg.sync_flush_timeout_ms;
    sc.file_reserved_time_hours = cfg.file_reserved_time_hours;
    sc.delete_when = cfg.delete_when.clone();
    sc.disk_max_used_space_ratio = cfg.disk_max_used_space_ratio;
    sc.disk_space_warning_level_ratio = cfg.disk_space_warning_level_ratio;
    sc.disk_space_clean_forcibly_ratio = cfg.disk_space_clean_forcibly_ratio;
    sc.clean_file_forcibly_enable = cfg.clean_file_forcibly_enable;
    sc.max_message_size = crate::config::live::record_limit(cfg.max_message_size, cfg);
    sc.message_delay_level = cfg
        .delay_levels_ms()?
        .into_iter()
        .map(|ms| i64::try_from(ms).unwrap_or(i64::MAX))
        .collect();
    sc.read_cache_bytes = cfg.read_cache_bytes as u64;
    sc.read_block_cache_bytes = cfg.read_block_cache_bytes as u64;
    sc.enable_compaction = cfg.enable_compaction;
    sc.compaction_interval_ms = cfg.compaction_schedule_interval_ms;
    sc.max_offset_map_size = cfg.max_offset_map_size;
    // In controller mode any replica may become master without a restart.
    sc.consume_durable_only = cfg.flush_disk_type == FlushDiskType::SyncFlush
        && (cfg.broker_role != crate::config::BrokerRole::Slave || cfg.controller.enabled);
    // A restarted replica shows nothing past its last confirm offset until its role is known.
    sc.confirm_gate_at_open = cfg.controller.enabled && !cfg.controller.read_un_committed;
    sc.validate().map_err(|e| BrokerError::Store {
        shard,
        reason: e.to_string(),
    })?;
    Ok(sc)
}
