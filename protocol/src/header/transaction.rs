//! Transaction headers: END_TRANSACTION (producer to broker) and CHECK_TRANSACTION_STATE (broker to producer).

use super::fields::command_header;

command_header! {
    /// END_TRANSACTION (37), usually oneway. `commit_or_rollback` uses the SYSFLAG transaction values
    /// (0 not a transaction / unknown, 0x8 commit, 0xC rollback).
    pub struct EndTransactionRequestHeader {
        topic: Option<String> = "topic",
        producer_group: String = "producerGroup",
        tran_state_table_offset: i64 = "tranStateTableOffset",
        commit_log_offset: i64 = "commitLogOffset",
        commit_or_rollback: i32 = "commitOrRollback",
        from_transaction_check: Option<bool> = "fromTransactionCheck",
        msg_id: String = "msgId",
        transaction_id: Option<String> = "transactionId",
    }
}

command_header! {
    /// CHECK_TRANSACTION_STATE (39), broker to producer, oneway; the body is the stored half message.
    pub struct CheckTransactionStateRequestHeader {
        topic: Option<String> = "topic",
        tran_state_table_offset: i64 = "tranStateTableOffset",
        commit_log_offset: i64 = "commitLogOffset",
        msg_id: Option<String> = "msgId",
        transaction_id: Option<String> = "transactionId",
        offset_msg_id: Option<String> = "offsetMsgId",
    }
}
