//! Messages as RocketMQ stores and ships them: properties, stored records, batches and msgIds.

pub mod batch;
pub mod msgid;
pub mod properties;
pub mod record;
