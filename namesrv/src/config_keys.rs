//! Every Apache RocketMQ 5.x name-server key (NamesrvConfig and the Netty configs that
//! `mqnamesrv -c` reads, listed in `apache_keys/`) and what this name server does with it.

use apache_keys::{Class, Group, Refusal, When};

const NETTY: &str = "Netty/epoll tuning: connections are glommio (io_uring) sockets, bounded by \
     serverMaxConnectionsPerShard, serverMaxPendingResponseBytes, \
     serverWriteStallTimeoutSeconds and serverFrameTimeoutSeconds";
const NETTY_CLIENT: &str = "tuning of Netty's client: the name server calls out only to brokers' \
     own addresses with fixed timeouts";
const THREADS: &str = "a JVM thread pool or its queue: requests are served on one glommio \
     executor, each at once";

/// The table: every Apache key in one row.
pub const TABLE: &[Group] = &[
    (
        &[
            "listenPort",
            "bindAddress",
            "kvConfigPath",
            "configStorePath",
            "orderMessageEnable",
            "enableControllerInNamesrv",
            "scanNotActiveBrokerInterval",
            "serverChannelMaxIdleTimeSeconds",
            // Ours, with the broker's names.
            "serverMaxConnectionsPerShard",
            "serverFrameTimeoutSeconds",
            "serverWriteStallTimeoutSeconds",
            "serverMaxPendingResponseBytes",
        ],
        Class::Applied,
    ),
    (
        &["enableAllTopicList", "enableTopicList"],
        Class::Refused(Refusal {
            when: When::NotDefault("true"),
            why: "this name server answers topic lists to every client; hiding them is not \
                  built; remove the key",
        }),
    ),
    (
        &["configBlackList"],
        Class::Refused(Refusal {
            when: When::NotDefault("configBlackList;configStorePath;kvConfigPath"),
            why: "UPDATE_NAMESRV_CONFIG here changes only the keys it knows and takes no list of \
                  further keys to lock; remove the key",
        }),
    ),
    (
        &["useTLS"],
        Class::Refused(Refusal {
            when: When::NotOff,
            why: "the name server speaks plain TCP only (TLS is not built); remove the key, or \
                  encrypt the links outside it (a VPN or a TLS tunnel)",
        }),
    ),
    (
        &["socksProxyConfig"],
        Class::Refused(Refusal {
            when: When::NotDefault("{}"),
            why: "the name server never connects through a SOCKS proxy; remove the key",
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
        &[
            "clientRequestThreadPoolNums",
            "defaultThreadPoolNums",
            "clientRequestThreadPoolQueueCapacity",
            "defaultThreadPoolQueueCapacity",
            "unRegisterBrokerQueueCapacity",
        ],
        Class::NotUsed(THREADS),
    ),
    (
        &["rocketmqHome", "productEnvName", "clusterTest"],
        Class::NotUsed(
            "no behaviour hangs on it here: files are placed by kvConfigPath and \
             configStorePath, and there is no test-cluster or environment routing",
        ),
    ),
    (
        &["returnOrderTopicConfigToBroker"],
        Class::NotUsed(
            "brokers are never sent the ORDER_TOPIC_CONFIG entries at registration; routes \
             carry them when orderMessageEnable is on",
        ),
    ),
    (
        &["supportActingMaster", "notifyMinBrokerIdChanged"],
        Class::NotUsed(
            "slave-acting-master mode is not built in the brokers, so there is no acting \
             master to route to or to tell about; failover is controller mode",
        ),
    ),
    (
        &["needWaitForService", "waitSecondsForService"],
        Class::NotUsed(
            "routes are served from start; brokers register within their first \
             registerNameServerPeriod and clients retry a missing route",
        ),
    ),
    (
        &["deleteTopicWithBrokerRegistration"],
        Class::NotUsed(
            "a topic leaves the routes when its last broker stops registering it or expires, \
             or on DELETE_TOPIC_IN_NAMESRV",
        ),
    ),
];

/// Keys the table holds that are not Apache 5.x name-server fields: ours.
pub const NOT_APACHE_5: &[&str] = &[
    "serverMaxConnectionsPerShard",
    "serverFrameTimeoutSeconds",
    "serverWriteStallTimeoutSeconds",
    "serverMaxPendingResponseBytes",
];

/// The class of `key`, if it is in the table.
pub fn class_of(key: &str) -> Option<&'static Class> {
    apache_keys::class_in(TABLE, key)
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::config_file::FileSettings;

    #[test]
    fn every_apache_key_is_classified_and_every_classified_key_is_known() {
        let apache = apache_keys::listed_keys(&[
            include_str!("apache_keys/NamesrvConfig.txt"),
            include_str!("apache_keys/NettyServerConfig.txt"),
            include_str!("apache_keys/NettyClientConfig.txt"),
        ]);
        if let Err(e) = apache_keys::check_coverage(TABLE, class_of, &apache, NOT_APACHE_5) {
            panic!("{e}");
        }
    }

    #[test]
    fn applied_means_read_by_the_file_reader_and_the_rest_is_not() {
        for (keys, class) in TABLE {
            for key in keys.iter().copied() {
                let mut file = FileSettings::default();
                let read = file.set(key, "1").map_or(true, |read| read);
                assert_eq!(read, *class == Class::Applied, "{key}: {class:?}");
            }
        }
    }

    #[test]
    fn docs_configuration_md_lists_this_table() {
        let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md");
        apache_keys::check_doc(&doc, "name server", &apache_keys::render(TABLE)).unwrap();
    }
}
