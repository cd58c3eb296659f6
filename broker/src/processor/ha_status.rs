//! The HA admin codes: GET_BROKER_HA_STATUS (907, `mqadmin haStatus`) answers Apache's
//! `HARuntimeInfo` for the broker the request reached: as a master, its slaves (address, acked
//! offset, how far behind, in sync or not, bytes sent per second, where each stream started); as a
//! slave, its master's HA address, its own log end, bytes received per second, when it last read a
//! frame and wrote a report, and the master flush offset last set. GET_BROKER_EPOCH_CACHE (1007,
//! `getBrokerEpoch`) answers the epoch entries of its log (controller mode only, as Apache).
//! RESET_MASTER_FLUSH_OFFSET (908, `resetMasterFlushOffset`) records, on a slave, the offset
//! `haStatus` shows as `masterFlushOffset` (a master ignores it, as Apache's does).
//!
//! Offsets are shard-local (the shard bits of physical offsets taken off), so they read as Apache's
//! do: from 0 up to the log's end. A shard is one replication stream; when the shards of one process
//! make one broker (`shardRouting = forward`), 907 lists the slaves of every shard, one line per
//! stream, and sums the log ends.

use std::cell::Cell;
use std::rc::Rc;

use protocol::body::{
    EpochEntryCache, EpochEntryJson, HaClientRuntimeInfo, HaConnectionRuntimeInfo, HaRuntimeInfo,
};
use protocol::header::{CommandHeader, ResetMasterFlushOffsetHeader};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::config::BrokerRole;
use crate::replication::ha_state::ha;
use crate::shard::mesh::join_all;
use crate::shard::Shard;

/// The master flush offset RESET_MASTER_FLUSH_OFFSET set on a slave (0 until then, as Apache's
/// checkpoint starts). Kept in memory: Apache keeps it in its checkpoint file and uses it for nothing
/// but this report.
#[derive(Default)]
struct MasterFlushOffset(Cell<i64>);

/// What one shard (one stream) says about its replication.
struct ShardHa {
    master: bool,
    max_offset: i64,
    connections: Vec<HaConnectionRuntimeInfo>,
    client: HaClientRuntimeInfo,
}

fn local(offset: i64) -> i64 {
    i64::try_from(storage::local_of(offset)).unwrap_or(i64::MAX)
}

fn shard_ha(shard: &Shard) -> ShardHa {
    let state = ha(shard);
    let max_physical = shard.store.max_physical_offset();
    let master = shard.role() != BrokerRole::Slave;
    let sync_set = state.sync_state_set.borrow().clone();
    let controller = shard.cfg.controller.enabled;
    let gap = i64::try_from(shard.cfg.ha_max_gap_not_in_sync).unwrap_or(i64::MAX);
    let connections = if master {
        state
            .watermark
            .transfers()
            .into_iter()
            .map(|t| {
                let diff = max_physical.saturating_sub(t.acked).max(0);
                // Controller mode: in the SyncStateSet; classic: within haMaxGapNotInSync.
                let in_sync = if controller {
                    u64::try_from(t.broker_id).is_ok_and(|id| sync_set.contains(&id))
                } else {
                    diff <= gap
                };
                HaConnectionRuntimeInfo {
                    addr: Some(t.addr).filter(|a| !a.is_empty()),
                    slave_ack_offset: local(t.acked),
                    diff,
                    in_sync,
                    transferred_byte_in_second: i64::try_from(t.bytes_per_second)
                        .unwrap_or(i64::MAX),
                    transfer_from_where: local(t.transfer_from),
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    let slave = &state.slave;
    let master_addr = shard
        .cfg
        .ha_master_address
        .clone()
        .or_else(|| state.master_ha_addr.borrow().clone())
        .or_else(|| slave.master_addr.borrow().clone());
    // A master's client part stays empty, as Apache's.
    let client = if master {
        HaClientRuntimeInfo::default()
    } else {
        HaClientRuntimeInfo {
            master_addr,
            transferred_byte_in_second: i64::try_from(slave.rate.per_second()).unwrap_or(i64::MAX),
            max_offset: local(max_physical),
            last_read_timestamp: slave.last_append_ms.get(),
            last_write_timestamp: slave.last_report_ms.get(),
            master_flush_offset: shard.extensions.get::<MasterFlushOffset>().0.get(),
        }
    };
    ShardHa {
        master,
        max_offset: local(max_physical),
        connections,
        client,
    }
}

/// GET_BROKER_HA_STATUS: the broker reached through shard `receiver`.
pub async fn ha_status(shard: &Rc<Shard>, receiver: usize) -> RemotingCommand {
    let calls = shard.broker_shards(receiver).map(|s| {
        shard
            .mesh
            .call(s.id(), "ha_status", |s: Rc<Shard>| async move {
                let h = shard_ha(&s);
                (h.master, h.max_offset, h.connections, h.client)
            })
    });
    let mut info = HaRuntimeInfo::default();
    let mut first = true;
    for answer in join_all(calls).await {
        let Ok((master, max_offset, connections, client)) = answer else {
            return error(
                rc::SYSTEM_ERROR,
                "a shard did not answer for its replication",
            );
        };
        info.master = master;
        info.master_commit_log_max_offset =
            info.master_commit_log_max_offset.saturating_add(max_offset);
        info.ha_connection_info.extend(connections);
        if first {
            info.ha_client_runtime_info = client;
            first = false;
        } else {
            let c = &mut info.ha_client_runtime_info;
            c.max_offset = c.max_offset.saturating_add(client.max_offset);
            c.transferred_byte_in_second = c
                .transferred_byte_in_second
                .saturating_add(client.transferred_byte_in_second);
            c.last_read_timestamp = c.last_read_timestamp.max(client.last_read_timestamp);
            c.last_write_timestamp = c.last_write_timestamp.max(client.last_write_timestamp);
        }
    }
    if !info.master {
        info.master_commit_log_max_offset = 0;
    }
    info.in_sync_slave_nums = info
        .ha_connection_info
        .iter()
        .filter(|c| c.in_sync)
        .count()
        .try_into()
        .unwrap_or(i32::MAX);
    ok().with_body(protocol::body::to_json(&info))
}

/// The epoch entries of a log as Apache lists them: each ends where the next starts, the last at
/// Java's `Long.MAX_VALUE`.
pub fn epoch_list(entries: &[storage::EpochEntry]) -> Vec<EpochEntryJson> {
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| EpochEntryJson {
            epoch: i32::try_from(e.epoch).unwrap_or(i32::MAX),
            start_offset: local(e.start_offset),
            end_offset: entries
                .get(i + 1)
                .map_or(i64::MAX, |next| local(next.start_offset)),
        })
        .collect()
}

/// GET_BROKER_EPOCH_CACHE: the epochs of the receiving shard's log.
pub fn epoch_cache(shard: &Shard, receiver: usize) -> RemotingCommand {
    if !shard.cfg.controller.enabled {
        // Apache's answer, word for word.
        return error(rc::SYSTEM_ERROR, "this request only for controllerMode ");
    }
    let cache = EpochEntryCache {
        cluster_name: shard.cfg.broker_cluster_name.clone(),
        broker_name: shard.broker_name_of(receiver),
        broker_id: i64::try_from(shard.broker_id()).unwrap_or(i64::MAX),
        epoch_list: epoch_list(&shard.store.epochs()),
        max_offset: local(shard.store.max_physical_offset()),
    };
    ok().with_body(protocol::body::to_json(&cache))
}

/// RESET_MASTER_FLUSH_OFFSET: a slave records the offset on every shard of the broker the request
/// reached; a master answers SUCCESS and keeps nothing, as Apache's does.
pub async fn reset_master_flush_offset(
    shard: &Rc<Shard>,
    req: &RemotingCommand,
    receiver: usize,
) -> RemotingCommand {
    let header = match ResetMasterFlushOffsetHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    if shard.broker_id() == 0 {
        return ok();
    }
    let offset = header.master_flush_offset;
    let calls = shard.broker_shards(receiver).map(|s| {
        shard.mesh.call(
            s.id(),
            "reset_master_flush_offset",
            move |s: Rc<Shard>| async move {
                s.extensions.get::<MasterFlushOffset>().0.set(offset);
            },
        )
    });
    if join_all(calls).await.iter().any(Result::is_err) {
        return error(
            rc::SYSTEM_ERROR,
            "a shard did not take the master flush offset",
        );
    }
    tracing::info!("master flush offset set to {offset} by an admin");
    ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_end_where_the_next_starts() {
        let list = epoch_list(&[
            storage::EpochEntry {
                epoch: 1,
                start_offset: 0,
            },
            storage::EpochEntry {
                epoch: 3,
                start_offset: 500,
            },
        ]);
        assert_eq!(
            list,
            vec![
                EpochEntryJson {
                    epoch: 1,
                    start_offset: 0,
                    end_offset: 500
                },
                EpochEntryJson {
                    epoch: 3,
                    start_offset: 500,
                    end_offset: i64::MAX
                },
            ]
        );
    }
}
