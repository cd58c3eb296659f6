//! The requests and answers the codec benchmarks encode and decode.

use protocol::header::{CommandHeader, SendMessageResponseHeader};
use protocol::request_code::SEND_MESSAGE_V2;
use protocol::{RemotingCommand, SerializeType};

/// SEND_MESSAGE_V2 as the Java client 4.9.8 sends it: 13 fields, properties with keys, tags and the
/// unique key, a 128-byte body.
pub fn send_v2(serialize_type: SerializeType) -> RemotingCommand {
    RemotingCommand::request(SEND_MESSAGE_V2)
        .with_opaque(123_456)
        .with_serialize_type(serialize_type)
        .with_ext("a", "please_rename_unique_group_name")
        .with_ext("b", "TopicTest")
        .with_ext("c", "TBW102")
        .with_ext("d", "4")
        .with_ext("e", "2")
        .with_ext("f", "0")
        .with_ext("g", "1700000000000")
        .with_ext("h", "0")
        .with_ext("i", "KEYS\u{1}OrderID188\u{2}UNIQ_KEY\u{1}7F0000011F9C18B4AAC2156E4A3C0000\u{2}WAIT\u{1}true\u{2}TAGS\u{1}TagA\u{2}")
        .with_ext("j", "0")
        .with_ext("k", "false")
        .with_ext("m", "false")
        .with_ext("n", "broker-a")
        .with_body(vec![b'x'; 128])
}

/// The broker's answer to a send, built as the send processor builds it.
pub fn send_response(request: &RemotingCommand) -> RemotingCommand {
    let header = SendMessageResponseHeader {
        msg_id: "7F00000100002A9F0000000000A3B1C8".to_owned(),
        queue_id: 2,
        queue_offset: 1_234_567,
        ..SendMessageResponseHeader::default()
    };
    let mut response = request
        .response_to(0, None)
        .with_ext_fields(header.to_ext_fields());
    response.set_ext("MSG_REGION", "DefaultRegion");
    response.set_ext("TRACE_ON", "true");
    response
}
