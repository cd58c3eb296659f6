//! Messages as RocketMQ stores and ships them: properties, stored records, batches and msgIds.

pub mod batch;
pub mod edited_properties;
pub mod msgid;
pub mod properties;
pub mod record;
