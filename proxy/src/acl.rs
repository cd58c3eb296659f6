//! ACL for the SDKs: their `authorization` header (`MQv2-HMAC-SHA1 Credential=<accessKey>,
//! SignedHeaders=x-mq-date-time, Signature=<hex HMAC-SHA1(secretKey, x-mq-date-time)>`) is checked
//! against the accounts of the brokers' plain_acl.yml, and the account then signs the proxy's
//! remoting requests, so the broker applies that account's permissions.

use std::collections::HashMap;

use tonic::metadata::MetadataMap;

use crate::status::ProxyError;
use protocol::signature::{hmac_sha1, Credentials};

pub struct Acl {
    /// accessKey -> secretKey.
    accounts: HashMap<String, String>,
    /// The account the proxy signs its own requests with (producer registration).
    own: Option<Credentials>,
}

impl Acl {
    /// Reads `accounts` (accessKey, secretKey) from a plain_acl.yml.
    pub fn load(path: &str) -> Result<Acl, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let docs =
            yaml_rust2::YamlLoader::load_from_str(&text).map_err(|e| format!("{path}: {e}"))?;
        let mut accounts = HashMap::new();
        for doc in &docs {
            if let Some(list) = doc["accounts"].as_vec() {
                for a in list {
                    if let (Some(ak), Some(sk)) = (a["accessKey"].as_str(), a["secretKey"].as_str())
                    {
                        accounts.insert(ak.to_string(), sk.to_string());
                    }
                }
            }
        }
        let own = accounts.iter().min().map(|(ak, sk)| Credentials {
            access_key: ak.clone(),
            secret_key: sk.clone(),
        });
        if own.is_none() {
            return Err(format!("{path}: no accounts with accessKey and secretKey"));
        }
        Ok(Acl { accounts, own })
    }

    /// The account the proxy signs its own requests with (the first by accessKey).
    pub fn any_account(&self) -> Option<&Credentials> {
        self.own.as_ref()
    }

    /// The account that signed this request, or why it is refused.
    pub fn authenticate(&self, md: &MetadataMap) -> Result<Credentials, ProxyError> {
        let auth = md
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| ProxyError::Unauthorized("no authorization header".into()))?;
        let date = md
            .get("x-mq-date-time")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| ProxyError::Unauthorized("no x-mq-date-time header".into()))?;
        let (ak, signature) = parse_authorization(auth)
            .ok_or_else(|| ProxyError::Unauthorized(format!("malformed authorization {auth:?}")))?;
        let sk = self
            .accounts
            .get(ak)
            .ok_or_else(|| ProxyError::Unauthorized(format!("unknown accessKey {ak}")))?;
        let expected: String = hmac_sha1(sk.as_bytes(), date.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if !expected.eq_ignore_ascii_case(signature) {
            return Err(ProxyError::Unauthorized(format!(
                "signature of accessKey {ak} does not match"
            )));
        }
        Ok(Credentials {
            access_key: ak.to_string(),
            secret_key: sk.clone(),
        })
    }
}

/// (accessKey, signature) of an `MQv2-HMAC-SHA1 Credential=.., SignedHeaders=.., Signature=..` value.
fn parse_authorization(v: &str) -> Option<(&str, &str)> {
    let rest = v.trim().strip_prefix("MQv2-HMAC-SHA1")?;
    let mut ak = None;
    let mut sig = None;
    for part in rest.split(',') {
        let (k, val) = part.trim().split_once('=')?;
        match k.trim() {
            // The Java SDK writes `Credential=<ak>/<region>/<service>`; the access key comes first.
            "Credential" => ak = val.split('/').next(),
            "Signature" => sig = Some(val.trim()),
            _ => {}
        }
    }
    Some((ak?, sig?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(auth: &str, date: &str) -> MetadataMap {
        let mut m = MetadataMap::new();
        m.insert("authorization", auth.parse().unwrap());
        m.insert("x-mq-date-time", date.parse().unwrap());
        m
    }

    #[test]
    fn a_python_sdk_signature_is_accepted_and_a_wrong_one_refused() {
        let acl = Acl {
            accounts: [("rocketmq2".to_string(), "12345678".to_string())].into(),
            own: None,
        };
        let date = "20261201T120000Z";
        let sig: String = hmac_sha1(b"12345678", date.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let good = format!(
            "MQv2-HMAC-SHA1 Credential=rocketmq2, SignedHeaders=x-mq-date-time, Signature={sig}"
        );
        let c = acl.authenticate(&md(&good, date)).unwrap();
        assert_eq!(c.secret_key, "12345678");
        assert!(acl.authenticate(&md(&good, "20261201T120001Z")).is_err());
        let unknown = good.replace("rocketmq2", "nobody");
        assert!(acl.authenticate(&md(&unknown, date)).is_err());
    }
}
