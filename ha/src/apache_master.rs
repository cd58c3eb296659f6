//! Master side of Apache RocketMQ's classic HA protocol, so an Apache slave (4.x, or 5.x outside
//! controller mode) can follow our master and hold its CommitLog at the same physical offsets: the way
//! back from our broker to Apache's.
//!
//! The slave opens with its max physical offset (8 bytes, no handshake; `master::read_hello` tells it
//! from our own handshake) and repeats it after every append and at least every 5 s; those reports are
//! its acknowledgements (SYNC_MASTER sends wait on them as on our slaves'). The master answers with
//! frames `offset i64 | size i32 | raw CommitLog bytes`, and an empty frame every
//! `wire::HEARTBEAT_SECS` while idle. Ours sends durable whole records only and never crosses a
//! segment's end (Apache's slave appends each body into one segment file).
//!
//! Only a one-shard master can serve it: Apache's slave keeps one CommitLog whose offsets are shard 0's
//! (the shard bits are 0). An empty slave (reporting 0) starts at the oldest segment this master still
//! holds (Apache's master would start it at its newest segment), so it gets all of the log.

use std::cell::Cell;
use std::rc::Rc;

use glommio::net::TcpStream;

use crate::error::HaError;
use crate::master::{check_start, read_acks, stream_frames, Framing, MasterShard};
use crate::wire;

/// Where an Apache slave reporting `reported` starts, or why it cannot follow this shard.
pub fn apache_start(ms: &MasterShard, reported: i64) -> Result<i64, String> {
    if ms.store.shard_id() != 0 {
        return Err("an Apache slave can only follow shard 0 of a one-shard master".into());
    }
    let from = if reported == 0 {
        ms.store.min_physical_offset()
    } else {
        reported
    };
    check_start(&ms.store, from).map(|()| from)
}

/// Serves one Apache slave whose first report was `reported`, until either side fails. A slave this
/// master cannot serve is closed (Apache's protocol has no refusal message) and the reason returned.
pub async fn serve_apache_slave(
    mut stream: TcpStream,
    ms: MasterShard,
    reported: i64,
) -> Result<(), HaError> {
    let _ = stream.set_nodelay(true);
    let from = match apache_start(&ms, reported) {
        Ok(f) => f,
        Err(reason) => {
            let _ = futures_lite::AsyncWriteExt::close(&mut stream).await;
            return Err(HaError::Refused(reason));
        }
    };
    let conn = ms.watermark.connected_as(from, wire::NO_BROKER_ID);
    if let Ok(peer) = stream.peer_addr() {
        ms.watermark.set_addr(conn, peer.to_string());
    }
    let rate = ms.watermark.rate(conn).unwrap_or_default();
    let closed = Rc::new(Cell::new(false));
    let (reader, writer) = futures_lite::io::split(stream);
    let acks = glommio::spawn_local(read_acks(reader, ms.clone(), conn, closed.clone()));
    let result = stream_frames(writer, &ms, from, &closed, &rate, Framing::Apache).await;
    closed.set(true);
    ms.watermark.disconnected(conn);
    drop(acks.cancel());
    result
}
