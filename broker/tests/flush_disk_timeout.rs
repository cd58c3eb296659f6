//! A SYNC_FLUSH send whose flush does not complete within `syncFlushTimeout` is stored all the same:
//! it is answered FLUSH_DISK_TIMEOUT with the send result header (msgId, queueId, queueOffset), as
//! RocketMQ answers it, and the message is there to look up by its msgId, and to pull once its flush
//! completed (a SYNC_FLUSH broker shows consumers only durable records).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use protocol::header::CommandHeader;
use protocol::header::ViewMessageRequestHeader;
use protocol::message::msgid;
use protocol::{request_code, response_code, RemotingCommand};

#[test]
fn flush_disk_timeout_answers_carry_the_send_result() {
    // A timeout of 0 ms: no fdatasync can cover a record before the answer is due.
    let broker = Broker::start("flushDiskType = \"SYNC_FLUSH\"\nsyncFlushTimeout = 0\n");
    run_local(async {
        let client = connect(broker.addr()).await;
        let mut sent = Vec::new();
        for i in 0..3 {
            let body = format!("late-flush-{i}").into_bytes();
            let r = send(&client, "FlushLate", 1, &body, "").await;
            assert_eq!(
                r.code,
                response_code::FLUSH_DISK_TIMEOUT,
                "answer {i}: {:?}",
                r.remark
            );
            let msg_id = r
                .ext("msgId")
                .expect("msgId with FLUSH_DISK_TIMEOUT")
                .to_owned();
            assert_eq!(r.ext("queueId"), Some("1"));
            let queue_offset: i64 = r
                .ext("queueOffset")
                .expect("queueOffset with FLUSH_DISK_TIMEOUT")
                .parse()
                .unwrap();
            assert_eq!(queue_offset, i64::from(i));
            sent.push((msg_id, body));
        }
        // Stored: pulled back in order once durable (the flusher finishes within moments), and
        // found by msgId.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let records = loop {
            let records = pull_all(&client, "FlushLate", 1).await;
            if records.len() >= sent.len() || std::time::Instant::now() > deadline {
                break records;
            }
            glommio::timer::sleep(std::time::Duration::from_millis(50)).await;
        };
        assert_eq!(records.len(), sent.len());
        for (record, (msg_id, body)) in records.iter().zip(&sent) {
            assert_eq!(record.body.as_ref(), body.as_slice());
            let (_, offset) = msgid::parse_offset_msg_id(msg_id).expect("an offsetMsgId");
            let view = RemotingCommand::request(request_code::VIEW_MESSAGE_BY_ID).with_ext_fields(
                ViewMessageRequestHeader {
                    topic: None,
                    offset,
                }
                .to_ext_fields(),
            );
            let found = client.invoke(view, TIMEOUT).await.unwrap();
            assert_eq!(found.code, response_code::SUCCESS, "{:?}", found.remark);
            let stored = decode_records(&found.body);
            assert_eq!(
                stored.first().map(|r| r.body.as_ref()),
                Some(body.as_slice())
            );
        }
    });
}
