//! QUERY_MESSAGE under ACL with the frames Java clients sign: clients since 4.9.4 sign every extField,
//! `_UNIQUE_KEY_QUERY` included (`queryMessage`, `viewMessage(topic, msgId)`); clients up to 4.9.3
//! signed the header's fields and added the flag afterwards. The broker tells them apart by the
//! request's `version`, as RocketMQ 5.1 does. Signatures here are computed by this test the way the
//! clients' `AclClientRPCHook` does, not by the broker's code.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use base64::Engine;
use bytes::Bytes;
use common::*;
use hmac::{Hmac, KeyInit, Mac};
use protocol::header::CommandHeader;
use protocol::message::properties;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;
use sha1::Sha1;

const ACCESS_KEY: &str = "RocketMQ";
const SECRET_KEY: &str = "12345678";
/// `MQVersion.Version` ordinals: what a 5.1.4 and a 4.9.3 client put in `version`.
const V5_1_4: i32 = 441;
const V4_9_3: i32 = 399;

const ACL: &str = "accounts:\n  - accessKey: RocketMQ\n    secretKey: \"12345678\"\n    \
                   defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: SUB\n";

/// base64(HMAC-SHA1(secret, values of `signed` in key order, then the body)): `AclUtils.calSignature`
/// over `combineRequestContent` (keys are ASCII, so Java's TreeMap order is byte order).
fn java_signature(signed: &BTreeMap<String, String>, body: &[u8]) -> String {
    let mut content = Vec::new();
    for value in signed.values() {
        content.extend_from_slice(value.as_bytes());
    }
    content.extend_from_slice(body);
    let mut mac = Hmac::<Sha1>::new_from_slice(SECRET_KEY.as_bytes()).unwrap();
    mac.update(&content);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Signs as a 4.9.4+ client: AccessKey added, then every extField signed.
fn sign_all(mut cmd: RemotingCommand) -> RemotingCommand {
    cmd.set_ext("AccessKey", ACCESS_KEY);
    let signed: BTreeMap<String, String> = cmd
        .ext_fields
        .iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let signature = java_signature(&signed, &cmd.body);
    cmd.set_ext("Signature", &signature);
    cmd
}

/// QUERY_MESSAGE's header fields (`QueryMessageRequestHeader`).
fn query_header(topic: &str, key: &str, max_num: i32) -> Vec<(&'static str, String)> {
    vec![
        ("topic", topic.to_owned()),
        ("key", key.to_owned()),
        ("maxNum", max_num.to_string()),
        ("beginTimestamp", "0".to_owned()),
        ("endTimestamp", (now_ms() + 60_000).to_string()),
    ]
}

/// `MQClientAPIImpl.queryMessage` of a 5.x client: the header, `_UNIQUE_KEY_QUERY`, then signed.
fn query_5x(topic: &str, key: &str, max_num: i32, unique: bool) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(request_code::QUERY_MESSAGE);
    cmd.version = V5_1_4;
    for (k, v) in query_header(topic, key, max_num) {
        cmd.set_ext(k, &v);
    }
    cmd.set_ext("_UNIQUE_KEY_QUERY", if unique { "true" } else { "false" });
    sign_all(cmd)
}

/// The same query from a 4.9.3 client: its hook signed AccessKey and the header's fields only; the
/// flag was added to the extFields after.
fn query_493(topic: &str, key: &str, unique: bool) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(request_code::QUERY_MESSAGE);
    cmd.version = V4_9_3;
    let mut signed = BTreeMap::new();
    signed.insert("AccessKey".to_owned(), ACCESS_KEY.to_owned());
    for (k, v) in query_header(topic, key, 32) {
        cmd.set_ext(k, &v);
        signed.insert(k.to_owned(), v);
    }
    cmd.set_ext("AccessKey", ACCESS_KEY);
    cmd.set_ext("_UNIQUE_KEY_QUERY", if unique { "true" } else { "false" });
    let signature = java_signature(&signed, &[]);
    cmd.set_ext("Signature", &signature);
    cmd
}

async fn signed_send(client: &Client, topic: &str, props: &str, body: &[u8]) {
    let mut cmd = RemotingCommand::request(request_code::SEND_MESSAGE_V2)
        .with_ext_fields(send_header(topic, 0, props).to_ext_fields())
        .with_body(Bytes::copy_from_slice(body));
    cmd.version = V5_1_4;
    let r = client.invoke(sign_all(cmd), TIMEOUT).await.unwrap();
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
}

fn acl_broker() -> (Broker, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let acl = dir.path().join("plain_acl.yml");
    std::fs::write(&acl, ACL).unwrap();
    let broker = Broker::builder()
        .extra(&format!(
            "aclEnable = true\naclFile = \"{}\"",
            acl.display()
        ))
        .start();
    (broker, dir)
}

#[test]
fn queries_signed_as_each_client_version_signs_them_pass() {
    let (broker, _acl) = acl_broker();
    run_local(async {
        let client = connect(broker.addr()).await;
        let props = properties::encode([
            (properties::UNIQ_KEY, "ACLUNIQ1"),
            (properties::KEYS, "order-7"),
        ]);
        signed_send(&client, "AclQ", &props, b"found me").await;

        // viewMessage(topic, msgId) and queryMessage(topic, key) of a 5.x client.
        for (key, unique) in [("ACLUNIQ1", true), ("order-7", false)] {
            let r = client
                .invoke(query_5x("AclQ", key, 32, unique), TIMEOUT)
                .await
                .unwrap();
            assert_eq!(r.code, response_code::SUCCESS, "{key}: {:?}", r.remark);
            assert_eq!(decode_records(&r.body)[0].body.as_ref(), b"found me");
        }
        // A 4.9.3 client's query, its flag unsigned.
        let r = client
            .invoke(query_493("AclQ", "ACLUNIQ1", true), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);

        // A newer client's flag is part of the signature: leaving it out of the signed content (or
        // changing it after signing) is refused.
        let mut tampered = query_5x("AclQ", "ACLUNIQ1", 32, true);
        tampered.set_ext("_UNIQUE_KEY_QUERY", "false");
        let r = client.invoke(tampered, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::NO_PERMISSION, "{:?}", r.remark);
        assert!(r
            .remark
            .unwrap_or_default()
            .contains("Check signature failed"));
        let mut unsigned_flag = query_493("AclQ", "ACLUNIQ1", true);
        unsigned_flag.version = V5_1_4;
        let r = client.invoke(unsigned_flag, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::NO_PERMISSION, "{:?}", r.remark);
    });
}

#[test]
fn a_query_by_unique_key_returns_every_copy_whatever_max_num_says() {
    let (broker, _acl) = acl_broker();
    run_local(async {
        let client = connect(broker.addr()).await;
        // A producer's retry can store one message twice under one unique key.
        let props =
            properties::encode([(properties::UNIQ_KEY, "TWICE"), (properties::KEYS, "TWICE")]);
        for body in [&b"first"[..], b"second"] {
            signed_send(&client, "AclDup", &props, body).await;
        }
        let by_uniq = client
            .invoke(query_5x("AclDup", "TWICE", 1, true), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(by_uniq.code, response_code::SUCCESS, "{:?}", by_uniq.remark);
        assert_eq!(decode_records(&by_uniq.body).len(), 2);
        let by_key = client
            .invoke(query_5x("AclDup", "TWICE", 1, false), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(by_key.code, response_code::SUCCESS, "{:?}", by_key.remark);
        assert_eq!(decode_records(&by_key.body).len(), 1);
    });
}
