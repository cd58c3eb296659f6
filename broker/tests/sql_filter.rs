//! SQL92 property filters through the real broker: CHECK_CLIENT_CONFIG as Apache's 4.9.8 Java client
//! sends it (a frame captured from that client), pulls carrying a SQL92 subscription, subscriptions
//! registered by heartbeats on every shard, offsets moving past what the filter skips, and the
//! refusals when property filters are off or an expression is wrong.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use bytes::Bytes;
use common::*;
use protocol::body::{ConsumerData, HeartbeatData, SubscriptionData};
use protocol::header::{pull_sys_flag, CommandHeader, PullMessageRequestHeader};
use protocol::message::properties;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

const PROPERTY_FILTER_ON: &str = "enablePropertyFilter = true";

/// The header the 4.9.8 Java client writes for CHECK_CLIENT_CONFIG (JSON serialization).
const JAVA_HEADER: &str = r#"{"code":46,"flag":0,"language":"JAVA","opaque":0,"serializeTypeCurrentRPC":"JSON","version":409}"#;

/// The whole frame that client sent for `a > 5 AND b = 'x'` (captured from its `RemotingCommand`).
const JAVA_FRAME_HEX: &str = "00000145000000607b22636f6465223a34362c22666c6167223a302c226c616e6775616765223a224a415641222c226f7061717565223a302c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c2276657273696f6e223a3430397d7b22636c69656e744964223a223132372e302e302e3140343234322331222c2267726f7570223a2273716c2d67726f7570222c22737562736372697074696f6e44617461223a7b22636c61737346696c7465724d6f6465223a66616c73652c22636f6465536574223a5b5d2c2265787072657373696f6e54797065223a2253514c3932222c22737562537472696e67223a2261203e203520414e442062203d20277827222c2273756256657273696f6e223a313730303030303030303132332c2274616773536574223a5b5d2c22746f706963223a2253716c546f706963227d7d";

/// The Java client's CHECK_CLIENT_CONFIG body for a SQL92 subscription to `expression`.
fn java_body(expression: &str) -> String {
    let quoted = serde_json::to_string(expression).unwrap();
    format!(
        r#"{{"clientId":"127.0.0.1@4242#1","group":"sql-group","subscriptionData":{{"classFilterMode":false,"codeSet":[],"expressionType":"SQL92","subString":{quoted},"subVersion":1700000000123,"tagsSet":[],"topic":"SqlTopic"}}}}"#
    )
}

/// A frame: length, header length (JSON serialization), header, body.
fn frame(header: &str, body: &str) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&((4 + header.len() + body.len()) as u32).to_be_bytes());
    out.extend_from_slice(&(header.len() as u32).to_be_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(body.as_bytes());
    out
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Writes one frame, reads one answer: its header as JSON, and its body.
fn exchange(addr: SocketAddr, bytes: &[u8]) -> (serde_json::Value, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.write_all(bytes).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut rest = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut rest).unwrap();
    let header_len = (u32::from_be_bytes(rest[..4].try_into().unwrap()) & 0xff_ffff) as usize;
    let header = serde_json::from_slice(&rest[4..4 + header_len]).unwrap();
    (header, rest[4 + header_len..].to_vec())
}

fn check_client(body: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::CHECK_CLIENT_CONFIG)
        .with_body(Bytes::from(body.to_owned()))
}

/// A PULL_MESSAGE as the Java client sends it; `subscription` set means the SUBSCRIPTION flag.
fn pull_with(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    expression_type: &str,
    subscription: Option<&str>,
) -> RemotingCommand {
    let header = PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: if subscription.is_some() {
            pull_sys_flag::SUBSCRIPTION
        } else {
            0
        },
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: subscription.map(str::to_owned),
        sub_version: 0,
        expression_type: Some(expression_type.into()),
        max_msg_bytes: None,
    };
    RemotingCommand::request(request_code::PULL_MESSAGE).with_ext_fields(header.to_ext_fields())
}

fn heartbeat(group: &str, topic: &str, expression: &str, expression_type: &str) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: format!("{group}-client"),
        consumer_data_set: vec![ConsumerData {
            group_name: group.into(),
            subscription_data_set: vec![SubscriptionData {
                topic: topic.into(),
                sub_string: expression.into(),
                expression_type: expression_type.into(),
                ..SubscriptionData::default()
            }],
            ..ConsumerData::default()
        }],
        ..HeartbeatData::default()
    };
    RemotingCommand::request(request_code::HEART_BEAT).with_body(protocol::body::to_json(&data))
}

/// Message `i`: body `m<i>`, property `a` = i except when i % 5 == 4, `b` = x for even i, y for odd.
fn message_props(i: usize) -> String {
    let a = i.to_string();
    let mut pairs = vec![
        (properties::TAGS, "TagA"),
        ("b", if i % 2 == 0 { "x" } else { "y" }),
    ];
    if i % 5 != 4 {
        pairs.push(("a", &a));
    }
    properties::encode(pairs)
}

async fn send_messages(client: &Client, topic: &str, queue_id: i32, count: usize) {
    for i in 0..count {
        let r = send(
            client,
            topic,
            queue_id,
            format!("m{i}").as_bytes(),
            &message_props(i),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    }
}

async fn invoke(client: &Client, req: RemotingCommand) -> RemotingCommand {
    client.invoke(req, TIMEOUT).await.unwrap()
}

fn bodies(r: &RemotingCommand) -> Vec<String> {
    decode_records(&r.body)
        .iter()
        .map(|m| String::from_utf8_lossy(&m.body).into_owned())
        .collect()
}

#[test]
fn check_client_config_answers_the_java_client() {
    let broker = Broker::start(PROPERTY_FILTER_ON);
    let golden = hex(JAVA_FRAME_HEX);
    assert_eq!(frame(JAVA_HEADER, &java_body("a > 5 AND b = 'x'")), golden);

    let (header, body) = exchange(broker.addr(), &golden);
    assert_eq!(header["code"], 0, "{header}");
    assert_eq!(
        header["flag"], 1,
        "a response to the request's opaque: {header}"
    );
    assert_eq!(header["opaque"], 0, "{header}");
    assert_eq!(header["serializeTypeCurrentRPC"], "JSON", "{header}");
    assert!(header.get("remark").is_none_or(|r| r.is_null()), "{header}");
    assert!(body.is_empty());

    // Apache refuses to build `a > 'x'`: SUBSCRIPTION_PARSE_FAILED with the reason.
    let (header, _) = exchange(broker.addr(), &frame(JAVA_HEADER, &java_body("a > 'x'")));
    assert_eq!(
        header["code"],
        response_code::SUBSCRIPTION_PARSE_FAILED,
        "{header}"
    );
    let remark = header["remark"].as_str().unwrap();
    assert!(remark.starts_with("Invalid MessageSelector. "), "{remark}");
    assert!(remark.contains("compares numbers"), "{remark}");

    run_local(async {
        let client = connect(broker.addr()).await;
        let code = |r: RemotingCommand| (r.code, r.remark);
        let unclosed = java_body("a = 'x");
        assert_eq!(
            code(invoke(&client, check_client(&unclosed)).await).0,
            response_code::SUBSCRIPTION_PARSE_FAILED
        );
        let tag = java_body("TagA || TagB").replace("SQL92", "TAG");
        assert_eq!(code(invoke(&client, check_client(&tag)).await), (0, None));
        let unknown = java_body("x").replace("SQL92", "GROOVY");
        assert_eq!(
            code(invoke(&client, check_client(&unknown)).await).0,
            response_code::SUBSCRIPTION_PARSE_FAILED
        );
        // No subscription, or a JSON null body, is nothing to check (as fastjson reads them).
        let no_sub = r#"{"clientId":"c","group":"g"}"#;
        assert_eq!(code(invoke(&client, check_client(no_sub)).await), (0, None));
        assert_eq!(code(invoke(&client, check_client("null")).await), (0, None));
        let garbage = invoke(&client, check_client("{not json")).await;
        assert_eq!(garbage.code, response_code::SYSTEM_ERROR);
        assert!(garbage.remark.unwrap().contains("CHECK_CLIENT_CONFIG body"));
    });
}

#[test]
fn without_property_filters_sql92_is_refused_as_apache_does() {
    let broker = Broker::start("");
    let not_supported = "The broker does not support consumer to filter message by SQL92";
    let (header, _) = exchange(broker.addr(), &hex(JAVA_FRAME_HEX));
    assert_eq!(header["code"], response_code::SYSTEM_ERROR, "{header}");
    assert_eq!(header["remark"], not_supported);
    run_local(async {
        let client = connect(broker.addr()).await;
        let tag = java_body("TagA").replace("SQL92", "TAG");
        assert_eq!(
            invoke(&client, check_client(&tag)).await.code,
            response_code::SUCCESS
        );
        send_messages(&client, "SqlOff", 0, 3).await;
        // A pull carrying a SQL92 subscription...
        let r = invoke(
            &client,
            pull_with("g", "SqlOff", 0, 0, "SQL92", Some("a > 1")),
        )
        .await;
        assert_eq!(
            (r.code, r.remark.as_deref()),
            (response_code::SYSTEM_ERROR, Some(not_supported))
        );
        // ...and one relying on a registered SQL92 subscription.
        let hb = invoke(&client, heartbeat("sqloff", "SqlOff", "a > 1", "SQL92")).await;
        assert_eq!(hb.code, response_code::SUCCESS);
        let r = invoke(&client, pull_with("sqloff", "SqlOff", 0, 0, "SQL92", None)).await;
        assert_eq!(
            (r.code, r.remark.as_deref()),
            (response_code::SYSTEM_ERROR, Some(not_supported))
        );
    });
}

#[test]
fn pulls_carrying_sql92_filter_by_properties_and_move_past_the_rest() {
    let broker = Broker::start(PROPERTY_FILTER_ON);
    run_local(async {
        let client = connect(broker.addr()).await;
        send_messages(&client, "SqlPull", 0, 12).await;
        let pull =
            |offset: i64, sql: &str| pull_with("g", "SqlPull", 0, offset, "SQL92", Some(sql));

        let r = invoke(&client, pull(0, "a > 5 AND b = 'x'")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        // 6, 8, 10 (a = 9 is missing on message 9: odd anyway).
        assert_eq!(bodies(&r), ["m6", "m8", "m10"]);
        assert_eq!(
            r.ext("nextBeginOffset"),
            Some("12"),
            "skipped messages are consumed past"
        );

        // Missing properties: IS NULL matches them, a comparison with them does not.
        let r = invoke(&client, pull(0, "a IS NULL")).await;
        assert_eq!(bodies(&r), ["m4", "m9"]);
        let r = invoke(&client, pull(0, "a <> 4")).await;
        assert!(!bodies(&r).contains(&"m4".to_owned()) && !bodies(&r).contains(&"m9".to_owned()));
        assert_eq!(bodies(&r).len(), 10);

        // From an offset, up to a last match: the next offset is the queue's end.
        let r = invoke(&client, pull(7, "a BETWEEN 2 AND 7 OR b = 'y' AND a >= 11")).await;
        assert_eq!(bodies(&r), ["m7", "m11"]);
        assert_eq!(r.ext("nextBeginOffset"), Some("12"));

        // Nothing matches: PULL_RETRY_IMMEDIATELY, and the consumer still moves to the end.
        let r = invoke(&client, pull(0, "b = 'z'")).await;
        assert_eq!(r.code, response_code::PULL_RETRY_IMMEDIATELY);
        assert_eq!(r.ext("nextBeginOffset"), Some("12"));
        assert!(r.body.is_empty());

        // TAGS is a property too; a TAG pull on the same queue is unchanged.
        let r = invoke(&client, pull(0, "TAGS = 'TagA' AND a < 2")).await;
        assert_eq!(bodies(&r), ["m0", "m1"]);
        let r = invoke(
            &client,
            pull_with("g", "SqlPull", 0, 0, "TAG", Some("TagA")),
        )
        .await;
        assert_eq!(bodies(&r).len(), 12);

        // Wrong expressions and types: SUBSCRIPTION_PARSE_FAILED with the reason.
        for (kind, sql) in [
            ("SQL92", "a > "),
            ("SQL92", "a > 'x'"),
            ("SQL92", ""),
            ("GROOVY", "a"),
        ] {
            let r = invoke(&client, pull_with("g", "SqlPull", 0, 0, kind, Some(sql))).await;
            assert_eq!(
                r.code,
                response_code::SUBSCRIPTION_PARSE_FAILED,
                "{kind} {sql:?}"
            );
            let remark = r.remark.unwrap();
            assert!(
                remark.starts_with("parse the consumer's subscription failed"),
                "{remark}"
            );
        }
    });
}

#[test]
fn heartbeat_sql92_subscriptions_filter_pulls_on_every_shard() {
    let broker = Broker::start(PROPERTY_FILTER_ON);
    run_local(async {
        let client = connect(broker.addr()).await;
        let hb = invoke(
            &client,
            heartbeat(
                "sqlg",
                "SqlReg",
                "b = 'x' AND (a <> 2 OR a IS NULL)",
                "SQL92",
            ),
        )
        .await;
        assert_eq!(hb.code, response_code::SUCCESS);
        // Four queues over the two shards: each shard filters with its own compiled copy.
        for queue in 0..4 {
            send_messages(&client, "SqlReg", queue, 6).await;
        }
        for queue in 0..4 {
            let r = invoke(
                &client,
                pull_with("sqlg", "SqlReg", queue, 0, "SQL92", None),
            )
            .await;
            assert_eq!(
                r.code,
                response_code::SUCCESS,
                "queue {queue}: {:?}",
                r.remark
            );
            assert_eq!(bodies(&r), ["m0", "m4"], "queue {queue}");
            assert_eq!(r.ext("nextBeginOffset"), Some("6"));
        }
        // A changed subscription replaces the filter everywhere.
        let hb = invoke(&client, heartbeat("sqlg", "SqlReg", "a = 5", "SQL92")).await;
        assert_eq!(hb.code, response_code::SUCCESS);
        for queue in 0..4 {
            let r = invoke(
                &client,
                pull_with("sqlg", "SqlReg", queue, 0, "SQL92", None),
            )
            .await;
            assert_eq!(bodies(&r), ["m5"], "queue {queue}");
        }
        // A registered expression that does not compile: Apache's FILTER_DATA_NOT_EXIST.
        let hb = invoke(&client, heartbeat("badg", "SqlReg", "a >", "SQL92")).await;
        assert_eq!(hb.code, response_code::SUCCESS);
        let r = invoke(&client, pull_with("badg", "SqlReg", 1, 0, "SQL92", None)).await;
        assert_eq!(r.code, response_code::FILTER_DATA_NOT_EXIST);
        assert_eq!(
            r.remark.as_deref(),
            Some("The broker's consumer filter data is not exist!Your expression may be wrong!")
        );
        // A SQL92 pull of a group that registered nothing waits for its heartbeat, never gets all.
        let r = invoke(&client, pull_with("nobody", "SqlReg", 0, 0, "SQL92", None)).await;
        assert_eq!(r.code, response_code::SUBSCRIPTION_NOT_EXIST);
        let r = invoke(&client, pull_with("nobody", "SqlReg", 0, 0, "TAG", None)).await;
        assert_eq!(
            bodies(&r).len(),
            6,
            "a tag consumer without registration still gets all"
        );
    });
}
