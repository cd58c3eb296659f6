//! ACL 2.0 enforced by a real broker process: a RocketMQ 5.3-style broker.conf with
//! `authenticationEnabled` is enforced on every shard-broker and port (never served open), users made
//! on one shard authenticate on the others, ACLs decide, whitelisted codes pass, the ACL 2.0 keys
//! cannot be switched off at run time, and a slave of an authenticating master copies its users with
//! `innerClientAuthenticationCredentials`.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod ha_common;

use std::time::{Duration, Instant};

use common::*;
use ha_common::*;
use protocol::signature::{sign_request, Credentials};
use protocol::{request_code as code, response_code, RemotingCommand};
use remoting::Client;
use serde_json::json;

const ROOT: (&str, &str) = ("rocketmq", "12345678");
const INNER: (&str, &str) = ("inner", "inner-secret");

fn signed(mut req: RemotingCommand, who: (&str, &str)) -> RemotingCommand {
    sign_request(
        &mut req,
        &Credentials {
            access_key: who.0.to_owned(),
            secret_key: who.1.to_owned(),
        },
    );
    req
}

async fn answer(c: &Client, req: RemotingCommand) -> (i32, String) {
    let a = c.invoke(req, TIMEOUT).await.expect("answered");
    (a.code, a.remark.unwrap_or_default())
}

fn send(topic: &str) -> RemotingCommand {
    send_request(topic, 0, b"hello", "")
}

fn create_topic(topic: &str) -> RemotingCommand {
    RemotingCommand::request(code::UPDATE_AND_CREATE_TOPIC)
        .with_ext("topic", topic)
        .with_ext("defaultTopic", "TBW102")
        .with_ext("readQueueNums", "4")
        .with_ext("writeQueueNums", "4")
        .with_ext("perm", "6")
        .with_ext("topicFilterType", "SINGLE_TAG")
        .with_ext("topicSysFlag", "0")
        .with_ext("order", "false")
}

fn user(name: &str, password: &str) -> RemotingCommand {
    RemotingCommand::request(code::AUTH_CREATE_USER)
        .with_ext("username", name)
        .with_body(json!({"password": password}).to_string().into_bytes())
}

fn acl(subject: &str, resource: &str, actions: &[&str], decision: &str) -> RemotingCommand {
    let body = json!({"subject": subject, "policies": [{"policyType": "Custom", "entries": [
        {"resource": resource, "actions": actions, "decision": decision}]}]});
    RemotingCommand::request(code::AUTH_CREATE_ACL)
        .with_ext("subject", subject)
        .with_body(body.to_string().into_bytes())
}

/// Apache 5.3's broker.conf lines for ACL 2.0 (its docs' example), as a properties file.
fn broker_conf_53(port: u16, dir: &std::path::Path, extra: &str) -> String {
    format!(
        "brokerClusterName=TestCluster\nbrokerName=broker-t\nbrokerId=0\nbrokerIP1=127.0.0.1\n\
         listenPort={port}\nstorePathRootDir={}\nshardCount=2\nmappedFileSizeCommitLog=4194304\nmaxMessageSize=1048576\n\
         authenticationEnabled=true\n\
         authenticationProvider=org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider\n\
         authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider\n\
         initAuthenticationUser={{\"username\":\"{}\",\"password\":\"{}\"}}\n\
         innerClientAuthenticationCredentials={{\"accessKey\":\"{}\",\"secretKey\":\"{}\"}}\n\
         authorizationEnabled=true\n\
         authorizationProvider=org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider\n\
         authorizationMetadataProvider=org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider\n\
         {extra}",
        dir.join("store").display(),
        ROOT.0,
        ROOT.1,
        INNER.0,
        INNER.1
    )
}

#[test]
fn a_53_broker_conf_with_acl2_is_enforced_on_every_shard_broker_and_port() {
    let broker = Broker::builder()
        .config_file("broker.conf", |port, dir| {
            // GET_BROKER_RUNTIME_INFO (28) is not authenticated.
            broker_conf_53(port, dir, "authenticationWhitelist=28\n")
        })
        .start();
    let mut ports = vec![broker.addr(), broker.fast_addr()];
    ports.extend(broker.other_shard_brokers());
    assert_eq!(ports.len(), 3, "two shard-brokers and the VIP port");
    run_local(async move {
        let root = connect(ports[0]).await;
        // Never open: unsigned requests are refused everywhere, with Apache's text.
        for addr in &ports {
            let c = connect(*addr).await;
            let (code, remark) = answer(&c, send("T1")).await;
            assert_eq!(code, response_code::NO_PERMISSION, "{addr}: {remark}");
            assert_eq!(remark, "username cannot be null.");
            let (code, _) = answer(&c, RemotingCommand::request(code::GET_ALL_TOPIC_CONFIG)).await;
            assert_eq!(code, response_code::NO_PERMISSION, "{addr}");
            // The whitelisted code is answered.
            let info = RemotingCommand::request(code::GET_BROKER_RUNTIME_INFO);
            assert_eq!(answer(&c, info).await.0, response_code::SUCCESS, "{addr}");
        }
        assert_eq!(answer(&root, signed(create_topic("T1"), ROOT)).await.0, 0);
        // Users and ACLs made on shard-broker 0 decide on the others at once.
        for r in [
            user("alice", "alice-pw"),
            user("bob", "bob-pw"),
            acl("User:alice", "Topic:T1", &["Pub"], "Allow"),
            acl("User:bob", "Topic:T*", &["All"], "Deny"),
        ] {
            let (code, remark) = answer(&root, signed(r, ROOT)).await;
            assert_eq!(code, response_code::SUCCESS, "{remark}");
        }
        for addr in &ports {
            let c = connect(*addr).await;
            let (code, remark) = answer(&c, signed(send("T1"), ("alice", "alice-pw"))).await;
            assert_eq!(code, response_code::SUCCESS, "{addr}: alice: {remark}");
            let (code, remark) = answer(&c, signed(send("T1"), ("alice", "wrong"))).await;
            assert_eq!(
                (code, remark.as_str()),
                (response_code::NO_PERMISSION, "check signature failed.")
            );
            let (code, remark) = answer(&c, signed(send("T1"), ("bob", "bob-pw"))).await;
            assert_eq!(code, response_code::NO_PERMISSION, "{addr}");
            assert!(remark.contains("the decision is deny"), "{remark}");
            // Alice may not administer the cluster.
            let (code, remark) = answer(&c, signed(user("eve", "x"), ("alice", "alice-pw"))).await;
            assert_eq!(code, response_code::NO_PERMISSION, "{remark}");
        }
        // The keys cannot be switched off through the door they guard.
        let off = RemotingCommand::request(code::UPDATE_BROKER_CONFIG)
            .with_body(b"authenticationEnabled=false\n".to_vec());
        let (code, remark) = answer(&root, signed(off, ROOT)).await;
        assert_ne!(code, response_code::SUCCESS, "{remark}");
        assert!(remark.contains("restart"), "{remark}");
        // The init and inner users are super users; the config shows no password.
        let config = root
            .invoke(
                signed(RemotingCommand::request(code::GET_BROKER_CONFIG), INNER),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(config.code, response_code::SUCCESS);
        let text = String::from_utf8_lossy(&config.body).to_string();
        assert!(text.contains("authenticationEnabled=true"), "{text}");
        assert!(!text.contains(ROOT.1) && !text.contains(INNER.1), "{text}");
    });
}

#[test]
fn a_slave_of_an_acl2_master_copies_its_users_with_the_inner_credentials() {
    let acl2 = format!(
        "authenticationEnabled = true\nauthorizationEnabled = true\n\
         initAuthenticationUser = '{{\"username\":\"{}\",\"password\":\"{}\"}}'\n\
         innerClientAuthenticationCredentials = '{{\"accessKey\":\"{}\",\"secretKey\":\"{}\"}}'\n",
        ROOT.0, ROOT.1, INNER.0, INNER.1
    );
    let master = Broker::start(&format!(
        "{}{acl2}",
        master_extra("ASYNC_MASTER", "ASYNC_FLUSH")
    ));
    let master_addr = master.addr();
    run_local(async move {
        let m = connect(master_addr).await;
        assert_eq!(
            answer(&m, signed(user("alice", "alice-pw"), ROOT)).await.0,
            0
        );
    });
    let slave = Broker::start(&format!("{}{acl2}", slave_extra(Some(&master), None)));
    let slave_addr = slave.addr();
    run_local(async move {
        let s = connect(slave_addr).await;
        // The slave enforces too.
        let (code, _) = answer(&s, RemotingCommand::request(code::GET_ALL_TOPIC_CONFIG)).await;
        assert_eq!(code, response_code::NO_PERMISSION);
        // Its copy of the master's users (fetched with the inner credentials, which the master
        // authenticates) lets alice in.
        let start = Instant::now();
        loop {
            let get = RemotingCommand::request(code::AUTH_GET_USER).with_ext("username", "alice");
            let a = s.invoke(signed(get, INNER), TIMEOUT).await.unwrap();
            if a.code == response_code::SUCCESS && !a.body.is_empty() {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the slave never copied alice: {} {:?}",
                a.code,
                a.remark
            );
            glommio::timer::sleep(Duration::from_millis(300)).await;
        }
    });
}
