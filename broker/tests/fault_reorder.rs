//! Fault injection: requests written in one order on different connections arrive at the broker in
//! another (the proxy holds each chunk for a seeded random delay). Every acknowledged send's queue,
//! offset and msgId read back the body and keys it was sent with (answers matched to their requests),
//! none is lost, an ordered producer keeps its order, and reordered offset commits leave the offset
//! the last arriving commit set, as RocketMQ does.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod fault_support;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use common::*;
use fault_support::acked::{read_queue, Ledger};
use fault_support::proxy::{FaultProxy, Mode};
use protocol::header::pull_sys_flag;
use protocol::message::{batch, msgid, properties};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

const TOPIC: &str = "Reordered";
const ORDERED: &str = "ReorderedInOrder";
/// Each chunk is held 0..=MAX_HOLD, so requests less than that apart on two connections swap.
const MAX_HOLD: Duration = Duration::from_millis(25);
const SEED: u64 = 0x2026_1202;
/// A send not answered by then is sent again on a new connection (at-least-once).
const SEND_LIMIT: Duration = Duration::from_secs(5);

fn reorder() -> Mode {
    Mode::Reorder {
        max: MAX_HOLD,
        seed: SEED,
    }
}

/// One message as sent: its id is in its body and its keys.
#[derive(Clone)]
struct Outgoing {
    id: String,
    body: Vec<u8>,
    properties: String,
}

fn outgoing(id: String, size: usize) -> Outgoing {
    // The body starts with the id and its filler is derived from it: any mix-up shows.
    let filler: String = id.chars().cycle().take(size).collect();
    Outgoing {
        body: format!("{id}:{filler}").into_bytes(),
        properties: properties::encode([(properties::KEYS, id.as_str())]),
        id,
    }
}

/// An acknowledged message: where the answer to its request put it.
#[derive(Clone)]
struct Placed {
    msg: Outgoing,
    queue: i32,
    offset: i64,
    msg_id: String,
}

#[derive(Default)]
struct Outcome {
    placed: RefCell<Vec<Placed>>,
    /// Sends that timed out and went again on a new connection.
    resent: Cell<u64>,
}

/// The request for `msgs` (one message, or a batch of several) to `queue`.
fn request(topic: &str, queue: i32, msgs: &[Outgoing]) -> RemotingCommand {
    match msgs {
        [one] => send_request(topic, queue, &one.body, &one.properties),
        many => {
            let mut body = BytesMut::new();
            batch::encode(
                many.iter()
                    .map(|m| (0, m.body.as_slice(), m.properties.as_str())),
                &mut body,
            )
            .expect("batch encodes");
            let mut req = send_request(topic, queue, &body, "");
            req.code = request_code::SEND_BATCH_MESSAGE;
            req
        }
    }
}

/// Sends `msgs` as one request through `client` until acknowledged (a timed-out send goes again on a
/// new connection through `proxy`); records where the answer says each message went.
async fn send_until_acked(
    client: &Client,
    proxy: SocketAddr,
    topic: &str,
    queue: i32,
    msgs: &[Outgoing],
    outcome: &Outcome,
) {
    let mut via = client.clone();
    for _ in 0..5 {
        match via.invoke(request(topic, queue, msgs), SEND_LIMIT).await {
            Ok(r) if r.code == response_code::SUCCESS => {
                assert_eq!(r.ext("queueId"), Some(queue.to_string().as_str()));
                let first: i64 = r.ext("queueOffset").unwrap().parse().unwrap();
                let ids: Vec<&str> = r.ext("msgId").unwrap().split(',').collect();
                assert_eq!(ids.len(), msgs.len(), "one msgId per message: {ids:?}");
                let mut placed = outcome.placed.borrow_mut();
                for (i, (m, id)) in msgs.iter().zip(ids).enumerate() {
                    placed.push(Placed {
                        msg: m.clone(),
                        queue,
                        offset: first + i as i64,
                        msg_id: id.to_owned(),
                    });
                }
                return;
            }
            Ok(r) => panic!("send of {} answered {} {:?}", msgs[0].id, r.code, r.remark),
            Err(e) => {
                eprintln!("send of {} failed ({e}); sending it again", msgs[0].id);
                outcome.resent.set(outcome.resent.get() + 1);
                via = connect(proxy).await;
            }
        }
    }
    panic!("send of {} never acknowledged", msgs[0].id);
}

/// Reads every queue of `topic` that holds a placed message and checks each placement: the record at
/// its queue offset has its body and keys, and its msgId names that record's CommitLog offset.
/// Returns every record read, by queue and offset.
async fn check_placements(
    client: &Client,
    topic: &str,
    placed: &[Placed],
) -> BTreeMap<(i32, i64), protocol::message::record::MessageRecord> {
    let mut records = BTreeMap::new();
    let mut queues: Vec<i32> = placed.iter().map(|p| p.queue).collect();
    queues.sort_unstable();
    queues.dedup();
    for q in queues {
        for r in read_queue(client, topic, q).await {
            records.insert((q, r.queue_offset), r);
        }
    }
    for p in placed {
        let r = records.get(&(p.queue, p.offset)).unwrap_or_else(|| {
            panic!(
                "{} acknowledged at {}/{} is missing",
                p.msg.id, p.queue, p.offset
            )
        });
        assert!(
            r.body[..] == p.msg.body[..],
            "{} acknowledged at {}/{} reads back the body of {:?}",
            p.msg.id,
            p.queue,
            p.offset,
            String::from_utf8_lossy(r.body.get(..40).unwrap_or(&r.body))
        );
        assert_eq!(
            properties::get(&r.properties, properties::KEYS),
            Some(p.msg.id.as_str()),
            "keys of the record at {}/{}",
            p.queue,
            p.offset
        );
        let (_, physical) = msgid::parse_offset_msg_id(&p.msg_id).expect("offset msgId");
        assert_eq!(
            physical, r.physical_offset,
            "msgId {} of {} names another record",
            p.msg_id, p.msg.id
        );
    }
    records
}

#[test]
fn reordered_sends_across_connections_are_never_misattributed_or_lost() {
    let broker = Broker::start("");
    let proxy = FaultProxy::start(broker.addr());
    proxy.set_mode(reorder());
    let outcome = Rc::new(Outcome::default());
    let ordered = Rc::new(Outcome::default());
    let started = Instant::now();
    const CONNECTIONS: usize = 4;
    const TASKS_PER_CONNECTION: usize = 3;
    const ROUNDS: usize = 24;
    const ORDERED_COUNT: usize = 120;
    run_local(async {
        let via = proxy.addr();
        let mut tasks = Vec::new();
        for c in 0..CONNECTIONS {
            // The tasks of one connection share it: their requests are in flight together and
            // their answers come back in any order, matched by opaque.
            let client = connect(via).await;
            for t in 0..TASKS_PER_CONNECTION {
                let (client, outcome) = (client.clone(), outcome.clone());
                tasks.push(async move {
                    for i in 0..ROUNDS {
                        let id = format!("c{c}-t{t}-m{i}");
                        let queue = ((c + t + i) % 4) as i32;
                        let msgs: Vec<Outgoing> = if i % 4 == 3 {
                            (0..3)
                                .map(|b| outgoing(format!("{id}-b{b}"), 100 + b * 700))
                                .collect()
                        } else {
                            vec![outgoing(id, (c * 7919 + t * 104_729 + i * 1_301) % 20_000)]
                        };
                        send_until_acked(&client, via, TOPIC, queue, &msgs, &outcome).await;
                    }
                });
            }
        }
        // The ordered producer: one queue, each send waits for its answer, and every few sends a
        // new connection (as a client after a reconnect), so consecutive sends travel on different
        // connections through the reordering proxy.
        let ordered_task = {
            let ordered = ordered.clone();
            async move {
                let mut client = connect(via).await;
                for i in 0..ORDERED_COUNT {
                    if i % 8 == 7 {
                        client = connect(via).await;
                    }
                    let m = outgoing(format!("ordered-{i:04}"), i * 37 % 3000);
                    send_until_acked(&client, via, ORDERED, 0, &[m], &ordered).await;
                }
            }
        };
        futures_lite::future::zip(join_all_local(tasks), ordered_task).await;
        let reordered = proxy.reordered_chunks();
        let (up, down) = proxy.bytes_carried();
        println!(
            "reordering proxy (0..={MAX_HOLD:?} per chunk, seed {SEED:#x}): {reordered} chunks \
             overtaken, {up} B to the broker, {down} B back, {} sends acknowledged ({} resent), {} \
             ordered, in {:?}",
            outcome.placed.borrow().len(),
            outcome.resent.get(),
            ordered.placed.borrow().len(),
            started.elapsed()
        );
        assert!(reordered > 0, "the proxy reordered nothing");

        // Check on a direct connection, then read the ordered queue through the reordering proxy.
        let direct = connect(broker.addr()).await;
        let placed = outcome.placed.borrow().clone();
        let expected = CONNECTIONS * TASKS_PER_CONNECTION * (ROUNDS / 4) * (3 + 3);
        let mut ids: Vec<&str> = placed.iter().map(|p| p.msg.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), expected, "messages acknowledged");
        let records = check_placements(&direct, TOPIC, &placed).await;
        // At-least-once: every record is one of ours (a resent one may be there twice).
        let sent: HashMap<&str, &Placed> = placed.iter().map(|p| (p.msg.id.as_str(), p)).collect();
        for ((q, o), r) in &records {
            let key = properties::get(&r.properties, properties::KEYS).unwrap_or_default();
            let p = sent
                .get(key)
                .unwrap_or_else(|| panic!("record at {q}/{o} has unknown keys {key:?}"));
            assert!(
                r.body[..] == p.msg.body[..],
                "record at {q}/{o}: body of another message"
            );
        }
        assert!(
            records.len() >= placed.len()
                && records.len() as u64 <= placed.len() as u64 + outcome.resent.get() * 3,
            "{} records for {} acknowledged messages ({} resends)",
            records.len(),
            placed.len(),
            outcome.resent.get()
        );
        let ledger = Ledger::default();
        for p in &placed {
            ledger.record(TOPIC, p.queue, p.offset, p.msg.body.clone());
        }
        ledger
            .verify(&direct)
            .await
            .assert_no_loss("reordered sends");

        let ordered_placed = ordered.placed.borrow().clone();
        check_placements(&direct, ORDERED, &ordered_placed).await;
        let through_proxy = connect(proxy.addr()).await;
        let queue = read_queue(&through_proxy, ORDERED, 0).await;
        let order: Vec<String> = queue
            .iter()
            .map(|r| {
                properties::get(&r.properties, properties::KEYS)
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        let want: Vec<String> = (0..ORDERED_COUNT)
            .map(|i| format!("ordered-{i:04}"))
            .collect();
        // A resent message may be stored twice; its copies are adjacent in a sequential stream.
        let mut deduped = order.clone();
        deduped.dedup();
        if ordered.resent.get() == 0 {
            assert_eq!(
                deduped.len(),
                order.len(),
                "a message stored twice without a resend"
            );
        }
        assert_eq!(
            deduped, want,
            "the ordered producer's queue is out of order"
        );
        for (i, r) in queue.iter().enumerate() {
            assert_eq!(r.queue_offset, i as i64, "queue offsets are consecutive");
        }
    });
    assert!(
        !broker.log().contains("panicked"),
        "broker panicked:\n{}",
        broker.log()
    );
}

/// Runs futures of this thread together to the end.
async fn join_all_local<F: std::future::Future<Output = ()> + 'static>(futures: Vec<F>) {
    let handles: Vec<_> = futures.into_iter().map(glommio::spawn_local).collect();
    for h in handles {
        h.await;
    }
}

fn update_offset(group: &str, topic: &str, queue: i32, offset: i64) -> RemotingCommand {
    RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext("consumerGroup", group)
        .with_ext("topic", topic)
        .with_ext("queueId", &queue.to_string())
        .with_ext("commitOffset", &offset.to_string())
}

async fn query_offset(client: &Client, group: &str, topic: &str, queue: i32) -> i64 {
    let r = client
        .invoke(
            RemotingCommand::request(request_code::QUERY_CONSUMER_OFFSET)
                .with_ext("consumerGroup", group)
                .with_ext("topic", topic)
                .with_ext("queueId", &queue.to_string()),
            TIMEOUT,
        )
        .await
        .expect("offset query answered");
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    r.ext("offset").unwrap().parse().unwrap()
}

#[test]
fn reordered_pulls_and_offset_commits_keep_the_last_arriving_commit() {
    const PULLED: &str = "ReorderedPulls";
    const GROUP: &str = "reordered_consumer";
    const STEPS: i64 = 40;
    const STEP: i64 = 10;
    let broker = Broker::start("");
    let proxy = FaultProxy::start(broker.addr());
    run_local(async {
        let direct = connect(broker.addr()).await;
        let mut bodies = Vec::new();
        for i in 0..STEPS * STEP + STEP {
            let body = format!("pulled-{i}-{}", "p".repeat((i as usize * 131) % 4000)).into_bytes();
            let r = send(&direct, PULLED, 0, &body, "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            assert_eq!(r.ext("queueOffset"), Some(i.to_string().as_str()));
            bodies.push(body);
        }
        proxy.set_mode(reorder());
        // A consumer with two connections: pulls (each committing the offset it starts from) on
        // one, UPDATE_CONSUMER_OFFSET on the other. Step k: the pull commits k*STEP, then at once
        // the update commits k*STEP + 5; held apart by the proxy, either may arrive last.
        let pulls = connect(proxy.addr()).await;
        let commits = connect(proxy.addr()).await;
        let mut stale_won = 0;
        for k in 0..STEPS {
            let older = k * STEP;
            let newer = older + 5;
            let mut pull = pull_request(GROUP, PULLED, 0, older, 0, None);
            pull.ext_fields
                .insert("sysFlag", &pull_sys_flag::COMMIT_OFFSET.to_string());
            pull.ext_fields.insert("commitOffset", &older.to_string());
            let (pulled, updated) = futures_lite::future::zip(
                pulls.invoke(pull, TIMEOUT),
                commits.invoke(update_offset(GROUP, PULLED, 0, newer), TIMEOUT),
            )
            .await;
            let pulled = pulled.expect("pull answered");
            assert_eq!(pulled.code, response_code::SUCCESS, "{:?}", pulled.remark);
            let records = decode_records(&pulled.body);
            assert!(!records.is_empty());
            for (i, r) in records.iter().enumerate() {
                let offset = older + i as i64;
                assert_eq!(r.queue_offset, offset);
                assert!(
                    r.body[..] == bodies[offset as usize][..],
                    "pull from {older}: record {i} is another message"
                );
            }
            assert_eq!(
                updated.expect("commit answered").code,
                response_code::SUCCESS
            );
            let stored = query_offset(&direct, GROUP, PULLED, 0).await;
            assert!(
                stored == older || stored == newer,
                "step {k}: stored offset {stored}, committed {older} and {newer}"
            );
            if stored == older {
                stale_won += 1;
            }
        }
        println!(
            "{stale_won} of {STEPS} steps: the older commit arrived last and set the offset back \
             by 5 (RocketMQ 4.9 does the same: ConsumerOffsetManager stores the last commit and \
             only logs \"update consumer offset less than store\"); {} chunks overtaken",
            proxy.reordered_chunks()
        );
        // The proxy swaps two requests written together about half the time: none swapped in 40
        // steps would mean it does not reorder.
        assert!(
            stale_won > 0,
            "no older commit ever arrived after the newer one"
        );
        assert!(stale_won < STEPS, "the newer commit never arrived last");
        // A commit on its own sets the offset; later ones move it either way (a reset does too).
        let r = commits
            .invoke(update_offset(GROUP, PULLED, 0, 123), TIMEOUT)
            .await
            .expect("commit answered");
        assert_eq!(r.code, response_code::SUCCESS);
        assert_eq!(query_offset(&direct, GROUP, PULLED, 0).await, 123);
    });
    assert!(
        !broker.log().contains("panicked"),
        "broker panicked:\n{}",
        broker.log()
    );
}

#[test]
fn broker_registrations_travel_on_one_connection_with_nothing_to_reorder() {
    let namesrv = start_namesrv_in_process();
    let proxy = FaultProxy::start(namesrv);
    proxy.set_mode(reorder());
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{}\"\nregisterNameServerPeriod = 1000",
        proxy.addr()
    ));
    run_local(async {
        fault_support::routes::wait_route(namesrv, "TBW102", Duration::from_secs(20)).await;
        // A topic change registers at once, besides the periodic registrations.
        let direct = connect(broker.addr()).await;
        let r = send(&direct, "BornThroughReorder", 0, b"x", "").await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        fault_support::routes::wait_route(namesrv, "BornThroughReorder", Duration::from_secs(20))
            .await;
        glommio::timer::sleep(Duration::from_secs(3)).await;
    });
    let (up, down) = proxy.bytes_carried();
    println!(
        "broker -> name server through the reordering proxy: {} connection(s), {up} B up, {down} B \
         back, {} chunks overtaken",
        proxy.accepted(),
        proxy.reordered_chunks()
    );
    // Both shard-brokers register on one connection per name server, each request after the
    // previous answer: no two requests are in flight, so none can overtake another.
    assert_eq!(proxy.accepted(), 1, "registration connections");
    assert_eq!(proxy.reordered_chunks(), 0, "chunks overtaken");
    assert!(up > 0 && down > 0);
}
