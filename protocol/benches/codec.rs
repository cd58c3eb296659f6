//! Encode and decode of a SEND_MESSAGE_V2 request as the Java client sends it, with JSON and with
//! ROCKETMQ headers, the way a connection uses the codec: decoding copies the frame into a reused
//! read buffer (as a socket read would) and decodes it; encoding appends to a reused write buffer.

// Bench code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::BytesMut;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use protocol::frame::{decode_frame, encode_frame};
use protocol::header::SendMessageRequestHeader;
use protocol::request_code::SEND_MESSAGE_V2;
use protocol::{RemotingCommand, SerializeType};

fn send_v2(serialize_type: SerializeType) -> RemotingCommand {
    RemotingCommand::request(SEND_MESSAGE_V2)
        .with_opaque(123_456)
        .with_serialize_type(serialize_type)
        .with_ext("a", "please_rename_unique_group_name")
        .with_ext("b", "TopicTest")
        .with_ext("c", "TBW102")
        .with_ext("d", "4")
        .with_ext("e", "2")
        .with_ext("f", "0")
        .with_ext("g", "1700000000000")
        .with_ext("h", "0")
        .with_ext("i", "KEYS\u{1}OrderID188\u{2}UNIQ_KEY\u{1}7F0000011F9C18B4AAC2156E4A3C0000\u{2}WAIT\u{1}true\u{2}TAGS\u{1}TagA\u{2}")
        .with_ext("j", "0")
        .with_ext("k", "false")
        .with_ext("m", "false")
        .with_ext("n", "broker-a")
        .with_body(vec![b'x'; 128])
}

fn bench_type(c: &mut Criterion, name: &str, serialize_type: SerializeType) {
    let cmd = send_v2(serialize_type);
    let mut frame = BytesMut::new();
    encode_frame(&cmd, &mut frame).expect("encodable");
    let frame = frame.freeze();
    let mut out = BytesMut::with_capacity(4096);

    c.bench_function(&format!("{name}/encode"), |b| {
        b.iter(|| {
            out.clear();
            encode_frame(black_box(&cmd), &mut out).expect("encodable");
            black_box(out.len())
        })
    });
    let mut read_buf = BytesMut::with_capacity(4096);

    c.bench_function(&format!("{name}/decode"), |b| {
        b.iter(|| {
            read_buf.extend_from_slice(&frame);
            black_box(
                decode_frame(&mut read_buf)
                    .expect("valid")
                    .expect("complete"),
            )
        })
    });
    c.bench_function(&format!("{name}/decode+encode"), |b| {
        b.iter(|| {
            read_buf.extend_from_slice(&frame);
            let cmd = decode_frame(&mut read_buf)
                .expect("valid")
                .expect("complete");
            out.clear();
            encode_frame(&cmd, &mut out).expect("encodable");
            black_box(out.len())
        })
    });
    c.bench_function(&format!("{name}/decode+typed header"), |b| {
        b.iter(|| {
            read_buf.extend_from_slice(&frame);
            let cmd = decode_frame(&mut read_buf)
                .expect("valid")
                .expect("complete");
            black_box(SendMessageRequestHeader::parse(cmd.code, &cmd.ext_fields).expect("header"))
        })
    });
}

fn codec(c: &mut Criterion) {
    bench_type(c, "send_v2_rocketmq", SerializeType::RocketMq);
    bench_type(c, "send_v2_json", SerializeType::Json);
}

criterion_group!(benches, codec);
criterion_main!(benches);
