//! `mqadmin`: RocketMQ's admin commands (topics, clusters, consumer groups and clients, broker and
//! name-server config, statistics, sending and reading messages) for RocketMQ-compatible clusters,
//! built on the `client` crate. Tables (or RocketMQ's lines) by default, JSON with `--json`.
//! Newer commands live in family modules (`*_cmds`), each with its own subcommand enum and `run`.

pub mod admin;
pub mod auth_cmds;
pub mod broker_names;
pub mod broker_config_cmds;
pub mod broker_stats_cmds;
pub mod check_cmds;
pub mod cli;
pub mod cluster_cmds;
pub mod consumer_cmds;
pub mod credentials;
pub mod controller_clean_cmds;
pub mod controller_cmds;
pub mod export_cmds;
pub mod group_cmds;
pub mod group_ops_cmds;
pub mod ha_cmds;
pub mod maintenance_cmds;
pub mod message_cmds;
pub mod namesrv_cmds;
pub mod ops_cmds;
pub mod send_consume_cmds;
pub mod shared_args;
pub mod stats_cmds;
pub mod table;
pub mod tls;
pub mod topic_cmds;
pub mod topic_ops_cmds;
pub mod trace_cmds;
pub mod version;

use std::time::Duration;

use client::ClientError;

use crate::admin::Admin;
use crate::cli::Command;
use crate::table::Report;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Runs one command (inside a glommio executor).
pub async fn run(command: Command, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        Command::UpdateTopic {
            ns,
            target,
            topic,
            read_queues,
            write_queues,
            perm,
            order,
            attributes,
        } => {
            let admin = Admin::new(&ns.namesrv, timeout)?;
            let addrs = admin
                .target_addrs(target.broker.as_deref(), target.cluster.as_deref())
                .await?;
            let spec = topic_cmds::TopicSpec {
                topic: &topic,
                read_queues,
                write_queues,
                perm,
                order,
                attributes: attributes.as_deref(),
            };
            topic_cmds::update_topic(&admin, addrs, spec).await
        }
        Command::DeleteTopic { ns, cluster, topic } => {
            topic_cmds::delete_topic(&Admin::new(&ns.namesrv, timeout)?, &cluster, &topic).await
        }
        Command::TopicList { ns } => {
            topic_cmds::topic_list(&Admin::new(&ns.namesrv, timeout)?).await
        }
        Command::TopicRoute { ns, topic } => {
            topic_cmds::topic_route(&Admin::new(&ns.namesrv, timeout)?, &topic).await
        }
        Command::TopicStatus { ns, topic } => {
            stats_cmds::topic_status(&Admin::new(&ns.namesrv, timeout)?, &topic).await
        }
        Command::ClusterList { ns, cluster } => {
            cluster_cmds::cluster_list(&Admin::new(&ns.namesrv, timeout)?, cluster.as_deref()).await
        }
        Command::BrokerStatus { ns, target } => {
            let admin = Admin::new(&ns.namesrv, timeout)?;
            let addrs = match (&target.broker, &target.cluster) {
                (Some(b), _) => vec![b.clone()],
                (None, Some(c)) => admin
                    .cluster_brokers(c)
                    .await?
                    .into_iter()
                    .map(|(_, _, a)| a)
                    .collect(),
                (None, None) => {
                    return Err(ClientError::Invalid(
                        "give -b brokerAddr or -c clusterName".into(),
                    ))
                }
            };
            cluster_cmds::broker_status(&admin, addrs).await
        }
        Command::ConsumerProgress {
            ns,
            group,
            topic,
            show_client_ip,
        } => {
            let admin = Admin::new(&ns.namesrv, timeout)?;
            match group {
                Some(group) => {
                    stats_cmds::consumer_progress(&admin, &group, topic.as_deref(), show_client_ip)
                        .await
                }
                None => stats_cmds::group_progress(&admin).await,
            }
        }
        Command::QueryMsgById { ns, msg_id, topic } => {
            message_cmds::query_by_id(
                &Admin::new(&ns.namesrv, timeout)?,
                &msg_id,
                topic.as_deref(),
            )
            .await
        }
        Command::QueryMsgByKey {
            ns,
            topic,
            key,
            max,
        } => {
            message_cmds::query_by_key(&Admin::new(&ns.namesrv, timeout)?, &topic, &key, max).await
        }
        Command::QueryMsgByOffset {
            ns,
            topic,
            broker_name,
            queue_id,
            offset,
        } => {
            message_cmds::query_by_offset(
                &Admin::new(&ns.namesrv, timeout)?,
                &topic,
                &broker_name,
                queue_id,
                offset,
            )
            .await
        }
        Command::ResetOffsetByTime {
            ns,
            group,
            topic,
            timestamp,
            force,
            cplus,
            broker,
            queue,
            offset,
        } => {
            let ts = consumer_cmds::parse_timestamp(&timestamp, now_ms())?;
            let spec = stats_cmds::ResetSpec {
                group: &group,
                topic: &topic,
                timestamp: ts,
                force,
                cplus,
            };
            let admin = Admin::new(&ns.namesrv, timeout)?;
            match (broker, queue) {
                (Some(addr), Some(queue_id)) => {
                    stats_cmds::reset_queue_offset(&admin, &spec, addr.trim(), queue_id, offset)
                        .await
                }
                _ => stats_cmds::reset_offset_by_time(&admin, spec).await,
            }
        }
        Command::UpdateSubGroup {
            ns,
            target,
            group,
            consume_enable,
            consume_from_min_enable,
            consume_broadcast_enable,
            consume_message_orderly,
            retry_queue_nums,
            retry_max_times,
            broker_id,
            which_broker_when_consume_slowly,
            notify_consumer_ids_changed,
        } => {
            let admin = Admin::new(&ns.namesrv, timeout)?;
            let addrs = admin
                .target_addrs(target.broker.as_deref(), target.cluster.as_deref())
                .await?;
            let settings = consumer_cmds::SubGroupSettings {
                group,
                consume_enable,
                consume_from_min_enable,
                consume_broadcast_enable,
                consume_message_orderly,
                retry_queue_nums,
                retry_max_times,
                broker_id,
                which_broker_when_consume_slowly,
                notify_consumer_ids_changed_enable: notify_consumer_ids_changed,
            };
            consumer_cmds::update_sub_group(&admin, addrs, settings).await
        }
        Command::QueryMsgByUniqueKey(args) => {
            message_cmds::query_by_unique_key(args, timeout).await
        }
        Command::BrokerConfig(cmd) => broker_config_cmds::run(cmd, timeout).await,
        Command::Namesrv(cmd) => namesrv_cmds::run(cmd, timeout).await,
        Command::Controller(cmd) => controller_cmds::run(cmd, timeout).await,
        Command::Group(cmd) => group_cmds::run(cmd, timeout).await,
        Command::Auth(cmd) => auth_cmds::run(cmd, timeout).await,
        Command::BrokerStats(cmd) => broker_stats_cmds::run(cmd, timeout).await,
        Command::SendConsume(cmd) => send_consume_cmds::run(cmd, timeout).await,
        Command::Trace(cmd) => trace_cmds::run(cmd, timeout).await,
        Command::Ha(cmd) => ha_cmds::run(cmd, timeout).await,
        Command::Maintenance(cmd) => maintenance_cmds::run(cmd, timeout).await,
        Command::Ops(cmd) => ops_cmds::run(cmd, timeout).await,
    }
}
