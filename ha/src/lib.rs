//! Master/slave replication of every shard's CommitLog (RocketMQ's classic HA, our own wire format).
//!
//! One TCP stream per shard, from the slave's shard N to the master's HA port (`haListenPort`):
//!
//! - Slave -> master, once: handshake `magic u32 "RQHA" | version u16 (1 or 2) | shard count u16 |
//!   shard id u16 | name length u16 | brokerName (UTF-8, <= 255 bytes)`; version 2 or 3 (controller
//!   mode) goes on with `broker id i64 (the slave's controller broker id) | epoch count u32 |
//!   (epoch u32 | start offset i64) * count` (the slave's epoch entries for that shard, oldest first;
//!   at most 100 000). Then its log end for that shard as an offset report.
//! - Master -> slave, once: answer `magic u32 | status u8 (0 accepted, 1 refused) | length u16 | text`,
//!   text = the master's remoting address when accepted (for the metadata copy), else the reason.
//!   An acceptance of a version 2 handshake goes on with `truncation offset i64 (-1 = none) |
//!   epoch count u32 | (epoch u32 | start offset i64) * count` (the master's epoch entries).
//!   Refused (then closed): shard-count or brokerName mismatch, a slave ahead of the master (its log
//!   diverged), or one that needs data the master already deleted; in version 2, a slave holding
//!   data whose epochs share none with the master's.
//! - Which start a version 2 slave that sent epochs gets (`epochs`, RocketMQ 5's rule): walking the
//!   slave's entries from its last, the first epoch the master also has with the same start offset
//!   gives the common point = min(the slave's end of that epoch, the master's end of it), an epoch's
//!   end being the next entry's start or the log end. Below the slave's log end, the slave must cut its
//!   log there (`MessageStore::truncate_tail`) and replication starts from it. The slave then adopts
//!   the master's epoch entries (`set_epochs`) and replicates. A version 2 start must be a record start
//!   of the master's log (else refused). A slave that cannot cut at the point because one of its
//!   records crosses it handshakes again claiming that record's start as its end, and cuts only once
//!   accepted; a failed cut ends the attempt (never replicating from its own end). The master counts a
//!   version 2 slave in its watermark only once its first report equals the start. A slave without epochs, and any version
//!   1 slave, gets the classic rule (its end must lie within the master's log) and keeps no epochs.
//! - Slave -> master, repeatedly: offset report `i64` = the slave's log end (physical offset, shard id in
//!   the top bits), after every append and at least every 5 s (heartbeat). A master drops a slave
//!   silent for 20 s.
//! - Master -> slave, repeatedly: frames `start i64 | size i32 | crc32(data) u32 | data`, data = whole
//!   stored records already durable on the master (at most `haTransferBatchSize` bytes, or one record
//!   when it is larger; a slave never holds what a crash of the master can take back); an empty
//!   frame (size 0) every 5 s while idle is the master's heartbeat (a slave drops a master silent for
//!   20 s). In version 3 every frame header is followed by `confirm i64`, the master's confirm offset
//!   (everything below it is on every in-sync replica; its log end when it has no gate), sent with
//!   each data frame and in an empty frame whenever it moved: the slave's reads never pass it
//!   (`MessageStore::set_replica_bound`), as Apache's slaves take it from their transfer header. A
//!   version 2 stream has no such field. The slave checks that `start` equals its own end and the crc, appends with
//!   `append_replicated` (same physical offsets, ConsumeQueues and index rebuilt), reports. Any mismatch: log line, close,
//!   reconnect from the true end; nothing unchecked is ever written.
//!
//! Master side (`master`): whichever shard accepts reads the handshake; the broker hands the socket
//! and the handshake to the shard owning that stream, whose `serve_slave` task reads that shard's store. Acks feed the
//! shard's `Watermark`, which SYNC_MASTER sends wait on (grouped: one ack releases every waiter at or
//! below it); it also knows each slave's broker id and when it was last caught up, and `wait_all` waits
//! for every slave of a SyncStateSet. Slave side (`slave`): `run_slave` per shard, reconnecting with
//! back-off; version 3 when `SlaveConfig::broker_id` is set (controller mode), else version 1. The
//! master takes all three.
//!
//! `apache`: the slave side of Apache RocketMQ's classic HA protocol (`SlaveConfig::protocol` =
//! `MasterProtocol::Apache`), so this broker can follow an Apache master (see that module);
//! `apache_master`: the master side of it, so an Apache slave can follow a one-shard master of ours
//! (the HA port tells the two protocols apart by their first bytes, `master::read_hello`).

// Bytes from the network are parsed here: no indexing or slicing that could panic on them.
#![warn(clippy::indexing_slicing)]

pub mod apache;
pub mod apache_master;
pub mod epochs;
pub mod error;
pub mod follow;
pub mod io;
pub mod master;
pub mod rate;
pub mod signal;
pub mod slave;
pub mod watermark;
pub mod wire;

pub use apache_master::serve_apache_slave;
pub use error::HaError;
pub use master::{
    check_handshake, read_handshake, read_hello, refuse, serve_slave, Hello, MasterShard,
};
pub use signal::DataSignal;
pub use follow::{run_slave, MasterAddr};
pub use slave::{MasterProtocol, SlaveConfig, SlaveStatus};
pub use watermark::{Lag, SlaveInfo, WaitError, Watermark};
