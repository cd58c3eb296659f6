//! The codec benchmark's operations run a fixed number of times, for counting instructions with
//! callgrind (a count does not depend on what else the machine runs, unlike a time):
//! `valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/deps/codec_count-* CASE N`,
//! run with two values of N; the difference of the totals over the difference of N is the cost of
//! one operation. CASE is `json` or `rocketmq`, then `/decode+encode`, `/decode+typed`,
//! `/response` (encode of the broker's answer), `/decode` or `/encode`.

// Bench code: a broken expectation panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::hint::black_box;

use bytes::BytesMut;
use protocol::frame::{decode_frame, encode_frame};
use protocol::header::SendMessageRequestHeader;
use protocol::SerializeType;

use common::{send_response, send_v2};

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().expect("CASE");
    let n: usize = args.next().expect("N").parse().expect("a count");
    let (kind, op) = case.split_once('/').expect("TYPE/OPERATION");
    let serialize_type = match kind {
        "json" => SerializeType::Json,
        "rocketmq" => SerializeType::RocketMq,
        other => panic!("unknown type {other}"),
    };
    let cmd = send_v2(serialize_type);
    let response = send_response(&cmd);
    let mut frame = BytesMut::new();
    encode_frame(&cmd, &mut frame).unwrap();
    let frame = frame.freeze();
    let mut read_buf = BytesMut::with_capacity(4096);
    let mut out = BytesMut::with_capacity(4096);
    for _ in 0..n {
        match op {
            "decode" | "decode+encode" | "decode+typed" => {
                read_buf.extend_from_slice(&frame);
                let cmd = decode_frame(&mut read_buf).unwrap().unwrap();
                if op == "decode+encode" {
                    out.clear();
                    encode_frame(&cmd, &mut out).unwrap();
                } else if op == "decode+typed" {
                    black_box(SendMessageRequestHeader::parse(cmd.code, &cmd.ext_fields).unwrap());
                }
                black_box(cmd);
            }
            "encode" => {
                out.clear();
                encode_frame(black_box(&cmd), &mut out).unwrap();
            }
            "response" => {
                out.clear();
                encode_frame(black_box(&response), &mut out).unwrap();
            }
            other => panic!("unknown operation {other}"),
        }
        black_box(out.len());
    }
}
