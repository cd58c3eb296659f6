//! Property tests: any command survives encode -> decode in both header types, whole or fed in
//! arbitrary pieces; batch bodies survive encode -> decode.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::BytesMut;
use proptest::prelude::*;
use protocol::frame::{decode_frame, encode_frame, frame_length};
use protocol::message::batch;
use protocol::{ExtFields, LanguageCode, RemotingCommand, SerializeType};

fn known_language() -> impl Strategy<Value = LanguageCode> {
    (0u8..=13).prop_map(LanguageCode::from_code)
}

fn language(serialize_type: SerializeType) -> BoxedStrategy<LanguageCode> {
    match serialize_type {
        // Unknown names survive JSON; unknown byte codes survive the binary header.
        SerializeType::Json => prop_oneof![
            known_language(),
            "[A-Z_]{1,10}".prop_map(|n| LanguageCode::from_name(&n))
        ]
        .boxed(),
        SerializeType::RocketMq => prop_oneof![
            known_language(),
            (14u8..=255).prop_map(LanguageCode::UnknownCode)
        ]
        .boxed(),
    }
}

fn ext_fields() -> impl Strategy<Value = ExtFields> {
    proptest::collection::btree_map(any::<String>(), any::<String>(), 0..12)
        .prop_map(|m| m.into_iter().collect::<ExtFields>())
}

fn command(serialize_type: SerializeType) -> impl Strategy<Value = RemotingCommand> {
    (
        // The binary header carries code and version as i16.
        any::<i16>(),
        language(serialize_type),
        any::<i16>(),
        any::<i32>(),
        any::<i32>(),
        // The binary header cannot tell "" from no remark.
        proptest::option::of(".{1,40}"),
        ext_fields(),
        proptest::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(
            move |(code, language, version, opaque, flag, remark, ext_fields, body)| {
                RemotingCommand {
                    code: i32::from(code),
                    language,
                    version: i32::from(version),
                    opaque,
                    flag,
                    remark,
                    ext_fields,
                    body: body.into(),
                    body_tail: Vec::new(),
                    serialize_type,
                }
            },
        )
}

fn any_command() -> impl Strategy<Value = RemotingCommand> {
    prop_oneof![
        command(SerializeType::Json),
        command(SerializeType::RocketMq)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn command_round_trips(cmd in any_command()) {
        let mut buf = BytesMut::new();
        encode_frame(&cmd, &mut buf).unwrap();
        prop_assert_eq!(frame_length(&buf).unwrap(), Some(buf.len()));
        let back = decode_frame(&mut buf).unwrap();
        prop_assert_eq!(back, Some(cmd));
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn frames_fed_in_pieces(cmds in proptest::collection::vec(any_command(), 1..4), cuts in proptest::collection::vec(1usize..64, 1..40)) {
        let mut wire = BytesMut::new();
        for cmd in &cmds {
            encode_frame(cmd, &mut wire).unwrap();
        }
        let mut buf = BytesMut::new();
        let mut decoded = Vec::new();
        let mut pos = 0;
        let mut cut = cuts.iter().cycle();
        while pos < wire.len() {
            let n = (*cut.next().unwrap()).min(wire.len() - pos);
            buf.extend_from_slice(&wire[pos..pos + n]);
            pos += n;
            while let Some(cmd) = decode_frame(&mut buf).unwrap() {
                decoded.push(cmd);
            }
        }
        prop_assert_eq!(decoded, cmds);
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn response_keeps_request_serialize_type(cmd in any_command(), code in any::<i16>()) {
        let resp = cmd.response_to(i32::from(code), None);
        let mut buf = BytesMut::new();
        encode_frame(&resp, &mut buf).unwrap();
        // Serialize type sits in the high byte of the second int.
        prop_assert_eq!(buf[4], cmd.serialize_type.code());
        let back = decode_frame(&mut buf).unwrap().unwrap();
        prop_assert!(back.is_response());
        prop_assert_eq!(back.opaque, cmd.opaque);
    }

    #[test]
    fn batch_round_trips(msgs in proptest::collection::vec((any::<i32>(), proptest::collection::vec(any::<u8>(), 0..100), ".{0,30}"), 0..10)) {
        let mut body = Vec::new();
        batch::encode(msgs.iter().map(|(f, b, p)| (*f, b.as_slice(), p.as_str())), &mut body).unwrap();
        let entries = batch::decode(&body).unwrap();
        prop_assert_eq!(entries.len(), msgs.len());
        let mut offset = 0;
        for (entry, (flag, b, p)) in entries.iter().zip(&msgs) {
            prop_assert_eq!(entry.flag, *flag);
            prop_assert_eq!(entry.body, b.as_slice());
            prop_assert_eq!(entry.properties, p.as_str());
            prop_assert_eq!(entry.offset, offset);
            prop_assert_eq!(entry.total_size as usize, entry.encoded_len);
            offset += entry.encoded_len;
        }
        let owned = batch::decode_owned(&bytes::Bytes::from(body)).unwrap();
        for (m, (_, b, _)) in owned.iter().zip(&msgs) {
            prop_assert_eq!(&m.body[..], b.as_slice());
        }
    }
}
