//! A stored CommitLog record written byte by byte from the format table in DESIGN.md, decoded
//! field by field; and our encoder must produce exactly those bytes.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use protocol::message::record::{self, MessageRecord};

#[rustfmt::skip]
const RECORD: &[u8] = &[
    0x00, 0x00, 0x00, 0x65,                         // TOTALSIZE 101 = 84 fixed + 4+5 body + 1+1 topic + 2+4 properties
    0xDA, 0xA3, 0x20, 0xA7,                         // MAGICCODE v1 (-626843481)
    0x36, 0x10, 0xA6, 0x86,                         // BODYCRC: crc32("hello") & 0x7FFFFFFF
    0x00, 0x00, 0x00, 0x03,                         // QUEUEID 3
    0x00, 0x00, 0x00, 0x07,                         // FLAG 7
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A, // QUEUEOFFSET 42
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, // PHYSICALOFFSET 4096
    0x00, 0x00, 0x00, 0x00,                         // SYSFLAG 0 (IPv4 hosts)
    0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00, // BORNTIMESTAMP 1700000000000
    0x0A, 0x00, 0x00, 0x01, 0x00, 0x00, 0x15, 0xB3, // BORNHOST 10.0.0.1:5555
    0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x7B, // STORETIMESTAMP 1700000000123
    0x7F, 0x00, 0x00, 0x01, 0x00, 0x00, 0x2A, 0x9F, // STOREHOST 127.0.0.1:10911
    0x00, 0x00, 0x00, 0x01,                         // RECONSUMETIMES 1
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // PREPARED TRANSACTION OFFSET 0
    0x00, 0x00, 0x00, 0x05, b'h', b'e', b'l', b'l', b'o', // BODY
    0x01, b'T',                                     // TOPIC (v1: 1-byte length)
    0x00, 0x04, b'K', 0x01, b'V', 0x02,             // PROPERTIES "K\u0001V\u0002"
];

#[test]
fn record_decodes_field_by_field() {
    assert_eq!(RECORD.len(), 101);
    let v = record::decode_view(RECORD, true).unwrap();
    assert_eq!(v.total_size, 101);
    assert_eq!(v.magic, -626_843_481);
    assert_eq!(v.body_crc, 0x3610_A686);
    assert_eq!(v.queue_id, 3);
    assert_eq!(v.flag, 7);
    assert_eq!(v.queue_offset, 42);
    assert_eq!(v.physical_offset, 4096);
    assert_eq!(v.sys_flag, 0);
    assert_eq!(v.born_timestamp, 1_700_000_000_000);
    assert_eq!(v.born_host, "10.0.0.1:5555".parse().unwrap());
    assert_eq!(v.store_timestamp, 1_700_000_000_123);
    assert_eq!(v.store_host, "127.0.0.1:10911".parse().unwrap());
    assert_eq!(v.reconsume_times, 1);
    assert_eq!(v.prepared_transaction_offset, 0);
    assert_eq!(v.body, b"hello");
    assert_eq!(v.topic, "T");
    assert_eq!(v.properties, "K\u{1}V\u{2}");
}

#[test]
fn our_encoder_writes_the_same_bytes() {
    let rec = MessageRecord {
        queue_id: 3,
        flag: 7,
        queue_offset: 42,
        physical_offset: 4096,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "10.0.0.1:5555".parse().unwrap(),
        store_timestamp: 1_700_000_000_123,
        store_host: "127.0.0.1:10911".parse().unwrap(),
        reconsume_times: 1,
        prepared_transaction_offset: 0,
        body: Bytes::from_static(b"hello"),
        topic: "T".into(),
        properties: "K\u{1}V\u{2}".into(),
    };
    assert_eq!(rec.to_vec().unwrap(), RECORD);
    assert_eq!(record::body_crc(b"hello"), 0x3610_A686);
}

#[test]
fn a_flipped_body_byte_fails_the_crc() {
    let mut bad = RECORD.to_vec();
    bad[88] ^= 1; // first body byte
    assert!(matches!(
        record::decode_view(&bad, true),
        Err(record::RecordError::BodyCrc { .. })
    ));
}
