//! The SDK's signature headers as Apache's `DefaultAuthenticationContextBuilder` reads them:
//! `authorization: MQv2-HMAC-SHA1 Credential=<accessKey>[/...], SignedHeaders=x-mq-date-time,
//! Signature=<hex>` over the `x-mq-date-time` header's value; refusals with Apache's texts.

use protocol::signature::hmac_sha1;
use tonic::metadata::MetadataMap;

/// What a request's headers claim: who signed (none without an `authorization` header), the
/// signature and the signed content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signed {
    pub username: Option<String>,
    /// The signature's bytes (hex-decoded).
    pub signature: Option<Vec<u8>>,
    pub content: Vec<u8>,
}

/// Reads the headers; a present but malformed header is refused with Apache's text.
pub fn read(md: &MetadataMap) -> Result<Signed, String> {
    let header = |k: &str| md.get(k).and_then(|v| v.to_str().ok()).unwrap_or("");
    parse(header("authorization"), header("x-mq-date-time"))
}

/// [`read`] on the two header values (empty when absent).
pub fn parse(authorization: &str, datetime: &str) -> Result<Signed, String> {
    if authorization.is_empty() {
        return Ok(Signed::default());
    }
    if datetime.is_empty() {
        return Err("datetime is null.".into());
    }
    let Some((_, pairs)) = authorization.split_once(' ') else {
        return Err("authentication header is incorrect.".into());
    };
    let mut signed = Signed {
        content: datetime.as_bytes().to_vec(),
        ..Signed::default()
    };
    for pair in pairs.split(',') {
        let Some((key, value)) = pair.trim().split_once('=') else {
            return Err(
                "authentication keyValues length is incorrect, actual length=1.".to_string(),
            );
        };
        match key {
            "Credential" => {
                signed.username = value.split('/').next().map(str::to_owned);
            }
            "Signature" => {
                signed.signature = Some(
                    hex(value).ok_or_else(|| "create authentication context error.".to_string())?,
                );
            }
            _ => {}
        }
    }
    Ok(signed)
}

/// Whether `signed` carries the HMAC-SHA1 of its content under `password` (compared in constant time).
pub fn verify(signed: &Signed, password: &str) -> bool {
    let expected = hmac_sha1(password.as_bytes(), &signed.content);
    match &signed.signature {
        Some(sig) if sig.len() == expected.len() => {
            sig.iter()
                .zip(&expected)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
        }
        _ => false,
    }
}

fn hex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim().as_bytes();
    if s.len() % 2 != 0 {
        return None;
    }
    s.chunks(2)
        .map(|pair| {
            let digit = |c: u8| (c as char).to_digit(16);
            match pair {
                [hi, lo] => Some((digit(*hi)? * 16 + digit(*lo)?) as u8),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(sk: &str, date: &str) -> String {
        hmac_sha1(sk.as_bytes(), date.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[test]
    fn the_java_sdks_header_is_read_and_verified() {
        let date = "20261207T033000Z";
        let auth = format!(
            "MQv2-HMAC-SHA1 Credential=alice/cn-hangzhou/RocketMQ, SignedHeaders=x-mq-date-time, \
             Signature={}",
            sign("pw", date).to_uppercase()
        );
        let s = parse(&auth, date).unwrap();
        assert_eq!(s.username.as_deref(), Some("alice"));
        assert_eq!(s.content, date.as_bytes());
        assert!(verify(&s, "pw"));
        assert!(!verify(&s, "pw2"));
        let other_date = parse(&auth, "20261207T033001Z").unwrap();
        assert!(!verify(&other_date, "pw"));
    }

    #[test]
    fn malformed_headers_are_refused_with_apaches_texts() {
        assert_eq!(parse("", ""), Ok(Signed::default()));
        assert_eq!(parse("MQv2 x", "").unwrap_err(), "datetime is null.");
        assert_eq!(
            parse("MQv2-HMAC-SHA1", "d").unwrap_err(),
            "authentication header is incorrect."
        );
        assert!(parse("MQv2-HMAC-SHA1 Credential", "d")
            .unwrap_err()
            .starts_with("authentication keyValues length is incorrect"));
        assert!(parse("MQv2-HMAC-SHA1 Credential=a, Signature=zz", "d").is_err());
        assert!(parse("MQv2-HMAC-SHA1 Credential=a, Signature=abc", "d").is_err());
        // No signature: read, and never verified.
        let s = parse("MQv2-HMAC-SHA1 Credential=a", "d").unwrap();
        assert_eq!(s.username.as_deref(), Some("a"));
        assert!(!verify(&s, ""));
        // Multi-byte text does not panic the hex decoder.
        assert!(parse("MQv2-HMAC-SHA1 Signature=éé", "d").is_err());
    }
}
