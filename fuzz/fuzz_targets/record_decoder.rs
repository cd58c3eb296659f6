//! Fuzz target: arbitrary bytes as a stored CommitLog record. The owned and the borrowed decoders must
//! agree, never read past the input, and whatever decodes must re-encode to a record that decodes equal.
//! The same bytes as a message trace body (protocol::trace) must decode without panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::message::record::{decode_view, peek_head, MessageRecord, RecordHead};

fuzz_target!(|data: &[u8]| {
    let _ = protocol::trace::decode(data);
    if let Ok(Some(head)) = peek_head(data) {
        assert!(matches!(head, RecordHead::Message { .. } | RecordHead::Blank { .. }));
    }
    for check_crc in [false, true] {
        let owned = MessageRecord::decode(data, check_crc);
        let view = decode_view(data, check_crc);
        assert_eq!(owned.is_ok(), view.is_ok(), "decoders disagree");
        if let (Ok((record, used)), Ok(view)) = (owned, view) {
            assert!(used <= data.len());
            assert_eq!(view.to_owned_record(), record);
            if let Ok(bytes) = record.to_vec() {
                let (again, again_used) =
                    MessageRecord::decode(&bytes, true).expect("our own record decodes");
                assert_eq!(again_used, bytes.len());
                assert_eq!(again, record);
            }
        }
    }
});
