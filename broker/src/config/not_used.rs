//! RocketMQ keys this broker accepts in a config file but does not act on, and the keys whose
//! feature is absent by design, each with the reason reported at start.

/// Valid in a broker.properties file, no effect here (the design makes them moot, or the feature is
/// not built yet); reported as "does not use" at start.
pub const ACCEPTED_NOT_USED: &[&str] = &[
    "abortFile",
    "flushConsumeQueueLeastPages",
    "flushCommitLogThoroughInterval",
    "flushConsumeQueueThoroughInterval",
    "flushIntervalConsumeQueue",
    "destroyMapedFileIntervalForcibly",
    "redeleteHangedFileInterval",
    "checkTransactionMessageEnable",
    "sendMessageThreadPoolNums",
    "pullMessageThreadPoolNums",
    "queryMessageThreadPoolNums",
    "adminBrokerThreadPoolNums",
    "clientManageThreadPoolNums",
    "consumerManageThreadPoolNums",
    "useReentrantLockWhenPutMessage",
    "transientStorePoolEnable",
    "transientStorePoolSize",
    "warmMapedFileEnable",
    "offsetCheckInSlave",
    "fetchNamesrvAddrByAddressServer",
    "rocketmqHome",
    "serverWorkerThreads",
    "serverSelectorThreads",
    "serverCallbackExecutorThreads",
    "serverSocketSndBufSize",
    "serverSocketRcvBufSize",
    "serverPooledByteBufAllocatorEnable",
    "useEpollNativeSelector",
    "brokerTopicEnable",
    "clusterTopicEnable",
    "traceTopicEnable",
    "msgTraceTopicName",
    "filterServerNums",
    "osPageCacheBusyTimeOutMills",
    "accessMessageInMemoryMaxRatio",
    "messageIndexEnable",
    "maxHashSlotNum",
    "maxIndexNum",
    "deleteCommitLogFilesInterval",
    "deleteConsumeQueueFilesInterval",
    "sendThreadPoolQueueCapacity",
    "pullThreadPoolQueueCapacity",
    "forceRegister",
    "compressedRegister",
];

/// Keys whose mechanism this broker does not have, with why it is moot.
pub const MOOT: &[(&str, &str)] = &[
    (
        "waitTimeMillsInSendQueue",
        "sends are not queued for a thread pool here: each runs at once on the shard that \
         received it, and a store with too much unflushed data answers SYSTEM_BUSY at once",
    ),
    ("maxTransferCountOnMessageInDisk", IN_DISK),
    ("maxTransferBytesOnMessageInDisk", IN_DISK),
];

const IN_DISK: &str = "there is no page cache to fall out of: every pull reads through the \
     block cache, and the maxTransfer...OnMessageInMemory limits apply to all of them";

/// The reason a key is moot, if it is one of [`MOOT`].
pub fn moot_reason(key: &str) -> Option<&'static str> {
    MOOT.iter().find(|(k, _)| *k == key).map(|(_, why)| *why)
}
