//! ACL signatures on remoting requests, as RocketMQ's AclClientRPCHook computes them: the
//! `AccessKey` is added to extFields, then `Signature` = base64(HMAC-SHA1(secret, the extField values
//! sorted by key, then the body)).

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use protocol::RemotingCommand;
use sha1::Sha1;

/// An account of the broker's ACL (plain_acl.yml): the SDK authenticated with it, the proxy signs
/// its remoting requests with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
}

pub fn sign_request(cmd: &mut RemotingCommand, creds: &Credentials) {
    cmd.set_ext("AccessKey", &creds.access_key);
    let mut fields: Vec<(&str, &str)> = cmd
        .ext_fields
        .iter()
        .filter(|(k, _)| *k != "Signature")
        .collect();
    fields.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    let mut content = Vec::new();
    for (_, v) in fields {
        content.extend_from_slice(v.as_bytes());
    }
    content.extend_from_slice(&cmd.body);
    let signature = hmac_sha1(creds.secret_key.as_bytes(), &content)
        .map(|d| base64::engine::general_purpose::STANDARD.encode(d))
        .unwrap_or_default();
    cmd.set_ext("Signature", &signature);
}

/// HMAC-SHA1 of `data` under `key` (None only if the MAC refuses the key, which HMAC never does).
pub fn hmac_sha1(key: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    let mut mac = <Hmac<Sha1> as KeyInit>::new_from_slice(key).ok()?;
    mac.update(data);
    Some(mac.finalize().into_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_covers_sorted_values_then_body() {
        let creds = Credentials {
            access_key: "ak".into(),
            secret_key: "sk".into(),
        };
        let mut cmd = RemotingCommand::request(10)
            .with_ext("b", "2")
            .with_ext("a", "1")
            .with_body(&b"xyz"[..]);
        sign_request(&mut cmd, &creds);
        // Values sorted by key (UTF-16 order, uppercase first): AccessKey=ak, a=1, b=2.
        let expected = hmac_sha1(b"sk", b"ak12xyz").unwrap();
        let expected = base64::engine::general_purpose::STANDARD.encode(expected);
        assert_eq!(cmd.ext("Signature"), Some(expected.as_str()));
        assert_eq!(cmd.ext("AccessKey"), Some("ak"));
    }
}
