//! Fuzz target: arbitrary bytes as a JSON header. The decoder (one-pass reader with serde_json behind
//! it) must agree with serde_json alone, and what it decodes must survive encoding and decoding.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use protocol::codec::json;

fuzz_target!(|data: &[u8]| {
    let decoded = json::decode(data, Bytes::new());
    let reference = json::decode_with_serde(data, Bytes::new());
    match (&decoded, &reference) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "the one-pass reader and serde_json disagree"),
        (Err(_), Err(_)) => {}
        _ => panic!("accepted by one reader only: {decoded:?} / {reference:?}"),
    }
    if let Ok(cmd) = decoded {
        let mut out = Vec::new();
        json::encode(&cmd, &mut out);
        let back = json::decode(&out, Bytes::new()).expect("our own JSON header decodes");
        assert_eq!(back, cmd);
    }
});
