//! The command line: RocketMQ's mqadmin subcommand names and short flags (`-n` name server, `-c`
//! cluster, `-b` broker address, `-t` topic, `-g` group), plus `--json` for scripts.

use clap::{Parser, Subcommand};

use crate::shared_args::{Namesrv, Target};

#[derive(Debug, Parser)]
#[command(
    name = "mqadmin",
    version,
    about = "Admin tool for RocketMQ-compatible clusters"
)]
pub struct Cli {
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// Request timeout in milliseconds.
    #[arg(long, global = true, default_value_t = 5000)]
    pub timeout_ms: u64,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or update a topic on a broker or on every master of a cluster.
    #[command(name = "updateTopic")]
    UpdateTopic {
        #[command(flatten)]
        ns: Namesrv,
        #[command(flatten)]
        target: Target,
        #[arg(short = 't', long = "topic")]
        topic: String,
        /// Read queue count
        #[arg(short = 'r', long = "readQueueNums", default_value_t = 8)]
        read_queues: i32,
        /// Write queue count
        #[arg(short = 'w', long = "writeQueueNums", default_value_t = 8)]
        write_queues: i32,
        /// Permission: 2 write, 4 read, 6 read+write
        #[arg(short = 'p', long = "perm", default_value_t = 6)]
        perm: i32,
        /// Ordered topic
        #[arg(short = 'o', long = "order", default_value_t = false, action = clap::ArgAction::Set)]
        order: bool,
        /// Attribute changes, RocketMQ 5's format: +message.type=FIFO,+cleanup.policy=COMPACTION,-reserve.time
        #[arg(short = 'a', long = "attributes", allow_hyphen_values = true)]
        attributes: Option<String>,
    },
    /// Delete a topic from every broker of a cluster and from the name servers.
    #[command(name = "deleteTopic")]
    DeleteTopic {
        #[command(flatten)]
        ns: Namesrv,
        #[arg(short = 'c', long = "clusterName")]
        cluster: String,
        #[arg(short = 't', long = "topic")]
        topic: String,
    },
    /// Every topic the name servers know.
    #[command(name = "topicList")]
    TopicList {
        #[command(flatten)]
        ns: Namesrv,
    },
    /// A topic's route: broker groups, addresses and queue counts.
    #[command(name = "topicRoute")]
    TopicRoute {
        #[command(flatten)]
        ns: Namesrv,
        #[arg(short = 't', long = "topic")]
        topic: String,
    },
    /// Min and max offset and last store time of every queue of a topic (GET_TOPIC_STATS_INFO).
    #[command(name = "topicStatus")]
    TopicStatus {
        #[command(flatten)]
        ns: Namesrv,
        #[arg(short = 't', long = "topic")]
        topic: String,
    },
    /// Every broker of every cluster, with its message totals.
    #[command(name = "clusterList")]
    ClusterList {
        #[command(flatten)]
        ns: Namesrv,
        /// Only this cluster
        #[arg(short = 'c', long = "clusterName")]
        cluster: Option<String>,
    },
    /// A broker's runtime figures (GET_BROKER_RUNTIME_INFO).
    #[command(name = "brokerStatus")]
    BrokerStatus {
        #[command(flatten)]
        ns: Namesrv,
        #[command(flatten)]
        target: Target,
    },
    /// Per queue: broker offset, consumer offset and lag of a consumer group (GET_CONSUME_STATS);
    /// without -g, every group with its online clients and total lag.
    #[command(name = "consumerProgress")]
    ConsumerProgress {
        #[command(flatten)]
        ns: Namesrv,
        #[arg(short = 'g', long = "groupName")]
        group: Option<String>,
        /// Only this topic
        #[arg(short = 't', long = "topicName")]
        topic: Option<String>,
        /// Show the IP of the client holding each queue (asked of the clients)
        #[arg(short = 's', long = "showClientIP", default_value_t = false, action = clap::ArgAction::Set)]
        show_client_ip: bool,
    },
    /// A message by its id: an offsetMsgId, or a client msgId (UNIQ_KEY) with -t.
    #[command(name = "queryMsgById")]
    QueryMsgById {
        #[command(flatten)]
        ns: Namesrv,
        /// Message id(s), comma separated
        #[arg(short = 'i', long = "msgId")]
        msg_id: String,
        #[arg(short = 't', long = "topic")]
        topic: Option<String>,
    },
    /// Messages of a topic whose KEYS contain a key.
    #[command(name = "queryMsgByKey")]
    QueryMsgByKey {
        #[command(flatten)]
        ns: Namesrv,
        #[arg(short = 't', long = "topic")]
        topic: String,
        #[arg(short = 'k', long = "msgKey")]
        key: String,
        /// Most messages to list
        #[arg(short = 'm', long = "maxNum", default_value_t = 32)]
        max: i32,
    },
    /// The message at a queue offset.
    #[command(name = "queryMsgByOffset")]
    QueryMsgByOffset {
        #[command(flatten)]
        ns: Namesrv,
        #[arg(short = 't', long = "topic")]
        topic: String,
        /// Broker name (the group, e.g. broker-a)
        #[arg(short = 'b', long = "brokerName")]
        broker_name: String,
        #[arg(short = 'i', long = "queueId")]
        queue_id: i32,
        #[arg(short = 'o', long = "offset")]
        offset: i64,
    },
    /// Move a group's committed offsets on a topic to the first message stored at or after a time;
    /// the brokers tell the group's online consumers (RESET_CONSUMER_CLIENT_OFFSET).
    #[command(name = "resetOffsetByTime")]
    ResetOffsetByTime {
        #[command(flatten)]
        ns: Namesrv,
        #[arg(short = 'g', long = "group")]
        group: String,
        #[arg(short = 't', long = "topic")]
        topic: String,
        /// Epoch milliseconds, `now`, or yyyy-MM-dd#HH:mm:ss:SSS (UTC)
        #[arg(short = 's', long = "timestamp")]
        timestamp: String,
        /// Also move offsets forward (false: only back, never past a queue's committed offset)
        #[arg(short = 'f', long = "force", default_value_t = true, action = clap::ArgAction::Set)]
        force: bool,
        /// The group's clients are C++ clients (the brokers push them the list form of the offsets)
        #[arg(short = 'c', long = "cplus", default_value_t = false)]
        cplus: bool,
        /// Only one queue: the broker address (with -q)
        #[arg(short = 'b', long = "broker", requires = "queue")]
        broker: Option<String>,
        /// Only one queue: its queue id (with -b)
        #[arg(short = 'q', long = "queue", requires = "broker")]
        queue: Option<i32>,
        /// Reset that queue to this offset instead of the time's (with -b and -q)
        #[arg(short = 'o', long = "offset", requires = "queue")]
        offset: Option<i64>,
    },
    /// Create or update a consumer group's settings.
    #[command(name = "updateSubGroup")]
    UpdateSubGroup {
        #[command(flatten)]
        ns: Namesrv,
        #[command(flatten)]
        target: Target,
        #[arg(short = 'g', long = "groupName")]
        group: String,
        #[arg(short = 's', long = "consumeEnable", default_value_t = true, action = clap::ArgAction::Set)]
        consume_enable: bool,
        #[arg(short = 'm', long = "consumeFromMinEnable", default_value_t = true, action = clap::ArgAction::Set)]
        consume_from_min_enable: bool,
        #[arg(short = 'd', long = "consumeBroadcastEnable", default_value_t = true, action = clap::ArgAction::Set)]
        consume_broadcast_enable: bool,
        /// RocketMQ 5: FIFO topics are consumed in order per message group (POP, the gRPC proxy).
        #[arg(short = 'o', long = "consumeMessageOrderly", default_value_t = false, action = clap::ArgAction::Set)]
        consume_message_orderly: bool,
        #[arg(short = 'q', long = "retryQueueNums", default_value_t = 1)]
        retry_queue_nums: i32,
        #[arg(short = 'r', long = "retryMaxTimes", default_value_t = 16)]
        retry_max_times: i32,
        #[arg(short = 'i', long = "brokerId", default_value_t = 0)]
        broker_id: i64,
        #[arg(
            short = 'w',
            long = "whichBrokerWhenConsumeSlowly",
            default_value_t = 1
        )]
        which_broker_when_consume_slowly: i64,
        #[arg(short = 'a', long = "notifyConsumerIdsChanged", default_value_t = true, action = clap::ArgAction::Set)]
        notify_consumer_ids_changed: bool,
    },
    #[command(name = "queryMsgByUniqueKey")]
    /// Messages of a topic by their client msgId (UNIQ_KEY), found in the index.
    QueryMsgByUniqueKey(crate::message_cmds::QueryMsgByUniqueKeyArgs),
    #[command(flatten)]
    BrokerConfig(crate::broker_config_cmds::BrokerConfigCommand),
    #[command(flatten)]
    Namesrv(crate::namesrv_cmds::NamesrvCommand),
    #[command(flatten)]
    Controller(crate::controller_cmds::ControllerCommand),
    #[command(flatten)]
    Group(crate::group_cmds::GroupCommand),
    #[command(flatten)]
    Auth(crate::auth_cmds::AuthCommand),
    #[command(flatten)]
    BrokerStats(crate::broker_stats_cmds::BrokerStatsCommand),
    #[command(flatten)]
    SendConsume(crate::send_consume_cmds::SendConsumeCommand),
    #[command(flatten)]
    Trace(crate::trace_cmds::TraceCommand),
    #[command(flatten)]
    Ha(crate::ha_cmds::HaCommand),
    #[command(flatten)]
    Maintenance(crate::maintenance_cmds::MaintenanceCommand),
    #[command(flatten)]
    Ops(crate::ops_cmds::OpsCommand),
}
