//! Every Apache RocketMQ 5.x broker key (the lists in `apache_keys/`) and what this broker does with
//! it: applied (read by `BrokerConfig::set`), refused at start when its value asks for something
//! this broker would silently not do (security, durability), or not used with the reason that is
//! harmless here. Keys in none of the lists are typos and reported as unknown.

use super::error::LoadError;
use super::issue::ConfigIssue;
use apache_keys::{Class, Group, Refusal, When};

const THREADS: &str = "a JVM thread pool or its queue: each request runs on the shard (core) that \
     owns it, one executor per core, so there is no pool to size";
const QUEUE_WAIT: &str =
    "requests are not queued for a thread pool here: each runs at once on the \
     shard that received it, and a store with too much unflushed data answers SYSTEM_BUSY at once";
const NETTY: &str =
    "Netty/epoll tuning: connections are glommio (io_uring) sockets on each shard, \
     bounded by serverMaxConnectionsPerShard, serverMaxPendingResponseBytes, \
     serverWriteStallTimeoutSeconds and serverFrameTimeoutSeconds";
const NETTY_CLIENT: &str =
    "tuning of Netty's client (the broker's connections to name servers and \
     controllers): those are glommio sockets with fixed timeouts, and registerBrokerTimeoutMills \
     bounds a registration";
const MMAP: &str = "page-cache or mmap tuning: the CommitLog is written with O_DIRECT and group \
     commit and older data is read through each shard's block cache, so there is no mapped file, \
     transient store pool or page cache to tune";
const CQ_FLUSH: &str = "ConsumeQueue and index flushing: both are rebuilt from the CommitLog past \
     their flush points at recovery, so their flush cadence does not change durability";
const ROCKSDB: &str = "a RocksDB option: this broker has no RocksDB; ConsumeQueues are RocketMQ's \
     files and metadata is JSON";
const POP: &str = "tuning of Apache's POP implementation: POP here keeps its check points in each \
     shard's revive log and revives on the shard's own timer, with no buffers or scan knobs";
const METRICS: &str = "an OpenTelemetry exporter setting: this broker serves Prometheus text at \
     metricsPort (ours, off by default); point the scraper there";
const STATS: &str = "statistics detail of Apache's broker: the counters here are always on, per \
     shard, and exported at metricsPort";
const BLOOM: &str =
    "the bit-map (bloom filter) pre-filter of consume queues: tag and SQL92 filters \
     are evaluated per message at pull time here, with the same results";
const DLEDGER: &str = "a DLedger setting, and the DLedger CommitLog is not built \
     (enableDLegerCommitLog = true is refused)";
const CONTAINER: &str = "broker container mode (several brokers in one JVM) is not built; each \
     broker is its own process";
const ACTING_MASTER: &str =
    "slave-acting-master mode is not built: a slave never serves as master \
     here; automatic failover is controller mode (enableControllerMode)";
const TIMER: &str = "tuning of Apache's timer-log store: timer messages here wait in a per-shard \
     wheel kept with the store (timerWheelEnable, timerMaxDelaySec are the knobs)";
const ADDR_LOOKUP: &str = "finding name servers or controllers through an address server or DNS \
     is not built; they are given in namesrvAddr (or NAMESRV_ADDR) and controllerAddr";
const LMQ: &str =
    "light message queues (LMQ multi-dispatch, for MQTT) are not built; a message is \
     stored in its own topic's queue only";
const REGISTRATION: &str = "registration tuning: each shard-broker registers all its topics with \
     every name server in one request per registerNameServerPeriod";
const HA: &str = "tuning of Apache's replication service: each shard streams its CommitLog to its \
     slaves with fixed heartbeats; haTransferBatchSize and haMaxGapNotInSync are the knobs";
const RECOVERY: &str = "recovery tuning: recovery here scans each shard from its checkpoint, \
     checking every record's CRC, and cuts a torn tail";
const RETENTION: &str = "retention scheduling: the control shard deletes expired segments at \
     deleteWhen and when the disk is over diskMaxUsedSpaceRatio, a few files per pass";
const COLD: &str = "cold-data throttling for the page cache: pulls of old data read through each \
     shard's block cache with aligned O_DIRECT reads and fault no pages in";
const NO_AUTH_CACHE: &str = "users and ACLs are not cached: every shard holds all of them and \
     sees a change as soon as it is stored, and every request is checked on its own (Apache's \
     stateless strategy); remove the key";
const COMPACTION: &str = "compaction writes one compacted file per queue; its size is not \
     configurable";
const CQ_FORMAT: &str = "ConsumeQueue extension and batch ConsumeQueue formats are not built; \
     ConsumeQueue units are RocketMQ's 20-byte ones";
const MOOT_DISK: &str =
    "there is no page cache to fall out of: every pull reads through the block \
     cache, and the maxTransfer...OnMessageInMemory limits apply to all of them";

/// The table: every Apache key in one row.
pub const TABLE: &[Group] = &[
    (
        &[
            "brokerClusterName",
            "brokerName",
            "brokerId",
            "brokerIP1",
            "brokerIP2",
            "namesrvAddr",
            "bindAddress",
            "listenPort",
            "haListenPort",
            "brokerRole",
            "flushDiskType",
            "storePathRootDir",
            "mappedFileSizeCommitLog",
            "mappedFileSizeConsumeQueue",
            "flushIntervalCommitLog",
            "flushCommitLogLeastPages",
            "syncFlushTimeout",
            "maxMessageSize",
            "deleteWhen",
            "fileReservedTime",
            "diskMaxUsedSpaceRatio",
            "diskSpaceWarningLevelRatio",
            "diskSpaceCleanForciblyRatio",
            "cleanFileForciblyEnable",
            "autoCreateTopicEnable",
            "autoCreateSubscriptionGroup",
            "defaultTopicQueueNums",
            "brokerPermission",
            "messageDelayLevel",
            "longPollingEnable",
            "litePullMessageEnable",
            "timerWheelEnable",
            "timerMaxDelaySec",
            "recallMessageEnable",
            "allowRecallWhenBrokerNotWriteable",
            "storeReplyMessageEnable",
            "shortPollingTimeMills",
            "maxTransferCountOnMessageInMemory",
            "maxTransferBytesOnMessageInMemory",
            "transactionTimeOut",
            "transactionCheckMax",
            "transactionCheckInterval",
            "slaveReadEnable",
            "haMasterAddress",
            "haTransferBatchSize",
            "haMaxGapNotInSync",
            "aclEnable",
            "enablePropertyFilter",
            "enableMixedMessageType",
            "enableCompaction",
            "compactionScheduleInternal",
            "maxOffsetMapSize",
            "serverChannelMaxIdleTimeSeconds",
            "registerNameServerPeriod",
            "registerBrokerTimeoutMills",
            "enableControllerMode",
            "controllerAddr",
            "brokerHeartbeatInterval",
            "controllerHeartBeatTimeoutMills",
            "syncBrokerMetadataPeriod",
            "checkSyncStateSetPeriod",
            "brokerElectionPriority",
            "haMaxTimeSlaveNotCatchup",
            "allAckInSyncStateSet",
            "minInSyncReplicas",
            "readUnCommitted",
            // Accepted at Apache's default place under storePathRootDir, refused anywhere else.
            "storePathCommitLog",
            "storePathConsumeQueue",
            "storePathIndex",
            "storeCheckpoint",
            // Ours, or Apache 4.x's spellings.
            "aclFile",
            "fastListenPort",
            "listenAddress",
            "logLevel",
            "mapedFileSizeCommitLog",
            "mapedFileSizeConsumeQueue",
            "metricsPort",
            // Apache's PROM exporter (`prom_exporter`); OTLP_GRPC and LOG are refused there.
            "metricsExporterType",
            "metricsPromExporterPort",
            "metricsPromExporterHost",
            "metricsPromUnitSuffix",
            "readBlockCacheBytes",
            "readCacheBytes",
            "serverFrameTimeoutSeconds",
            "serverMaxConnectionsPerShard",
            "serverMaxPendingResponseBytes",
            "serverWriteStallTimeoutSeconds",
            "haMasterProtocol",
            "shardCount",
            "shardRouting",
            "spinBeforeParkMicros",
        ],
        Class::Applied,
    ),
    // ACL 2.0 (Apache's AuthConfig), read by `config::auth`.
    (
        &[
            "authenticationEnabled",
            "authorizationEnabled",
            "authenticationWhitelist",
            "authorizationWhitelist",
            "initAuthenticationUser",
            "innerClientAuthenticationCredentials",
            "migrateAuthFromV1Enabled",
            "authenticationProvider",
            "authenticationMetadataProvider",
            "authorizationProvider",
            "authorizationMetadataProvider",
            "authenticationStrategy",
            "authorizationStrategy",
        ],
        Class::Applied,
    ),
    // Apache's caches of users, ACLs and (stateful strategy) decisions: there is none here, every
    // shard holds all users and ACLs and sees a change at once. Their defaults are accepted.
    (
        &["userCacheMaxNum", "aclCacheMaxNum"],
        Class::Refused(Refusal {
            when: When::NotDefault("1000"),
            why: NO_AUTH_CACHE,
        }),
    ),
    (
        &["userCacheExpiredSecond", "aclCacheExpiredSecond"],
        Class::Refused(Refusal {
            when: When::NotDefault("600"),
            why: NO_AUTH_CACHE,
        }),
    ),
    (
        &[
            "userCacheRefreshSecond",
            "aclCacheRefreshSecond",
            "statefulAuthenticationCacheExpiredSecond",
            "statefulAuthorizationCacheExpiredSecond",
        ],
        Class::Refused(Refusal {
            when: When::NotDefault("60"),
            why: NO_AUTH_CACHE,
        }),
    ),
    (
        &[
            "statefulAuthenticationCacheMaxNum",
            "statefulAuthorizationCacheMaxNum",
        ],
        Class::Refused(Refusal {
            when: When::NotDefault("10000"),
            why: NO_AUTH_CACHE,
        }),
    ),
    (
        &["authConfigPath"],
        Class::Refused(Refusal {
            when: When::NotEmpty,
            why: "users and ACLs are kept in <storePathRootDir>/config/auth.json, not in a path \
                  of their own; remove the key",
        }),
    ),
    (
        &["configName", "clusterName"],
        Class::Refused(Refusal {
            when: When::NotEmpty,
            why: "the broker names itself: brokerClusterName is the cluster of `Cluster:` \
                  resources; remove the key",
        }),
    ),
    // TLS (Apache's JVM system properties, broker config keys here), read by `config::tls`;
    // useTLS is NettyClientConfig's name for tls.enable.
    (remoting::tls::SERVER_KEYS, Class::Applied),
    (remoting::tls::CLIENT_KEYS, Class::Applied),
    (&[remoting::tls::ENABLE_KEY, "useTLS"], Class::Applied),
    (
        remoting::tls::PASSWORD_KEYS,
        Class::Refused(Refusal {
            when: When::NotEmpty,
            why: remoting::tls::KEY_PASSWORD_REFUSED,
        }),
    ),
    (
        &["socksProxyConfig"],
        Class::Refused(Refusal {
            when: When::NotDefault("{}"),
            why: "the broker connects to name servers and controllers directly, never through a \
                  SOCKS proxy; remove the key",
        }),
    ),
    (
        &["configBlackList"],
        Class::Refused(Refusal {
            when: When::NotDefault("configBlackList;brokerConfigPath"),
            why: "UPDATE_BROKER_CONFIG here refuses storePathRootDir and shardCount only and \
                  takes no list of further keys to lock; remove the key and restrict who may \
                  send admin requests with plain ACL (aclEnable)",
        }),
    ),
    // Durability: asking for more copies or checks than this broker makes.
    (
        &["enableDLegerCommitLog"],
        Class::Refused(Refusal {
            when: When::NotOff,
            why: "the DLedger CommitLog is not built; run master/slave pairs instead (brokerRole \
                  = SYNC_MASTER or ASYNC_MASTER with a SLAVE of the same brokerName), or \
                  controller mode (enableControllerMode) for automatic failover",
        }),
    ),
    (
        &["totalReplicas"],
        Class::Refused(Refusal {
            when: When::NotDefault("1"),
            why: "totalReplicas serves Apache's automatic lowering of inSyncReplicas and slave \
                  acting master, neither of which is built (a SYNC_MASTER here always waits for \
                  its slave); remove the key",
        }),
    ),
    (
        &["enableAutoInSyncReplicas"],
        Class::Refused(Refusal {
            when: When::NotOff,
            why: "in-sync replicas are never lowered automatically here: a SYNC_MASTER without \
                  its slave answers SLAVE_NOT_AVAILABLE instead of acknowledging one copy; in \
                  controller mode minInSyncReplicas and allAckInSyncStateSet decide; remove the \
                  key",
        }),
    ),
    (
        &["inSyncReplicas"],
        Class::Refused(Refusal {
            when: When::Above(2),
            why: "a SYNC_MASTER here waits for one slave's acknowledgement (two copies); more \
                  in-sync copies per send are not built; in controller mode, \
                  allAckInSyncStateSet = true waits for every member of the SyncStateSet",
        }),
    ),
    (
        &["forceVerifyPropCRC"],
        Class::Refused(Refusal {
            when: When::NotOff,
            why: "records here carry the body CRC only (checked at recovery), no properties CRC \
                  to verify; remove the key",
        }),
    ),
    (
        &["readOnlyCommitLogStorePaths"],
        Class::Refused(Refusal {
            when: When::NotEmpty,
            why: "this broker reads CommitLogs only under storePathRootDir/shard-<N>; messages in \
                  other folders would be unreachable; remove the key",
        }),
    ),
    (
        &["messageStorePlugIn"],
        Class::Refused(Refusal {
            when: When::NotEmpty,
            why: "Java message store plug-ins cannot be loaded; remove the key",
        }),
    ),
    (
        &["rejectTransactionMessage"],
        Class::Refused(Refusal {
            when: When::NotOff,
            why: "this broker always accepts transactional messages; to keep producers from \
                  sending them, deny the topic with plain ACL",
        }),
    ),
    (
        &["asyncLearner"],
        Class::Refused(Refusal {
            when: When::NotOff,
            why: "every slave here may join the SyncStateSet and be elected master; learners \
                  are not built",
        }),
    ),
    (
        &[
            "sendMessageThreadPoolNums",
            "pullMessageThreadPoolNums",
            "queryMessageThreadPoolNums",
            "adminBrokerThreadPoolNums",
            "clientManageThreadPoolNums",
            "consumerManageThreadPoolNums",
            "putMessageFutureThreadPoolNums",
            "litePullMessageThreadPoolNums",
            "ackMessageThreadPoolNums",
            "processReplyMessageThreadPoolNums",
            "loadBalanceProcessorThreadPoolNums",
            "heartbeatThreadPoolNums",
            "recoverThreadPoolNums",
            "endTransactionThreadPoolNums",
            "sendThreadPoolQueueCapacity",
            "pullThreadPoolQueueCapacity",
            "putThreadPoolQueueCapacity",
            "litePullThreadPoolQueueCapacity",
            "ackThreadPoolQueueCapacity",
            "replyThreadPoolQueueCapacity",
            "queryThreadPoolQueueCapacity",
            "clientManagerThreadPoolQueueCapacity",
            "consumerManagerThreadPoolQueueCapacity",
            "heartbeatThreadPoolQueueCapacity",
            "endTransactionPoolQueueCapacity",
            "adminBrokerThreadPoolQueueCapacity",
            "loadBalanceThreadPoolQueueCapacity",
            "timerGetMessageThreadNum",
            "timerPutMessageThreadNum",
            "dispatchCqThreads",
            "dispatchCqCacheNum",
            "batchDispatchRequestThreadPoolNums",
            "enableBuildConsumeQueueConcurrently",
            "enableAsyncReput",
            "dispatchFromSenderThread",
            "useReentrantLockWhenPutMessage",
            "spinLockCollisionRetreatOptimalDegree",
            "useABSLock",
            "topicQueueLockNum",
            "debugLockEnable",
            "putMessageTimeout",
            "maxAsyncPutMessageRequests",
            "asyncSendEnable",
            "recoverConcurrently",
            "appendAckAsync",
            "appendCkAsync",
            "enableFastChannelEventProcess",
        ],
        Class::NotUsed(THREADS),
    ),
    (
        &[
            "waitTimeMillsInSendQueue",
            "waitTimeMillsInPullQueue",
            "waitTimeMillsInLitePullQueue",
            "waitTimeMillsInHeartbeatQueue",
            "waitTimeMillsInTransactionQueue",
            "waitTimeMillsInAckQueue",
            "waitTimeMillsInAdminBrokerQueue",
            "brokerFastFailureEnable",
            "osPageCacheBusyTimeOutMills",
        ],
        Class::NotUsed(QUEUE_WAIT),
    ),
    (
        &[
            "serverWorkerThreads",
            "serverSelectorThreads",
            "serverCallbackExecutorThreads",
            "serverSocketSndBufSize",
            "serverSocketRcvBufSize",
            "serverPooledByteBufAllocatorEnable",
            "useEpollNativeSelector",
            "serverOnewaySemaphoreValue",
            "serverAsyncSemaphoreValue",
            "writeBufferHighWaterMark",
            "writeBufferLowWaterMark",
            "serverSocketBacklog",
            "serverNettyWorkerGroupEnable",
            "enableShutdownGracefully",
            "shutdownWaitTimeSeconds",
            "transferMsgByHeap",
            "enableNetWorkFlowControl",
        ],
        Class::NotUsed(NETTY),
    ),
    (
        &[
            "clientWorkerThreads",
            "clientCallbackExecutorThreads",
            "clientOnewaySemaphoreValue",
            "clientAsyncSemaphoreValue",
            "connectTimeoutMillis",
            "channelNotActiveInterval",
            "isScanAvailableNameSrv",
            "clientChannelMaxIdleTimeSeconds",
            "clientSocketSndBufSize",
            "clientSocketRcvBufSize",
            "clientPooledByteBufAllocatorEnable",
            "clientCloseSocketIfTimeout",
            "disableCallbackExecutor",
            "disableNettyWorkerGroup",
            "maxReconnectIntervalTimeSeconds",
            "enableReconnectForGoAway",
            "sendHeartbeatTimeoutMillis",
            "forwardTimeout",
        ],
        Class::NotUsed(NETTY_CLIENT),
    ),
    (
        &[
            "transientStorePoolEnable",
            "transientStorePoolSize",
            "fastFailIfNoBufferInStorePool",
            "warmMapedFileEnable",
            "flushLeastPagesWhenWarmMapedFile",
            "commitIntervalCommitLog",
            "commitCommitLogLeastPages",
            "commitCommitLogThoroughInterval",
            "flushCommitLogThoroughInterval",
            "flushCommitLogTimed",
            "wakeCommitWhenPutMessage",
            "wakeFlushWhenPutMessage",
            "writeWithoutMmap",
            "mappedFileSwapEnable",
            "commitLogForceSwapMapInterval",
            "commitLogSwapMapInterval",
            "commitLogSwapMapReserveFileNum",
            "logicQueueForceSwapMapInterval",
            "logicQueueSwapMapInterval",
            "cleanSwapedMapInterval",
            "logicQueueSwapMapReserveFileNum",
            "destroyMapedFileIntervalForcibly",
            "redeleteHangedFileInterval",
            "accessMessageInMemoryMaxRatio",
            "accessMessageInMemoryHotRatio",
            "dataReadAheadEnable",
            "putConsumeQueueDataByFileChannel",
            "enableRunningFlagsInFlush",
        ],
        Class::NotUsed(MMAP),
    ),
    (
        &[
            "flushIntervalConsumeQueue",
            "flushConsumeQueueLeastPages",
            "flushConsumeQueueThoroughInterval",
            "messageIndexSafe",
            "putMsgIndexHightWater",
        ],
        Class::NotUsed(CQ_FLUSH),
    ),
    (
        &[
            "coldDataFlowControlEnable",
            "coldDataScanEnable",
            "timerColdDataCheckIntervalMs",
            "sampleCountThreshold",
            "sampleSteps",
            "coldCtrStrategyEnable",
            "usePIDColdCtrStrategy",
            "cgColdReadThreshold",
            "globalColdReadThreshold",
        ],
        Class::NotUsed(COLD),
    ),
    (
        &[
            "storeType",
            "cleanRocksDBDirtyCQIntervalMin",
            "statRocksDBCQIntervalSec",
            "memTableFlushIntervalMs",
            "realTimePersistRocksDBConfig",
            "enableRocksDBLog",
            "rocksdbCQDoubleWriteEnable",
            "combineCQLoadingCQTypes",
            "combineCQPreferCQType",
            "combineAssignOffsetCQType",
            "combineCQEnableCheckSelf",
            "combineCQMaxExtraSearchCommitLogFiles",
            "bottomMostCompressionTypeForConsumeQueueStore",
            "rocksdbCompressionType",
            "rocksdbFlushWalFrequency",
            "rocksdbWalFileRollingThreshold",
            "configManagerVersion",
        ],
        Class::NotUsed(ROCKSDB),
    ),
    (
        &[
            "popPollingSize",
            "popPollingMapSize",
            "popPollingMapExpireTimeSeconds",
            "maxPopPollingSize",
            "reviveQueueNum",
            "reviveInterval",
            "reviveMaxSlow",
            "reviveScanTime",
            "enableSkipLongAwaitingAck",
            "reviveAckWaitMs",
            "enablePopLog",
            "enablePopBufferMerge",
            "popCkStayBufferTime",
            "popCkStayBufferTimeOut",
            "popCkMaxBufferSize",
            "popCkOffsetMaxQueueSize",
            "enablePopBatchAck",
            "popLongPollingForceNotifyInterval",
            "enableNotifyBeforePopCalculateLag",
            "enableNotifyAfterPopOrderLockRelease",
            "initPopOffsetByCheckMsgInMem",
            "retrieveMessageFromPopRetryTopicV1",
            "enableRetryTopicV2",
            "popFromRetryProbability",
            "popConsumerFSServiceInit",
            "popConsumerKVServiceLog",
            "popConsumerKVServiceInit",
            "popConsumerKVServiceEnable",
            "popReviveMaxReturnSizePerRead",
            "popReviveMaxAttemptTimes",
            "popResponseReturnActualRetryTopic",
            "popInflightMessageThreshold",
            "enablePopMessageThreshold",
            "skipWhenCKRePutReachMaxTimes",
            "defaultPopShareQueueNum",
        ],
        Class::NotUsed(POP),
    ),
    (
        &[
            "metricsOtelCardinalityLimit",
            "metricsGrpcExporterTarget",
            "metricsGrpcExporterHeader",
            "metricGrpcExporterTimeOutInMills",
            "metricGrpcExporterIntervalInMills",
            "metricLoggingExporterIntervalInMills",
            "metricsLabel",
            "metricsInDelta",
            "enableRemotingMetrics",
            "enableMessageStoreMetrics",
            "enablePopMetrics",
            "enableConnectionMetrics",
            "enableTransactionMetrics",
            "enableStatsMetrics",
            "enableRequestMetrics",
            "enableLagAndDlqMetrics",
        ],
        Class::NotUsed(METRICS),
    ),
    (
        &[
            "accountStatsEnable",
            "accountStatsPrintZeroValues",
            "maxStatsIdleTimeInMinutes",
            "enableDetailStat",
            "autoDeleteUnusedStats",
            "enableScheduleMessageStats",
            "enableLmqStats",
            "transactionMetricFlushInterval",
            "commercialBaseCount",
            "commercialSizePerMsg",
            "printChannelGroups",
            "printChannelGroupsMinNum",
            "estimateAccumulation",
            "isolateLogEnable",
            "enableLogConsumeQueueRepeatedlyBuildWhenRecover",
            "timerEnableCheckMetrics",
            "timerCheckMetricsWhen",
            "timerMetricSmallThreshold",
            "timerProgressLogIntervalMs",
        ],
        Class::NotUsed(STATS),
    ),
    (
        &[
            "enableCalcFilterBitMap",
            "expectConsumerNumUseFilter",
            "maxErrorRateOfBloomFilter",
            "filterDataCleanTimeSpan",
            "filterSupportRetry",
            "enableConsumeQueueExt",
            "bitMapLengthConsumeQueueExt",
        ],
        Class::NotUsed(BLOOM),
    ),
    (
        &[
            "mappedFileSizeConsumeQueueExt",
            "mapperFileSizeBatchConsumeQueue",
            "searchBcqByCacheEnable",
        ],
        Class::NotUsed(CQ_FORMAT),
    ),
    (
        &[
            "storePathDLedgerCommitLog",
            "dLegerGroup",
            "dLegerPeers",
            "dLegerSelfId",
            "preferredLeaderId",
            "enableBatchPush",
        ],
        Class::NotUsed(DLEDGER),
    ),
    (
        &["isBrokerContainer", "isInBrokerContainer"],
        Class::NotUsed(CONTAINER),
    ),
    (
        &[
            "enableSlaveActingMaster",
            "enableRemoteEscape",
            "lockInStrictMode",
            "syncBrokerMemberGroupPeriod",
            "brokerNotActiveTimeoutMillis",
            "skipPreOnline",
        ],
        Class::NotUsed(ACTING_MASTER),
    ),
    (
        &[
            "mappedFileSizeTimerLog",
            "timerPrecisionMs",
            "timerRollWindowSlot",
            "timerFlushIntervalMs",
            "timerEnableDisruptor",
            "timerInterceptDelayLevel",
            "disappearTimeAfterStart",
            "timerStopEnqueue",
            "timerSkipUnknownError",
            "timerWarmEnable",
            "timerStopDequeue",
            "timerEnableRetryUntilSuccess",
            "timerCongestNumEachSlot",
            "enableScheduleAsyncDeliver",
            "scheduleAsyncDeliverMaxPendingLimit",
            "scheduleAsyncDeliverMaxResendNum2Blocked",
            "flushDelayOffsetInterval",
        ],
        Class::NotUsed(TIMER),
    ),
    (
        &[
            "fetchNamesrvAddrByAddressServer",
            "fetchNameSrvAddrByDnsLookup",
            "fetchNamesrvAddrInterval",
            "updateNameServerAddrPeriod",
            "fetchControllerAddrByDnsLookup",
            "syncControllerMetadataPeriod",
        ],
        Class::NotUsed(ADDR_LOOKUP),
    ),
    (
        &["enableLmq", "enableMultiDispatch", "maxLmqConsumeQueueNum"],
        Class::NotUsed(LMQ),
    ),
    (
        &[
            "forceRegister",
            "compressedRegister",
            "enableSingleTopicRegister",
            "enableSplitRegistration",
            "splitRegistrationSize",
            "enableSplitMetadata",
            "splitMetadataSize",
            "compatibleWithOldNameSrv",
            "consumerOffsetUpdateVersionStep",
            "delayOffsetUpdateVersionStep",
        ],
        Class::NotUsed(REGISTRATION),
    ),
    (
        &[
            "haSendHeartbeatInterval",
            "haHousekeepingInterval",
            "haFlowControlEnable",
            "maxHaTransferByteInSecond",
            "slaveTimeout",
            "syncMasterFlushOffsetWhenStartup",
            "maxChecksumRange",
            "syncFromLastFile",
            "maxSlaveResendLength",
            "duplicationEnable",
            "offsetCheckInSlave",
        ],
        Class::NotUsed(HA),
    ),
    (
        &[
            "maxRecoveryCommitlogFiles",
            "checkCRCOnRecover",
            "enableAcceleratedRecovery",
            "recheckReputOffsetFromCq",
            "abortFile",
        ],
        Class::NotUsed(RECOVERY),
    ),
    (
        &[
            "cleanResourceInterval",
            "deleteFileBatchMax",
            "maxBatchDeleteFilesNum",
            "deleteCommitLogFilesInterval",
            "deleteConsumeQueueFilesInterval",
            "diskFallRecorded",
            "travelCqFileNumWhenGetMessage",
            "correctLogicMinOffsetSleepInterval",
            "correctLogicMinOffsetForceInterval",
            "replicasPerDiskPartition",
            "logicalDiskSpaceCleanForciblyThreshold",
        ],
        Class::NotUsed(RETENTION),
    ),
    (
        &[
            "compactionMappedFileSize",
            "compactionCqMappedFileSize",
            "compactionThreadNum",
        ],
        Class::NotUsed(COMPACTION),
    ),
    (
        &[
            "maxTransferCountOnMessageInDisk",
            "maxTransferBytesOnMessageInDisk",
        ],
        Class::NotUsed(MOOT_DISK),
    ),
    (
        &[
            "messageIndexEnable",
            "maxHashSlotNum",
            "maxIndexNum",
            "maxMsgsNumBatch",
            "defaultQueryMaxNum",
        ],
        Class::NotUsed(
            "the IndexFile is always on with RocketMQ's geometry (5,000,000 slots, 20,000,000 \
             entries), and QUERY_MESSAGE answers the client's maxNum",
        ),
    ),
    (
        &["storePathEpochFile", "storePathBrokerIdentity"],
        Class::NotUsed(
            "controller-mode state (epochs, the broker's identity) is kept under \
             storePathRootDir, beside the store it describes",
        ),
    ),
    (
        &["brokerConfigPath", "rocketmqHome"],
        Class::NotUsed(
            "the config file is the one given with -c; changes made at run time go to \
             storePathRootDir/config/broker.properties.override",
        ),
    ),
    // Message traces: the trace topic created at start (`state::topics`), TRACE_ON in send
    // responses.
    (
        &["traceOn", "traceTopicEnable", "msgTraceTopicName"],
        Class::Applied,
    ),
    (
        &["brokerTopicEnable", "clusterTopicEnable"],
        Class::NotUsed(
            "the cluster's and the broker's own topics are always readable and writable \
             (Apache's default; clusterRT sends to them)",
        ),
    ),
    (
        &[
            "flushConsumerOffsetInterval",
            "flushConsumerOffsetHistoryInterval",
            "enableBroadcastOffsetStore",
            "broadcastOffsetExpireSecond",
            "broadcastOffsetExpireMaxSecond",
            "useServerSideResetOffset",
            "enableCleanExpiredOffset",
        ],
        Class::NotUsed(
            "consumer offsets are kept per shard and persisted by the control shard on its own \
             schedule and at shutdown; broadcast consumers keep their offsets themselves",
        ),
    ),
    (
        &[
            "notifyConsumerIdsChangedEnable",
            "realTimeNotifyConsumerChange",
            "channelExpiredTimeout",
            "subscriptionExpiredTimeout",
            "loadBalancePollNameServerInterval",
            "cleanOfflineBrokerInterval",
            "serverLoadBalancerEnable",
            "defaultMessageRequestMode",
            "useStaticSubscription",
            "enableRegisterProducer",
            "enableCreateSysGroup",
        ],
        Class::NotUsed(
            "client management here follows Apache's defaults with fixed timeouts: consumers \
             are told of group changes, silent clients expire after 120 s, and queues are \
             assigned by the clients (or by POP)",
        ),
    ),
    (
        &[
            "disableConsumeIfConsumerReadSlowly",
            "consumerFallbehindThreshold",
            "rejectPullConsumerEnable",
            "maxFilterMessageSize",
            "maxConsumeQueueScan",
            "pullBatchMaxMessageCount",
        ],
        Class::NotUsed(
            "pulls are bounded by maxTransferCountOnMessageInMemory and \
             maxTransferBytesOnMessageInMemory; slow consumers are not cut off",
        ),
    ),
    (
        &[
            "transactionOpMsgMaxSize",
            "transactionOpBatchInterval",
            "checkTransactionMessageEnable",
        ],
        Class::NotUsed(
            "transaction state is kept by each shard and checked back every \
             transactionCheckInterval; there is no op-message batching to tune",
        ),
    ),
    (
        &[
            "highSpeedMode",
            "regionId",
            "startAcceptSendRequestTimeStamp",
            "validateSystemTopicWhenUpdateTopic",
            "clearRetryTopicWhenDeleteTopic",
            "maxTopicLength",
            "autoMessageVersionOnTopicLen",
            "enabledAppendPropCRC",
            "filterServerNums",
        ],
        Class::NotUsed(
            "no behaviour to switch here: topic names are validated as Apache's defaults do \
             (valid characters, no system-reserved names on update), records are written in \
             the message version their topic length needs without a properties CRC (clients \
             do not check one), and filter servers and region tags do not exist",
        ),
    ),
];

/// Keys the table holds that are not Apache 5.x fields: ours, or spellings of older Apache releases.
pub const NOT_APACHE_5: &[&str] = &[
    "aclFile",
    "fastListenPort",
    "listenAddress",
    "logLevel",
    "mapedFileSizeCommitLog",
    "mapedFileSizeConsumeQueue",
    "metricsPort",
    "metricsPromUnitSuffix",
    "readBlockCacheBytes",
    "readCacheBytes",
    "serverFrameTimeoutSeconds",
    "serverMaxConnectionsPerShard",
    "serverMaxPendingResponseBytes",
    "serverWriteStallTimeoutSeconds",
    "haMasterProtocol",
    "shardCount",
    "shardRouting",
    "spinBeforeParkMicros",
    // Apache's per-part store paths that 5.x derives from storePathRootDir (no fields there).
    "storePathConsumeQueue",
    "storePathIndex",
    "storeCheckpoint",
    // Apache 4.x keys still found in old broker.properties files.
    "abortFile",
    "checkTransactionMessageEnable",
    "filterServerNums",
];

/// A `tls.` key that is not one of Apache's: a misspelt TLS setting must not start a broker
/// without the TLS its author asked for.
const TLS_UNKNOWN: Refusal = Refusal {
    when: When::NotEmpty,
    why: "not one of Apache's TLS keys (tls.server.mode, tls.enable, tls.test.mode.enable, \
          tls.server.*, tls.client.*, tls.config.file); fix or remove it",
};

/// The class of `key`, if it is a key of the table or a `tls.*` key.
pub fn class_of(key: &str) -> Option<&'static Class> {
    const TLS_UNKNOWN_CLASS: Class = Class::Refused(TLS_UNKNOWN);
    match apache_keys::class_in(TABLE, key) {
        None if key.starts_with("tls.") => Some(&TLS_UNKNOWN_CLASS),
        class => class,
    }
}

/// What `set` answers for a key it does not read: not used (with the reason), refused (an error
/// naming the key and what to do), or unknown (probably a typo).
pub fn unapplied(key: &str, value: &str) -> Result<Option<ConfigIssue>, LoadError> {
    match class_of(key) {
        Some(Class::NotUsed(reason)) => Ok(Some(ConfigIssue::Moot {
            key: key.to_owned(),
            reason: (*reason).to_owned(),
        })),
        Some(Class::Refused(r)) if r.when.refuses(value) => Err(LoadError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            reason: r.why.to_owned(),
        }),
        // An allowed value (e.g. `authenticationEnabled = false`) is what this broker does.
        Some(Class::Refused(_)) => Ok(None),
        // An applied key `set` did not read is a bug the tests catch; say so rather than guess.
        Some(Class::Applied) | None => Ok(Some(ConfigIssue::Unknown(key.to_owned()))),
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::config::BrokerConfig;

    #[test]
    fn every_apache_key_is_classified_and_every_classified_key_is_known() {
        let apache = apache_keys::listed_keys(&[
            include_str!("apache_keys/BrokerConfig.txt"),
            include_str!("apache_keys/MessageStoreConfig.txt"),
            include_str!("apache_keys/NettyServerConfig.txt"),
            include_str!("apache_keys/NettyClientConfig.txt"),
            include_str!("apache_keys/AuthConfig.txt"),
        ]);
        // TLS keys are JVM system properties in Apache, not config fields.
        let ours = [
            NOT_APACHE_5,
            remoting::tls::SERVER_KEYS,
            &[remoting::tls::ENABLE_KEY],
            remoting::tls::CLIENT_KEYS,
            remoting::tls::PASSWORD_KEYS,
        ]
        .concat();
        if let Err(e) = apache_keys::check_coverage(TABLE, class_of, &apache, &ours) {
            panic!("{e}");
        }
    }

    #[test]
    fn applied_means_read_by_set_and_the_rest_is_not() {
        let defaults = BrokerConfig::default().to_pairs();
        for (keys, class) in TABLE {
            for key in keys.iter().copied() {
                let mut cfg = BrokerConfig::default();
                match class {
                    Class::Applied => {
                        let value = defaults
                            .iter()
                            .find(|(k, _)| *k == key)
                            .map_or("false".to_owned(), |(_, v)| v.clone());
                        let read = match cfg.set(key, &value) {
                            Ok(None) => true,
                            // A value `set` parsed and rejected: the key is read.
                            Err(crate::config::LoadError::BadValue { .. }) => true,
                            Ok(Some(ConfigIssue::NotSupported(_))) => {
                                super::super::store_paths::part(key).is_some()
                            }
                            Ok(Some(_)) | Err(_) => false,
                        };
                        assert!(
                            read,
                            "{key} is classified applied but `set` does not read it"
                        );
                    }
                    Class::NotUsed(_) => assert!(
                        matches!(cfg.set(key, "false"), Ok(Some(ConfigIssue::Moot { .. }))),
                        "{key} is classified not used but `set` reads it"
                    ),
                    Class::Refused(r) => {
                        let asking = match r.when {
                            When::NotOff | When::NotEmpty | When::NotDefault(_) => "true",
                            When::Above(_) => "99",
                        };
                        let err = cfg.set(key, asking).unwrap_err().to_string();
                        assert!(err.contains(key) && err.contains(r.why), "{key}: {err}");
                    }
                }
            }
        }
        for (key, _) in &defaults {
            assert_eq!(
                class_of(key),
                Some(&Class::Applied),
                "{key} is read but not classified applied"
            );
        }
    }

    #[test]
    fn not_used_and_refused_keys_are_told_apart_from_typos() {
        let mut cfg = BrokerConfig::default();
        let issue = cfg.set("serverWorkerThreads", "16").unwrap().unwrap();
        assert!(matches!(issue, ConfigIssue::Moot { .. }), "{issue:?}");
        assert!(issue.to_string().contains("Netty"), "{issue}");
        let typo = cfg.set("serverWorkerThread", "16").unwrap().unwrap();
        assert_eq!(
            typo.to_string(),
            "unknown config key `serverWorkerThread` ignored"
        );
        // ACL 2.0 keys are read; a provider this broker does not have is refused with the reason.
        assert_eq!(cfg.set("authenticationEnabled", "true").unwrap(), None);
        let err = cfg
            .set("authorizationProvider", "com.example.Mine")
            .unwrap_err()
            .to_string();
        assert!(err.contains("authorizationProvider"), "{err}");
        assert!(cfg
            .set("initAuthenticationUser", "{\"username\":\"u\"}")
            .is_err());
        assert!(cfg.set("authConfigPath", "/etc/auth").is_err());
        // Off is what this broker does: accepted, and said so.
        assert_eq!(cfg.set("authenticationEnabled", "false").unwrap(), None);
        assert_eq!(cfg.set("tls.server.mode", "enforcing").unwrap(), None);
        assert_eq!(cfg.set("tls.server.mode", "disabled").unwrap(), None);
        let typo = cfg
            .set("tls.server.mod", "enforcing")
            .unwrap_err()
            .to_string();
        assert!(
            typo.contains("tls.server.mod") && typo.contains("fix or remove"),
            "{typo}"
        );
        assert!(cfg.set("inSyncReplicas", "3").is_err());
        assert!(cfg.set("inSyncReplicas", "2").is_ok());
        assert_eq!(cfg.set("useTLS", "true").unwrap(), None);
        assert!(cfg.tls.client_enabled());
    }

    #[test]
    fn no_security_or_durability_key_is_warned_and_ignored() {
        let auth = apache_keys::listed_keys(&[include_str!("apache_keys/AuthConfig.txt")]);
        let named = [
            "aclEnable",
            "totalReplicas",
            "inSyncReplicas",
            "enableAutoInSyncReplicas",
            "slaveReadEnable",
            "brokerPermission",
            "enablePropertyFilter",
            "tls.server.mode",
            "tls.enable",
        ];
        for key in auth.into_iter().chain(named) {
            match class_of(key) {
                Some(Class::Applied | Class::Refused(_)) => {}
                other => panic!("{key} is {other:?}: apply it or refuse it, never warn and ignore"),
            }
        }
    }

    #[test]
    fn docs_configuration_md_lists_this_table() {
        let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md");
        apache_keys::check_doc(&doc, "broker", &apache_keys::render(TABLE)).unwrap();
    }
}
