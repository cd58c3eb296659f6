//! Fuzz target: arbitrary bytes as a batch body; whatever decodes must re-encode to an equal batch.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::message::batch;

fuzz_target!(|data: &[u8]| {
    if let Ok(entries) = batch::decode(data) {
        let mut out = Vec::new();
        batch::encode(
            entries.iter().map(|e| (e.flag, e.body, e.properties)),
            &mut out,
        )
        .expect("decoded entries fit the format");
        let again = batch::decode(&out).expect("our own batch decodes");
        assert_eq!(again.len(), entries.len());
        for (a, b) in again.iter().zip(&entries) {
            assert_eq!(
                (a.flag, a.body, a.properties),
                (b.flag, b.body, b.properties)
            );
        }
    }
});
