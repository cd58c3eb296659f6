//! The acknowledged-message ledger of a fault test, and the zero-loss check: every acknowledged
//! message is read back at its queue offset with the same body (count and byte totals compared).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use remoting::Client;

use protocol::message::record::MessageRecord;
use protocol::response_code;

use crate::common::{decode_records, pull, TIMEOUT};

/// One acknowledged send.
#[derive(Debug, Clone)]
pub struct Ack {
    pub topic: String,
    pub queue: i32,
    pub offset: i64,
    pub body: Vec<u8>,
}

/// Acknowledged sends, shared by the sending tasks of one executor.
#[derive(Clone, Default)]
pub struct Ledger {
    acks: Rc<RefCell<Vec<Ack>>>,
}

/// What the check found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LossReport {
    pub acked: usize,
    pub acked_bytes: u64,
    pub found: usize,
    pub found_bytes: u64,
    /// (queue, offset) of acknowledged messages missing or different.
    pub lost: Vec<(String, i32, i64)>,
}

impl LossReport {
    pub fn assert_no_loss(&self, what: &str) {
        println!(
            "{what}: acknowledged {} msgs / {} B, read back {} msgs / {} B, lost {}",
            self.acked,
            self.acked_bytes,
            self.found,
            self.found_bytes,
            self.lost.len()
        );
        assert!(self.acked > 0, "{what}: nothing was acknowledged");
        assert!(
            self.lost.is_empty()
                && self.found == self.acked
                && self.found_bytes == self.acked_bytes,
            "{what}: acknowledged messages lost: {self:?}"
        );
    }
}

impl Ledger {
    pub fn record(&self, topic: &str, queue: i32, offset: i64, body: Vec<u8>) {
        self.acks.borrow_mut().push(Ack {
            topic: topic.to_owned(),
            queue,
            offset,
            body,
        });
    }

    pub fn len(&self) -> usize {
        self.acks.borrow().len()
    }

    pub fn snapshot(&self) -> Vec<Ack> {
        self.acks.borrow().clone()
    }

    /// Reads every queue holding an acknowledged message through `client` and compares.
    pub async fn verify(&self, client: &Client) -> LossReport {
        let acks = self.snapshot();
        let mut queues = BTreeMap::new();
        for a in &acks {
            queues
                .entry((a.topic.clone(), a.queue))
                .or_insert_with(HashMap::new);
        }
        for ((topic, q), records) in queues.iter_mut() {
            for r in read_queue(client, topic, *q).await {
                records.insert(r.queue_offset, r);
            }
        }
        let mut report = LossReport::default();
        for a in &acks {
            report.acked += 1;
            report.acked_bytes += a.body.len() as u64;
            let stored = queues
                .get(&(a.topic.clone(), a.queue))
                .and_then(|recs| recs.get(&a.offset))
                .filter(|r| r.queue_id == a.queue && r.topic == a.topic);
            match stored {
                Some(r) if r.body[..] == a.body[..] => {
                    report.found += 1;
                    report.found_bytes += r.body.len() as u64;
                }
                _ => report.lost.push((a.topic.clone(), a.queue, a.offset)),
            }
        }
        report
    }
}

/// Every record of a queue from offset 0 up to its max offset. Retries PULL_RETRY_IMMEDIATELY and
/// says on stderr why it stopped early (an answer that is not FOUND below the max offset).
pub async fn read_queue(client: &Client, topic: &str, queue: i32) -> Vec<MessageRecord> {
    let mut offset = 0i64;
    let mut out = Vec::new();
    let mut retries = 0;
    loop {
        let r = pull(client, topic, queue, offset).await;
        if r.code == response_code::SUCCESS {
            let recs = decode_records(&r.body);
            let next: i64 = r
                .ext("nextBeginOffset")
                .and_then(|o| o.parse().ok())
                .expect("nextBeginOffset");
            if recs.is_empty() || next <= offset {
                eprintln!("{topic}/{queue}: FOUND without progress at offset {offset}");
                return out;
            }
            offset = next;
            out.extend(recs);
            continue;
        }
        let max: i64 = r
            .ext("maxOffset")
            .and_then(|o| o.parse().ok())
            .unwrap_or(-1);
        if r.code == response_code::PULL_RETRY_IMMEDIATELY && retries < 50 {
            retries += 1;
            eprintln!(
                "{topic}/{queue}: PULL_RETRY_IMMEDIATELY at offset {offset} (nextBeginOffset {:?}, max {max}); retrying the same offset",
                r.ext("nextBeginOffset")
            );
            glommio::timer::sleep(std::time::Duration::from_millis(20)).await;
            continue;
        }
        if offset < max {
            eprintln!(
                "{topic}/{queue}: pull at {offset} answered code {} ({:?}) below max offset {max} (timeout {:?})",
                r.code, r.remark, TIMEOUT
            );
        }
        return out;
    }
}
