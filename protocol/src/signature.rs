//! Request signatures of RocketMQ's plain ACL, as its AclUtils computes them (brokers verify them,
//! clients sign with them): HMAC-SHA1 over the values of the request's
//! extFields sorted by key (without `Signature`), then the body; base64. Clients up to 4.9.3 added
//! `_UNIQUE_KEY_QUERY` (QUERY_MESSAGE) after signing, so for them it is left out, as RocketMQ 5's
//! broker does; later clients sign it.

use crate::command::mq_version;
use crate::command::RemotingCommand;
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

/// An account of the brokers' `plain_acl.yml`: what a client (or the proxy, for an SDK) signs with.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for Credentials {
    /// Never prints the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// HMAC-SHA1 of `data` under `key`. HMAC takes keys of any length, so this cannot fail; the empty
/// result of the impossible failure would never match a signature anyway.
pub fn hmac_sha1(key: &[u8], data: &[u8]) -> Vec<u8> {
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(key) else {
        return Vec::new();
    };
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// base64(HMAC-SHA1(secret_key, content)), the `Signature` a client sends.
pub fn sign(content: &[u8], secret_key: &str) -> String {
    let digest = hmac_sha1(secret_key.as_bytes(), content);
    if digest.is_empty() {
        return String::new();
    }
    base64::engine::general_purpose::STANDARD.encode(digest)
}

/// Signs `request` as RocketMQ's `AclClientRPCHook` does: adds the account's `AccessKey`, then the
/// `Signature` over the extFields (the access key included) and the body.
pub fn sign_request(request: &mut RemotingCommand, credentials: &Credentials) {
    request.set_ext(ACCESS_KEY, &credentials.access_key);
    let signature = sign(&signed_content(request), &credentials.secret_key);
    request.set_ext(SIGNATURE, &signature);
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
    fn a_signed_request_carries_its_access_key_and_verifies() {
        let creds = Credentials {
            access_key: "ak".into(),
            secret_key: "s3cret".into(),
        };
        let mut req = RemotingCommand::request(10)
            .with_ext("b", "2")
            .with_ext("a", "1")
            .with_ext(SIGNATURE, "stale")
            .with_body(&b"xyz"[..]);
        sign_request(&mut req, &creds);
        assert_eq!(req.ext(ACCESS_KEY), Some("ak"));
        // Values sorted by key (UTF-16 order, upper case first): AccessKey=ak, a=1, b=2; then the body.
        assert_eq!(signed_content(&req), b"ak12xyz");
        let sig = req.ext(SIGNATURE).unwrap().to_owned();
        assert_eq!(sig, sign(b"ak12xyz", "s3cret"));
        assert!(verify(&signed_content(&req), "s3cret", &sig));
        assert!(!verify(&signed_content(&req), "other", &sig));
        assert!(!format!("{creds:?}").contains("s3cret"));
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
