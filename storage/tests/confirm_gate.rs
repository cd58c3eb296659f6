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
