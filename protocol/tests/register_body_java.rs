//! REGISTER_BROKER bodies as Java writes them: our JSON byte for byte against fastjson's output, and
//! compressed bodies built here by hand in Java's `RegisterBrokerBody.encode(true)` layout.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write;

use flate2::write::{DeflateEncoder, ZlibEncoder};
use flate2::Compression;
use proptest::prelude::*;
use protocol::body::{
    decode_compressed_register_body, decode_compressed_register_body_limited, to_json, DataVersion,
    RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
};

/// What a RocketMQ 5 broker's fastjson writes for one topic (fields sorted by name, mapping fields
/// of `TopicConfigAndMappingSerializeWrapper` always present).
const JAVA_BODY: &str = concat!(
    r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"#,
    r#""dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},"#,
    r#""mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"#,
    r#""topicConfigTable":{"TopicTest":{"attributes":{"+message.type":"NORMAL"},"order":false,"#,
    r#""perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","#,
    r#""topicSysFlag":0,"writeQueueNums":8}},"#,
    r#""topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#
);

fn topic_test_wrapper() -> TopicConfigSerializeWrapper {
    let mut tc = TopicConfig::new("TopicTest", 4);
    tc.write_queue_nums = 8;
    tc.perm = 6;
    tc.attributes
        .insert("+message.type".into(), "NORMAL".into());
    let mut wrapper = TopicConfigSerializeWrapper {
        data_version: DataVersion {
            counter: 3,
            state_version: 0,
            timestamp: 1_700_000_000_000,
        },
        ..TopicConfigSerializeWrapper::default()
    };
    wrapper.topic_config_table.insert("TopicTest".into(), tc);
    wrapper
}

#[test]
fn registration_json_is_byte_for_byte_javas() {
    let ours = to_json(&RegisterBrokerBody::new(topic_test_wrapper(), Vec::new()));
    assert_eq!(String::from_utf8(ours).unwrap(), JAVA_BODY);
    // And Java's bytes read back into the same table.
    let body = RegisterBrokerBody::decode(JAVA_BODY.as_bytes(), false).unwrap();
    assert_eq!(
        body.topic_config_serialize_wrapper.topic_config_table,
        topic_test_wrapper().topic_config_table
    );
}

#[test]
fn topics_json_keeps_javas_topic_config_serialize_wrapper_shape() {
    // topics.json and the wrapper alone carry no mapping fields (Java's TopicConfigManager.encode).
    let json = String::from_utf8(to_json(&topic_test_wrapper())).unwrap();
    assert!(
        json.starts_with(r#"{"dataVersion":{"counter":3,"#),
        "{json}"
    );
    assert!(!json.contains("mapping"), "{json}");
}

// ---------------------------------------------------------------- compressed, built by hand

fn put_entry(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// The plain bytes Java's `encode(true)` deflates. `mappings: None` is the 4.x layout.
fn java_plain(topic_lines: &[&str], filter_json: &str, mappings: Option<&[&str]>) -> Vec<u8> {
    let mut out = Vec::new();
    put_entry(
        &mut out,
        br#"{"counter":7,"stateVersion":2,"timestamp":1700000000123}"#,
    );
    out.extend_from_slice(&(topic_lines.len() as i32).to_be_bytes());
    for line in topic_lines {
        put_entry(&mut out, line.as_bytes());
    }
    put_entry(&mut out, filter_json.as_bytes());
    if let Some(mappings) = mappings {
        out.extend_from_slice(&(mappings.len() as i32).to_be_bytes());
        for m in mappings {
            put_entry(&mut out, m.as_bytes());
        }
    }
    out
}

/// `new DeflaterOutputStream(out, new Deflater(BEST_COMPRESSION))`: zlib framing.
fn zlib(plain: &[u8]) -> Vec<u8> {
    let mut enc = ZlibEncoder::new(Vec::new(), Compression::best());
    enc.write_all(plain).unwrap();
    enc.finish().unwrap()
}

/// rocketmq-rust brokers: the same layout as a raw deflate stream.
fn raw_deflate(plain: &[u8]) -> Vec<u8> {
    let mut enc = DeflateEncoder::new(Vec::new(), Compression::best());
    enc.write_all(plain).unwrap();
    enc.finish().unwrap()
}

const TOPIC_LINES: [&str; 3] = [
    r#"TopicTest 4 8 6 SINGLE_TAG {"+message.type":"NORMAL"}"#,
    "%RETRY%group 1 1 6 MULTI_TAG {}",
    "OldTopic 2 2 2 SINGLE_TAG",
];
const MAPPING: &str = r#"{"bname":"broker-a","currIdMap":{},"dirty":false,"epoch":1,"scope":"__global__","topic":"Static","totalQueues":2}"#;

fn check_topics(body: &RegisterBrokerBody) {
    let w = &body.topic_config_serialize_wrapper;
    assert_eq!(
        w.data_version,
        DataVersion {
            counter: 7,
            state_version: 2,
            timestamp: 1_700_000_000_123
        }
    );
    let names: Vec<&str> = w.topic_config_table.keys().map(String::as_str).collect();
    assert_eq!(names, ["%RETRY%group", "OldTopic", "TopicTest"]);
    let t = &w.topic_config_table["TopicTest"];
    assert_eq!(
        (
            t.read_queue_nums,
            t.write_queue_nums,
            t.perm,
            t.topic_filter_type.as_str()
        ),
        (4, 8, 6, "SINGLE_TAG")
    );
    assert_eq!(
        t.attributes,
        BTreeMap::from([("+message.type".to_owned(), "NORMAL".to_owned())])
    );
    let r = &w.topic_config_table["%RETRY%group"];
    assert_eq!(
        (r.read_queue_nums, r.topic_filter_type.as_str()),
        (1, "MULTI_TAG")
    );
    assert_eq!(w.topic_config_table["OldTopic"].perm, 2);
}

#[test]
fn java_5_compressed_body_decodes_with_mappings() {
    let plain = java_plain(&TOPIC_LINES, r#"["127.0.0.1:30001"]"#, Some(&[MAPPING]));
    let body = RegisterBrokerBody::decode(&zlib(&plain), true).unwrap();
    check_topics(&body);
    assert_eq!(body.filter_server_list, ["127.0.0.1:30001"]);
    let mappings = body
        .topic_config_serialize_wrapper
        .topic_queue_mapping_info_map
        .expect("5.x mappings");
    assert_eq!(mappings["Static"]["totalQueues"], 2);
    assert_eq!(mappings["Static"]["bname"], "broker-a");
}

#[test]
fn java_4_compressed_body_without_mapping_section_decodes() {
    let plain = java_plain(&TOPIC_LINES, "[]", None);
    let body = decode_compressed_register_body(&zlib(&plain)).unwrap();
    check_topics(&body);
    assert!(body.filter_server_list.is_empty());
    assert_eq!(
        body.topic_config_serialize_wrapper
            .topic_queue_mapping_info_map,
        None
    );
}

#[test]
fn java_5_deflated_body_sent_as_not_compressed_decodes() {
    // RocketMQ 5 brokers with compressedRegister=true send compressed=false with a zlib body.
    let plain = java_plain(&TOPIC_LINES, "[]", Some(&[]));
    check_topics(&RegisterBrokerBody::decode(&zlib(&plain), false).unwrap());
    // Neither JSON nor zlib: the JSON error is reported.
    let e = RegisterBrokerBody::decode(b"\x01\x02 not json", false).unwrap_err();
    assert!(!e.0.contains("compressed"), "the JSON error: {}", e.0);
    // A zlib header on a broken stream: still the JSON error (that is what the header announced).
    let e = RegisterBrokerBody::decode(&[0x78, 0xDA, 0, 0], false).unwrap_err();
    assert!(!e.0.contains("compressed"), "the JSON error: {}", e.0);
}

#[test]
fn raw_deflate_body_of_rocketmq_rust_brokers_decodes() {
    let plain = java_plain(&TOPIC_LINES, "[]", Some(&[]));
    check_topics(&decode_compressed_register_body(&raw_deflate(&plain)).unwrap());
}

#[test]
fn unparsable_filter_server_list_is_empty_as_in_java() {
    let plain = java_plain(&TOPIC_LINES, "not json", Some(&[]));
    let body = decode_compressed_register_body(&zlib(&plain)).unwrap();
    check_topics(&body);
    assert!(body.filter_server_list.is_empty());
}

fn decode_error(body: &[u8]) -> String {
    match decode_compressed_register_body(body) {
        Ok(decoded) => panic!("accepted: {decoded:?}"),
        Err(e) => e.0,
    }
}

#[test]
fn truncated_compressed_bodies_are_errors() {
    let whole = zlib(&java_plain(&TOPIC_LINES, "[]", Some(&[MAPPING])));
    for cut in 0..whole.len() - 4 {
        // The last 4 bytes are zlib's adler32 trailer: the data is whole before them.
        let e = decode_error(&whole[..cut]);
        assert!(
            e.starts_with("compressed register broker body: "),
            "{cut}: {e}"
        );
    }
    assert!(decode_error(&whole[..whole.len() / 2]).contains("ends early"));
}

#[test]
fn inconsistent_frames_inside_a_valid_stream_are_errors() {
    // The plain bytes cut short: a valid deflate stream whose frames run out.
    let plain = java_plain(&TOPIC_LINES, "[]", Some(&[MAPPING]));
    for cut in [0, 3, 10, plain.len() - 1] {
        assert!(
            decode_compressed_register_body(&zlib(&plain[..cut])).is_err(),
            "cut {cut}"
        );
    }
    // A topic count far larger than the entries present (nothing is allocated from it).
    let mut lying = Vec::new();
    put_entry(&mut lying, br#"{"counter":1}"#);
    lying.extend_from_slice(&i32::MAX.to_be_bytes());
    assert!(decode_error(&zlib(&lying)).contains("truncated"));
    // A negative entry length.
    let mut negative = Vec::new();
    negative.extend_from_slice(&(-5i32).to_be_bytes());
    assert!(decode_error(&zlib(&negative)).contains("negative"));
    // A topic line Java's TopicConfig.decode refuses.
    let bad_line = java_plain(&["T 1 1 6 NO_SUCH_TYPE"], "[]", Some(&[]));
    assert!(decode_error(&zlib(&bad_line)).contains("topic config 0"));
    // A mapping without its topic.
    let no_topic = java_plain(&TOPIC_LINES, "[]", Some(&[r#"{"totalQueues":2}"#]));
    assert!(decode_error(&zlib(&no_topic)).contains("no topic"));
}

#[test]
fn garbage_and_oversized_bodies_are_errors() {
    assert!(decode_error(b"{\"filterServerList\":[]}").contains("compressed register broker body"));
    assert!(decode_error(&[0x78, 0xDA, 1, 2, 3, 4, 5]).contains("compressed register broker body"));
    // 32 MiB of zeros deflate to about 32 KiB: refused past the limit, not allocated.
    let bomb = zlib(&vec![0u8; 32 * 1024 * 1024]);
    // The limit is exact: a body inflating to the limit is read, one byte more is refused.
    let plain = java_plain(&TOPIC_LINES, "[]", Some(&[MAPPING]));
    let body = zlib(&plain);
    check_topics(&decode_compressed_register_body_limited(&body, plain.len()).unwrap());
    assert!(decode_compressed_register_body_limited(&body, plain.len() - 1).is_err());
    assert!(decode_compressed_register_body_limited(&body, 0).is_err());
    let e = decode_compressed_register_body_limited(&bomb, 1024 * 1024).unwrap_err();
    assert!(
        e.0.contains("inflates to more than 1048576 bytes"),
        "{}",
        e.0
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_compressed_register_body(&bytes);
        let mut zlib_prefixed = vec![0x78, 0xDA];
        zlib_prefixed.extend_from_slice(&bytes);
        let _ = decode_compressed_register_body(&zlib_prefixed);
    }

    #[test]
    fn arbitrary_plain_bytes_in_a_valid_stream_never_panic(
        plain in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let _ = decode_compressed_register_body(&zlib(&plain));
    }

    #[test]
    fn flipped_bytes_never_panic(index in any::<prop::sample::Index>(), value in any::<u8>()) {
        let mut body = zlib(&java_plain(&TOPIC_LINES, "[]", Some(&[MAPPING])));
        let i = index.index(body.len());
        body[i] = value;
        let _ = decode_compressed_register_body(&body);
    }
}

#[test]
fn body_deflated_by_real_zlib_decodes() {
    // Written by fuzz/make_seeds.py with Python's zlib.compress(..., 9): the zlib library that
    // Java's Deflater wraps, so these are the bytes a Java broker would send.
    let seed = include_bytes!("../../fuzz/corpus/json_bodies/seed-register-compressed");
    let body = RegisterBrokerBody::decode(seed, true).unwrap();
    let w = &body.topic_config_serialize_wrapper;
    assert_eq!(w.data_version.counter, 1);
    let a = &w.topic_config_table["TopicA"];
    assert_eq!((a.read_queue_nums, a.perm, a.attributes.len()), (4, 6, 1));
    assert_eq!(
        w.topic_config_table["TopicB"].topic_filter_type,
        "MULTI_TAG"
    );
    let mappings = w.topic_queue_mapping_info_map.as_ref().expect("mappings");
    assert_eq!(mappings["TopicA"]["totalQueues"], 4);
}
