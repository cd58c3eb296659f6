//! Transactional sends: half (prepared) messages, END_TRANSACTION with the local transaction's state,
//! and the broker's CHECK_TRANSACTION_STATE requests read into a [`TransactionCheck`] to answer.

use std::time::Duration;

use protocol::header::{
    CheckTransactionStateRequestHeader, CommandHeader, EndTransactionRequestHeader,
};
use protocol::message::msgid::parse_offset_msg_id;
use protocol::message::properties;
use protocol::message::record::{decode_view, sys_flag};
use protocol::{request_code, RemotingCommand};
use remoting::Client;

use crate::error::ClientError;
use crate::message::Message;
use crate::producer::{Producer, SendResult};
use crate::request::{expect_success, request};

/// The outcome of a local transaction (the Java client's `LocalTransactionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalTransactionState {
    Commit,
    Rollback,
    /// Not known yet: the broker asks again later (CHECK_TRANSACTION_STATE).
    Unknown,
}

impl LocalTransactionState {
    /// The `commitOrRollback` value of END_TRANSACTION (the SYSFLAG transaction bits).
    pub fn code(self) -> i32 {
        match self {
            LocalTransactionState::Commit => sys_flag::TRANSACTION_COMMIT,
            LocalTransactionState::Rollback => sys_flag::TRANSACTION_ROLLBACK,
            LocalTransactionState::Unknown => sys_flag::TRANSACTION_NOT_TYPE,
        }
    }
}

/// Sends `msg` to the next write queue as a half message (TRAN_MSG, PGROUP, the prepared sys flag):
/// stored but invisible to consumers until committed.
pub async fn send_half(producer: &Producer, msg: &Message) -> Result<SendResult, ClientError> {
    let msg = msg
        .clone()
        .with_property(properties::TRANSACTION_PREPARED, "true")
        .with_property(properties::PRODUCER_GROUP, &producer.config().group);
    let route = producer.route(&msg.topic).await?;
    let queue = producer.select_queue(&msg.topic).await?;
    let (mut cmd, msg_id) = producer.send_command(&msg, &queue);
    cmd.ext_fields
        .insert_display("f", sys_flag::TRANSACTION_PREPARED);
    let client = producer
        .connections()
        .get(route.master_addr(&queue.broker_name)?)
        .await?;
    let resp = client.invoke(cmd, producer.config().send_timeout).await?;
    Producer::send_result(resp, msg_id, &queue)
}

/// What END_TRANSACTION names: the half message (its queue offset in the half queue, its CommitLog
/// offset, its msgId) and the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndTransaction {
    pub producer_group: String,
    pub tran_state_table_offset: i64,
    pub commit_log_offset: i64,
    pub msg_id: String,
    pub transaction_id: String,
    pub state: LocalTransactionState,
    /// True when answering a CHECK_TRANSACTION_STATE.
    pub from_check: bool,
}

impl EndTransaction {
    /// The END_TRANSACTION for a half message just sent.
    pub fn after_send(
        group: &str,
        sent: &SendResult,
        state: LocalTransactionState,
    ) -> Result<EndTransaction, ClientError> {
        let (_, commit_log_offset) = parse_offset_msg_id(&sent.offset_msg_id).map_err(|e| {
            ClientError::Invalid(format!("offsetMsgId {}: {e}", sent.offset_msg_id))
        })?;
        Ok(EndTransaction {
            producer_group: group.to_owned(),
            tran_state_table_offset: sent.queue_offset,
            commit_log_offset,
            msg_id: sent.msg_id.clone(),
            transaction_id: sent.msg_id.clone(),
            state,
            from_check: false,
        })
    }

    pub fn command(&self) -> RemotingCommand {
        let header = EndTransactionRequestHeader {
            topic: None,
            producer_group: self.producer_group.clone(),
            tran_state_table_offset: self.tran_state_table_offset,
            commit_log_offset: self.commit_log_offset,
            commit_or_rollback: self.state.code(),
            from_transaction_check: Some(self.from_check),
            msg_id: self.msg_id.clone(),
            transaction_id: Some(self.transaction_id.clone()),
        };
        request(request_code::END_TRANSACTION, header.to_ext_fields())
    }

    /// Sends it and waits for the broker's answer (the Java client sends it oneway; waiting lets a
    /// caller count failures).
    pub async fn send(&self, client: &Client, timeout: Duration) -> Result<(), ClientError> {
        expect_success(client.invoke(self.command(), timeout).await?)?;
        Ok(())
    }

    /// Sends it without waiting, as the Java client does.
    pub async fn send_oneway(&self, client: &Client) -> Result<(), ClientError> {
        client.invoke_oneway(self.command()).await?;
        Ok(())
    }
}

/// A CHECK_TRANSACTION_STATE the broker sent: which half message it asks about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionCheck {
    pub tran_state_table_offset: i64,
    pub commit_log_offset: i64,
    /// The message's UNIQ_KEY (the msgId the producer saw), else the header's msgId.
    pub msg_id: String,
    pub transaction_id: String,
    pub producer_group: Option<String>,
    /// The half message's KEYS property.
    pub keys: Option<String>,
}

impl TransactionCheck {
    /// Reads the request's header and the stored half message in its body.
    pub fn from_request(cmd: &RemotingCommand) -> Result<TransactionCheck, ClientError> {
        let header = CheckTransactionStateRequestHeader::from_ext_fields(&cmd.ext_fields)?;
        let record = decode_view(&cmd.body, false)?;
        let uniq = properties::get(record.properties, properties::UNIQ_KEY).map(str::to_owned);
        let msg_id = uniq
            .clone()
            .or_else(|| header.msg_id.clone())
            .unwrap_or_default();
        Ok(TransactionCheck {
            tran_state_table_offset: header.tran_state_table_offset,
            commit_log_offset: header.commit_log_offset,
            transaction_id: header
                .transaction_id
                .clone()
                .unwrap_or_else(|| msg_id.clone()),
            msg_id,
            producer_group: properties::get(record.properties, properties::PRODUCER_GROUP)
                .map(str::to_owned),
            keys: properties::get(record.properties, properties::KEYS).map(str::to_owned),
        })
    }

    /// The END_TRANSACTION that answers this check with `state`.
    pub fn answer(&self, group: &str, state: LocalTransactionState) -> EndTransaction {
        EndTransaction {
            producer_group: group.to_owned(),
            tran_state_table_offset: self.tran_state_table_offset,
            commit_log_offset: self.commit_log_offset,
            msg_id: self.msg_id.clone(),
            transaction_id: self.transaction_id.clone(),
            state,
            from_check: true,
        }
    }
}
