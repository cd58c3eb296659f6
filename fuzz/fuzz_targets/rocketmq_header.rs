//! Fuzz target: arbitrary bytes as a ROCKETMQ binary header.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use protocol::codec::binary;

fuzz_target!(|data: &[u8]| {
    if let Ok(cmd) = binary::decode(Bytes::copy_from_slice(data), Bytes::new()) {
        let mut out = Vec::new();
        if binary::encode(&cmd, &mut out).is_ok() {
            let back = binary::decode(Bytes::from(out), Bytes::new())
                .expect("our own binary header decodes");
            assert_eq!(back, cmd);
        }
    }
});
