//! One shard's message store: CommitLog, ConsumeQueue, IndexFile, group commit, recovery, retention,
//! compaction topics.
//!
//! Everything runs inside one glommio executor (the types are `!Send`). Physical offsets carry the
//! shard id in bits 48..62 (see [`offset`]).

mod arrival;
mod checkpoint;
mod commitlog;
pub mod compaction;
pub mod config;
mod confirm;
mod consume_queue;
mod cq_admin;
pub mod dispatch;
mod epoch;
mod epoch_file;
pub mod error;
pub mod fault;
mod flush;
mod group_commit;
mod ha;
mod index;
mod index_file;
pub mod layout;
mod log_buffer;
pub mod offset;
pub mod policy;
pub mod probe;
mod read;
mod read_cache;
mod recovery;
pub mod retention;
pub mod retention_audit;
mod retention_clock;
mod retention_policy;
mod segment;
mod stats;
mod store;
mod truncate;
pub mod tunables;
pub mod types;

pub use compaction::CompactionReport;
pub use config::{parse_delay_levels, FlushDiskType, StoreConfig};
pub use cq_admin::CqUnit;
pub use epoch_file::{check_epochs, EpochEntry, MAX_EPOCH_ENTRIES};
pub use error::{PutError, StoreError};
pub use layout::{ABORT_FILE, CHECKPOINT_FILE, COMMITLOG_DIR, CONSUME_QUEUE_DIR, INDEX_DIR};
pub use offset::{local_of, physical, shard_of};
pub use policy::TopicPolicies;
pub use read::record_store_timestamp;
pub use stats::StatsSnapshot;
pub use store::{topic_is_storable, ArrivalFn, MessageStore};
pub use tunables::Tunables;
pub use types::{GetMessageStatus, GetResult, PutOk, ReadFilter, RetentionReport};
