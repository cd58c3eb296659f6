//! Controller mode: the confirm offset readers are held at (RocketMQ 5's `CommitLog.getConfirmOffset`
//! with `readUnCommitted` false). A master with `allAckInSyncStateSet` and other members in its
//! SyncStateSet shows a record to pulls, POP and max-offset answers only once every member has
//! acknowledged it: the least ack of the other members (kept where it was while one of them is not
//! connected). Replicas joining the set count as members from the moment they are chosen, before
//! the log end they must reach is read, so nothing stored during a join is shown before they hold
//! it. A master alone in its set (none joining it), or without `allAckInSyncStateSet`, holds nothing
//! back (the gate is lifted, as Apache's confirm offset is then the log's end). A slave's gate
//! moves with the confirm offset its master sends with every frame (`ha` version 3, as Apache's
//! transfer header), never past what it holds: a slave serves no record its master does not (a
//! client whose route lists no master pulls from a slave); a deposed master's own unconfirmed tail
//! stays hidden until it follows the new master. A restarted replica opens with the gate at the
//! confirm offset its last checkpoint kept (`StoreConfig::confirm_gate_at_open`, RocketMQ 5's
//! `confirmPhyOffset`), and it stays there until the controllers give it a role.

use crate::config::BrokerRole;
use crate::shard::Shard;

/// Recomputes this shard's confirm offset (after an ack, a put, a role or SyncStateSet change).
pub fn update(shard: &Shard) {
    let cfg = &shard.cfg.controller;
    if !cfg.enabled || cfg.read_un_committed || shard.role() == BrokerRole::Slave {
        return;
    }
    if shard.chosen_role.get().is_none() {
        // No role from the controllers yet: the gate stays where the store opened it.
        return;
    }
    let state = crate::replication::ha_state::ha(shard);
    let me = state.controller_id.get();
    // Replicas joining the set count as members: puts already wait for them, and a record shown
    // before a joiner holds it would be lost if the joiner, once a member, were elected.
    let others: Vec<u64> = {
        let members = state.sync_state_set.borrow();
        let joining = state.joining.borrow();
        members
            .union(&joining)
            .copied()
            .filter(|id| Some(*id) != me)
            .collect()
    };
    let store = &shard.store;
    let end = store.max_physical_offset();
    if !cfg.all_ack_in_sync_state_set || others.is_empty() {
        store.set_confirm_gate(None);
        return;
    }
    if store.confirm_offset().is_none() {
        // What readers see already stays visible; what comes next waits for the set.
        store.set_confirm_gate(Some(end));
        return;
    }
    let mut confirm = end;
    for id in others {
        let Some(acked) = i64::try_from(id)
            .ok()
            .and_then(|id| state.watermark.acked_of(id))
        else {
            // A member not connected: the confirm offset cannot be computed, it stays.
            return;
        };
        confirm = confirm.min(acked);
    }
    store.set_confirm_offset(confirm);
}

/// Controller mode: recompute the confirm offset after every replica ack of this shard.
pub fn start(shard: &std::rc::Rc<Shard>) {
    let weak = std::rc::Rc::downgrade(shard);
    crate::replication::ha_state::ha(shard)
        .watermark
        .set_ack_hook(Box::new(move || {
            if let Some(s) = weak.upgrade() {
                update(&s);
            }
        }));
}

#[cfg(test)]
mod tests {
    //! The gate of a master alone in its SyncStateSet while a replica joins it: a record stored
    //! after the log end the joiner must reach (`ha::caught_up_slaves`'s mark) is not read before
    //! the joiner holds it, and a join that fails lifts the gate again.

    use std::collections::BTreeSet;
    use std::rc::Rc;
    use std::time::Duration;

    use glommio::channels::channel_mesh::MeshBuilder;
    use protocol::message::record::MessageRecord;
    use storage::MessageStore;

    use super::*;
    use crate::config::BrokerConfig;
    use crate::shard::mesh::Mesh;
    use crate::shard::ShardParts;

    const TOPIC: &str = "JoinGate";
    /// The master's controller brokerId; the joining replica's is `JOINER`.
    const ME: u64 = 1;
    const JOINER: u64 = 2;

    /// A one-shard controller-mode master (`allAckInSyncStateSet`) alone in its SyncStateSet, on a
    /// store under `dir`, its gate lifted.
    async fn lone_master(dir: &std::path::Path) -> Rc<Shard> {
        let mut cfg = BrokerConfig {
            store_path_root_dir: dir.to_owned(),
            mapped_file_size_commit_log: 64 * 1024,
            mapped_file_size_consume_queue: 50 * 20,
            max_message_size: 16 * 1024,
            ..BrokerConfig::default()
        };
        cfg.controller.enabled = true;
        cfg.controller.all_ack_in_sync_state_set = true;
        cfg.controller.read_un_committed = false;
        let cfg = Rc::new(cfg);
        let (senders, _receivers) = crate::startup::mesh_join::join(MeshBuilder::full(1, 16))
            .await
            .expect("a one-shard mesh");
        let store = MessageStore::open(
            crate::startup::store_config::store_config(&cfg, 0).expect("store config"),
        )
        .await
        .expect("store opens");
        let shard = Rc::new(Shard::new(ShardParts {
            id: 0,
            shards: 1,
            cfg: cfg.clone(),
            broker: cfg.shard_broker(0, 1).expect("shard broker"),
            store_host: "127.0.0.1:10911".parse().expect("addr"),
            store,
            mesh: Mesh::new(senders),
            topics: Default::default(),
            groups: Default::default(),
            offsets: Default::default(),
            auth: Default::default(),
            control: None,
        }));
        start(&shard);
        let state = crate::replication::ha_state::ha(&shard);
        state.controller_id.set(Some(ME));
        *state.sync_state_set.borrow_mut() = BTreeSet::from([ME]);
        shard.chosen_role.set(Some((BrokerRole::SyncMaster, 0)));
        update(&shard);
        assert_eq!(
            shard.store.confirm_offset(),
            None,
            "a master alone holds nothing back"
        );
        shard
    }

    /// Stores one record; answers the log end after it.
    async fn put(shard: &Shard, n: u8) -> i64 {
        let msg = MessageRecord {
            topic: TOPIC.to_owned(),
            body: bytes::Bytes::from(vec![n; 100]),
            ..MessageRecord::default()
        };
        shard.store.put(msg).await.expect("put");
        shard.store.max_physical_offset()
    }

    fn readable(shard: &Shard) -> i64 {
        shard.store.readable_max_offset(TOPIC, 0)
    }

    /// Two records on a master alone, the joiner caught up to the first one only (within the join
    /// window), then a SyncStateSet round started: answers its task and the joiner's connection.
    async fn start_join(shard: &Rc<Shard>, join_ms: u64) -> (glommio::Task<BTreeSet<u64>>, u64) {
        let wm = crate::replication::ha_state::ha(shard).watermark.clone();
        let first = put(shard, 0).await;
        let conn = wm.connected_as(first, i64::try_from(JOINER).expect("id"));
        wm.ack(conn, first, first);
        put(shard, 1).await;
        assert_eq!(readable(shard), 2, "a master alone shows what it stores");
        let s = shard.clone();
        let round = glommio::spawn_local(async move {
            crate::replication::ha::caught_up_slaves(&s, 120_000, join_ms, &BTreeSet::from([ME]))
                .await
        });
        // The round marks the log end and waits for the joiner to hold it.
        glommio::timer::sleep(Duration::from_millis(20)).await;
        assert!(crate::replication::ha_state::ha(shard)
            .joining
            .borrow()
            .contains(&JOINER));
        (round, conn)
    }

    fn run<Fut: std::future::Future<Output = ()> + 'static>(
        f: impl FnOnce(std::path::PathBuf) -> Fut + Send + 'static,
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().to_owned();
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                f(path).await;
                // Files dropped with the store close in the executor's next I/O cycle.
                glommio::timer::sleep(Duration::from_millis(1)).await;
            })
            .expect("executor")
            .join()
            .expect("test executor");
    }

    #[test]
    fn a_record_stored_while_a_replica_joins_is_not_read_before_it_holds_it() {
        run(|dir| async move {
            let shard = lone_master(&dir).await;
            let wm = crate::replication::ha_state::ha(&shard).watermark.clone();
            let (round, conn) = start_join(&shard, 5_000).await;
            let mark = shard.store.max_physical_offset();
            let third = put(&shard, 2).await;
            assert_eq!(
                readable(&shard),
                2,
                "a record stored during the join is read before the joiner holds it"
            );
            assert_eq!(shard.store.confirm_offset(), Some(mark));
            // The joiner reaches the mark: it joins, and the record past it still waits for it.
            wm.ack(conn, mark, third);
            assert_eq!(round.await, BTreeSet::from([JOINER]));
            assert_eq!(readable(&shard), 2);
            wm.ack(conn, third, third);
            assert_eq!(readable(&shard), 3, "the joiner's ack shows the record");
            // The controllers take it into the set: the gate stays, moved by its acks.
            crate::replication::role_change::sync_state_set_changed(
                &shard,
                BTreeSet::from([ME, JOINER]),
            );
            crate::replication::role_change::end_joining(&shard);
            assert_eq!(shard.store.confirm_offset(), Some(third));
        });
    }

    #[test]
    fn a_failed_join_lifts_the_gate_of_a_master_still_alone() {
        run(|dir| async move {
            let shard = lone_master(&dir).await;
            let (round, _conn) = start_join(&shard, 300).await;
            put(&shard, 2).await;
            assert_eq!(
                readable(&shard),
                2,
                "a record stored during the join is read before the joiner holds it"
            );
            // The joiner never reaches the mark: the round ends without it.
            assert_eq!(round.await, BTreeSet::new());
            crate::replication::role_change::end_joining(&shard);
            assert_eq!(shard.store.confirm_offset(), None);
            assert_eq!(readable(&shard), 3, "a master alone again shows it all");
        });
    }
}
