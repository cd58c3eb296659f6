//! Golden frames written by hand from the protocol facts (DESIGN.md, RocketMQ's RemotingCommand and
//! RocketMQSerializable): every byte below was composed from the spec, not produced by our encoder.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::{Bytes, BytesMut};
use protocol::frame::{decode_frame, encode_frame};
use protocol::{LanguageCode, RemotingCommand, SerializeType};

/// JSON header of a Java client's SEND_MESSAGE_V2 request (fastjson field order), 136 bytes.
const JSON_REQUEST_HEADER: &[u8] = br#"{"code":310,"extFields":{"a":"pg","b":"T","e":"1"},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":401}"#;

fn json_request_frame() -> Vec<u8> {
    // length = 4 (header-length int) + 136 (header) + 2 (body) = 142 = 0x8E; type JSON (0), header length 0x88.
    let mut f = vec![0x00, 0x00, 0x00, 0x8E, 0x00, 0x00, 0x00, 0x88];
    f.extend_from_slice(JSON_REQUEST_HEADER);
    f.extend_from_slice(b"hi");
    f
}

#[rustfmt::skip]
const ROCKETMQ_REQUEST_FRAME: &[u8] = &[
    0x00, 0x00, 0x00, 0x2C,             // length 44 = 4 + 38 header + 2 body
    0x01, 0x00, 0x00, 0x26,             // serialize type ROCKETMQ (1) << 24 | header length 38
    0x01, 0x36,                         // code 310 (i16)
    0x00,                               // language JAVA
    0x01, 0x91,                         // version 401 (i16)
    0x00, 0x00, 0x00, 0x07,             // opaque 7
    0x00, 0x00, 0x00, 0x00,             // flag 0 (request)
    0x00, 0x00, 0x00, 0x00,             // remark length 0
    0x00, 0x00, 0x00, 0x11,             // extFields length 17
    0x00, 0x01, b'a', 0x00, 0x00, 0x00, 0x02, b'p', b'g', // "a" -> "pg"
    0x00, 0x01, b'b', 0x00, 0x00, 0x00, 0x01, b'T',       // "b" -> "T"
    b'h', b'i',                         // body
];

#[rustfmt::skip]
const ROCKETMQ_RESPONSE_FRAME: &[u8] = &[
    0x00, 0x00, 0x00, 0x1B,             // length 27 = 4 + 23 header
    0x01, 0x00, 0x00, 0x17,             // ROCKETMQ, header length 23
    0x00, 0x11,                         // code 17 TOPIC_NOT_EXIST
    0x00,                               // JAVA
    0x01, 0x91,                         // version 401
    0x00, 0x00, 0x00, 0x07,             // opaque 7 (copied from the request)
    0x00, 0x00, 0x00, 0x01,             // flag: response bit
    0x00, 0x00, 0x00, 0x02, b'n', b'o', // remark "no"
    0x00, 0x00, 0x00, 0x00,             // no extFields
];

/// A JSON SEND_MESSAGE response as the Java broker writes it, 184 bytes.
const JSON_RESPONSE_HEADER: &[u8] = br#"{"code":0,"extFields":{"msgId":"7F00000100002A9F0000000000000000","queueId":"1","queueOffset":"5"},"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":401}"#;

fn json_response_frame() -> Vec<u8> {
    // length = 4 + 184 = 188 = 0xBC; header length 0xB8; no body.
    let mut f = vec![0x00, 0x00, 0x00, 0xBC, 0x00, 0x00, 0x00, 0xB8];
    f.extend_from_slice(JSON_RESPONSE_HEADER);
    f
}

/// What the C++ client sends: no serializeTypeCurrentRPC, remark "", numeric and boolean
/// extFields, an empty AccessKey, fields in its own order. 189 bytes; oneway flag.
const CPP_JSON_HEADER: &[u8] = br#"{"code":10,"language":"CPP","version":0,"opaque":3,"flag":2,"remark":"","extFields":{"producerGroup":"g","topic":"T","queueId":2,"bornTimestamp":1700000000000,"batch":false,"AccessKey":""}}"#;

fn decode_one(bytes: &[u8]) -> RemotingCommand {
    let mut buf = BytesMut::from(bytes);
    let cmd = decode_frame(&mut buf)
        .expect("valid frame")
        .expect("complete frame");
    assert!(buf.is_empty(), "exactly one frame consumed");
    cmd
}

fn encode(cmd: &RemotingCommand) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_frame(cmd, &mut out).expect("encodable");
    out.to_vec()
}

#[test]
fn header_lengths_in_the_goldens_were_counted_right() {
    assert_eq!(JSON_REQUEST_HEADER.len(), 0x88);
    assert_eq!(JSON_RESPONSE_HEADER.len(), 0xB8);
    assert_eq!(CPP_JSON_HEADER.len(), 189);
    assert_eq!(ROCKETMQ_REQUEST_FRAME.len(), 4 + 0x2C);
    assert_eq!(ROCKETMQ_RESPONSE_FRAME.len(), 4 + 0x1B);
}

#[test]
fn json_request_decodes_field_by_field() {
    let cmd = decode_one(&json_request_frame());
    assert_eq!(cmd.code, 310);
    assert_eq!(cmd.language, LanguageCode::Java);
    assert_eq!(cmd.version, 401);
    assert_eq!(cmd.opaque, 7);
    assert_eq!(cmd.flag, 0);
    assert!(!cmd.is_response());
    assert_eq!(cmd.remark, None);
    assert_eq!(cmd.ext_fields.len(), 3);
    assert_eq!(cmd.ext("a"), Some("pg"));
    assert_eq!(cmd.ext("b"), Some("T"));
    assert_eq!(cmd.ext("e"), Some("1"));
    assert_eq!(cmd.body, Bytes::from_static(b"hi"));
    assert_eq!(cmd.serialize_type, SerializeType::Json);
}

#[test]
fn json_request_encodes_to_the_java_bytes() {
    let cmd = RemotingCommand::request(310)
        .with_opaque(7)
        .with_ext("a", "pg")
        .with_ext("b", "T")
        .with_ext("e", "1")
        .with_body(&b"hi"[..]);
    assert_eq!(encode(&cmd), json_request_frame());
}

#[test]
fn rocketmq_request_decodes_and_encodes() {
    let cmd = decode_one(ROCKETMQ_REQUEST_FRAME);
    assert_eq!(cmd.code, 310);
    assert_eq!(cmd.language, LanguageCode::Java);
    assert_eq!(cmd.version, 401);
    assert_eq!(cmd.opaque, 7);
    assert_eq!(cmd.flag, 0);
    assert_eq!(cmd.remark, None);
    assert_eq!(
        cmd.ext_fields.iter().collect::<Vec<_>>(),
        vec![("a", "pg"), ("b", "T")]
    );
    assert_eq!(&cmd.body[..], b"hi");
    assert_eq!(cmd.serialize_type, SerializeType::RocketMq);
    assert_eq!(encode(&cmd), ROCKETMQ_REQUEST_FRAME);
}

#[test]
fn response_to_a_rocketmq_request_is_rocketmq() {
    let req = decode_one(ROCKETMQ_REQUEST_FRAME);
    let resp = req.response_to(17, Some("no".to_owned()));
    assert_eq!(encode(&resp), ROCKETMQ_RESPONSE_FRAME);
    let back = decode_one(ROCKETMQ_RESPONSE_FRAME);
    assert!(back.is_response());
    assert_eq!(back.remark.as_deref(), Some("no"));
    assert_eq!(back.code, 17);
}

#[test]
fn json_response_matches_the_java_broker() {
    let req = decode_one(&json_request_frame());
    let mut resp = req.response_to(0, None);
    resp.set_ext("msgId", "7F00000100002A9F0000000000000000");
    resp.set_ext("queueId", "1");
    resp.set_ext("queueOffset", "5");
    assert_eq!(encode(&resp), json_response_frame());
    let back = decode_one(&json_response_frame());
    assert_eq!(back, resp);
}

#[test]
fn cpp_client_json_is_accepted() {
    // length = 4 + 189 + 2 = 195 = 0xC3, header length 0xBD.
    let mut frame = vec![0x00, 0x00, 0x00, 0xC3, 0x00, 0x00, 0x00, 0xBD];
    frame.extend_from_slice(CPP_JSON_HEADER);
    frame.extend_from_slice(b"hi");
    let cmd = decode_one(&frame);
    assert_eq!(cmd.code, 10);
    assert_eq!(cmd.language, LanguageCode::Cpp);
    assert_eq!(cmd.version, 0);
    assert_eq!(cmd.opaque, 3);
    assert!(cmd.is_oneway());
    assert_eq!(cmd.remark.as_deref(), Some(""));
    assert_eq!(cmd.ext("queueId"), Some("2"));
    assert_eq!(cmd.ext("bornTimestamp"), Some("1700000000000"));
    assert_eq!(cmd.ext("batch"), Some("false"));
    assert_eq!(cmd.ext("AccessKey"), Some(""));
    assert_eq!(cmd.ext_fields.len(), 6);
    assert_eq!(&cmd.body[..], b"hi");
}

#[test]
fn minimal_json_header_defaults_everything() {
    // {"code":34} : 11 bytes; length 15.
    let mut frame = vec![0x00, 0x00, 0x00, 0x0F, 0x00, 0x00, 0x00, 0x0B];
    frame.extend_from_slice(br#"{"code":34}"#);
    let cmd = decode_one(&frame);
    assert_eq!(cmd.code, 34);
    assert_eq!(cmd.opaque, 0);
    assert!(cmd.ext_fields.is_empty());
    assert!(cmd.body.is_empty());
}

#[test]
fn unknown_language_byte_is_kept() {
    let mut frame = ROCKETMQ_RESPONSE_FRAME.to_vec();
    frame[10] = 0x63; // language byte
    let cmd = decode_one(&frame);
    assert_eq!(cmd.language, LanguageCode::UnknownCode(0x63));
    assert_eq!(encode(&cmd), frame);
}
