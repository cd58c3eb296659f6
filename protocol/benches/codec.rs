//! Encode and decode of a SEND_MESSAGE_V2 request as the Java client sends it, with JSON and with
//! ROCKETMQ headers, the way a connection uses the codec: decoding copies the frame into a reused
//! read buffer (as a socket read would) and decodes it; encoding appends to a reused write buffer.
//! The broker's answer (SendMessageResponseHeader) is encoded too.

// Bench code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::BytesMut;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use protocol::frame::{decode_frame, encode_frame};
use protocol::header::SendMessageRequestHeader;
use protocol::SerializeType;

use common::{send_response, send_v2};

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
    let response = send_response(&cmd);
    c.bench_function(&format!("{name}/response encode"), |b| {
        b.iter(|| {
            out.clear();
            encode_frame(black_box(&response), &mut out).expect("encodable");
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
