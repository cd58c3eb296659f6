//! The request table: for every request code a client may send, where it runs, what ACL rule it
//! follows, and which processor handles it. This is the one place a request code is written down;
//! `processor::dispatch` reads it, `Command::execute` calls the handler.

use std::rc::Rc;

use protocol::request_code as code;
use protocol::RemotingCommand;

use super::{
    admin_stats, auth_admin, broker_admin, broker_config, broker_consume_stats, broker_stats_data,
    check_client_config, client_manage, clone_group_offset, consumer_calls, consumer_offset,
    controller_mode, end_transaction, message_query, producer_connection, pull, queue_offset,
    rebalance_lock, recall_message, send, send_back, send_reply, subscription_group_admin,
    topic_admin,
};
use super::{consume_queue_query, group_list_admin, ha_status, pop_admin, store_maintenance};
use crate::feature::acl::AclRule;
use crate::feature::pop::{ack, change_invisible, notification, pop_message};
use crate::shard::Shard;
use crate::state::clients::ConnRef;

/// The shard a request runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunsOn {
    /// The receiving shard (sends are validated here and put on the queue's owner; lookups and
    /// statistics fan out to the shards they need; unknown codes are answered here).
    Receiver,
    /// The owner of the queue named by the `topic` and `queueId` header fields.
    QueueOwner,
    /// The shard holding the half message that END_TRANSACTION's `commitLogOffset` names (the owner
    /// of the transaction half queue when the offset is missing or names no shard).
    HalfQueueOwner,
    /// The control shard (client registry, topic and group admin, broker-wide figures).
    Control,
}

/// What handles a request (one variant per handler).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Send,
    SendBack,
    Pull,
    SendReply,
    Pop,
    Peek,
    Ack,
    BatchAck,
    ChangeInvisible,
    Notification,
    PollingInfo,
    QueryConsumerOffset,
    UpdateConsumerOffset,
    MaxOffset,
    MinOffset,
    EarliestStoreTime,
    SearchOffsetByTime,
    EndTransaction,
    Heartbeat,
    Unregister,
    CheckClientConfig,
    ConsumerList,
    CreateUser,
    UpdateUser,
    DeleteUser,
    GetUser,
    ListUsers,
    CreateOrUpdateAcl,
    DeleteAcl,
    GetAcl,
    ListAcls,
    UpdateTopic,
    UpdateTopicList,
    TopicConfig,
    SystemTopicList,
    DeleteTopic,
    AllTopicConfig,
    RuntimeInfo,
    AllConsumerOffset,
    AllDelayOffset,
    TimerCheckpoint,
    AllSubscriptionGroups,
    UpdateSubscriptionGroup,
    GetSubscriptionGroup,
    DeleteSubscriptionGroup,
    LockBatch,
    UnlockBatch,
    TopicStats,
    ConsumeStats,
    ResetOffset,
    ConsumerConnectionList,
    ConsumerRunningInfo,
    ConsumerStatus,
    ConsumeDirectly,
    CloneGroupOffset,
    GetBrokerConfig,
    UpdateBrokerConfig,
    RoleChanged,
    ExchangeHaInfo,
    ProducerConnectionList,
    BrokerConsumeStats,
    ViewBrokerStatsData,
    ConsumeByWho,
    ViewMessageById,
    QueryMessage,
    HaStatus,
    EpochCache,
    ResetMasterFlushOffset,
    UpdateSubscriptionGroupList,
    QueryConsumeQueue,
    CleanExpiredConsumeQueue,
    DeleteExpiredCommitLog,
    CleanUnusedTopic,
    MessageRequestMode,
    ExportPopRecord,
    RecallMessage,
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub runs_on: RunsOn,
    pub acl: AclRule,
    pub command: Command,
}

const fn row(runs_on: RunsOn, acl: AclRule, command: Command) -> Option<Route> {
    Some(Route {
        runs_on,
        acl,
        command,
    })
}

/// The row of `request_code`; `None` for codes this broker does not serve (answered on the receiving
/// shard with REQUEST_CODE_NOT_SUPPORTED).
pub fn route(request_code: i32) -> Option<Route> {
    use AclRule as A;
    use Command as C;
    use RunsOn::{Control, HalfQueueOwner, QueueOwner, Receiver};
    match request_code {
        // Sends are validated where they arrive and put on the queue's owner.
        code::SEND_MESSAGE => row(Receiver, A::Send, C::Send),
        code::SEND_MESSAGE_V2 | code::SEND_BATCH_MESSAGE => row(Receiver, A::SendV2, C::Send),
        code::CONSUMER_SEND_MSG_BACK => row(Receiver, A::SendBack, C::SendBack),
        // The requester's connection may be on any shard; the control shard says which.
        code::SEND_REPLY_MESSAGE | code::SEND_REPLY_MESSAGE_V2 => {
            row(Receiver, A::Free, C::SendReply)
        }
        code::PULL_MESSAGE | code::LITE_PULL_MESSAGE => row(QueueOwner, A::Pull, C::Pull),
        // POP: queueId -1 ("any queue") runs where it lands and visits each queue on its owner.
        code::POP_MESSAGE => row(QueueOwner, A::Pop, C::Pop),
        code::PEEK_MESSAGE => row(QueueOwner, A::Pop, C::Peek),
        code::ACK_MESSAGE => row(QueueOwner, A::Pop, C::Ack),
        // Its acks name their queues in the body.
        code::BATCH_ACK_MESSAGE => row(Receiver, A::BatchAck, C::BatchAck),
        code::CHANGE_MESSAGE_INVISIBLETIME => row(QueueOwner, A::Pop, C::ChangeInvisible),
        code::NOTIFICATION => row(QueueOwner, A::Pop, C::Notification),
        code::POLLING_INFO => row(QueueOwner, A::Pop, C::PollingInfo),
        code::QUERY_CONSUMER_OFFSET => row(QueueOwner, A::Free, C::QueryConsumerOffset),
        code::UPDATE_CONSUMER_OFFSET => row(QueueOwner, A::GroupAndTopic, C::UpdateConsumerOffset),
        code::GET_MAX_OFFSET => row(QueueOwner, A::Free, C::MaxOffset),
        code::GET_MIN_OFFSET => row(QueueOwner, A::Free, C::MinOffset),
        code::GET_EARLIEST_MSG_STORETIME => row(QueueOwner, A::Free, C::EarliestStoreTime),
        code::SEARCH_OFFSET_BY_TIMESTAMP => row(QueueOwner, A::Free, C::SearchOffsetByTime),
        code::END_TRANSACTION => row(HalfQueueOwner, A::Free, C::EndTransaction),
        // The client registry is the control shard's.
        code::HEART_BEAT => row(Control, A::Heartbeat, C::Heartbeat),
        code::UNREGISTER_CLIENT => row(Control, A::Group, C::Unregister),
        code::CHECK_CLIENT_CONFIG => row(Receiver, A::Free, C::CheckClientConfig),
        code::GET_CONSUMER_LIST_BY_GROUP => row(Control, A::Group, C::ConsumerList),
        // ACL 2.0 users and ACLs live on the control shard.
        code::AUTH_CREATE_USER => row(Control, A::Admin, C::CreateUser),
        code::AUTH_UPDATE_USER => row(Control, A::Admin, C::UpdateUser),
        code::AUTH_DELETE_USER => row(Control, A::Admin, C::DeleteUser),
        code::AUTH_GET_USER => row(Control, A::Admin, C::GetUser),
        code::AUTH_LIST_USER => row(Control, A::Admin, C::ListUsers),
        code::AUTH_CREATE_ACL | code::AUTH_UPDATE_ACL => {
            row(Control, A::Admin, C::CreateOrUpdateAcl)
        }
        code::AUTH_DELETE_ACL => row(Control, A::Admin, C::DeleteAcl),
        code::AUTH_GET_ACL => row(Control, A::Admin, C::GetAcl),
        code::AUTH_LIST_ACL => row(Control, A::Admin, C::ListAcls),
        code::UPDATE_AND_CREATE_TOPIC => row(Control, A::Admin, C::UpdateTopic),
        code::UPDATE_AND_CREATE_TOPIC_LIST => row(Control, A::Admin, C::UpdateTopicList),
        code::GET_TOPIC_CONFIG => row(Receiver, A::Free, C::TopicConfig),
        code::GET_SYSTEM_TOPIC_LIST_FROM_BROKER => row(Receiver, A::Free, C::SystemTopicList),
        code::DELETE_TOPIC_IN_BROKER => row(Control, A::Admin, C::DeleteTopic),
        code::GET_ALL_TOPIC_CONFIG => row(Receiver, A::Free, C::AllTopicConfig),
        code::GET_BROKER_RUNTIME_INFO => row(Control, A::Free, C::RuntimeInfo),
        code::GET_ALL_CONSUMER_OFFSET => row(Control, A::Free, C::AllConsumerOffset),
        code::GET_ALL_DELAY_OFFSET => row(Receiver, A::Free, C::AllDelayOffset),
        code::GET_TIMER_CHECK_POINT => row(Receiver, A::Free, C::TimerCheckpoint),
        code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG => row(Control, A::Free, C::AllSubscriptionGroups),
        code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => {
            row(Control, A::Admin, C::UpdateSubscriptionGroup)
        }
        // Every shard has the subscription groups.
        code::GET_SUBSCRIPTIONGROUP_CONFIG => row(Receiver, A::Free, C::GetSubscriptionGroup),
        code::DELETE_SUBSCRIPTIONGROUP => row(Control, A::Admin, C::DeleteSubscriptionGroup),
        code::LOCK_BATCH_MQ => row(Control, A::Free, C::LockBatch),
        code::UNLOCK_BATCH_MQ => row(Control, A::Free, C::UnlockBatch),
        code::GET_TOPIC_STATS_INFO => row(Receiver, A::Free, C::TopicStats),
        code::GET_CONSUME_STATS => row(Receiver, A::Free, C::ConsumeStats),
        code::INVOKE_BROKER_TO_RESET_OFFSET => row(Control, A::Free, C::ResetOffset),
        code::GET_CONSUMER_CONNECTION_LIST => row(Control, A::Free, C::ConsumerConnectionList),
        // The control shard knows the consumer's connection.
        code::GET_CONSUMER_RUNNING_INFO => row(Control, A::Free, C::ConsumerRunningInfo),
        code::INVOKE_BROKER_TO_GET_CONSUMER_STATUS => row(Control, A::Free, C::ConsumerStatus),
        code::CONSUME_MESSAGE_DIRECTLY => row(Control, A::Free, C::ConsumeDirectly),
        code::CLONE_GROUP_OFFSET => row(Control, A::Free, C::CloneGroupOffset),
        code::GET_BROKER_CONFIG => row(Receiver, A::Free, C::GetBrokerConfig),
        code::UPDATE_BROKER_CONFIG => row(Control, A::Admin, C::UpdateBrokerConfig),
        code::NOTIFY_BROKER_ROLE_CHANGED => row(Control, A::Free, C::RoleChanged),
        code::EXCHANGE_BROKER_HA_INFO => row(Receiver, A::Free, C::ExchangeHaInfo),
        code::GET_PRODUCER_CONNECTION_LIST => row(Control, A::Free, C::ProducerConnectionList),
        code::GET_BROKER_CONSUME_STATS => row(Receiver, A::Free, C::BrokerConsumeStats),
        code::VIEW_BROKER_STATS_DATA => row(Receiver, A::Free, C::ViewBrokerStatsData),
        code::QUERY_TOPIC_CONSUME_BY_WHO => row(Control, A::Free, C::ConsumeByWho),
        code::VIEW_MESSAGE_BY_ID => row(Receiver, A::Free, C::ViewMessageById),
        code::QUERY_MESSAGE => row(Receiver, A::QueryMessage, C::QueryMessage),
        // HA and store maintenance: the broker the request reached (each shard's stream or store).
        code::GET_BROKER_HA_STATUS => row(Receiver, A::Free, C::HaStatus),
        code::GET_BROKER_EPOCH_CACHE => row(Receiver, A::Free, C::EpochCache),
        code::RESET_MASTER_FLUSH_OFFSET => row(Receiver, A::Admin, C::ResetMasterFlushOffset),
        code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST => {
            row(Control, A::Admin, C::UpdateSubscriptionGroupList)
        }
        code::QUERY_CONSUME_QUEUE => row(QueueOwner, A::Free, C::QueryConsumeQueue),
        code::CLEAN_EXPIRED_CONSUMEQUEUE => row(Receiver, A::Admin, C::CleanExpiredConsumeQueue),
        code::DELETE_EXPIRED_COMMITLOG => row(Receiver, A::Admin, C::DeleteExpiredCommitLog),
        code::CLEAN_UNUSED_TOPIC => row(Receiver, A::Admin, C::CleanUnusedTopic),
        code::SET_MESSAGE_REQUEST_MODE | code::GET_ALL_MESSAGE_REQUEST_MODE => {
            row(Receiver, A::Free, C::MessageRequestMode)
        }
        code::POP_ROLLBACK => row(Receiver, A::Admin, C::ExportPopRecord),
        // Apache's plain ACL checks nothing of a recall (ACL 2.0 asks PUB on the topic).
        code::RECALL_MESSAGE => row(Receiver, A::Free, C::RecallMessage),
        _ => None,
    }
}

/// The ACL rule of `request_code` (codes not served need nothing: they are answered as unsupported).
#[cfg(test)]
pub fn acl_rule(request_code: i32) -> AclRule {
    route(request_code).map_or(AclRule::Free, |r| r.acl)
}

impl Command {
    /// Runs the handler on the shard the table chose.
    pub async fn execute(
        self,
        shard: &Rc<Shard>,
        req: RemotingCommand,
        conn: ConnRef,
    ) -> RemotingCommand {
        let req = &req;
        match self {
            Command::Send => send::handle(shard, req, conn.peer).await,
            Command::SendBack => send_back::handle(shard, req).await,
            Command::Pull => pull::handle(shard, req).await,
            Command::SendReply => send_reply::handle(shard, req, conn.peer).await,
            Command::Pop => pop_message::handle(shard, req).await,
            Command::Peek => pop_message::peek(shard, req).await,
            Command::Ack => ack::ack(shard, req).await,
            Command::BatchAck => ack::batch_ack(shard, req).await,
            Command::ChangeInvisible => change_invisible::handle(shard, req).await,
            Command::Notification => notification::notification(shard, req).await,
            Command::PollingInfo => notification::polling_info(shard, req).await,
            Command::QueryConsumerOffset => consumer_offset::query(shard, req),
            Command::UpdateConsumerOffset => consumer_offset::update(shard, req),
            Command::MaxOffset => queue_offset::max_offset(shard, req),
            Command::MinOffset => queue_offset::min_offset(shard, req),
            Command::EarliestStoreTime => queue_offset::earliest_store_time(shard, req).await,
            Command::SearchOffsetByTime => queue_offset::search_by_time(shard, req).await,
            Command::EndTransaction => end_transaction::handle(shard, req).await,
            Command::Heartbeat => client_manage::heartbeat(shard, req, conn).await,
            Command::Unregister => client_manage::unregister(shard, req).await,
            Command::CheckClientConfig => check_client_config::handle(shard, req),
            Command::ConsumerList => client_manage::consumer_list(shard, req),
            Command::CreateUser => auth_admin::create_user(shard, req).await,
            Command::UpdateUser => auth_admin::update_user(shard, req).await,
            Command::DeleteUser => auth_admin::delete_user(shard, req).await,
            Command::GetUser => auth_admin::get_user(shard, req),
            Command::ListUsers => auth_admin::list_users(shard, req),
            Command::CreateOrUpdateAcl => auth_admin::create_or_update_acl(shard, req).await,
            Command::DeleteAcl => auth_admin::delete_acl(shard, req).await,
            Command::GetAcl => auth_admin::get_acl(shard, req),
            Command::ListAcls => auth_admin::list_acls(shard, req),
            Command::UpdateTopic => topic_admin::update_and_create(shard, req).await,
            Command::UpdateTopicList => topic_admin::update_and_create_list(shard, req).await,
            Command::TopicConfig => topic_admin::topic_config(shard, req),
            Command::SystemTopicList => topic_admin::system_topic_list(shard),
            Command::DeleteTopic => topic_admin::delete(shard, req).await,
            Command::AllTopicConfig => topic_admin::all_topic_config(shard),
            Command::RuntimeInfo => broker_admin::runtime_info(shard, conn.shard).await,
            Command::AllConsumerOffset => {
                broker_admin::all_consumer_offset(shard, conn.shard).await
            }
            Command::AllDelayOffset => broker_admin::all_delay_offset(shard).await,
            Command::TimerCheckpoint => broker_admin::timer_checkpoint(shard).await,
            Command::AllSubscriptionGroups => broker_admin::all_subscription_groups(shard),
            Command::UpdateSubscriptionGroup => {
                subscription_group_admin::update_and_create(shard, req).await
            }
            Command::GetSubscriptionGroup => subscription_group_admin::get(shard, req),
            Command::DeleteSubscriptionGroup => subscription_group_admin::delete(shard, req).await,
            Command::LockBatch => rebalance_lock::lock(shard, req),
            Command::UnlockBatch => rebalance_lock::unlock(shard, req),
            Command::TopicStats => admin_stats::topic_stats(shard, req).await,
            Command::ConsumeStats => admin_stats::consume_stats(shard, req).await,
            Command::ResetOffset => admin_stats::reset_offset(shard, req, conn.shard).await,
            Command::ConsumerConnectionList => admin_stats::consumer_connection_list(shard, req),
            Command::ConsumerRunningInfo => consumer_calls::running_info(shard, req).await,
            Command::ConsumerStatus => consumer_calls::consumer_status(shard, req).await,
            Command::ConsumeDirectly => {
                consumer_calls::consume_directly(shard, req, conn.shard).await
            }
            Command::CloneGroupOffset => clone_group_offset::handle(shard, req, conn.shard).await,
            Command::GetBrokerConfig => broker_config::get(shard),
            Command::UpdateBrokerConfig => broker_config::update(shard, req).await,
            Command::RoleChanged => controller_mode::role_changed(shard, req),
            Command::ExchangeHaInfo => controller_mode::exchange_ha_info(shard),
            Command::ProducerConnectionList => producer_connection::handle(shard, req),
            Command::BrokerConsumeStats => broker_consume_stats::handle(shard, req).await,
            Command::ViewBrokerStatsData => broker_stats_data::view(shard, req).await,
            Command::ConsumeByWho => broker_stats_data::consume_by_who(shard, req).await,
            Command::ViewMessageById => message_query::view_by_id(shard, req).await,
            Command::QueryMessage => message_query::query_by_key(shard, req).await,
            Command::HaStatus => ha_status::ha_status(shard, conn.shard).await,
            Command::EpochCache => ha_status::epoch_cache(shard, conn.shard),
            Command::ResetMasterFlushOffset => {
                ha_status::reset_master_flush_offset(shard, req, conn.shard).await
            }
            Command::UpdateSubscriptionGroupList => {
                group_list_admin::update_and_create_list(shard, req).await
            }
            Command::QueryConsumeQueue => consume_queue_query::handle(shard, req).await,
            Command::CleanExpiredConsumeQueue => {
                store_maintenance::clean_expired_consume_queue(shard, conn.shard).await
            }
            Command::DeleteExpiredCommitLog => {
                store_maintenance::delete_expired_commit_log(shard, conn.shard).await
            }
            Command::CleanUnusedTopic => {
                store_maintenance::clean_unused_topic(shard, conn.shard).await
            }
            Command::MessageRequestMode => pop_admin::message_request_mode(),
            Command::ExportPopRecord => pop_admin::export_pop_record(),
            Command::RecallMessage => recall_message::handle(shard, req, conn.peer).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_on(request_code: i32) -> Option<RunsOn> {
        route(request_code).map(|r| r.runs_on)
    }

    #[test]
    fn sends_stay_pulls_go_to_the_owner_admin_to_control() {
        assert_eq!(runs_on(code::SEND_MESSAGE_V2), Some(RunsOn::Receiver));
        assert_eq!(runs_on(code::PULL_MESSAGE), Some(RunsOn::QueueOwner));
        assert_eq!(runs_on(code::LITE_PULL_MESSAGE), Some(RunsOn::QueueOwner));
        assert_eq!(runs_on(code::POP_MESSAGE), Some(RunsOn::QueueOwner));
        assert_eq!(runs_on(code::ACK_MESSAGE), Some(RunsOn::QueueOwner));
        assert_eq!(runs_on(code::BATCH_ACK_MESSAGE), Some(RunsOn::Receiver));
        assert_eq!(runs_on(code::SEND_REPLY_MESSAGE_V2), Some(RunsOn::Receiver));
        assert_eq!(runs_on(code::END_TRANSACTION), Some(RunsOn::HalfQueueOwner));
        assert_eq!(runs_on(code::HEART_BEAT), Some(RunsOn::Control));
        // The client registry, which knows the consumer's connection, is the control shard's.
        assert_eq!(
            runs_on(code::GET_CONSUMER_RUNNING_INFO),
            Some(RunsOn::Control)
        );
        assert_eq!(runs_on(code::CHECK_CLIENT_CONFIG), Some(RunsOn::Receiver));
        // The check-back request is the broker's own, never taken from a client.
        assert_eq!(runs_on(code::CHECK_TRANSACTION_STATE), None);
    }

    #[test]
    fn admin_codes_need_an_admin() {
        for c in [
            code::UPDATE_AND_CREATE_TOPIC,
            code::UPDATE_AND_CREATE_TOPIC_LIST,
            code::UPDATE_BROKER_CONFIG,
            code::DELETE_TOPIC_IN_BROKER,
            code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
            code::DELETE_SUBSCRIPTIONGROUP,
            code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
            code::DELETE_EXPIRED_COMMITLOG,
            code::CLEAN_EXPIRED_CONSUMEQUEUE,
            code::CLEAN_UNUSED_TOPIC,
            code::RESET_MASTER_FLUSH_OFFSET,
        ] {
            assert!(acl_rule(c).needs_admin(), "code {c}");
        }
        assert!(!acl_rule(code::SEND_MESSAGE).needs_admin());
        assert!(!acl_rule(code::PULL_MESSAGE).needs_admin());
    }

    #[test]
    fn codes_that_read_alike_share_a_rule() {
        // A lite pull reads like a pull; every POP code reads as a pull does.
        assert_eq!(acl_rule(code::LITE_PULL_MESSAGE), AclRule::Pull);
        for c in [
            code::POP_MESSAGE,
            code::PEEK_MESSAGE,
            code::ACK_MESSAGE,
            code::CHANGE_MESSAGE_INVISIBLETIME,
            code::NOTIFICATION,
            code::POLLING_INFO,
        ] {
            assert_eq!(acl_rule(c), AclRule::Pop, "code {c}");
        }
        assert_eq!(acl_rule(code::SEND_BATCH_MESSAGE), AclRule::SendV2);
        // Codes this broker does not serve need nothing beyond a valid signature.
        assert_eq!(acl_rule(code::CHECK_TRANSACTION_STATE), AclRule::Free);
    }
}
