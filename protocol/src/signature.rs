//! Request signatures of RocketMQ's plain ACL, as its AclUtils computes them (brokers verify them,
//! clients sign with them): HMAC-SHA1 over the values of the request's
//! extFields sorted by key (without `Signature`), then the body; base64. Clients up to 4.9.3 added
//! `_UNIQUE_KEY_QUERY` (QUERY_MESSAGE) after signing, so for them it is left out, as RocketMQ 5's
//! broker does; later clients sign it.

use crate::command::mq_version;
use crate::RemotingCommand;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;

/// The extField that carries the signature.
pub const SIGNATURE: &str = "Signature";
/// The extField naming the account.
pub const ACCESS_KEY: &str = "AccessKey";
/// Unsigned by clients up to 4.9.3 (`MixAll.UNIQUE_MSG_QUERY_FLAG`).
const UNIQUE_MSG_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";

/// The bytes a client signs for `request`: sorted extField values, then the body.
pub fn signed_content(request: &RemotingCommand) -> Vec<u8> {
    let unsigned_query_flag = request.version <= mq_version::V4_9_3;
    let mut fields: Vec<(&str, &str)> = request
        .ext_fields
        .iter()
        .filter(|(k, _)| *k != SIGNATURE && !(unsigned_query_flag && *k == UNIQUE_MSG_QUERY_FLAG))
        .collect();
    // Java's TreeMap orders keys by UTF-16 code units; that differs from byte order only above U+FFFF.
    fields.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    let text_len: usize = fields.iter().map(|(_, v)| v.len()).sum();
    let mut content = Vec::with_capacity(text_len.saturating_add(request.body.len()));
    for (_, value) in fields {
        content.extend_from_slice(value.as_bytes());
    }
    content.extend_from_slice(&request.body);
    content
}

/// base64(HMAC-SHA1(secret_key, content)), the `Signature` a client sends.
pub fn sign(content: &[u8], secret_key: &str) -> String {
    // HMAC takes keys of any length, so this cannot fail; an empty result would never match anyway.
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(secret_key.as_bytes()) else {
        return String::new();
    };
    mac.update(content);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `signature` is the right one for `content` under `secret_key`, compared in constant time.
pub fn verify(content: &[u8], secret_key: &str, signature: &str) -> bool {
    let expected = sign(content, secret_key);
    let (a, b) = (expected.as_bytes(), signature.as_bytes());
    if a.len() != b.len() || a.is_empty() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_code as code;

    /// HMAC-SHA1 computed by Python's hmac/hashlib, not by this code.
    fn python_signature(secret: &str, content: &[u8]) -> Option<String> {
        let script =
            "import sys,hmac,hashlib,base64;k=sys.argv[1].encode();d=sys.stdin.buffer.read();\
                      print(base64.b64encode(hmac.new(k,d,hashlib.sha1).digest()).decode())";
        let mut child = std::process::Command::new("python3")
            .args(["-c", script, secret])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .ok()?;
        use std::io::Write;
        child.stdin.take()?.write_all(content).ok()?;
        let out = child.wait_with_output().ok()?;
        Some(String::from_utf8(out.stdout).ok()?.trim().to_owned())
    }

    #[test]
    fn rfc2202_vector() {
        // RFC 2202 test case 2: key "Jefe", data "what do ya want for nothing?",
        // HMAC-SHA1 = effcdf6ae5eb2fa2d27416d5f184df9c259a7c79 (base64 below).
        assert_eq!(
            sign(b"what do ya want for nothing?", "Jefe"),
            "7/zfauXrL6LSdBbV8YTfnCWafHk="
        );
    }

    #[test]
    fn content_is_sorted_values_then_body() {
        let req = RemotingCommand::request(code::SEND_MESSAGE_V2)
            .with_ext("b", "TopicA")
            .with_ext("AccessKey", "rocketmq2")
            .with_ext("Signature", "ignored")
            .with_ext("a", "PG")
            .with_body(&b"hello"[..]);
        // Sorted keys: AccessKey < a < b (upper case sorts first, as in Java).
        assert_eq!(signed_content(&req), b"rocketmq2PGTopicAhello");
    }

    #[test]
    fn the_unique_key_flag_is_signed_after_4_9_3() {
        let mut req = RemotingCommand::request(code::QUERY_MESSAGE)
            .with_ext("topic", "T")
            .with_ext("AccessKey", "ak")
            .with_ext("_UNIQUE_KEY_QUERY", "true");
        // `_UNIQUE_KEY_QUERY` sorts after `AccessKey` and before `topic` ('_' < 't').
        req.version = mq_version::V4_9_3 + 2;
        assert_eq!(signed_content(&req), b"aktrueT");
        req.version = mq_version::V4_9_3;
        assert_eq!(signed_content(&req), b"akT");
    }

    #[test]
    fn signature_matches_python_hmac() {
        let req = RemotingCommand::request(code::PULL_MESSAGE)
            .with_ext("topic", "TopicB")
            .with_ext("consumerGroup", "G1")
            .with_ext("queueId", "3")
            .with_ext("AccessKey", "RocketMQ")
            .with_ext("OnsChannel", "ALIYUN")
            .with_body(vec![0u8, 1, 2, 200, 255]);
        let content = signed_content(&req);
        let Some(expected) = python_signature("12345678", &content) else {
            panic!("python3 is needed for this test");
        };
        assert_eq!(sign(&content, "12345678"), expected);
        assert!(verify(&content, "12345678", &expected));
        assert!(!verify(&content, "12345679", &expected));
        assert!(!verify(b"other", "12345678", &expected));
        assert!(!verify(&content, "12345678", ""));
    }
}
