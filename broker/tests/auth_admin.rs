//! ACL 2.0's user and ACL admin requests (3001-3010) through a real broker process: Apache's checks
//! and answers, ACLs merged by resource and deleted by entry, a user's deletion taking its ACL, the
//! changes surviving SIGKILL (written before the answer), a slave copying its master's and refusing
//! changes of its own, a super user only by a super user.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod ha_common;

use std::time::{Duration, Instant};

use common::*;
use ha_common::*;
use protocol::{request_code as code, response_code, RemotingCommand};
use remoting::Client;
use serde_json::{json, Value};

fn user_req(c: i32, name: &str, body: Option<Value>) -> RemotingCommand {
    let mut r = RemotingCommand::request(c).with_ext("username", name);
    if let Some(b) = body {
        r = r.with_body(b.to_string().into_bytes());
    }
    r
}

fn acl_req(c: i32, subject: &str, body: Option<Value>) -> RemotingCommand {
    let mut r = RemotingCommand::request(c).with_ext("subject", subject);
    if let Some(b) = body {
        r = r.with_body(b.to_string().into_bytes());
    }
    r
}

fn acl_body(subject: &str, entries: Value) -> Value {
    json!({"subject": subject, "policies": [{"policyType": "Custom", "entries": entries}]})
}

async fn call(c: &Client, r: RemotingCommand) -> RemotingCommand {
    c.invoke(r, TIMEOUT).await.expect("answered")
}

async fn expect(c: &Client, r: RemotingCommand, code: i32, text: &str) {
    let a = call(c, r).await;
    assert_eq!(a.code, code, "{:?}", a.remark);
    let remark = a.remark.unwrap_or_default();
    assert!(remark.contains(text), "{remark:?} lacks {text:?}");
}

async fn ok_body(c: &Client, r: RemotingCommand) -> Value {
    let a = call(c, r).await;
    assert_eq!(a.code, response_code::SUCCESS, "{:?}", a.remark);
    if a.body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(&a.body).expect("JSON body")
}

#[test]
fn users_and_acls_are_managed_as_apache_does_and_survive_sigkill() {
    let mut broker = Broker::start("shardCount = 1");
    run_local(async {
        let c = connect(broker.addr()).await;
        let alice = json!({"password": "secret", "userType": "Normal"});
        assert!(ok_body(
            &c,
            user_req(code::AUTH_CREATE_USER, "alice", Some(alice.clone()))
        )
        .await
        .is_null());
        let perm = response_code::NO_PERMISSION;
        expect(
            &c,
            user_req(code::AUTH_CREATE_USER, "alice", Some(alice)),
            perm,
            "The user is existed",
        )
        .await;
        expect(
            &c,
            RemotingCommand::request(code::AUTH_CREATE_USER).with_body(b"{}".to_vec()),
            response_code::INVALID_PARAMETER,
            "The username is blank",
        )
        .await;
        expect(
            &c,
            user_req(code::AUTH_CREATE_USER, "bob", Some(json!({}))),
            perm,
            "password can not be blank",
        )
        .await;
        let got = ok_body(&c, user_req(code::AUTH_GET_USER, "alice", None)).await;
        assert_eq!(
            got,
            json!({"username": "alice", "password": "secret", "userType": "Normal", "userStatus": "enable"})
        );
        ok_body(
            &c,
            user_req(
                code::AUTH_CREATE_USER,
                "carol",
                Some(json!({"password": "p2"})),
            ),
        )
        .await;
        let listed = ok_body(
            &c,
            RemotingCommand::request(code::AUTH_LIST_USER).with_ext("filter", "ali"),
        )
        .await;
        assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
        ok_body(
            &c,
            user_req(
                code::AUTH_UPDATE_USER,
                "carol",
                Some(json!({"userStatus": "disable"})),
            ),
        )
        .await;
        let carol = ok_body(&c, user_req(code::AUTH_GET_USER, "carol", None)).await;
        assert_eq!(
            (carol["userStatus"].as_str(), carol["password"].as_str()),
            (Some("disable"), Some("p2"))
        );
        expect(
            &c,
            user_req(code::AUTH_UPDATE_USER, "dave", Some(json!({}))),
            perm,
            "The user is not exist",
        )
        .await;

        // ACLs: merged by resource, checked, filtered, deleted by entry.
        let first = acl_body(
            "User:alice",
            json!([{"resource": "Topic:orders*", "actions": ["Pub"], "sourceIps": ["10.0.0.0/8"], "decision": "Allow"}]),
        );
        ok_body(
            &c,
            acl_req(code::AUTH_CREATE_ACL, "User:alice", Some(first)),
        )
        .await;
        let more = acl_body(
            "User:alice",
            json!([
                {"resource": "Topic:orders*", "actions": ["Pub", "Sub"], "decision": "Allow"},
                {"resource": "Group:billing", "actions": ["Sub"], "decision": "Deny"}
            ]),
        );
        ok_body(&c, acl_req(code::AUTH_UPDATE_ACL, "User:alice", Some(more))).await;
        let acl = ok_body(&c, acl_req(code::AUTH_GET_ACL, "User:alice", None)).await;
        let entries = &acl["policies"][0]["entries"];
        assert_eq!(entries.as_array().map(Vec::len), Some(2), "{acl}");
        assert_eq!(
            entries[0]["actions"],
            json!(["Pub", "Sub"]),
            "replaced in place: {acl}"
        );
        assert!(entries[0].get("sourceIps").is_none(), "{acl}");
        expect(
            &c,
            acl_req(
                code::AUTH_CREATE_ACL,
                "User:nobody",
                Some(acl_body(
                    "User:nobody",
                    json!([{"resource": "*", "actions": ["All"], "decision": "Allow"}]),
                )),
            ),
            perm,
            "The subject of User:nobody is not exist.",
        )
        .await;
        expect(
            &c,
            acl_req(code::AUTH_CREATE_ACL, "User:alice", Some(acl_body("User:alice", json!([{"resource": "Topic:t", "actions": ["Pub"], "sourceIps": ["10.0.0.0/33"], "decision": "Allow"}])))),
            perm,
            "The source ip is invalid.",
        )
        .await;
        expect(
            &c,
            acl_req(
                code::AUTH_CREATE_ACL,
                "User:alice",
                Some(acl_body(
                    "User:alice",
                    json!([{"resource": "Queue:q", "actions": ["Pub"], "decision": "Allow"}]),
                )),
            ),
            perm,
            "Queue:q",
        )
        .await;
        let by_resource = ok_body(
            &c,
            RemotingCommand::request(code::AUTH_LIST_ACL).with_ext("resourceFilter", "billing"),
        )
        .await;
        assert_eq!(
            by_resource[0]["policies"][0]["entries"]
                .as_array()
                .map(Vec::len),
            Some(1),
            "{by_resource}"
        );
        ok_body(
            &c,
            RemotingCommand::request(code::AUTH_DELETE_ACL)
                .with_ext("subject", "User:alice")
                .with_ext("resource", "Group:billing"),
        )
        .await;
        let acl = ok_body(&c, acl_req(code::AUTH_GET_ACL, "User:alice", None)).await;
        assert_eq!(
            acl["policies"][0]["entries"].as_array().map(Vec::len),
            Some(1),
            "{acl}"
        );
    });

    // Every answer above came after the write: a SIGKILL loses none of it.
    broker.kill9();
    broker.spawn();
    broker.wait_ready();
    run_local(async {
        let c = connect(broker.addr()).await;
        let acl = ok_body(&c, acl_req(code::AUTH_GET_ACL, "User:alice", None)).await;
        assert_eq!(
            acl["policies"][0]["entries"][0]["resource"], "Topic:orders*",
            "{acl}"
        );
        let carol = ok_body(&c, user_req(code::AUTH_GET_USER, "carol", None)).await;
        assert_eq!(carol["userStatus"], "disable");
        // A user's deletion takes its ACL; deleting an absent user is no error.
        ok_body(&c, user_req(code::AUTH_DELETE_USER, "alice", None)).await;
        ok_body(&c, user_req(code::AUTH_DELETE_USER, "alice", None)).await;
        assert!(ok_body(&c, user_req(code::AUTH_GET_USER, "alice", None))
            .await
            .is_null());
        assert!(ok_body(&c, acl_req(code::AUTH_GET_ACL, "User:alice", None))
            .await
            .is_null());
        assert!(ok_body(&c, RemotingCommand::request(code::AUTH_LIST_ACL))
            .await
            .is_null());

        // A super user is made only by a super user (an unsigned request may: authentication off).
        let signed_by = |who: &str| {
            user_req(
                code::AUTH_CREATE_USER,
                "root2",
                Some(json!({"password": "p", "userType": "Super"})),
            )
            .with_ext("AccessKey", who)
        };
        expect(
            &c,
            signed_by("carol"),
            response_code::SYSTEM_ERROR,
            "The super user can only be create by super user",
        )
        .await;
        ok_body(
            &c,
            user_req(
                code::AUTH_CREATE_USER,
                "root",
                Some(json!({"password": "p", "userType": "Super"})),
            ),
        )
        .await;
        ok_body(&c, signed_by("root")).await;
    });
}

#[test]
fn a_slave_copies_its_masters_users_and_acls_and_refuses_changes() {
    let master = Broker::start(&master_extra("ASYNC_MASTER", "ASYNC_FLUSH"));
    // Made before the slave starts: its first metadata copy, a few seconds after its start, has them.
    run_local(async {
        let m = connect(master.addr()).await;
        ok_body(
            &m,
            user_req(
                code::AUTH_CREATE_USER,
                "alice",
                Some(json!({"password": "pw"})),
            ),
        )
        .await;
        ok_body(
            &m,
            acl_req(
                code::AUTH_CREATE_ACL,
                "User:alice",
                Some(acl_body(
                    "User:alice",
                    json!([{"resource": "Topic:t", "actions": ["Pub"], "decision": "Allow"}]),
                )),
            ),
        )
        .await;
    });
    let slave = Broker::start(&slave_extra(Some(&master), None));
    run_local(async {
        let s = connect(slave.addr()).await;
        let start = Instant::now();
        loop {
            let acl = ok_body(&s, acl_req(code::AUTH_GET_ACL, "User:alice", None)).await;
            if acl["subject"] == "User:alice" {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the slave never copied the ACL"
            );
            glommio::timer::sleep(Duration::from_millis(300)).await;
        }
        let user = ok_body(&s, user_req(code::AUTH_GET_USER, "alice", None)).await;
        assert_eq!(user["password"], "pw");
        expect(
            &s,
            user_req(
                code::AUTH_CREATE_USER,
                "eve",
                Some(json!({"password": "x"})),
            ),
            response_code::SYSTEM_ERROR,
            "cannot be changed on a slave",
        )
        .await;
    });
}
