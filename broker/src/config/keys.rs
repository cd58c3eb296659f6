//! `BrokerConfig`: every key we apply, with Apache RocketMQ's name and default.

use std::path::PathBuf;

use super::auth::AuthConfig;
use super::classification;
use super::controller_mode::ControllerModeConfig;
use super::error::LoadError;
pub use super::issue::ConfigIssue;
use super::prom_exporter::PromExporterConfig;
use super::store_paths;
use super::tls::TlsConfig;

/// `brokerRole`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerRole {
    AsyncMaster,
    SyncMaster,
    Slave,
}

/// `flushDiskType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushDiskType {
    AsyncFlush,
    SyncFlush,
}

/// `shardRouting`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardRouting {
    /// Every shard registers as a broker of its own; requests arrive on the owning core.
    Direct,
    /// One broker per process; requests hop to the queue's owning shard.
    Forward,
}

impl ShardRouting {
    pub fn parse(v: &str) -> Option<ShardRouting> {
        match v.trim().to_ascii_lowercase().as_str() {
            "direct" => Some(ShardRouting::Direct),
            "forward" => Some(ShardRouting::Forward),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ShardRouting::Direct => "direct",
            ShardRouting::Forward => "forward",
        }
    }
}

/// The broker's configuration (BrokerConfig, MessageStoreConfig and NettyServerConfig keys).
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerConfig {
    pub broker_cluster_name: String,
    pub broker_name: String,
    pub broker_id: u64,
    /// Address advertised to name servers and clients; by default the host's address as Apache
    /// chooses it (`local_address`).
    pub broker_ip1: String,
    /// Address advertised for HA (defaults to `broker_ip1`).
    pub broker_ip2: Option<String>,
    /// Name servers, `;` separated in the file.
    pub namesrv_addr: Vec<String>,
    /// Interface the listeners bind to (`bindAddress`, default all interfaces).
    pub bind_address: String,
    pub listen_port: u16,
    /// HA port, default listenPort + 1.
    pub ha_listen_port: u16,
    /// Extra "VIP" channel, listenPort - 2, with the same handlers.
    pub fast_listen_port: u16,
    pub broker_role: BrokerRole,
    pub flush_disk_type: FlushDiskType,
    pub store_path_root_dir: PathBuf,
    pub mapped_file_size_commit_log: u64,
    pub mapped_file_size_consume_queue: u64,
    pub flush_interval_commit_log_ms: u64,
    pub flush_commit_log_least_pages: u32,
    pub sync_flush_timeout_ms: u64,
    pub max_message_size: usize,
    pub delete_when: String,
    pub file_reserved_time_hours: u64,
    pub disk_max_used_space_ratio: u32,
    /// `diskSpaceWarningLevelRatio`: above this disk use the store refuses writes (90%).
    pub disk_space_warning_level_ratio: u32,
    /// `diskSpaceCleanForciblyRatio`: above this, with `cleanFileForciblyEnable`, unexpired
    /// segments are deleted oldest first (85%).
    pub disk_space_clean_forcibly_ratio: u32,
    /// `cleanFileForciblyEnable`: delete unexpired segments when the disk is over 85% full.
    pub clean_file_forcibly_enable: bool,
    pub auto_create_topic_enable: bool,
    /// `traceTopicEnable`: the trace topic (`msgTraceTopicName`) is created at start, as Apache's
    /// TopicConfigManager does, so clients with message traces on need no auto-created topic.
    pub trace_topic_enable: bool,
    /// `msgTraceTopicName`: the trace topic (`RMQ_SYS_TRACE_TOPIC`).
    pub msg_trace_topic_name: String,
    /// `traceOn`: send responses tell clients to trace (TRACE_ON); `false` stops the Java
    /// client's send traces.
    pub trace_on: bool,
    pub auto_create_subscription_group: bool,
    pub default_topic_queue_nums: u32,
    pub broker_permission: u32,
    pub message_delay_level: String,
    pub long_polling_enable: bool,
    /// `litePullMessageEnable`: LITE_PULL_MESSAGE (Java's DefaultLitePullConsumer) is served.
    pub lite_pull_message_enable: bool,
    /// `timerWheelEnable`: messages with TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS wait for
    /// their time; off, they are stored at once as plain messages.
    pub timer_wheel_enable: bool,
    /// `timerMaxDelaySec`: the longest timer accepted (RocketMQ's default: 3 days).
    pub timer_max_delay_sec: u64,
    /// `recallMessageEnable`: RECALL_MESSAGE (370) is served (Apache 5.3.2+'s default: off, answered
    /// NO_PERMISSION "recall failed, operation is forbidden").
    pub recall_message_enable: bool,
    /// `allowRecallWhenBrokerNotWriteable`: a recall is served while brokerPermission is not
    /// writeable (Apache's default: true).
    pub allow_recall_when_broker_not_writeable: bool,
    /// `storeReplyMessageEnable`: replies (SEND_REPLY_MESSAGE) are stored as well as pushed.
    pub store_reply_message_enable: bool,
    pub short_polling_time_mills: u64,
    /// `maxTransferCountOnMessageInMemory`: most messages one pull returns (RocketMQ: 32), whatever
    /// the consumer's `maxMsgNums` (`pullBatchSize`) asks.
    pub max_transfer_count_on_message_in_memory: i32,
    /// `maxTransferBytesOnMessageInMemory`: most bytes one pull returns (RocketMQ: 256 KiB); one
    /// message always fits.
    pub max_transfer_bytes_on_message_in_memory: usize,
    pub transaction_timeout_ms: u64,
    pub transaction_check_max: u32,
    pub transaction_check_interval_ms: u64,
    pub slave_read_enable: bool,
    pub ha_master_address: Option<String>,
    pub ha_transfer_batch_size: usize,
    pub ha_max_gap_not_in_sync: u64,
    /// Ours, `haMasterProtocol`: the protocol a slave speaks to its master, `native` (ours) or
    /// `apache` (Apache RocketMQ's classic HA, to follow an Apache master; one shard only).
    pub ha_master_protocol: ha::MasterProtocol,
    pub acl_enable: bool,
    /// `enablePropertyFilter`: serve SQL92 filters (off by default, as in Apache RocketMQ).
    pub enable_property_filter: bool,
    /// `enableMixedMessageType`: topics with `message.type=MIXED` may be created (Apache: off).
    pub enable_mixed_message_type: bool,
    /// `enableCompaction`: `cleanup.policy=COMPACTION` topics are compacted (Apache: on).
    pub enable_compaction: bool,
    /// `compactionScheduleInternal` (sic, Apache's name): ms between compaction passes (15 min).
    pub compaction_schedule_interval_ms: u64,
    /// `maxOffsetMapSize`: bytes of the key map one compaction pass may build (100 MiB).
    pub max_offset_map_size: u64,
    /// `aclFile`: the plain_acl.yml to use (default `$ROCKETMQ_HOME/conf/plain_acl.yml`).
    pub acl_file: Option<PathBuf>,
    pub server_channel_max_idle_time_seconds: u64,
    /// `serverMaxConnectionsPerShard`: connections one shard serves at once; more are closed at accept.
    pub server_max_connections_per_shard: usize,
    /// `serverMaxPendingResponseBytes`: response bytes one connection may have waiting to be written.
    pub server_max_pending_response_bytes: u64,
    /// `serverWriteStallTimeoutSeconds`: a peer that takes none of its responses for this long is closed.
    pub server_write_stall_timeout_seconds: u64,
    /// `serverFrameTimeoutSeconds`: a request frame must arrive whole within this (slowloris).
    pub server_frame_timeout_seconds: u64,
    pub register_name_server_period_ms: u64,
    /// `registerBrokerTimeoutMills`: how long one registration with a name server may take before
    /// its connection is given up and the next round uses a new one (RocketMQ: 6000).
    pub register_broker_timeout_mills: u64,
    /// Shards (executors); 0 means one per core.
    pub shard_count: usize,
    /// Ours: whether each shard is a broker of its own to clients (`shardRouting`).
    pub shard_routing: ShardRouting,
    /// Bytes of recently read records each shard keeps in memory.
    pub read_cache_bytes: usize,
    /// Ours: bytes of older CommitLog blocks each shard caches for pulls reading a backlog from disk
    /// (O_DIRECT has no page cache to do it); at least two blocks.
    pub read_block_cache_bytes: usize,
    /// Ours: how long an idle shard polls for work before it sleeps (0 = sleep at once). Polling
    /// saves the wake-up and glommio's pre-sleep `membarrier` IPI on busy brokers with dedicated
    /// cores; it burns CPU other processes on those cores could use.
    pub spin_before_park_micros: u64,
    /// Prometheus text endpoint port (`metricsPort`); 0 = off.
    pub metrics_port: u16,
    /// Apache's metric names in Prometheus text (`metricsExporterType = PROM`, `metricsPromExporter*`).
    pub prom_exporter: PromExporterConfig,
    /// Log filter used when RUST_LOG is not set (`logLevel`).
    pub log_level: String,
    /// Controller mode (automatic failover).
    pub controller: ControllerModeConfig,
    /// TLS on the remoting ports and links (`tls.*`, `useTLS`).
    pub tls: TlsConfig,
    /// ACL 2.0 (`authenticationEnabled`, ...).
    pub auth: AuthConfig,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        BrokerConfig {
            broker_cluster_name: "DefaultCluster".into(),
            broker_name: "broker-a".into(),
            broker_id: 0,
            broker_ip1: super::local_address::default_broker_ip(),
            broker_ip2: None,
            namesrv_addr: std::env::var("NAMESRV_ADDR")
                .map(|v| split_addrs(&v))
                .unwrap_or_default(),
            bind_address: "0.0.0.0".into(),
            listen_port: 10911,
            ha_listen_port: 10912,
            fast_listen_port: 10909,
            broker_role: BrokerRole::AsyncMaster,
            flush_disk_type: FlushDiskType::AsyncFlush,
            store_path_root_dir: home.join("store"),
            mapped_file_size_commit_log: 1024 * 1024 * 1024,
            mapped_file_size_consume_queue: 300_000 * 20,
            flush_interval_commit_log_ms: 500,
            flush_commit_log_least_pages: 4,
            sync_flush_timeout_ms: 5000,
            max_message_size: 4 * 1024 * 1024,
            delete_when: "04".into(),
            file_reserved_time_hours: 72,
            disk_max_used_space_ratio: 75,
            disk_space_warning_level_ratio: 90,
            disk_space_clean_forcibly_ratio: 85,
            clean_file_forcibly_enable: true,
            auto_create_topic_enable: true,
            trace_topic_enable: false,
            msg_trace_topic_name: "RMQ_SYS_TRACE_TOPIC".into(),
            trace_on: true,
            auto_create_subscription_group: true,
            default_topic_queue_nums: 4,
            broker_permission: 6,
            message_delay_level: "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
                .into(),
            long_polling_enable: true,
            lite_pull_message_enable: true,
            timer_wheel_enable: true,
            timer_max_delay_sec: 259_200,
            recall_message_enable: false,
            allow_recall_when_broker_not_writeable: true,
            store_reply_message_enable: true,
            short_polling_time_mills: 1000,
            max_transfer_count_on_message_in_memory: 32,
            max_transfer_bytes_on_message_in_memory: 256 * 1024,
            transaction_timeout_ms: 6000,
            transaction_check_max: 15,
            transaction_check_interval_ms: 60_000,
            slave_read_enable: false,
            ha_master_address: None,
            ha_transfer_batch_size: 32 * 1024,
            ha_max_gap_not_in_sync: 256 * 1024 * 1024,
            ha_master_protocol: ha::MasterProtocol::Native,
            acl_enable: false,
            enable_property_filter: false,
            enable_mixed_message_type: false,
            enable_compaction: true,
            compaction_schedule_interval_ms: 15 * 60 * 1000,
            max_offset_map_size: 100 * 1024 * 1024,
            acl_file: None,
            server_channel_max_idle_time_seconds: remoting::limit_defaults::IDLE_SECONDS,
            server_max_connections_per_shard: remoting::limit_defaults::MAX_CONNECTIONS,
            server_max_pending_response_bytes: remoting::limit_defaults::MAX_PENDING_RESPONSE_BYTES,
            server_write_stall_timeout_seconds: remoting::limit_defaults::WRITE_STALL_SECONDS,
            server_frame_timeout_seconds: remoting::limit_defaults::FRAME_TIMEOUT_SECONDS,
            register_name_server_period_ms: 30_000,
            register_broker_timeout_mills: 6_000,
            shard_count: 0,
            shard_routing: ShardRouting::Direct,
            read_cache_bytes: 64 * 1024 * 1024,
            read_block_cache_bytes: 32 * 1024 * 1024,
            spin_before_park_micros: 0,
            metrics_port: 0,
            prom_exporter: PromExporterConfig::default(),
            log_level: "info".into(),
            controller: ControllerModeConfig::default(),
            tls: TlsConfig::default(),
            auth: AuthConfig::default(),
        }
    }
}

fn split_addrs(v: &str) -> Vec<String> {
    v.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn bad(key: &str, value: &str, reason: &str) -> LoadError {
    LoadError::BadValue {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

fn num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, LoadError> {
    value
        .trim()
        .parse()
        .map_err(|_| bad(key, value, "not a number in range"))
}

fn boolean(key: &str, value: &str) -> Result<bool, LoadError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(key, value, "expected true or false")),
    }
}

impl BrokerConfig {
    /// Builds a config from key/value pairs over the defaults. Bad values are errors;
    /// unknown and unsupported keys are returned so the caller can report them.
    pub fn from_pairs(
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(BrokerConfig, Vec<ConfigIssue>), LoadError> {
        let mut cfg = BrokerConfig::default();
        let mut issues = Vec::new();
        let mut ha_port_set = false;
        let mut fast_port_set = false;
        let mut store_paths = Vec::new();
        for (key, value) in pairs {
            match key.as_str() {
                "haListenPort" => ha_port_set = true,
                "fastListenPort" => fast_port_set = true,
                _ => {}
            }
            // Checked once storePathRootDir is known, wherever it is in the file.
            if let Some(part) = store_paths::part(&key) {
                store_paths.push((key, value, part));
                continue;
            }
            if let Some(issue) = cfg.set(&key, &value)? {
                issues.push(issue);
            }
        }
        for (key, value, part) in store_paths {
            store_paths::check(&key, &value, &cfg.store_path_root_dir)?;
            issues.push(ConfigIssue::Moot {
                reason: format!(
                    "it is Apache's default place under storePathRootDir; this broker keeps that \
                     part of each shard's store in {}",
                    cfg.store_path_root_dir
                        .join("shard-<N>")
                        .join(part)
                        .display()
                ),
                key,
            });
        }
        if !ha_port_set {
            cfg.ha_listen_port = cfg.listen_port.saturating_add(1);
        }
        if !fast_port_set {
            cfg.fast_listen_port = cfg.listen_port.saturating_sub(2);
        }
        // As RocketMQ's BrokerStartup does: a master is always brokerId 0. In controller mode the
        // controllers decide both; the broker starts as a slave until they have.
        if cfg.controller.enabled {
            cfg.broker_role = BrokerRole::Slave;
            cfg.broker_id = u64::MAX;
        } else if cfg.broker_role != BrokerRole::Slave {
            cfg.broker_id = 0;
        }
        cfg.validate()?;
        Ok((cfg, issues))
    }

    /// Applies one key. `Ok(Some(issue))` for keys that were not applied.
    pub fn set(&mut self, key: &str, value: &str) -> Result<Option<ConfigIssue>, LoadError> {
        let v = value.trim();
        if let Some(result) = self.controller.set(key, v) {
            return result.map(|()| None).map_err(|reason| bad(key, v, reason));
        }
        if let Some(result) = self.tls.set(key, v) {
            return result.map(|()| None).map_err(|reason| bad(key, v, &reason));
        }
        if let Some(result) = self.auth.set(key, v) {
            return result.map(|()| None).map_err(|reason| bad(key, v, &reason));
        }
        if let Some(result) = self.prom_exporter.set(key, v) {
            return result.map(|()| None).map_err(|reason| bad(key, v, &reason));
        }
        match key {
            "brokerClusterName" => self.broker_cluster_name = v.to_owned(),
            "brokerName" => self.broker_name = v.to_owned(),
            "brokerId" => self.broker_id = num(key, v)?,
            "brokerIP1" => self.broker_ip1 = v.to_owned(),
            "brokerIP2" => self.broker_ip2 = Some(v.to_owned()).filter(|s| !s.is_empty()),
            "namesrvAddr" => self.namesrv_addr = split_addrs(v),
            "bindAddress" | "listenAddress" => self.bind_address = v.to_owned(),
            "listenPort" => self.listen_port = num(key, v)?,
            "haListenPort" => self.ha_listen_port = num(key, v)?,
            "fastListenPort" => self.fast_listen_port = num(key, v)?,
            "brokerRole" => {
                self.broker_role = match v.to_ascii_uppercase().as_str() {
                    "ASYNC_MASTER" => BrokerRole::AsyncMaster,
                    "SYNC_MASTER" => BrokerRole::SyncMaster,
                    "SLAVE" => BrokerRole::Slave,
                    _ => return Err(bad(key, v, "expected ASYNC_MASTER, SYNC_MASTER or SLAVE")),
                }
            }
            "flushDiskType" => {
                self.flush_disk_type = match v.to_ascii_uppercase().as_str() {
                    "ASYNC_FLUSH" => FlushDiskType::AsyncFlush,
                    "SYNC_FLUSH" => FlushDiskType::SyncFlush,
                    _ => return Err(bad(key, v, "expected ASYNC_FLUSH or SYNC_FLUSH")),
                }
            }
            "storePathRootDir" => self.store_path_root_dir = PathBuf::from(v),
            // RocketMQ 4.x spelled these "maped"; both spellings are in the field.
            "mappedFileSizeCommitLog" | "mapedFileSizeCommitLog" => {
                self.mapped_file_size_commit_log = num(key, v)?
            }
            "mappedFileSizeConsumeQueue" | "mapedFileSizeConsumeQueue" => {
                self.mapped_file_size_consume_queue = num(key, v)?
            }
            "flushIntervalCommitLog" => self.flush_interval_commit_log_ms = num(key, v)?,
            "flushCommitLogLeastPages" => self.flush_commit_log_least_pages = num(key, v)?,
            "syncFlushTimeout" => self.sync_flush_timeout_ms = num(key, v)?,
            "maxMessageSize" => self.max_message_size = num(key, v)?,
            "deleteWhen" => self.delete_when = v.to_owned(),
            "fileReservedTime" => self.file_reserved_time_hours = num(key, v)?,
            "diskMaxUsedSpaceRatio" => self.disk_max_used_space_ratio = num(key, v)?,
            "diskSpaceWarningLevelRatio" => self.disk_space_warning_level_ratio = num(key, v)?,
            "diskSpaceCleanForciblyRatio" => self.disk_space_clean_forcibly_ratio = num(key, v)?,
            "cleanFileForciblyEnable" => self.clean_file_forcibly_enable = boolean(key, v)?,
            "autoCreateTopicEnable" => self.auto_create_topic_enable = boolean(key, v)?,
            "traceTopicEnable" => self.trace_topic_enable = boolean(key, v)?,
            "msgTraceTopicName" => self.msg_trace_topic_name = v.to_owned(),
            "traceOn" => self.trace_on = boolean(key, v)?,
            "autoCreateSubscriptionGroup" => self.auto_create_subscription_group = boolean(key, v)?,
            "defaultTopicQueueNums" => self.default_topic_queue_nums = num(key, v)?,
            "brokerPermission" => self.broker_permission = num(key, v)?,
            "messageDelayLevel" => self.message_delay_level = v.to_owned(),
            "longPollingEnable" => self.long_polling_enable = boolean(key, v)?,
            "litePullMessageEnable" => self.lite_pull_message_enable = boolean(key, v)?,
            "timerWheelEnable" => self.timer_wheel_enable = boolean(key, v)?,
            "timerMaxDelaySec" => self.timer_max_delay_sec = num(key, v)?,
            "recallMessageEnable" => self.recall_message_enable = boolean(key, v)?,
            "allowRecallWhenBrokerNotWriteable" => {
                self.allow_recall_when_broker_not_writeable = boolean(key, v)?
            }
            "storeReplyMessageEnable" => self.store_reply_message_enable = boolean(key, v)?,
            "shortPollingTimeMills" => self.short_polling_time_mills = num(key, v)?,
            "maxTransferCountOnMessageInMemory" => {
                self.max_transfer_count_on_message_in_memory = num(key, v)?
            }
            "maxTransferBytesOnMessageInMemory" => {
                self.max_transfer_bytes_on_message_in_memory = num(key, v)?
            }
            "transactionTimeOut" => self.transaction_timeout_ms = num(key, v)?,
            "transactionCheckMax" => self.transaction_check_max = num(key, v)?,
            "transactionCheckInterval" => self.transaction_check_interval_ms = num(key, v)?,
            "slaveReadEnable" => self.slave_read_enable = boolean(key, v)?,
            "haMasterAddress" => {
                self.ha_master_address = Some(v.to_owned()).filter(|s| !s.is_empty())
            }
            "haTransferBatchSize" => self.ha_transfer_batch_size = num(key, v)?,
            "haMaxGapNotInSync" => self.ha_max_gap_not_in_sync = num(key, v)?,
            "haMasterProtocol" => {
                self.ha_master_protocol = match v.trim().to_ascii_lowercase().as_str() {
                    "native" => ha::MasterProtocol::Native,
                    "apache" => ha::MasterProtocol::Apache,
                    _ => return Err(bad(key, v, "expected native or apache")),
                }
            }
            "aclEnable" => self.acl_enable = boolean(key, v)?,
            "enablePropertyFilter" => self.enable_property_filter = boolean(key, v)?,
            "enableMixedMessageType" => self.enable_mixed_message_type = boolean(key, v)?,
            "enableCompaction" => self.enable_compaction = boolean(key, v)?,
            "compactionScheduleInternal" => self.compaction_schedule_interval_ms = num(key, v)?,
            "maxOffsetMapSize" => self.max_offset_map_size = num(key, v)?,
            "aclFile" => {
                self.acl_file = Some(PathBuf::from(v)).filter(|p| !p.as_os_str().is_empty())
            }
            "serverChannelMaxIdleTimeSeconds" => {
                self.server_channel_max_idle_time_seconds = num(key, v)?
            }
            "serverMaxConnectionsPerShard" => self.server_max_connections_per_shard = num(key, v)?,
            "serverMaxPendingResponseBytes" => {
                self.server_max_pending_response_bytes = num(key, v)?
            }
            "serverWriteStallTimeoutSeconds" => {
                self.server_write_stall_timeout_seconds = num(key, v)?
            }
            "serverFrameTimeoutSeconds" => self.server_frame_timeout_seconds = num(key, v)?,
            "registerNameServerPeriod" => self.register_name_server_period_ms = num(key, v)?,
            "registerBrokerTimeoutMills" => self.register_broker_timeout_mills = num(key, v)?,
            "shardCount" => self.shard_count = num(key, v)?,
            "shardRouting" => {
                self.shard_routing = ShardRouting::parse(v)
                    .ok_or_else(|| bad(key, v, "expected direct or forward"))?
            }
            "readCacheBytes" => self.read_cache_bytes = num(key, v)?,
            "readBlockCacheBytes" => self.read_block_cache_bytes = num(key, v)?,
            "spinBeforeParkMicros" => self.spin_before_park_micros = num(key, v)?,
            "metricsPort" => self.metrics_port = num(key, v)?,
            "logLevel" => self.log_level = v.to_owned(),
            // Read by `from_pairs` once storePathRootDir is known; not changeable at run time.
            _ if store_paths::part(key).is_some() => {
                return Ok(Some(ConfigIssue::NotSupported(key.to_owned())))
            }
            _ => return classification::unapplied(key, v),
        }
        Ok(None)
    }

    fn validate(&self) -> Result<(), LoadError> {
        if self.mapped_file_size_commit_log < 64 * 1024 {
            return Err(bad(
                "mappedFileSizeCommitLog",
                &self.mapped_file_size_commit_log.to_string(),
                "must be at least 65536",
            ));
        }
        self.controller
            .validate()
            .map_err(|(key, value, reason)| bad(key, &value, reason))?;
        self.prom_exporter
            .validate(self.metrics_port)
            .map_err(|(key, value, reason)| bad(key, &value, reason))?;
        if self.broker_role == BrokerRole::Slave && self.broker_id == 0 {
            return Err(bad("brokerId", "0", "a SLAVE needs brokerId > 0"));
        }
        if self.ha_master_protocol == ha::MasterProtocol::Apache {
            let why = if self.broker_role != BrokerRole::Slave {
                Some("haMasterProtocol is a SLAVE's choice of master; a master needs none: its HA \
                      port serves our slaves and Apache's (one-shard masters) alike")
            } else if self.controller.enabled {
                Some("controller mode uses Apache's AutoSwitchHA, which is not built; follow an \
                      Apache master outside controller mode")
            } else if self.shard_count != 1 {
                Some("an Apache master has one CommitLog: set shardCount = 1 so this store holds \
                      it at the same physical offsets")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(bad("haMasterProtocol", "apache", why));
            }
        }
        if self.default_topic_queue_nums == 0 {
            return Err(bad("defaultTopicQueueNums", "0", "must be at least 1"));
        }
        let trace = &self.msg_trace_topic_name;
        let topic_char = |c: char| c.is_ascii_alphanumeric() || "%_|-".contains(c);
        if trace.is_empty() || trace.len() > 127 || !trace.chars().all(topic_char) {
            return Err(bad(
                "msgTraceTopicName",
                trace,
                "a topic name: 1 to 127 of A-Z a-z 0-9 % _ | -",
            ));
        }
        Ok(())
    }

    /// The address clients use for this broker, `brokerIP1:listenPort`.
    pub fn broker_addr(&self) -> String {
        format!("{}:{}", self.broker_ip1, self.listen_port)
    }

    /// The address slaves use for HA, `brokerIP2:haListenPort`.
    pub fn ha_server_addr(&self) -> String {
        let ip = self.broker_ip2.as_deref().unwrap_or(&self.broker_ip1);
        format!("{ip}:{}", self.ha_listen_port)
    }

    /// `messageDelayLevel` as milliseconds per level (level 1 first).
    pub fn delay_levels_ms(&self) -> Result<Vec<u64>, LoadError> {
        self.message_delay_level
            .split_whitespace()
            .map(|level| {
                let (digits, unit) = level.split_at(level.len().saturating_sub(1));
                let n: u64 = digits
                    .parse()
                    .map_err(|_| bad("messageDelayLevel", level, "expected e.g. 5s, 2m, 1h, 1d"))?;
                let ms = match unit {
                    "s" => 1000,
                    "m" => 60_000,
                    "h" => 3_600_000,
                    "d" => 86_400_000,
                    _ => return Err(bad("messageDelayLevel", level, "unit must be s, m, h or d")),
                };
                Ok(n * ms)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_rocketmqs() {
        let (cfg, issues) = BrokerConfig::from_pairs(Vec::new()).unwrap();
        assert!(issues.is_empty());
        assert_eq!(cfg.listen_port, 10911);
        assert_eq!(cfg.ha_listen_port, 10912);
        assert_eq!(cfg.fast_listen_port, 10909);
        assert_eq!(cfg.flush_disk_type, FlushDiskType::AsyncFlush);
        assert_eq!(cfg.broker_role, BrokerRole::AsyncMaster);
        assert_eq!(cfg.mapped_file_size_consume_queue, 6_000_000);
        assert_eq!(cfg.delay_levels_ms().unwrap().len(), 18);
        assert_eq!(cfg.delay_levels_ms().unwrap()[17], 7_200_000);
    }

    #[test]
    fn reference_broker_a_properties_apply() {
        let text = "brokerClusterName=rocketmq-cluster\nbrokerName=broker-a\nbrokerId=0\n\
            namesrvAddr=ns1:9876;ns2:9876\nlistenPort=10921\nmapedFileSizeCommitLog=1073741824\n\
            storePathRootDir=/x\nstoreCheckpoint=/x/checkpoint\nbrokerRole=SYNC_MASTER\nflushDiskType=SYNC_FLUSH\nbogusKey=1\n";
        let (cfg, issues) =
            BrokerConfig::from_pairs(crate::config::parse_properties(text)).unwrap();
        assert_eq!(cfg.broker_cluster_name, "rocketmq-cluster");
        assert_eq!(cfg.namesrv_addr, vec!["ns1:9876", "ns2:9876"]);
        assert_eq!(cfg.ha_listen_port, 10922);
        assert_eq!(cfg.fast_listen_port, 10919);
        assert_eq!(cfg.broker_role, BrokerRole::SyncMaster);
        assert_eq!(cfg.flush_disk_type, FlushDiskType::SyncFlush);
        assert_eq!(
            issues,
            vec![
                ConfigIssue::Unknown("bogusKey".into()),
                ConfigIssue::Moot {
                    key: "storeCheckpoint".into(),
                    reason: "it is Apache's default place under storePathRootDir; this broker \
                             keeps that part of each shard's store in /x/shard-<N>/checkpoint"
                        .into()
                },
            ]
        );
    }

    #[test]
    fn store_paths_elsewhere_than_apaches_defaults_are_refused() {
        // The key may come before storePathRootDir.
        let ok = pairs(&[
            ("storePathIndex", "/d/index"),
            ("storePathRootDir", "/d"),
            ("storePathConsumeQueue", "/d/consumequeue"),
        ]);
        let (_, issues) = BrokerConfig::from_pairs(ok).unwrap();
        assert_eq!(issues.len(), 2, "{issues:?}");
        let err = BrokerConfig::from_pairs(pairs(&[
            ("storePathRootDir", "/d"),
            ("storePathCommitLog", "/nvme/commitlog"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(err.contains("storePathCommitLog"), "{err}");
        assert!(err.contains("/d/shard-<N>/commitlog"), "{err}");
        // Not a key UPDATE_BROKER_CONFIG may change.
        let mut cfg = BrokerConfig::default();
        assert_eq!(
            cfg.set("storePathIndex", "/d/index").unwrap(),
            Some(ConfigIssue::NotSupported("storePathIndex".into()))
        );
    }

    #[test]
    fn dledger_and_controller_mode_are_refused_with_the_way_out() {
        let err = BrokerConfig::from_pairs(pairs(&[("enableDLegerCommitLog", "true")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("enableDLegerCommitLog"), "{err}");
        assert!(err.contains("master/slave"), "{err}");
        assert!(err.contains("controller mode"), "{err}");
        // Controller mode needs its controllers; then it overrides the role and id of the file.
        assert!(BrokerConfig::from_pairs(pairs(&[("enableControllerMode", "true")])).is_err());
        let (cfg, _) = BrokerConfig::from_pairs(pairs(&[
            ("enableControllerMode", "true"),
            ("controllerAddr", "127.0.0.1:9878"),
            ("brokerRole", "SYNC_MASTER"),
        ]))
        .unwrap();
        assert_eq!(cfg.broker_role, BrokerRole::Slave);
        assert_eq!(cfg.controller.controller_addr, vec!["127.0.0.1:9878"]);
        let (_, issues) = BrokerConfig::from_pairs(pairs(&[
            ("enableDLegerCommitLog", "false"),
            ("enableControllerMode", "false"),
        ]))
        .unwrap();
        assert!(issues.is_empty(), "{issues:?}");
    }

    #[test]
    fn trace_keys_apply_and_the_topic_name_is_checked() {
        let (cfg, issues) = BrokerConfig::from_pairs(Vec::new()).unwrap();
        assert!(issues.is_empty());
        assert!(!cfg.trace_topic_enable && cfg.trace_on);
        assert_eq!(cfg.msg_trace_topic_name, "RMQ_SYS_TRACE_TOPIC");
        let (cfg, issues) = BrokerConfig::from_pairs(pairs(&[
            ("traceTopicEnable", "true"),
            ("msgTraceTopicName", "MY_TRACE"),
            ("traceOn", "false"),
        ]))
        .unwrap();
        assert!(issues.is_empty(), "{issues:?}");
        assert!(cfg.trace_topic_enable && !cfg.trace_on);
        assert_eq!(cfg.msg_trace_topic_name, "MY_TRACE");
        let err = BrokerConfig::from_pairs(pairs(&[("msgTraceTopicName", "a b")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("msgTraceTopicName"), "{err}");
    }

    #[test]
    fn wait_time_in_send_queue_is_reported_with_its_reason() {
        let (_, issues) =
            BrokerConfig::from_pairs(pairs(&[("waitTimeMillsInSendQueue", "500")])).unwrap();
        let [ConfigIssue::Moot { key, reason }] = issues.as_slice() else {
            panic!("{issues:?}");
        };
        assert_eq!(key, "waitTimeMillsInSendQueue");
        assert!(reason.contains("SYSTEM_BUSY"), "{reason}");
        assert!(issues[0].to_string().contains("accepted but not used"));
    }

    #[test]
    fn pull_transfer_limits_are_read_and_the_on_disk_ones_are_moot() {
        let (cfg, issues) = BrokerConfig::from_pairs(pairs(&[
            ("maxTransferCountOnMessageInMemory", "128"),
            ("maxTransferBytesOnMessageInMemory", "1048576"),
            ("maxTransferCountOnMessageInDisk", "8"),
        ]))
        .unwrap();
        assert_eq!(cfg.max_transfer_count_on_message_in_memory, 128);
        assert_eq!(cfg.max_transfer_bytes_on_message_in_memory, 1 << 20);
        let [ConfigIssue::Moot { key, reason }] = issues.as_slice() else {
            panic!("{issues:?}");
        };
        assert_eq!(key, "maxTransferCountOnMessageInDisk");
        assert!(reason.contains("block cache"), "{reason}");
    }

    #[test]
    fn keys_read_are_not_listed_as_unused() {
        let defaults = BrokerConfig::default().to_pairs();
        let unused = classification::TABLE
            .iter()
            .filter(|(_, class)| *class != apache_keys::Class::Applied)
            .flat_map(|(keys, _)| keys.iter());
        for key in unused {
            assert!(
                !defaults.iter().any(|(k, _)| k == key),
                "{key} is read, yet listed as not used"
            );
        }
    }

    #[test]
    fn bad_values_are_errors_naming_the_key() {
        let err = BrokerConfig::from_pairs(pairs(&[("listenPort", "99999")])).unwrap_err();
        assert!(err.to_string().contains("listenPort"), "{err}");
        assert!(BrokerConfig::from_pairs(pairs(&[("brokerRole", "LEADER")])).is_err());
        assert!(BrokerConfig::from_pairs(pairs(&[("brokerRole", "SLAVE")])).is_err());
        assert!(
            BrokerConfig::from_pairs(pairs(&[("messageDelayLevel", "1x")]))
                .unwrap()
                .0
                .delay_levels_ms()
                .is_err()
        );
    }

    #[test]
    fn apache_master_protocol_needs_a_one_shard_classic_slave() {
        let slave = [
            ("brokerId", "1"),
            ("brokerRole", "SLAVE"),
            ("shardCount", "1"),
            ("haMasterProtocol", "apache"),
        ];
        let (cfg, _) = BrokerConfig::from_pairs(pairs(&slave)).unwrap();
        assert_eq!(cfg.ha_master_protocol, ha::MasterProtocol::Apache);
        let refused = |change: (&'static str, &'static str)| {
            let mut list = slave.to_vec();
            list.retain(|(k, _)| *k != change.0);
            list.push(change);
            let err = BrokerConfig::from_pairs(pairs(&list)).unwrap_err();
            assert!(err.to_string().contains("haMasterProtocol"), "{err}");
        };
        refused(("shardCount", "2"));
        refused(("shardCount", "0"));
        refused(("brokerRole", "ASYNC_MASTER"));
        let mut controller = slave.to_vec();
        controller.push(("enableControllerMode", "true"));
        controller.push(("controllerAddr", "127.0.0.1:9878"));
        let err = BrokerConfig::from_pairs(pairs(&controller)).unwrap_err();
        assert!(err.to_string().contains("haMasterProtocol"), "{err}");
        assert!(BrokerConfig::from_pairs(pairs(&[("haMasterProtocol", "jgroups")])).is_err());
    }
}
