//! Fuzz target: arbitrary bytes as JSON bodies (with the unquoted-integer-key rewrite and fastjson's
//! object-keyed maps) and as compressed REGISTER_BROKER bodies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::body;

fuzz_target!(|data: &[u8]| {
    let _ = body::from_json::<body::TopicRouteData>(data);
    let _ = body::from_json::<body::HeartbeatData>(data);
    let _ = body::from_json::<body::RegisterBrokerBody>(data);
    // REGISTER_BROKER bodies as the name server reads them (JSON, then Java's zlib binary layout).
    let _ = body::RegisterBrokerBody::decode(data, false);
    let _ = body::RegisterBrokerBody::decode(data, true);
    let _ = body::from_json::<body::ConsumerOffsetSerializeWrapper>(data);
    let _ = body::TopicStatsTable::from_json(data);
    let _ = body::ConsumeStats::from_json(data);
    let _ = body::ResetOffsetBody::from_json(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = body::quote_integer_keys(text);
        let _ = body::quote_object_keys(text);
    }
});
