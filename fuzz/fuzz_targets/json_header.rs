//! Fuzz target: arbitrary bytes as a JSON header.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use protocol::codec::json;

fuzz_target!(|data: &[u8]| {
    if let Ok(cmd) = json::decode(data, Bytes::new()) {
        let mut out = Vec::new();
        json::encode(&cmd, &mut out);
        let back = json::decode(&out, Bytes::new()).expect("our own JSON header decodes");
        assert_eq!(back, cmd);
    }
});
