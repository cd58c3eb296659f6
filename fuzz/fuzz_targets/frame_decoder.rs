//! Fuzz target: arbitrary bytes through the incremental frame decoder, fed whole and one byte at a
//! time; both must agree, and every decoded command must re-encode and decode to itself.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use protocol::frame::{decode_frame, encode_frame};
use protocol::RemotingCommand;

fn decode_all(buf: &mut BytesMut) -> Vec<RemotingCommand> {
    let mut out = Vec::new();
    while let Ok(Some(cmd)) = decode_frame(buf) {
        out.push(cmd);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let whole = decode_all(&mut BytesMut::from(data));

    let mut trickle = BytesMut::new();
    let mut piecewise = Vec::new();
    for byte in data {
        trickle.extend_from_slice(&[*byte]);
        match decode_frame(&mut trickle) {
            Ok(Some(cmd)) => piecewise.push(cmd),
            Ok(None) => {}
            Err(_) => break,
        }
    }
    // Errors are found at the same frame either way, so both see the same commands before it.
    assert_eq!(whole, piecewise);

    for cmd in piecewise {
        let mut again = BytesMut::new();
        if encode_frame(&cmd, &mut again).is_ok() {
            let back = decode_frame(&mut again)
                .expect("our own frame decodes")
                .expect("complete");
            // JSON keeps every field; the binary header folds "" remarks and narrows code/version.
            assert_eq!(back.ext_fields, cmd.ext_fields);
            assert_eq!(back.opaque, cmd.opaque);
            assert_eq!(back.body, cmd.body);
        }
    }
});
