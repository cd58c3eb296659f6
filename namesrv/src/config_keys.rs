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
    // TLS on the port (Apache's tls.* JVM system properties, config keys here).
    (remoting::tls::SERVER_KEYS, Class::Applied),
    (
        &[remoting::tls::ENABLE_KEY],
        Class::Refused(Refusal {
            when: When::NotOff,
            why: "the name server's own outgoing connections are plaintext (tls.enable is for the \
                  broker and clients); remove the key",
        }),
    ),
    (
        remoting::tls::CLIENT_KEYS,
        Class::NotUsed("client-side TLS settings: the name server makes no TLS connections"),
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
            why: "the name server opens no remoting connections of its own for this to \
                  secure; remove the key (TLS on its port is tls.server.mode, permissive by \
                  default)",
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
    use crate::config_file::FileSettings;

    #[test]
    fn every_apache_key_is_classified_and_every_classified_key_is_known() {
        let apache = apache_keys::listed_keys(&[
            include_str!("apache_keys/NamesrvConfig.txt"),
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
