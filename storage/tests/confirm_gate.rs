//! The confirm-offset gate: with it, a stored record is invisible to pulls and to the max offset
//! readers see until the confirm offset covers its CommitLog end; the long-polling hook fires when
//! the confirm offset passes it, not at the append; lifting the gate shows everything; a tail cut
//! lowers it. And the correction of an offset past a queue's end (to the max offset, as RocketMQ).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::{body, message, run, small_config};
use storage::{FlushDiskType, GetMessageStatus, MessageStore};

const TOPIC: &str = "Gate";

fn msg(seed: u64) -> protocol::message::record::MessageRecord {
    message(TOPIC, 0, &body(seed, 200), "T", &format!("k{seed}"), "")
}

async fn open(dir: &std::path::Path) -> MessageStore {
    MessageStore::open(small_config(dir, FlushDiskType::SyncFlush))
        .await
        .unwrap()
}

#[test]
fn records_past_the_confirm_offset_are_not_read_until_it_passes_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    run(move || async move {
        let store = open(&path).await;
        let woken: Rc<RefCell<Vec<i64>>> = Rc::default();
        let w = woken.clone();
        store.set_arrival_listener(Box::new(move |_, _, max| w.borrow_mut().push(max)));
        let first = store.put(msg(0)).await.unwrap();
        // The gate at the log's end: what is stored stays readable.
        store.set_confirm_gate(Some(store.max_physical_offset()));
        assert_eq!(woken.borrow().as_slice(), &[1]);
        let second = store.put(msg(1)).await.unwrap();
        let third = store.put(msg(2)).await.unwrap();
        assert_eq!(store.max_offset(TOPIC, 0), 3);
        assert_eq!(store.readable_max_offset(TOPIC, 0), 1);
        assert_eq!(store.visible_max_offset(TOPIC, 0), 1);
        assert_eq!(
            woken.borrow().len(),
            1,
            "no wake-up before the confirm offset moves"
        );
        let got = store
            .get_messages(TOPIC, 0, 0, 32, 1 << 20, None)
            .await
            .unwrap();
        assert_eq!(got.status, GetMessageStatus::Found);
        assert_eq!(got.records.len(), 1);
        assert_eq!(got.next_begin_offset, 1);
        assert_eq!(got.max_offset, 1);
        let got = store
            .get_messages(TOPIC, 0, 1, 32, 1 << 20, None)
            .await
            .unwrap();
        assert_eq!(got.status, GetMessageStatus::OffsetOverflowOne);
        assert!(got.records.is_empty());

        // Halfway: the second record is covered, the third not.
        let second_end = second.physical_offset + i64::from(second.size);
        store.set_confirm_offset(second_end);
        assert_eq!(woken.borrow().as_slice(), &[1, 2]);
        assert_eq!(store.readable_max_offset(TOPIC, 0), 2);
        let got = store
            .get_messages(TOPIC, 0, 1, 32, 1 << 20, None)
            .await
            .unwrap();
        assert_eq!(got.records.len(), 1);
        assert_eq!(got.next_begin_offset, 2);
        // Never backwards.
        store.set_confirm_offset(first.physical_offset);
        assert_eq!(store.confirm_offset(), Some(second_end));

        store.set_confirm_offset(third.physical_offset + i64::from(third.size));
        assert_eq!(woken.borrow().as_slice(), &[1, 2, 3]);
        assert_eq!(store.readable_max_offset(TOPIC, 0), 3);
        let got = store
            .get_messages(TOPIC, 0, 2, 32, 1 << 20, None)
            .await
            .unwrap();
        assert_eq!(got.records.len(), 1);

        // Lifting the gate shows what it held, and announces it.
        store.put(msg(3)).await.unwrap();
        assert_eq!(store.readable_max_offset(TOPIC, 0), 3);
        store.set_confirm_gate(None);
        assert_eq!(store.confirm_offset(), None);
        assert_eq!(woken.borrow().last(), Some(&4));
        assert_eq!(store.readable_max_offset(TOPIC, 0), 4);
        let got = store
            .get_messages(TOPIC, 0, 3, 32, 1 << 20, None)
            .await
            .unwrap();
        assert_eq!(got.records.len(), 1);
        // Without a gate an append is announced at once.
        store.put(msg(4)).await.unwrap();
        assert_eq!(woken.borrow().last(), Some(&5));
        store.shutdown().await;
    });
}

#[test]
fn a_tail_cut_lowers_the_confirm_offset_and_drops_what_it_held() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    run(move || async move {
        let store = open(&path).await;
        let a = store.put(msg(0)).await.unwrap();
        let b = store.put(msg(1)).await.unwrap();
        let a_end = a.physical_offset + i64::from(a.size);
        store.set_confirm_gate(Some(b.physical_offset + i64::from(b.size)));
        store.put(msg(2)).await.unwrap();
        store.truncate_tail(a_end).await.unwrap();
        assert_eq!(store.confirm_offset(), Some(a_end));
        assert_eq!(store.max_offset(TOPIC, 0), 1);
        // Written again at the cut offsets: hidden until confirmed, as any new record.
        store.put(msg(3)).await.unwrap();
        assert_eq!(store.readable_max_offset(TOPIC, 0), 1);
        let got = store
            .get_messages(TOPIC, 0, 1, 32, 1 << 20, None)
            .await
            .unwrap();
        assert!(got.records.is_empty());
        store.set_confirm_offset(store.max_physical_offset());
        assert_eq!(store.readable_max_offset(TOPIC, 0), 2);
        store.shutdown().await;
    });
}

#[test]
fn an_offset_past_the_end_is_moved_to_the_max_offset_even_when_the_min_is_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    run(move || async move {
        let store = open(&path).await;
        for s in 0..3 {
            store.put(msg(s)).await.unwrap();
        }
        assert_eq!(store.min_offset(TOPIC, 0), 0);
        let got = store
            .get_messages(TOPIC, 0, 40, 32, 1 << 20, None)
            .await
            .unwrap();
        assert_eq!(got.status, GetMessageStatus::OffsetOverflowBadly);
        assert_eq!(
            got.next_begin_offset, 3,
            "RocketMQ's nextOffsetCorrection(offset, maxOffset)"
        );
        store.shutdown().await;
    });
}

/// A slave shows no replicated record past its master's confirm offset (`set_replica_bound`,
/// RocketMQ 5's slave taking the confirm offset of its master's transfer header): the records it
/// holds above it stay out of reads and of the max offset, and the long-polling hook fires when the
/// master's confirm offset passes them. Without a bound the gate follows what is replicated. Chaos
/// seed 1728471827: a client whose route listed no master read a deposed master's unconfirmed tail
/// from its slave, which showed everything it had replicated.
#[test]
fn a_slave_shows_only_what_its_master_confirmed() {
    let master_dir = tempfile::tempdir().unwrap();
    let slave_dir = tempfile::tempdir().unwrap();
    let (m, s) = (master_dir.path().to_owned(), slave_dir.path().to_owned());
    run(move || async move {
        let master = open(&m).await;
        let mut cfg = small_config(&s, FlushDiskType::SyncFlush);
        cfg.confirm_gate_at_open = true;
        let slave = MessageStore::open(cfg).await.unwrap();
        let woken: Rc<RefCell<Vec<i64>>> = Rc::default();
        let w = woken.clone();
        slave.set_arrival_listener(Box::new(move |_, _, max| w.borrow_mut().push(max)));
        let mut ends = Vec::new();
        for i in 0..4 {
            let ok = master.put(msg(i)).await.unwrap();
            ends.push(ok.physical_offset + i64::from(ok.size));
        }
        // The master confirmed the first two: its other in-sync replica holds only those.
        slave.set_replica_bound(Some(i64::MIN));
        slave.set_replica_bound(Some(ends[1]));
        let mut pos = slave.max_physical_offset();
        while pos < master.max_physical_offset() {
            let chunk = master.read_commitlog(pos, 1 << 20).await.unwrap();
            pos = slave.append_replicated(pos, &chunk).await.unwrap();
        }
        assert_eq!(slave.max_offset(TOPIC, 0), 4);
        assert_eq!(slave.confirm_offset(), Some(ends[1]));
        assert_eq!(
            slave.readable_max_offset(TOPIC, 0),
            2,
            "the slave counts records its master has not confirmed"
        );
        let got = slave
            .get_messages(TOPIC, 0, 0, 32, 1 << 20, None)
            .await
            .unwrap();
        assert_eq!(got.records.len(), 2);
        let got = slave
            .get_messages(TOPIC, 0, 2, 32, 1 << 20, None)
            .await
            .unwrap();
        assert!(
            got.records.is_empty(),
            "the slave served a record its master has not confirmed"
        );
        assert_eq!(woken.borrow().last().copied(), Some(2));
        // The master's confirm offset passes the third: it shows, and the hook says so.
        slave.set_replica_bound(Some(ends[2]));
        assert_eq!(slave.readable_max_offset(TOPIC, 0), 3);
        assert_eq!(woken.borrow().last().copied(), Some(3));
        // Past the slave's own end: the gate stops at what it holds.
        slave.set_replica_bound(Some(ends[3] + 1000));
        assert_eq!(slave.confirm_offset(), Some(ends[3]));
        assert_eq!(slave.readable_max_offset(TOPIC, 0), 4);
        let got = slave
            .get_messages(TOPIC, 0, 2, 32, 1 << 20, None)
            .await
            .unwrap();
        assert_eq!(got.records.len(), 2);
        // Without a bound (a master that sends none) the gate follows what is replicated.
        slave.set_replica_bound(None);
        let ok = master.put(msg(4)).await.unwrap();
        let chunk = master.read_commitlog(pos, 1 << 20).await.unwrap();
        pos = slave.append_replicated(pos, &chunk).await.unwrap();
        assert_eq!(pos, ok.physical_offset + i64::from(ok.size));
        assert_eq!(slave.readable_max_offset(TOPIC, 0), 5);
        master.shutdown().await;
        slave.shutdown().await;
    });
}
