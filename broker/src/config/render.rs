//! `BrokerConfig` back to RocketMQ's key/value pairs, for GET_BROKER_CONFIG (a properties text, as
//! Apache's broker answers `mqadmin getBrokerConfig`).

use super::keys::{BrokerConfig, BrokerRole, FlushDiskType};


impl BrokerConfig {
    /// Every key this broker applies, with its value in the form `set` reads back.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let opt = |v: &Option<String>| v.clone().unwrap_or_default();
        let mut pairs = vec![
            ("brokerClusterName", self.broker_cluster_name.clone()),
            ("brokerName", self.broker_name.clone()),
            ("brokerId", self.broker_id.to_string()),
            ("brokerIP1", self.broker_ip1.clone()),
            ("brokerIP2", opt(&self.broker_ip2)),
            ("namesrvAddr", self.namesrv_addr.join(";")),
            ("bindAddress", self.bind_address.clone()),
            ("listenPort", self.listen_port.to_string()),
            ("haListenPort", self.ha_listen_port.to_string()),
            ("fastListenPort", self.fast_listen_port.to_string()),
            (
                "brokerRole",
                match self.broker_role {
                    BrokerRole::AsyncMaster => "ASYNC_MASTER",
                    BrokerRole::SyncMaster => "SYNC_MASTER",
                    BrokerRole::Slave => "SLAVE",
                }
                .to_owned(),
            ),
            (
                "flushDiskType",
                match self.flush_disk_type {
                    FlushDiskType::AsyncFlush => "ASYNC_FLUSH",
                    FlushDiskType::SyncFlush => "SYNC_FLUSH",
                }
                .to_owned(),
            ),
            (
                "storePathRootDir",
                self.store_path_root_dir.display().to_string(),
            ),
            (
                "mappedFileSizeCommitLog",
                self.mapped_file_size_commit_log.to_string(),
            ),
            (
                "mappedFileSizeConsumeQueue",
                self.mapped_file_size_consume_queue.to_string(),
            ),
            (
                "flushIntervalCommitLog",
                self.flush_interval_commit_log_ms.to_string(),
            ),
            (
                "flushCommitLogLeastPages",
                self.flush_commit_log_least_pages.to_string(),
            ),
            ("syncFlushTimeout", self.sync_flush_timeout_ms.to_string()),
            ("maxMessageSize", self.max_message_size.to_string()),
            ("deleteWhen", self.delete_when.clone()),
            (
                "fileReservedTime",
                self.file_reserved_time_hours.to_string(),
            ),
            (
                "diskMaxUsedSpaceRatio",
                self.disk_max_used_space_ratio.to_string(),
            ),
            (
                "diskSpaceWarningLevelRatio",
                self.disk_space_warning_level_ratio.to_string(),
            ),
            (
                "diskSpaceCleanForciblyRatio",
                self.disk_space_clean_forcibly_ratio.to_string(),
            ),
            (
                "cleanFileForciblyEnable",
                self.clean_file_forcibly_enable.to_string(),
            ),
            (
                "autoCreateTopicEnable",
                self.auto_create_topic_enable.to_string(),
            ),
            ("traceTopicEnable", self.trace_topic_enable.to_string()),
            ("msgTraceTopicName", self.msg_trace_topic_name.clone()),
            ("traceOn", self.trace_on.to_string()),
            ("useTLS", self.tls.client_enabled().to_string()),
            (
                "autoCreateSubscriptionGroup",
                self.auto_create_subscription_group.to_string(),
            ),
            (
                "defaultTopicQueueNums",
                self.default_topic_queue_nums.to_string(),
            ),
            ("brokerPermission", self.broker_permission.to_string()),
            ("messageDelayLevel", self.message_delay_level.clone()),
            ("longPollingEnable", self.long_polling_enable.to_string()),
            (
                "litePullMessageEnable",
                self.lite_pull_message_enable.to_string(),
            ),
            ("timerWheelEnable", self.timer_wheel_enable.to_string()),
            ("timerMaxDelaySec", self.timer_max_delay_sec.to_string()),
            (
                "recallMessageEnable",
                self.recall_message_enable.to_string(),
            ),
            (
                "allowRecallWhenBrokerNotWriteable",
                self.allow_recall_when_broker_not_writeable.to_string(),
            ),
            (
                "storeReplyMessageEnable",
                self.store_reply_message_enable.to_string(),
            ),
            (
                "shortPollingTimeMills",
                self.short_polling_time_mills.to_string(),
            ),
            (
                "maxTransferCountOnMessageInMemory",
                self.max_transfer_count_on_message_in_memory.to_string(),
            ),
            (
                "maxTransferBytesOnMessageInMemory",
                self.max_transfer_bytes_on_message_in_memory.to_string(),
            ),
            (
                "transactionTimeOut",
                self.transaction_timeout_ms.to_string(),
            ),
            (
                "transactionCheckMax",
                self.transaction_check_max.to_string(),
            ),
            (
                "transactionCheckInterval",
                self.transaction_check_interval_ms.to_string(),
            ),
            ("slaveReadEnable", self.slave_read_enable.to_string()),
            ("haMasterAddress", opt(&self.ha_master_address)),
            (
                "haTransferBatchSize",
                self.ha_transfer_batch_size.to_string(),
            ),
            ("haMaxGapNotInSync", self.ha_max_gap_not_in_sync.to_string()),
            (
                "haMasterProtocol",
                match self.ha_master_protocol {
                    ha::MasterProtocol::Native => "native",
                    ha::MasterProtocol::Apache => "apache",
                }
                .to_string(),
            ),
            ("aclEnable", self.acl_enable.to_string()),
            (
                "enablePropertyFilter",
                self.enable_property_filter.to_string(),
            ),
            (
                "enableMixedMessageType",
                self.enable_mixed_message_type.to_string(),
            ),
            ("enableCompaction", self.enable_compaction.to_string()),
            (
                "compactionScheduleInternal",
                self.compaction_schedule_interval_ms.to_string(),
            ),
            ("maxOffsetMapSize", self.max_offset_map_size.to_string()),
            (
                "aclFile",
                self.acl_file
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            ),
            (
                "serverChannelMaxIdleTimeSeconds",
                self.server_channel_max_idle_time_seconds.to_string(),
            ),
            (
                "serverMaxConnectionsPerShard",
                self.server_max_connections_per_shard.to_string(),
            ),
            (
                "serverMaxPendingResponseBytes",
                self.server_max_pending_response_bytes.to_string(),
            ),
            (
                "serverWriteStallTimeoutSeconds",
                self.server_write_stall_timeout_seconds.to_string(),
            ),
            (
                "serverFrameTimeoutSeconds",
                self.server_frame_timeout_seconds.to_string(),
            ),
            (
                "registerNameServerPeriod",
                self.register_name_server_period_ms.to_string(),
            ),
            (
                "registerBrokerTimeoutMills",
                self.register_broker_timeout_mills.to_string(),
            ),
            ("shardCount", self.shard_count.to_string()),
            ("readCacheBytes", self.read_cache_bytes.to_string()),
            (
                "readBlockCacheBytes",
                self.read_block_cache_bytes.to_string(),
            ),
            (
                "spinBeforeParkMicros",
                self.spin_before_park_micros.to_string(),
            ),
            ("metricsPort", self.metrics_port.to_string()),
            ("logLevel", self.log_level.clone()),
        ];
        pairs.extend(self.controller.to_pairs());
        pairs.extend(self.auth.to_pairs());
        pairs.extend(self.prom_exporter.to_pairs());
        pairs
    }

    /// The config as Java's `MixAll.properties2String` writes it: `key=value` lines.
    pub fn to_properties_text(&self) -> String {
        let mut out = String::new();
        for (key, value) in self.to_pairs() {
            out.push_str(key);
            out.push('=');
            out.push_str(&value);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_properties;

    #[test]
    fn rendered_config_reads_back_the_same() {
        let text = "brokerName=broker-x\nlistenPort=20911\nbrokerRole=SYNC_MASTER\n\
            flushDiskType=SYNC_FLUSH\nnamesrvAddr=a:1;b:2\nbrokerPermission=4\nbrokerIP2=10.0.0.2\n\
            aclFile=/etc/acl.yml\nstorePathRootDir=/tmp/store-x\n";
        let (cfg, _) = BrokerConfig::from_pairs(parse_properties(text)).unwrap();
        let rendered = cfg.to_properties_text();
        assert!(rendered.contains("brokerPermission=4\n"), "{rendered}");
        assert!(rendered.contains("namesrvAddr=a:1;b:2\n"), "{rendered}");
        let (back, issues) = BrokerConfig::from_pairs(parse_properties(&rendered)).unwrap();
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(back, cfg);
        // Every key written is one `set` knows.
        let mut probe = BrokerConfig::default();
        for (key, value) in cfg.to_pairs() {
            assert_eq!(probe.set(key, &value).unwrap(), None, "{key}");
        }
    }
}
