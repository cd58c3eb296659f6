//! Every Apache RocketMQ 5.x controller key (ControllerConfig, JraftConfig and the Netty configs
//! that `mqcontroller -c` reads, listed in `apache_keys/`) and what this controller does with it.

use apache_keys::{Class, Group, Refusal, When};

const NETTY: &str = "Netty/epoll tuning: connections are glommio (io_uring) sockets, bounded by \
     serverMaxConnectionsPerShard, serverMaxPendingResponseBytes, \
     serverWriteStallTimeoutSeconds and serverFrameTimeoutSeconds";
const NETTY_CLIENT: &str = "tuning of Netty's client: the controller's own calls (role-change \
     notices to brokers, raft messages to peers) use fixed timeouts";
const THREADS: &str = "a JVM thread pool or its queue: requests are served on one glommio \
     executor and raft runs on its own thread";
const METRICS: &str = "an OpenTelemetry exporter setting: the controller exports no metrics; \
     GET_METADATA_INFO and the brokers' metrics show its state";
const JRAFT_PEERS: &str = "the raft group is openraft's, described by controllerDLegerGroup, \
     controllerDLegerPeers and controllerDLegerSelfId; set those instead";

/// The table: every Apache key in one row.
pub const TABLE: &[Group] = &[
    // TLS on the port (Apache's tls.* JVM system properties, config keys here).
    (remoting::tls::SERVER_KEYS, Class::Applied),
    (
        &[remoting::tls::ENABLE_KEY],
        Class::Refused(Refusal {
            when: When::NotOff,
            why: "the controller's own outgoing connections are plaintext (tls.enable is for the \
                  broker and clients); remove the key",
        }),
    ),
    (
        remoting::tls::CLIENT_KEYS,
        Class::NotUsed("client-side TLS settings: the controller makes no TLS connections"),
    ),
    (
        remoting::tls::PASSWORD_KEYS,
        Class::Refused(Refusal {
            when: When::NotEmpty,
            why: remoting::tls::KEY_PASSWORD_REFUSED,
        }),
    ),
    (
        &[
            "controllerDLegerGroup",
            "controllerDLegerPeers",
            "controllerDLegerSelfId",
            "controllerStorePath",
            "scanNotActiveBrokerInterval",
            "enableElectUncleanMaster",
            "notifyBrokerRoleChanged",
            "serverChannelMaxIdleTimeSeconds",
            // Ours, and the broker's key for the heartbeat timeout.
            "controllerHeartBeatTimeoutMills",
            "raftSnapshotLogs",
            "serverMaxConnectionsPerShard",
            "serverFrameTimeoutSeconds",
            "serverWriteStallTimeoutSeconds",
            "serverMaxPendingResponseBytes",
        ],
        Class::Applied,
    ),
    (
        &[
            "jRaftGroupId",
            "jRaftServerId",
            "jRaftInitConf",
            "jRaftControllerRPCAddr",
        ],
        Class::Refused(Refusal {
            when: When::NotEmpty,
            why: JRAFT_PEERS,
        }),
    ),
    (
        &["configBlackList"],
        Class::Refused(Refusal {
            when: When::NotDefault("configBlackList;configStorePath"),
            why: "UPDATE_CONTROLLER_CONFIG here refuses the raft group, its storage and the \
                  connection limits and takes no list of further keys to lock; remove the key",
        }),
    ),
    (
        &[
            "serverWorkerThreads",
            "serverCallbackExecutorThreads",
            "serverSelectorThreads",
            "serverOnewaySemaphoreValue",
            "serverAsyncSemaphoreValue",
            "serverSocketSndBufSize",
            "serverSocketRcvBufSize",
            "writeBufferHighWaterMark",
            "writeBufferLowWaterMark",
            "serverSocketBacklog",
            "serverNettyWorkerGroupEnable",
            "serverPooledByteBufAllocatorEnable",
            "enableShutdownGracefully",
            "shutdownWaitTimeSeconds",
            "useEpollNativeSelector",
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
        ],
        Class::NotUsed(NETTY_CLIENT),
    ),
    (
        &["useTLS"],
        Class::Refused(Refusal {
            when: When::NotOff,
            why: "the controller's own connections (raft messages to its peers, notices to \
                  brokers) are plain TCP; remove the key (TLS on the controller's port is \
                  tls.server.mode, permissive by default)",
        }),
    ),
    (
        &["socksProxyConfig"],
        Class::Refused(Refusal {
            when: When::NotDefault("{}"),
            why: "the controller connects to brokers and peers directly, never through a SOCKS \
                  proxy; remove the key",
        }),
    ),
    (
        &["listenPort", "bindAddress"],
        Class::NotUsed(
            "the controller serves brokers, admin tools and its peers on its own \
             controllerDLegerPeers address; a listenPort other than that address's port is \
             refused",
        ),
    ),
    (
        &[
            "controllerThreadPoolNums",
            "controllerRequestThreadPoolQueueCapacity",
        ],
        Class::NotUsed(THREADS),
    ),
    (
        &[
            "metricsExporterType",
            "metricsGrpcExporterTarget",
            "metricsGrpcExporterHeader",
            "metricGrpcExporterTimeOutInMills",
            "metricGrpcExporterIntervalInMills",
            "metricLoggingExporterIntervalInMills",
            "metricsPromExporterPort",
            "metricsPromExporterHost",
            "metricsLabel",
            "metricsInDelta",
        ],
        Class::NotUsed(METRICS),
    ),
    (
        &[
            "controllerType",
            "jraftConfig",
            "mappedFileSize",
            "jRaftElectionTimeoutMs",
            "jRaftScanWaitTimeoutMs",
            "jRaftSnapshotIntervalSecs",
        ],
        Class::NotUsed(
            "the consensus library is always openraft, with its own log files under \
             controllerStorePath, election timeouts and snapshots every raftSnapshotLogs entries",
        ),
    ),
    (
        &["isProcessReadEvent"],
        Class::NotUsed(
            "reads are always linearizable here: the leader confirms its leadership with a \
             quorum before it answers",
        ),
    ),
    (
        &["electMasterMaxRetryCount", "scanInactiveMasterInterval"],
        Class::NotUsed(
            "elections run on every scanNotActiveBrokerInterval tick until a master is chosen, \
             so there is no retry count or separate master scan to set",
        ),
    ),
    (
        &["rocketmqHome", "configStorePath"],
        Class::NotUsed(
            "the config is the file given with -c; changes made at run time \
             (UPDATE_CONTROLLER_CONFIG) last until the controller restarts",
        ),
    ),
];

/// Keys the table holds that are not Apache 5.x controller fields: ours, or the broker's.
pub const NOT_APACHE_5: &[&str] = &[
    "controllerHeartBeatTimeoutMills",
    "raftSnapshotLogs",
    "serverMaxConnectionsPerShard",
    "serverFrameTimeoutSeconds",
    "serverWriteStallTimeoutSeconds",
    "serverMaxPendingResponseBytes",
];

/// A `tls.` key that is not one of Apache's: refused, so a misspelt TLS key cannot leave TLS off.
const TLS_UNKNOWN: Class = Class::Refused(Refusal {
    when: When::NotEmpty,
    why: "not one of Apache's TLS keys (tls.server.mode, tls.test.mode.enable, tls.server.*, \
          tls.client.*, tls.config.file); fix or remove it",
});

/// The class of `key`, if it is in the table or a `tls.` key.
pub fn class_of(key: &str) -> Option<&'static Class> {
    match apache_keys::class_in(TABLE, key) {
        None if key.starts_with("tls.") => Some(&TLS_UNKNOWN),
        class => class,
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::ControllerConfig;

    #[test]
    fn every_apache_key_is_classified_and_every_classified_key_is_known() {
        let apache = apache_keys::listed_keys(&[
            include_str!("apache_keys/ControllerConfig.txt"),
            include_str!("apache_keys/JraftConfig.txt"),
            include_str!("apache_keys/NettyServerConfig.txt"),
            include_str!("apache_keys/NettyClientConfig.txt"),
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
        let defaults = ControllerConfig::default().to_properties();
        for (keys, class) in TABLE {
            for key in keys.iter().copied() {
                let mut config = ControllerConfig::default();
                let known = match config.set(key, "1") {
                    Ok(()) => true,
                    Err(e) => !e.starts_with("unknown controller setting"),
                };
                assert_eq!(known, *class == Class::Applied, "{key}: {class:?}");
            }
        }
        for line in defaults.lines() {
            let key = line.split('=').next().unwrap_or_default();
            assert_eq!(class_of(key), Some(&Class::Applied), "{key}");
        }
    }

    #[test]
    fn docs_configuration_md_lists_this_table() {
        let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md");
        apache_keys::check_doc(&doc, "controller", &apache_keys::render(TABLE)).unwrap();
    }
}
