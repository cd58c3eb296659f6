//! `compressed=true` REGISTER_BROKER (a Java broker with `compressedRegister=true`) against the real
//! binary: the body is built here by hand in Java's layout; broken bodies get an error answer and
//! the name server keeps serving on the same connection.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;

use common::*;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use protocol::{request_code, response_code, RemotingCommand};

fn put_entry(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Java's `RegisterBrokerBody.encode(true)` of a 5.x broker: DataVersion JSON, topic lines
/// (`TopicConfig.encode()`), filter server list JSON, topic queue mappings; zlib (`Deflater`).
fn java_compressed_body(counter: i64) -> Vec<u8> {
    let mut plain = Vec::new();
    let version = format!(r#"{{"counter":{counter},"stateVersion":0,"timestamp":1700000000456}}"#);
    put_entry(&mut plain, version.as_bytes());
    let topics = [
        r#"CompressedTopic 4 8 6 SINGLE_TAG {"+message.type":"NORMAL"}"#,
        "%RETRY%group-c 1 1 6 SINGLE_TAG {}",
    ];
    plain.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for line in topics {
        put_entry(&mut plain, line.as_bytes());
    }
    put_entry(&mut plain, b"[]");
    plain.extend_from_slice(&0i32.to_be_bytes()); // no static-topic mappings
    let mut deflater = ZlibEncoder::new(Vec::new(), Compression::best());
    deflater.write_all(&plain).expect("deflate");
    deflater.finish().expect("deflate")
}

/// The request a Java broker sends: `compressed=true`, bodyCrc32 over the compressed bytes.
fn compressed_register(body: Vec<u8>) -> RemotingCommand {
    let crc = i32::try_from(crc32fast::hash(&body) & 0x7FFF_FFFF).expect("31-bit crc");
    RemotingCommand::request(request_code::REGISTER_BROKER)
        .with_ext("brokerName", "broker-c")
        .with_ext("brokerAddr", "127.0.0.5:10911")
        .with_ext("clusterName", "DefaultCluster")
        .with_ext("haServerAddr", "127.0.0.5:10912")
        .with_ext("brokerId", "0")
        .with_ext("enableActingMaster", "false")
        .with_ext("compressed", "true")
        .with_ext("bodyCrc32", &crc.to_string())
        .with_body(body)
}

fn remark(response: &RemotingCommand) -> &str {
    response.remark.as_deref().unwrap_or("")
}

#[test]
fn compressed_registration_serves_routes_and_bad_bodies_get_errors() {
    let server = NameServerProcess::start(&[]);
    let addr = server.addr;
    run_local(move || async move {
        let client = connect(addr).await;

        // Broken bodies first: nothing may be registered by them.
        let garbage = invoke(
            &client,
            compressed_register(b"definitely not a deflate stream".to_vec()),
        )
        .await;
        assert_eq!(garbage.code, response_code::SYSTEM_ERROR);
        assert!(
            remark(&garbage).contains("compressed register broker body"),
            "{:?}",
            garbage.remark
        );
        let whole = java_compressed_body(5);
        let truncated = invoke(
            &client,
            compressed_register(whole[..whole.len() / 2].to_vec()),
        )
        .await;
        assert_eq!(truncated.code, response_code::SYSTEM_ERROR);
        assert!(
            remark(&truncated).contains("ends early"),
            "{:?}",
            truncated.remark
        );
        assert!(registered_broker_names(&client).await.is_empty());

        // The whole body registers the broker with its topics, on the same connection.
        let response = invoke(&client, compressed_register(whole)).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        assert_eq!(
            registered_broker_names(&client).await,
            vec!["broker-c".to_owned()]
        );
        let route = invoke(&client, route_request("CompressedTopic")).await;
        assert_eq!(route.code, response_code::SUCCESS, "{:?}", route.remark);
        let route = body_json(&route);
        assert_eq!(route["queueDatas"][0]["brokerName"], "broker-c");
        assert_eq!(route["queueDatas"][0]["readQueueNums"], 4);
        assert_eq!(route["queueDatas"][0]["writeQueueNums"], 8);
        assert_eq!(route["queueDatas"][0]["perm"], 6);
        assert_eq!(
            route["brokerDatas"][0]["brokerAddrs"]["0"],
            "127.0.0.5:10911"
        );
        let retry = invoke(&client, route_request("%RETRY%group-c")).await;
        assert_eq!(retry.code, response_code::SUCCESS, "{:?}", retry.remark);

        // The data version inside the compressed body is the one stored.
        let query = RemotingCommand::request(request_code::QUERY_DATA_VERSION)
            .with_ext("brokerName", "broker-c")
            .with_ext("brokerAddr", "127.0.0.5:10911")
            .with_ext("clusterName", "DefaultCluster")
            .with_ext("brokerId", "0")
            .with_body(&br#"{"counter":5,"stateVersion":0,"timestamp":1700000000456}"#[..]);
        let same = invoke(&client, query).await;
        assert_eq!(same.ext("changed"), Some("false"), "{:?}", same.remark);

        // A RocketMQ 5 broker with compressedRegister=true: zlib body, header compressed=false.
        let java5 = compressed_register(java_compressed_body(1))
            .with_ext("brokerName", "broker-d")
            .with_ext("brokerAddr", "127.0.0.6:10911")
            .with_ext("compressed", "false");
        let response = invoke(&client, java5).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        let route = body_json(&invoke(&client, route_request("CompressedTopic")).await);
        assert_eq!(
            route["queueDatas"].as_array().map(Vec::len),
            Some(2),
            "broker-c and broker-d: {route}"
        );

        // A broken body after a good one is refused and leaves the registration as it was.
        let mut flipped = java_compressed_body(6);
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0xFF;
        let response = invoke(&client, compressed_register(flipped)).await;
        assert_eq!(response.code, response_code::SYSTEM_ERROR);
        let route = invoke(&client, route_request("CompressedTopic")).await;
        assert_eq!(route.code, response_code::SUCCESS, "{:?}", route.remark);
    });
}
