//! Property test: random appends, batch appends, pulls (with and without a tag filter), reads by
//! physical offset and clean reopenings, checked against an in-memory model.

mod common;

use std::collections::HashMap;

use common::{body, message, run, small_config};
use proptest::prelude::*;
use protocol::message::properties;
use protocol::message::record::decode_view;
use storage::{FlushDiskType, GetMessageStatus, MessageStore};

#[derive(Debug, Clone)]
enum Op {
    Put {
        topic: u8,
        queue: i32,
        len: usize,
        tag: u8,
    },
    Batch {
        topic: u8,
        queue: i32,
        n: usize,
        len: usize,
    },
    Get {
        topic: u8,
        queue: i32,
        back: i64,
        max_count: i32,
        max_bytes: usize,
        tag: Option<u8>,
    },
    ReadByPhys {
        pick: usize,
    },
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..2, 0i32..3, 0usize..2500, 0u8..3).prop_map(|(topic, queue, len, tag)| Op::Put { topic, queue, len, tag }),
        1 => (0u8..2, 0i32..3, 1usize..6, 0usize..800).prop_map(|(topic, queue, n, len)| Op::Batch { topic, queue, n, len }),
        4 => (0u8..2, 0i32..4, -2i64..14, 1i32..8, 1usize..6000, proptest::option::of(0u8..3))
            .prop_map(|(topic, queue, back, max_count, max_bytes, tag)| Op::Get { topic, queue, back, max_count, max_bytes, tag }),
        1 => any::<usize>().prop_map(|pick| Op::ReadByPhys { pick }),
        1 => Just(Op::Reopen),
    ]
}

/// One modelled record.
#[derive(Debug, Clone)]
struct Rec {
    phys: i64,
    seed: u64,
    len: usize,
    tag: u8,
}

fn topic_name(t: u8) -> String {
    format!("Model{t}")
}

fn tag_name(t: u8) -> String {
    format!("Tag{t}")
}

async fn check_get(
    store: &MessageStore,
    model: &HashMap<(u8, i32), Vec<Rec>>,
    topic: u8,
    queue: i32,
    back: i64,
    max_count: i32,
    max_bytes: usize,
    tag: Option<u8>,
) {
    let recs = model.get(&(topic, queue)).cloned().unwrap_or_default();
    let max = recs.len() as i64;
    let offset = max - back;
    let filter_code = tag.map(|t| properties::tags_code(&tag_name(t)));
    let filter = move |code: i64| Some(code) == filter_code;
    let f: Option<&dyn Fn(i64) -> bool> = if tag.is_some() { Some(&filter) } else { None };
    let got = store
        .get_messages(&topic_name(topic), queue, offset, max_count, max_bytes, f)
        .await
        .expect("get");
    assert_eq!(got.max_offset, max);
    if max == 0 {
        assert!(matches!(
            got.status,
            GetMessageStatus::NoMatchedLogicQueue | GetMessageStatus::NoMessageInQueue
        ));
        return;
    }
    if offset < 0 {
        assert_eq!(got.status, GetMessageStatus::OffsetTooSmall);
        assert_eq!(got.next_begin_offset, 0);
        return;
    }
    if offset > max {
        assert_eq!(got.status, GetMessageStatus::OffsetOverflowBadly);
        assert_eq!(
            got.next_begin_offset, 0,
            "min is 0, so RocketMQ moves to it"
        );
        return;
    }
    if offset == max {
        assert_eq!(got.status, GetMessageStatus::OffsetOverflowOne);
        assert_eq!(got.next_begin_offset, max);
        return;
    }
    // Expected: walk from offset like the store: stop at max_count or when bytes would exceed max_bytes.
    let mut expected = Vec::new();
    let mut bytes = 0usize;
    let mut next = offset;
    let scan_limit = if tag.is_some() {
        i64::from(max_count).max(800)
    } else {
        i64::from(max_count)
    };
    for (o, r) in recs
        .iter()
        .enumerate()
        .skip(offset as usize)
        .take(scan_limit as usize)
    {
        if expected.len() as i32 >= max_count {
            break;
        }
        // RocketMQ checks the batch limits with the unit's size before the tag filter.
        let size = got_size(r);
        if !expected.is_empty() && bytes + size > max_bytes {
            break;
        }
        if tag.is_some_and(|t| t != r.tag) {
            next = o as i64 + 1;
            continue;
        }
        bytes += size;
        expected.push(r.clone());
        next = o as i64 + 1;
    }
    if expected.is_empty() {
        assert_eq!(got.status, GetMessageStatus::NoMatchedMessage);
    } else {
        assert_eq!(got.status, GetMessageStatus::Found);
    }
    assert_eq!(got.records.len(), expected.len());
    for (rec, r) in got.records.iter().zip(&expected) {
        let view = decode_view(rec, true).expect("valid");
        assert_eq!(view.physical_offset, r.phys);
        assert_eq!(view.body, &body(r.seed, r.len)[..]);
    }
    assert_eq!(got.next_begin_offset, next);
}

/// Stored size of a modelled record (the same message encodes to the same length).
fn got_size(r: &Rec) -> usize {
    message("Model0", 0, &body(r.seed, r.len), &tag_name(r.tag), "", "").encoded_len()
}

fn run_ops(ops: Vec<Op>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let open = || MessageStore::open(small_config(&path, FlushDiskType::AsyncFlush));
        let mut store = open().await.expect("open");
        let mut model: HashMap<(u8, i32), Vec<Rec>> = HashMap::new();
        let mut all: Vec<Rec> = Vec::new();
        let mut seed = 0u64;
        for op in ops {
            match op {
                Op::Put {
                    topic,
                    queue,
                    len,
                    tag,
                } => {
                    seed += 1;
                    let ok = store
                        .put(message(
                            &topic_name(topic),
                            queue,
                            &body(seed, len),
                            &tag_name(tag),
                            "",
                            "",
                        ))
                        .await
                        .expect("put");
                    let q = model.entry((topic, queue)).or_default();
                    assert_eq!(ok.queue_offset, q.len() as i64);
                    let r = Rec {
                        phys: ok.physical_offset,
                        seed,
                        len,
                        tag,
                    };
                    q.push(r.clone());
                    all.push(r);
                }
                Op::Batch {
                    topic,
                    queue,
                    n,
                    len,
                } => {
                    let msgs = (0..n)
                        .map(|i| {
                            message(
                                &topic_name(topic),
                                queue,
                                &body(seed + 1 + i as u64, len),
                                &tag_name(0),
                                "",
                                "",
                            )
                        })
                        .collect();
                    let oks = store.put_batch(msgs).await.expect("batch");
                    for ok in oks {
                        seed += 1;
                        let q = model.entry((topic, queue)).or_default();
                        assert_eq!(ok.queue_offset, q.len() as i64);
                        let r = Rec {
                            phys: ok.physical_offset,
                            seed,
                            len,
                            tag: 0,
                        };
                        q.push(r.clone());
                        all.push(r);
                    }
                }
                Op::Get {
                    topic,
                    queue,
                    back,
                    max_count,
                    max_bytes,
                    tag,
                } => {
                    check_get(
                        &store, &model, topic, queue, back, max_count, max_bytes, tag,
                    )
                    .await;
                }
                Op::ReadByPhys { pick } => {
                    if let Some(r) = all.get(pick % all.len().max(1)) {
                        let rec = store
                            .read_record(r.phys)
                            .await
                            .expect("read")
                            .expect("present");
                        assert_eq!(
                            decode_view(&rec, true).expect("valid").body,
                            &body(r.seed, r.len)[..]
                        );
                    }
                }
                Op::Reopen => {
                    store.shutdown().await;
                    store = open().await.expect("reopen");
                }
            }
        }
        for ((t, q), recs) in &model {
            assert_eq!(store.max_offset(&topic_name(*t), *q), recs.len() as i64);
        }
        store.shutdown().await;
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, max_shrink_iters: 50, ..ProptestConfig::default() })]

    #[test]
    fn store_matches_model(ops in proptest::collection::vec(op(), 1..120)) {
        run_ops(ops);
    }
}
