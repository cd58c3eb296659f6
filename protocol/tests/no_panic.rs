//! Arbitrary bytes into every decoder: each returns a value or an error, never panics, and never
//! consumes a partial frame.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use protocol::body::{self, quote_integer_keys};
use protocol::codec::{binary, json};
use protocol::frame::{decode_frame, frame_length, MAX_FRAME_LEN};
use protocol::header::{CommandHeader, PullMessageRequestHeader, SendMessageRequestHeader};
use protocol::message::{batch, msgid, properties, record};
use protocol::ExtFields;

/// Bytes that start like a plausible frame (small length, JSON or ROCKETMQ type) so the header
/// decoders are reached, followed by arbitrary bytes.
fn framed_garbage() -> impl Strategy<Value = Vec<u8>> {
    (0u8..=2, proptest::collection::vec(any::<u8>(), 0..200)).prop_map(|(kind, rest)| {
        let mut f = Vec::with_capacity(rest.len() + 8);
        f.extend_from_slice(&((rest.len() + 4) as i32).to_be_bytes());
        let header_len = (rest.len() as i32) & 0xFF_FFFF;
        f.extend_from_slice(&((i32::from(kind) << 24) | header_len).to_be_bytes());
        f.extend_from_slice(&rest);
        f
    })
}

fn check_frame_decoder(bytes: &[u8]) {
    let mut buf = BytesMut::from(bytes);
    loop {
        let before = buf.len();
        match decode_frame(&mut buf) {
            Ok(Some(_)) => assert!(buf.len() < before),
            Ok(None) => {
                assert_eq!(buf.len(), before);
                break;
            }
            Err(_) => break,
        }
    }
    if let Ok(Some(n)) = frame_length(bytes) {
        assert!((8..=MAX_FRAME_LEN).contains(&n));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn frame_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        check_frame_decoder(&bytes);
    }

    #[test]
    fn frame_decoder_on_framed_garbage(bytes in framed_garbage()) {
        check_frame_decoder(&bytes);
    }

    #[test]
    fn header_decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = json::decode(&bytes, Bytes::new());
        let _ = binary::decode(Bytes::copy_from_slice(&bytes), Bytes::new());
    }

    #[test]
    fn json_header_from_json_like_text(text in r#"\{("[a-zA-Z]{1,10}":(-?[0-9]{1,12}|"[^"]{0,8}"|true|null|\{("[a-z]{1,3}":(-?[0-9.e]{1,5}|"[^"]{0,5}"|\[\]|false|null),?){0,4}\}),?){0,8}\}"#) {
        let _ = json::decode(text.as_bytes(), Bytes::new());
    }

    #[test]
    fn batch_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = batch::decode(&bytes);
        let _ = batch::decode_owned(&Bytes::from(bytes));
    }

    #[test]
    fn record_and_message_decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), text in ".{0,80}") {
        let _ = record::decode_view(&bytes, true);
        let _ = record::peek_head(&bytes);
        let _ = msgid::parse_offset_msg_id(&text);
        let _ = properties::parse(&text);
    }

    #[test]
    fn body_parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), text in r#"[{}\[\]:,"0-9a-z\\ -]{0,80}"#) {
        let _ = body::from_json::<body::TopicRouteData>(&bytes);
        let _ = body::from_json::<body::HeartbeatData>(text.as_bytes());
        let _ = body::from_json::<body::ConsumerOffsetSerializeWrapper>(text.as_bytes());
        let _ = quote_integer_keys(&text);
    }

    #[test]
    fn typed_headers_never_panic(pairs in proptest::collection::vec(("[a-zA-Z]{1,12}", ".{0,20}"), 0..20), code in any::<i32>()) {
        let fields: ExtFields = pairs.into_iter().collect();
        let _ = SendMessageRequestHeader::parse(code, &fields);
        let _ = PullMessageRequestHeader::from_ext_fields(&fields);
    }
}
