//! Store settings that may change while the store runs (the broker's UPDATE_BROKER_CONFIG): the
//! ASYNC_FLUSH interval and threshold, retention, and the largest record a put takes. The store starts with its `StoreConfig`'s values
//! and reads these, not the config, from then on; each reader takes the value at the moment it needs
//! it, so a change applies to the next flush decision or retention pass.

use crate::config::StoreConfig;

/// The settings one shard's store reads live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunables {
    pub flush_interval_commit_log_ms: u64,
    pub flush_commit_log_least_pages: u64,
    pub file_reserved_time_hours: u64,
    /// Hours (local time, `;`-separated) at which expired segments are deleted.
    pub delete_when: String,
    pub disk_max_used_space_ratio: u32,
    pub disk_space_warning_level_ratio: u32,
    pub disk_space_clean_forcibly_ratio: u32,
    /// The largest record a put takes; held to what a CommitLog segment fits (`max_record_len`).
    pub max_message_size: usize,
}

impl Tunables {
    /// The values a config starts a store with.
    pub fn from_config(cfg: &StoreConfig) -> Tunables {
        Tunables {
            flush_interval_commit_log_ms: cfg.flush_interval_commit_log_ms,
            flush_commit_log_least_pages: cfg.flush_commit_log_least_pages,
            file_reserved_time_hours: cfg.file_reserved_time_hours,
            delete_when: cfg.delete_when.clone(),
            disk_max_used_space_ratio: cfg.disk_max_used_space_ratio,
            disk_space_warning_level_ratio: cfg.disk_space_warning_level_ratio,
            disk_space_clean_forcibly_ratio: cfg.disk_space_clean_forcibly_ratio,
            max_message_size: cfg.max_message_size,
        }
    }
}
