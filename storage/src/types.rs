//! Result types of the store's public API.

use bytes::Bytes;

/// A stored put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PutOk {
    /// Full physical offset (shard id in bits 48..62).
    pub physical_offset: i64,
    pub queue_offset: i64,
    /// Stored record size in bytes.
    pub size: i32,
    pub store_timestamp: i64,
}

/// RocketMQ's `GetMessageStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetMessageStatus {
    Found,
    NoMatchedMessage,
    MessageWasRemoving,
    OffsetFoundNull,
    OffsetOverflowBadly,
    OffsetOverflowOne,
    OffsetTooSmall,
    NoMatchedLogicQueue,
    NoMessageInQueue,
}

/// Whether a ConsumeQueue unit with this tagsCode may be read.
pub type TagsCodeFilter<'f> = &'f dyn Fn(i64) -> bool;

/// Whether a stored record is returned.
pub type RecordFilter<'f> = &'f dyn Fn(&[u8]) -> bool;

/// The filters of a pull (RocketMQ's `MessageFilter`); `None` accepts everything.
#[derive(Clone, Copy, Default)]
pub struct ReadFilter<'f> {
    /// Asked first, with the ConsumeQueue unit's tagsCode.
    pub tags_code: Option<TagsCodeFilter<'f>>,
    /// Asked next, with the stored record, for units whose tagsCode passed.
    pub record: Option<RecordFilter<'f>>,
}

/// The answer to a pull.
#[derive(Debug, Clone)]
pub struct GetResult {
    pub status: GetMessageStatus,
    /// Stored records, ready to be concatenated into a PULL_MESSAGE body.
    pub records: Vec<Bytes>,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
}

impl GetResult {
    pub fn total_bytes(&self) -> usize {
        self.records.iter().map(Bytes::len).sum()
    }
}

/// What a retention pass removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionReport {
    pub commitlog_segments: Vec<crate::retention_audit::DeletedSegment>,
    /// Messages consumer groups had not consumed when their queue's start moved past them.
    pub unconsumed: Vec<crate::retention_audit::UnconsumedLoss>,
    pub consume_queue_files: usize,
    pub index_files: usize,
}
